//! The words the platform's `meta/mcp.yml` may use, as its own schema lists them
//! (`utils/roles/applications/mcp.py` of infinito-nexus/core), so a typo or a word from a
//! newer platform is an error that says what was expected instead of a silent default.

/// Every classification of the platform's MCP audit.
pub const CLASSIFICATIONS: &[&str] = &[
    "native_server",
    "native_client",
    "native_both",
    "plugin_server",
    "sidecar_server",
    "adapter_server",
    "adapter_candidate",
    "blocked",
    "enabler",
    "subordinate",
    "no_surface",
];

/// The classifications that may carry a served surface; the rest are audit entries only.
pub const DEPLOYABLE: &[&str] =
    &["native_server", "native_client", "native_both", "plugin_server", "sidecar_server", "adapter_server"];

pub const DIRECTIONS: &[&str] = &["server", "client", "both"];
pub const TRANSPORTS: &[&str] = &["streamable_http", "sse"];
pub const EXPOSURES: &[&str] = &["internal", "public"];
pub const AUTHS: &[&str] = &["oidc", "app_password", "basic_auth", "bearer_token", "upstream_session", "none"];
pub const AUTH_SUBJECTS: &[&str] = &["user", "service_account", "administrator", "none"];
pub const IMPLEMENTATIONS: &[&str] = &["native", "plugin", "sidecar", "adapter", "external"];

/// Adapter types: the platform's list, plus `mcp_passthrough` (an adapter in front of the
/// app's own MCP server, used by the corpus's gitlab and mattermost roles).
pub const ADAPTER_TYPES: &[&str] = &[
    "openapi_allowlist",
    "graphql_allowlist",
    "named_query",
    "s3_prefix",
    "prometheus_readonly",
    "n8n_workflow",
    "resource_readonly",
    "mcp_passthrough",
];

/// Adapter types whose contract is a specification file the platform pins by digest.
pub const SPECIFICATION_ADAPTER_TYPES: &[&str] = &["openapi_allowlist", "graphql_allowlist", "mcp_passthrough"];

/// Where a provider's secret lives: the owner principal's tokens, or the role's own
/// `credentials` block.
pub const CREDENTIAL_SOURCES: &[&str] = &["token_store", "credentials"];

/// The one owner no provider may authenticate as (the platform never lends the
/// administrator's token).
pub const FORBIDDEN_OWNER: &str = "administrator";

/// The only scheme cordon presents: `Authorization: Bearer <credential>`.
pub const CORDON_AUTH: &str = "bearer_token";

/// The implementations whose endpoint is a container of its own in front of the app.
pub const SIDECAR_IMPLEMENTATIONS: &[&str] = &["adapter", "sidecar"];

/// The application id of the platform's Open WebUI role.
pub const OPENWEBUI_ROLE: &str = "web-app-openwebui";

pub fn is_server(direction: &str) -> bool {
    matches!(direction, "server" | "both")
}

pub fn is_client(direction: &str) -> bool {
    matches!(direction, "client" | "both")
}

/// "one of: a, b, c", for an error that names what was expected.
pub fn one_of(words: &[&str]) -> String {
    format!("one of: {}", words.join(", "))
}

/// Category prefixes of the platform's role ids (`meta/categories.yml`), longest first:
/// the entity name, which names a role's main service and its network, is the role id
/// without it.
const CATEGORY_PREFIXES: &[&str] = &[
    "sys-ctl-cln-",
    "sys-ctl-hlth-",
    "sys-ctl-bkp-",
    "sys-ctl-alm-",
    "sys-ctl-mtn-",
    "sys-ctl-rpr-",
    "sys-front-inj-",
    "web-app-",
    "web-svc-",
    "web-opt-",
    "svc-db-",
    "svc-ai-",
    "svc-bkp-",
    "svc-net-",
    "svc-dns-",
    "sys-svc-",
    "sys-ctl-",
    "sys-dns-",
    "sys-stk-",
    "sys-front-",
    "desk-",
    "dev-",
    "drv-",
    "gen-",
];

/// The entity name of a role: `web-app-gitea` → `gitea`; a role id with no category
/// prefix is its own entity.
pub fn entity(role: &str) -> &str {
    CATEGORY_PREFIXES.iter().find_map(|p| role.strip_prefix(p).filter(|rest| !rest.is_empty())).unwrap_or(role)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entity_strips_the_category() {
        assert_eq!(entity("web-app-gitea"), "gitea");
        assert_eq!(entity("svc-db-qdrant"), "qdrant");
        assert_eq!(entity("web-svc-libretranslate"), "libretranslate");
        assert_eq!(entity("native"), "native");
        assert_eq!(entity("web-app-"), "web-app-");
    }

    #[test]
    fn deployable_classifications_are_classifications() {
        assert!(DEPLOYABLE.iter().all(|c| CLASSIFICATIONS.contains(c)));
        assert!(SPECIFICATION_ADAPTER_TYPES.iter().all(|t| ADAPTER_TYPES.contains(t)));
    }
}
