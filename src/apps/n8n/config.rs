//! The `n8n:` block of a scenario client: how cordon reaches that n8n's API from inside
//! its container, the least-scope API key it reads with, the ownership marker of the
//! workflows the platform manages, and the provider n8n itself serves through an MCP
//! Server Trigger.
//!
//! ```yaml
//! clients:
//!   n8n:
//!     service: n8n
//!     credentials: { legacy: legacy-token }
//!     n8n:
//!       url: http://127.0.0.1:5678          # inside the container's own namespace
//!       api_key: n8n-api-key                # credential id (workflow/execution scopes)
//!       prefix: "infinito:"                 # the platform's ownership marker (default)
//!       server: n8n-tools                   # a provider whose service is this client's
//!       nonce_arguments: { notes: text }    # the read argument its result echoes
//! ```
//!
//! Every admitted provider gets one workflow named `<prefix><provider>`: a Webhook that
//! starts an AI Agent whose tool is an MCP Client Tool node for that provider.

use std::path::Path;

use serde::Deserialize;
use serde_saphyr::Spanned;
use url::Url;

use crate::config::apps;
use crate::config::error::ConfigError;

pub const DEFAULT_URL: &str = "http://127.0.0.1:5678";
pub const DEFAULT_PREFIX: &str = "infinito:";

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct N8nFile {
    url: Option<Spanned<String>>,
    api_key: Spanned<String>,
    prefix: Option<Spanned<String>>,
    #[serde(default)]
    nonce_arguments: std::collections::BTreeMap<String, Spanned<String>>,
    server: Option<Spanned<String>>,
}

#[derive(Debug, Clone)]
pub struct N8n {
    /// n8n's base URL inside its own container's network namespace.
    pub url: Url,
    /// Credential id of the public API key.
    pub api_key: String,
    /// provider id → the argument of its read whose value the result echoes: a fresh
    /// nonce is appended to it and must come back in the client's record of the call.
    pub nonce_arguments: std::collections::BTreeMap<String, String>,
    /// Names of managed workflows start with it.
    pub prefix: String,
    /// The provider n8n serves through its MCP Server Trigger, if any.
    pub server: Option<String>,
}

/// What validation needs to know about one provider.
pub(crate) struct ProviderFacts<'a> {
    pub id: &'a str,
    pub service: &'a str,
}

/// Validates the block at `key` (`clients.<id>.n8n`) of a client running as `service`.
pub(crate) fn resolve(
    file: &Path,
    key: &str,
    block: &Spanned<N8nFile>,
    service: &str,
    providers: &[ProviderFacts<'_>],
    credential_ids: &[&String],
) -> Result<N8n, Vec<ConfigError>> {
    let raw = &block.value;
    let mut errors = Vec::new();
    let url = apps::local_url(file, key, block.referenced, raw.url.as_ref(), DEFAULT_URL, &mut errors);
    let api_key = apps::reference(file, &format!("{key}.api_key"), &raw.api_key, credential_ids, &mut errors);
    let prefix = apps::prefix(file, key, raw.prefix.as_ref(), DEFAULT_PREFIX, &mut errors);
    let ids: Vec<&str> = providers.iter().map(|p| p.id).collect();
    let nonce_arguments = apps::nonce_arguments(file, key, &raw.nonce_arguments, &ids, &mut errors);
    if let Some(server) = &raw.server {
        match providers.iter().find(|p| p.id == server.value) {
            None => {
                let ids: Vec<&str> = providers.iter().map(|p| p.id).collect();
                let message =
                    format!("`{}` is not a provider of this scenario (providers: {})", server.value, ids.join(", "));
                errors.push(ConfigError::at(file, &server.referenced, format!("{key}.server"), message));
            }
            Some(p) if p.service != service => {
                let message = format!(
                    "provider `{}` runs as service `{}`, not as this client's service `{service}`: n8n serves only its own MCP Server Trigger",
                    p.id, p.service
                );
                errors.push(ConfigError::at(file, &server.referenced, format!("{key}.server"), message));
            }
            Some(_) => {}
        }
    }
    match (url, api_key) {
        (Some(url), Some(api_key)) if errors.is_empty() => {
            Ok(N8n { url, api_key, prefix, nonce_arguments, server: raw.server.as_ref().map(|s| s.value.clone()) })
        }
        _ => Err(errors),
    }
}
