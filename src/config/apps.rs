//! Pieces the client-application blocks (`flowise:`, `n8n:`) share: the app's URL inside
//! its own container, a login made of an email and a credential reference, the ownership
//! prefix of what the platform manages.

use std::path::Path;

use serde::Deserialize;
use serde_saphyr::{Location, Spanned};
use url::Url;

use super::error::ConfigError;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct LoginFile {
    email: String,
    /// A credential id under `credentials`.
    password: Spanned<String>,
}

/// The app's base URL (`<key>.url`, or `default`): http with a host.
pub(crate) fn local_url(
    file: &Path,
    key: &str,
    block_at: Location,
    url: Option<&Spanned<String>>,
    default: &str,
    errors: &mut Vec<ConfigError>,
) -> Option<Url> {
    let at = url.map_or(block_at, |u| u.referenced);
    let text = url.map_or(default, |u| u.value.as_str());
    match Url::parse(text) {
        Ok(u) if u.scheme() == "http" && u.host_str().is_some() => Some(u),
        _ => {
            errors.push(ConfigError::at(
                file,
                &at,
                format!("{key}.url"),
                format!("`{text}` must be an http URL with a host"),
            ));
            None
        }
    }
}

/// A credential reference at `key` that must name one of `credential_ids`.
pub(crate) fn reference(
    file: &Path,
    key: &str,
    reference: &Spanned<String>,
    credential_ids: &[&String],
    errors: &mut Vec<ConfigError>,
) -> Option<String> {
    if credential_ids.iter().any(|c| **c == reference.value) {
        return Some(reference.value.clone());
    }
    let defined: Vec<&str> = credential_ids.iter().map(|c| c.as_str()).collect();
    let message = format!(
        "credential `{}` is not defined under `credentials` (defined: {})",
        reference.value,
        defined.join(", ")
    );
    errors.push(ConfigError::at(file, &reference.referenced, key, message));
    None
}

/// `<key>: { email, password }`: the email and the password's credential id.
pub(crate) fn login(
    file: &Path,
    key: &str,
    login: &Spanned<LoginFile>,
    credential_ids: &[&String],
    errors: &mut Vec<ConfigError>,
) -> Option<(String, String)> {
    if !login.value.email.contains('@') {
        errors.push(ConfigError::at(file, &login.referenced, format!("{key}.email"), "the email has no `@`"));
    }
    let password = reference(file, &format!("{key}.password"), &login.value.password, credential_ids, errors)?;
    Some((login.value.email.clone(), password))
}

/// The ownership prefix (`<key>.prefix`, or `default`): not empty, no control character.
pub(crate) fn prefix(
    file: &Path,
    key: &str,
    prefix: Option<&Spanned<String>>,
    default: &str,
    errors: &mut Vec<ConfigError>,
) -> String {
    let Some(p) = prefix else { return default.to_string() };
    if p.value.trim().is_empty() || p.value.chars().any(char::is_control) {
        let message = "the prefix must be a non-empty name without control characters".to_string();
        errors.push(ConfigError::at(file, &p.referenced, format!("{key}.prefix"), message));
    }
    p.value.clone()
}

/// `<key>.nonce_arguments`: provider id → the argument of its read whose value the
/// tool's result carries back; every provider must be one of the scenario's.
pub(crate) fn nonce_arguments(
    file: &Path,
    key: &str,
    map: &std::collections::BTreeMap<String, Spanned<String>>,
    provider_ids: &[&str],
    errors: &mut Vec<ConfigError>,
) -> std::collections::BTreeMap<String, String> {
    for (provider, argument) in map {
        if !provider_ids.contains(&provider.as_str()) {
            let message =
                format!("`{provider}` is not a provider of this scenario (providers: {})", provider_ids.join(", "));
            errors.push(ConfigError::at(
                file,
                &argument.referenced,
                format!("{key}.nonce_arguments.{provider}"),
                message,
            ));
        }
    }
    map.iter().map(|(p, a)| (p.clone(), a.value.clone())).collect()
}

/// One client per scenario may carry a `block` (`openwebui`, `flowise`, `n8n`): its checks are named
/// `<block>::...` without the client.
pub(crate) fn at_most_one(file: &Path, block: &str, clients: &[(&String, Location)]) -> Vec<ConfigError> {
    clients
        .iter()
        .skip(1)
        .map(|(id, at)| {
            ConfigError::at(
                file,
                at,
                format!("clients.{id}.{block}"),
                format!(
                    "only one client may have {} `{block}` block (`{}` has one already)",
                    if block.starts_with(['a', 'e', 'i', 'o', 'u']) { "an" } else { "a" },
                    clients[0].0
                ),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use crate::config::Scenario;

    const BASE: &str = r#"name: apps
credentials:
  t: { file: t }
providers:
  native:
    url: http://native:8000/mcp
    credential: t
    allowed_consumers: [flowise, n8n]
    tools: { allowlist: [add] }
  n8n-tools:
    url: http://n8n:5678/mcp/x
    service: n8n
    credential: t
    tools: { allowlist: [calculator] }
clients:
"#;

    fn load(clients: &str) -> Result<Scenario, String> {
        crate::config::testing::load(&format!("{BASE}{clients}")).map_err(|e| e.join("\n"))
    }

    #[test]
    fn blocks_resolve_with_defaults() {
        let s = load(concat!(
            "  flowise:\n    flowise: { admin: { email: a@x.test, password: t } }\n",
            "  n8n:\n    n8n: { api_key: t, server: n8n-tools }\n",
        ))
        .unwrap();
        let f = s.clients.iter().find_map(|c| c.flowise.clone()).unwrap();
        assert_eq!((f.url.as_str(), f.prefix.as_str()), ("http://127.0.0.1:3000/", "infinito:"));
        let n = s.clients.iter().find_map(|c| c.n8n.clone()).unwrap();
        assert_eq!((n.url.as_str(), n.server.as_deref()), ("http://127.0.0.1:5678/", Some("n8n-tools")));
    }

    #[test]
    fn every_problem_is_located() {
        let text = load(concat!(
            "  flowise:\n    flowise:\n      url: ftp://x\n      admin: { email: nobody, password: nope }\n      prefix: \"\"\n",
            "  n8n:\n    n8n:\n      api_key: missing\n      server: native\n",
            "  other:\n    n8n:\n      api_key: t\n      server: ghost\n",
        ))
        .unwrap_err();
        for expected in [
            "clients.flowise.flowise.url: `ftp://x` must be an http URL",
            "clients.flowise.flowise.admin.email: the email has no `@`",
            "clients.flowise.flowise.admin.password: credential `nope` is not defined",
            "clients.flowise.flowise.prefix: the prefix must be a non-empty name",
            "clients.n8n.n8n.api_key: credential `missing` is not defined",
            "clients.n8n.n8n.server: provider `native` runs as service `native`, not as this client's service `n8n`",
            "clients.other.n8n.server: `ghost` is not a provider of this scenario",
            "clients.other.n8n: only one client may have a `n8n` block (`n8n` has one already)",
        ] {
            assert!(text.contains(expected), "missing {expected:?} in:\n{text}");
        }
        assert!(text.lines().all(|l| !l.starts_with("0:")), "every error has a line: {text}");
    }

    #[test]
    fn unknown_keys_are_rejected() {
        let text =
            load("  flowise:\n    flowise: { admin: { email: a@x.test, password: t }, colour: red }\n").unwrap_err();
        assert!(text.contains("colour"), "{text}");
    }
}
