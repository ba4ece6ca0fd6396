//! The `flowise:` block of a scenario client: how cordon reaches that Flowise's API from
//! inside its container, the admin it signs in as, the ownership marker of the entries
//! and chatflows the platform manages, and the API keys allowed to see them.
//!
//! ```yaml
//! clients:
//!   flowise:
//!     service: flowise
//!     credentials: { native: native-token }
//!     flowise:
//!       url: http://127.0.0.1:3000          # inside the container's own namespace
//!       admin: { email: admin@cordon.test, password: flowise-admin-password }
//!       prefix: "infinito:"                 # the platform's ownership marker (default)
//!       admin_keys: [reconciler]            # API keys (by name) that may see the registry
//!       nonce_arguments: { native: text }   # the read argument its result echoes
//! ```
//!
//! Every admitted Streamable-HTTP provider gets one custom MCP server entry named
//! `<prefix><provider>` and one chatflow of the same name that calls its read tool.

use std::path::Path;

use serde::Deserialize;
use serde_saphyr::Spanned;
use url::Url;

use crate::config::apps::{self, LoginFile};
use crate::config::error::ConfigError;

pub const DEFAULT_URL: &str = "http://127.0.0.1:3000";
pub const DEFAULT_PREFIX: &str = "infinito:";

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FlowiseFile {
    url: Option<Spanned<String>>,
    admin: Spanned<LoginFile>,
    prefix: Option<Spanned<String>>,
    #[serde(default)]
    nonce_arguments: std::collections::BTreeMap<String, Spanned<String>>,
    #[serde(default)]
    admin_keys: Vec<String>,
}

#[derive(Debug, Clone)]
pub struct Flowise {
    /// Flowise's base URL inside its own container's network namespace.
    pub url: Url,
    pub admin_email: String,
    /// Credential id of the admin password.
    pub admin_password: String,
    /// provider id → the argument of its read whose value the result echoes: a fresh
    /// nonce is appended to it and must come back in the client's record of the call.
    pub nonce_arguments: std::collections::BTreeMap<String, String>,
    /// Names of managed entries and chatflows start with it.
    pub prefix: String,
    /// API keys (by name) that may see the managed MCP servers: the platform's own.
    pub admin_keys: Vec<String>,
}

/// Validates the block at `key` (`clients.<id>.flowise`).
pub(crate) fn resolve(
    file: &Path,
    key: &str,
    block: &Spanned<FlowiseFile>,
    provider_ids: &[&str],
    credential_ids: &[&String],
) -> Result<Flowise, Vec<ConfigError>> {
    let raw = &block.value;
    let mut errors = Vec::new();
    let url = apps::local_url(file, key, block.referenced, raw.url.as_ref(), DEFAULT_URL, &mut errors);
    let admin = apps::login(file, &format!("{key}.admin"), &raw.admin, credential_ids, &mut errors);
    let prefix = apps::prefix(file, key, raw.prefix.as_ref(), DEFAULT_PREFIX, &mut errors);
    let nonce_arguments = apps::nonce_arguments(file, key, &raw.nonce_arguments, provider_ids, &mut errors);
    match (url, admin) {
        (Some(url), Some((admin_email, admin_password))) if errors.is_empty() => Ok(Flowise {
            url,
            admin_email,
            admin_password,
            prefix,
            nonce_arguments,
            admin_keys: raw.admin_keys.clone(),
        }),
        _ => Err(errors),
    }
}
