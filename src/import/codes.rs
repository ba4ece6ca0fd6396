//! The stable codes of the platform's metadata rules (requirement 035), each with the rule
//! in one line, and the reasons an audit-only classification may give.

/// Every code a finding or a refused import carries, with the rule in one line (the
/// README's table is checked against this list).
pub const RULES: &[(&str, &str)] = &[
    (MISSING_FIELD, "an enabled provider lacks a field the contract requires (no implicit security defaults)"),
    (SOURCE_UNPINNED, "a deployable mapping without `source_url` and an exact `supported_version`"),
    (NEGATIVE_UNEXPLAINED, "an audit-only classification without a `reason` and `notes`"),
    (REASON_UNKNOWN, "a `reason` that is not one of the platform's documented reasons"),
    (MUTATING_WITHOUT_PROOFS, "`mutating_tools_enabled: true` without a `mutating_proofs` block"),
    (MUTATING_OPERATION, "an allowlisted operation that is not GET or HEAD while mutations are off"),
    (EMPTY_ALLOWLIST, "a `tools.allowlist` with no tool in it"),
    (SPECIFICATION_OUTSIDE_ROLE, "a `specification_path` outside the role's own `files/`"),
    (CONDITION_NAMES_PEERS, "an MCP `enabled`/`shared` expression that names another role"),
    (CLIENT_CAPABILITIES_MISSING, "a client without `supported_transports` or `supported_auths`"),
    (STATIC_BEARER_SUBJECT, "a static bearer (`auth: bearer_token`) declared as anything but `service_account`"),
    (PRINCIPAL_SHARED, "two providers authenticate as the same principal (`credential.owner`)"),
    (CREDENTIAL_MISSING, "a provider with an authorized, deployed consumer has no usable credential"),
    (TRANSPORT_UNSUPPORTED, "an authorized consumer does not speak the provider's transport"),
    (AUTH_UNSUPPORTED, "an authorized consumer does not speak the provider's auth scheme"),
    (ENDPOINT_UNREACHABLE, "an enabled surface's endpoint cannot be rendered from the metadata"),
];

pub const MISSING_FIELD: &str = "missing_field";
pub const SOURCE_UNPINNED: &str = "source_unpinned";
pub const NEGATIVE_UNEXPLAINED: &str = "negative_unexplained";
pub const REASON_UNKNOWN: &str = "reason_unknown";
pub const MUTATING_WITHOUT_PROOFS: &str = "mutating_without_proofs";
pub const MUTATING_OPERATION: &str = "mutating_operation_allowlisted";
pub const EMPTY_ALLOWLIST: &str = "empty_allowlist";
pub const SPECIFICATION_OUTSIDE_ROLE: &str = "specification_outside_role";
pub const CONDITION_NAMES_PEERS: &str = "condition_names_peers";
pub const CLIENT_CAPABILITIES_MISSING: &str = "client_capabilities_missing";
pub const STATIC_BEARER_SUBJECT: &str = "static_bearer_subject";
pub const PRINCIPAL_SHARED: &str = "principal_shared";
pub const CREDENTIAL_MISSING: &str = "credential_missing";
pub const TRANSPORT_UNSUPPORTED: &str = "transport_unsupported";
pub const AUTH_UNSUPPORTED: &str = "auth_unsupported";
pub const ENDPOINT_UNREACHABLE: &str = "endpoint_unreachable";

/// The reasons an audit-only classification may give (the requirement's list).
pub const REASONS: &[&str] = &[
    "no_remote_surface",
    "host_execution_boundary",
    "privileged_control_plane",
    "shared_engine_isolation",
    "administrative_surface",
    "duplicate_owner",
    "version_unverified",
    "licence",
    "hosted_only",
    "stdio_only",
    "interactive_browser_session",
    "unreviewed_third_party",
    "missing_dependency",
];
