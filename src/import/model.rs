//! What an import produced: the scenario's providers, clients, credentials and networks,
//! and every role or pair that did not become part of it, with the platform's code.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

use serde_json::Value;

use crate::config::{Expectation, ProviderLimits};
use crate::mcp::Transport;

#[derive(Debug, Clone, PartialEq)]
pub struct Import {
    pub name: String,
    pub project: Option<String>,
    /// The roles the import was told are deployed, sorted.
    pub deployed: Vec<String>,
    pub credentials: BTreeMap<String, CredentialRef>,
    pub providers: BTreeMap<String, ImportedProvider>,
    pub clients: BTreeMap<String, ImportedClient>,
    /// Every network a provider or sidecar is declared on, with its subnet when the
    /// metadata gives one.
    pub networks: BTreeMap<String, Option<String>>,
    pub rejections: Vec<Rejection>,
    /// What was imported with less than it could have been (and how to get the rest).
    pub notes: Vec<String>,
    /// Rules of the platform's metadata contract the tree breaks, each with its code: an
    /// import with any is reported, never written.
    pub lint: Vec<crate::config::ConfigError>,
}

/// Where a credential's value is read from at run time, and where the platform keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CredentialRef {
    pub env: String,
    /// "credentials `mcp_bearer` of role web-app-x", for the reader of the scenario.
    pub origin: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ImportedProvider {
    pub id: String,
    /// The role's classification and, for an adapter, its type: shown as a comment.
    pub summary: String,
    pub url: String,
    pub transport: Transport,
    pub service: String,
    pub credential: String,
    pub disabled: bool,
    /// Disabled, with its endpoint served by the app that keeps running.
    pub served_by_app: bool,
    pub allowed_consumers: Vec<String>,
    pub networks: Vec<String>,
    pub app_ports: Vec<u16>,
    pub allowlist: Vec<String>,
    pub mutating: Vec<String>,
    pub mutating_enabled: bool,
    /// A served-tools hash pinned with `--pin-schema` (cordon's hash).
    pub schema_sha256: Option<String>,
    /// The platform's own `tools.schema_sha256`: a hash of its contract file, recorded as
    /// such and never compared with what is served.
    pub platform_schema_sha256: Option<String>,
    pub read: Option<ImportedRead>,
    pub sidecar_networks: Option<Vec<String>>,
    /// The adapter image the metadata pins (`adapter.image`, `version`, `digest`).
    pub sidecar_image: Option<ImportedImage>,
    pub app: Option<ImportedApp>,
    pub boundary: BoundaryKeys,
}

/// The provider keys of the call-allowlist, arguments, limits and rotation checks.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BoundaryKeys {
    /// Names the provider must refuse to run: the specification's and the upstream's
    /// other tools.
    pub denied_tools: Vec<String>,
    /// The platform's adapter refuses undeclared and missing arguments.
    pub strict_arguments: bool,
    pub limits: ProviderLimits,
    pub limit_probes: crate::config::LimitProbes,
    /// Credentials retired by a rotation: the platform's metadata has no rotation
    /// history, so an import never fills this.
    pub retired: Vec<String>,
    /// The adapter's specification, relative to the scenario file.
    pub specification: Option<PathBuf>,
}

/// The seven limits of the platform's contract, in the order it writes them.
pub const LIMIT_KEYS: [&str; 7] = [
    "request_bytes",
    "response_bytes",
    "timeout_seconds",
    "concurrent_requests",
    "page_size",
    "result_items",
    "stream_seconds",
];

/// Every limit that is set, by its key, in the order the platform writes them.
pub fn limit_entries(l: &ProviderLimits) -> Vec<(&'static str, u64)> {
    let values = [
        l.request_bytes,
        l.response_bytes,
        l.timeout_seconds,
        l.concurrent_requests.map(u64::from),
        l.page_size.map(u64::from),
        l.result_items.map(u64::from),
        l.stream_seconds,
    ];
    LIMIT_KEYS.into_iter().zip(values).filter_map(|(k, v)| v.map(|v| (k, v))).collect()
}

#[derive(Debug, Clone, PartialEq)]
pub struct ImportedRead {
    pub tool: String,
    pub arguments: Value,
    pub expect: Expectation,
    /// The metadata named the read but no expectation: only `isError: false` is checked.
    pub expectation_declared: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportedImage {
    /// `adapter.image`, with `:version` when the metadata gives one.
    pub image: String,
    /// `adapter.digest` as the metadata writes it (`sha256:<hex>`).
    pub digest: String,
    /// Set by `--image-digest-env`: the deploy builds this image, so the scenario reads
    /// its pin from this variable instead of the metadata's.
    pub digest_env: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportedApp {
    pub service: String,
    pub ports: Vec<u16>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportedClient {
    pub id: String,
    pub service: String,
    /// provider id → credential id the client holds for it.
    pub credentials: BTreeMap<String, String>,
    pub openwebui: Option<OpenWebuiBlock>,
    /// provider id → credential a removed consumer still holds: no source in the
    /// platform's metadata, so an import never fills this.
    pub revoked: BTreeMap<String, String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenWebuiBlock {
    pub admin_email: String,
    pub admin_password: String,
    /// provider id → group name.
    pub groups: BTreeMap<String, String>,
}

/// One role, or one client–provider pair, that is not part of the scenario.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    pub role: String,
    pub subject: Subject,
    pub code: Code,
    pub detail: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Subject {
    Role,
    Provider,
    Client,
    /// The provider `role` is not wired to this client.
    PairWith(String),
}

impl fmt::Display for Rejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.subject {
            Subject::Role => write!(f, "{}", self.role)?,
            Subject::Provider => write!(f, "{} (provider)", self.role)?,
            Subject::Client => write!(f, "{} (client)", self.role)?,
            Subject::PairWith(client) => write!(f, "{client} -> {}", self.role)?,
        }
        write!(f, ": {}: {}", self.code, self.detail)
    }
}

/// The stable codes: the platform's own (`mcp_servers` lookup and audit), plus the ones
/// that say why a role never reached the platform's discovery.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Code {
    ConsumerNotAllowed,
    TransportUnsupported,
    AuthUnsupported,
    CredentialMissing,
    EndpointUnreachable,
    AuditOnly,
    Blocked,
    NotDeployed,
    NotEnabled,
    NotShared,
    NoSurface,
    NoMetadata,
}

impl Code {
    pub const ALL: [Code; 12] = [
        Code::ConsumerNotAllowed,
        Code::TransportUnsupported,
        Code::AuthUnsupported,
        Code::CredentialMissing,
        Code::EndpointUnreachable,
        Code::AuditOnly,
        Code::Blocked,
        Code::NotDeployed,
        Code::NotEnabled,
        Code::NotShared,
        Code::NoSurface,
        Code::NoMetadata,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Code::ConsumerNotAllowed => "consumer_not_allowed",
            Code::TransportUnsupported => "transport_unsupported",
            Code::AuthUnsupported => "auth_unsupported",
            Code::CredentialMissing => "credential_missing",
            Code::EndpointUnreachable => "endpoint_unreachable",
            Code::AuditOnly => "audit_only",
            Code::Blocked => "blocked",
            Code::NotDeployed => "not_deployed",
            Code::NotEnabled => "not_enabled",
            Code::NotShared => "not_shared",
            Code::NoSurface => "no_surface",
            Code::NoMetadata => "no_metadata",
        }
    }
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
