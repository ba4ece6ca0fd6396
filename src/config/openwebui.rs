//! The `openwebui:` block of a scenario client: how cordon reaches that Open WebUI's API
//! from inside its container, the admin it acts as, the group each provider is granted
//! to, the model that scripts tool calls, and the identity provider users log in through.
//!
//! ```yaml
//! clients:
//!   webui:
//!     service: openwebui
//!     credentials: { native: native-token }
//!     openwebui:
//!       url: http://127.0.0.1:8080          # inside the container's own namespace
//!       admin: { email: admin@cordon.test, password: owui-admin-password }
//!       groups: { native: roles/native/mcp, wiki: roles/wiki/mcp }
//!       model: cordon-scripted
//!       oidc:
//!         control: http://idp:9000/control
//!         control_credential: idp-control-token
//! ```
//!
//! `groups` names, per provider, the Open WebUI group its connection is granted to. Every
//! provider that admits the client (and is not disabled) needs one; a group of a provider
//! the client may not use (disabled, or not admitting it) is "another app's group", the
//! one `openwebui::access::wrong_app` puts a user in.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;
use serde_saphyr::{Location, Spanned};
use url::Url;

use super::error::ConfigError;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct OpenWebuiFile {
    url: Option<Spanned<String>>,
    admin: Spanned<AdminFile>,
    #[serde(default)]
    groups: BTreeMap<String, Spanned<String>>,
    model: Option<String>,
    oidc: Option<Spanned<OidcFile>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct AdminFile {
    email: String,
    /// A credential id under `credentials`.
    password: Spanned<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct OidcFile {
    /// Open WebUI's path that starts the login.
    login_path: Option<String>,
    /// The identity provider's control endpoint (the fixture's `/control`).
    control: Spanned<String>,
    /// A credential id: the bearer the control endpoint accepts.
    control_credential: Spanned<String>,
}

#[derive(Debug, Clone)]
pub struct OpenWebui {
    /// Open WebUI's base URL inside its own container's network namespace.
    pub url: Url,
    pub admin_email: String,
    /// Credential id of the admin password.
    pub admin_password: String,
    /// provider id → the group name its connection is granted to.
    pub groups: BTreeMap<String, String>,
    /// The model id whose endpoint scripts tool calls (`openwebui::tool_call::*`).
    pub model: Option<String>,
    pub oidc: Option<Oidc>,
}

#[derive(Debug, Clone)]
pub struct Oidc {
    pub login_path: String,
    pub control: Url,
    pub control_credential: String,
}

pub const DEFAULT_URL: &str = "http://127.0.0.1:8080";
pub const DEFAULT_LOGIN_PATH: &str = "/oauth/oidc/login";

/// What validation needs to know about one provider, seen from this client.
pub(super) struct ProviderFacts<'a> {
    pub id: &'a str,
    pub admits_client: bool,
    pub disabled: bool,
}

/// Validates the block at `key` (`clients.<id>.openwebui`); every problem is one located
/// error.
pub(super) fn resolve(
    file: &Path,
    key: &str,
    block: &Spanned<OpenWebuiFile>,
    providers: &[ProviderFacts<'_>],
    credential_ids: &[&String],
) -> Result<OpenWebui, Vec<ConfigError>> {
    let raw = &block.value;
    let mut errors = Vec::new();
    let mut error = |at: &Location, k: String, m: String| errors.push(ConfigError::at(file, at, k, m));
    let url_at = raw.url.as_ref().map_or(block.referenced, |u| u.referenced);
    let url_text = raw.url.as_ref().map_or(DEFAULT_URL, |u| u.value.as_str());
    let url = match Url::parse(url_text) {
        Ok(u) if u.scheme() == "http" && u.host_str().is_some() => Some(u),
        _ => {
            error(&url_at, format!("{key}.url"), format!("`{url_text}` must be an http URL with a host"));
            None
        }
    };
    let defined: Vec<&str> = credential_ids.iter().map(|c| c.as_str()).collect();
    let mut references = vec![(&raw.admin.value.password, format!("{key}.admin.password"))];
    if let Some(oidc) = &raw.oidc {
        references.push((&oidc.value.control_credential, format!("{key}.oidc.control_credential")));
    }
    for (reference, k) in references {
        if !defined.contains(&reference.value.as_str()) {
            let message = format!(
                "credential `{}` is not defined under `credentials` (defined: {})",
                reference.value,
                defined.join(", ")
            );
            error(&reference.referenced, k, message);
        }
    }
    if !raw.admin.value.email.contains('@') {
        error(&raw.admin.referenced, format!("{key}.admin.email"), "the admin's email has no `@`".into());
    }
    for (provider, group) in &raw.groups {
        if !providers.iter().any(|p| p.id == provider) {
            let ids: Vec<&str> = providers.iter().map(|p| p.id).collect();
            let message = format!("`{provider}` is not a provider of this scenario (providers: {})", ids.join(", "));
            error(&group.referenced, format!("{key}.groups.{provider}"), message);
        }
        if group.value.trim().is_empty() {
            error(&group.referenced, format!("{key}.groups.{provider}"), "the group name is empty".into());
        }
    }
    for p in providers.iter().filter(|p| p.admits_client && !p.disabled) {
        if !raw.groups.contains_key(p.id) {
            let message =
                format!("provider `{}` admits this client but no group is named for its connection's grant", p.id);
            error(&block.referenced, format!("{key}.groups"), message);
        }
    }
    let oidc = raw.oidc.as_ref().and_then(|o| match Url::parse(&o.value.control.value) {
        Ok(control) if control.scheme() == "http" && control.host_str().is_some() => Some(Oidc {
            login_path: o.value.login_path.clone().unwrap_or_else(|| DEFAULT_LOGIN_PATH.into()),
            control,
            control_credential: o.value.control_credential.value.clone(),
        }),
        _ => {
            let message = format!("`{}` must be an http URL with a host", o.value.control.value);
            error(&o.value.control.referenced, format!("{key}.oidc.control"), message);
            None
        }
    });
    match url {
        Some(url) if errors.is_empty() => Ok(OpenWebui {
            url,
            admin_email: raw.admin.value.email.clone(),
            admin_password: raw.admin.value.password.value.clone(),
            groups: raw.groups.iter().map(|(p, g)| (p.clone(), g.value.clone())).collect(),
            model: raw.model.clone(),
            oidc,
        }),
        _ => Err(errors),
    }
}

/// One Open WebUI per scenario: its checks are named `openwebui::...` without a client.
pub(super) fn at_most_one(file: &Path, clients: &[(&String, Location)]) -> Vec<ConfigError> {
    clients
        .iter()
        .skip(1)
        .map(|(id, at)| {
            ConfigError::at(
                file,
                at,
                format!("clients.{id}.openwebui"),
                format!("only one client may have an `openwebui` block (`{}` has one already)", clients[0].0),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use crate::config::Scenario;
    use crate::secret::Redactor;

    const BASE: &str = r#"name: owui
credentials:
  native-token: { file: t }
  admin-pw: { file: t }
providers:
  native:
    url: http://native:8000/mcp
    credential: native-token
    allowed_consumers: [webui]
    tools: { allowlist: [add] }
  wiki:
    url: http://wiki:8000/mcp
    credential: native-token
    disabled: true
    tools: { allowlist: [] }
clients:
  webui:
    service: openwebui
    credentials: { native: native-token }
    openwebui:
"#;

    fn load(block: &str, extra: &str) -> Result<Scenario, Vec<String>> {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("t"), "a-credential-value\n").unwrap();
        let path = dir.path().join("s.yaml");
        std::fs::write(&path, format!("{BASE}{block}{extra}")).unwrap();
        Scenario::load(&path, &Redactor::new())
            .map_err(|e| e.0.iter().map(|e| format!("{}:{}: {}: {}", e.line, e.column, e.key, e.message)).collect())
    }

    #[test]
    fn a_block_resolves_with_defaults() {
        let block =
            "      admin: { email: admin@x.test, password: admin-pw }\n      groups: { native: roles/native/mcp }\n";
        let s = load(block, "").unwrap();
        let o = s.clients[0].openwebui.as_ref().unwrap();
        assert_eq!(o.url.as_str(), "http://127.0.0.1:8080/");
        assert_eq!(o.groups["native"], "roles/native/mcp");
        assert!(o.oidc.is_none() && o.model.is_none());
    }

    #[test]
    fn every_problem_is_located() {
        let block = concat!(
            "      url: ftp://x\n",
            "      admin: { email: nobody, password: missing-pw }\n",
            "      groups: { ghost: roles/ghost/mcp }\n",
            "      oidc: { control: not-a-url, control_credential: nope }\n",
        );
        let errors = load(block, "").unwrap_err();
        let text = errors.join("\n");
        for expected in [
            "clients.webui.openwebui.url: `ftp://x` must be an http URL",
            "clients.webui.openwebui.admin.password: credential `missing-pw` is not defined",
            "clients.webui.openwebui.oidc.control_credential: credential `nope` is not defined",
            "clients.webui.openwebui.admin.email: the admin's email has no `@`",
            "clients.webui.openwebui.groups.ghost: `ghost` is not a provider of this scenario",
            "clients.webui.openwebui.groups: provider `native` admits this client but no group is named",
            "clients.webui.openwebui.oidc.control: `not-a-url` must be an http URL",
        ] {
            assert!(text.contains(expected), "missing {expected:?} in:\n{text}");
        }
        assert!(errors.iter().all(|e| !e.starts_with("0:")), "every error has a line: {text}");
    }

    #[test]
    fn unknown_keys_are_rejected_and_one_open_webui_per_scenario() {
        let block =
            "      admin: { email: a@x.test, password: admin-pw }\n      groups: { native: g }\n      colour: red\n";
        assert!(load(block, "").unwrap_err().join("\n").contains("colour"));
        let second = "  other:\n    openwebui:\n      admin: { email: a@x.test, password: admin-pw }\n";
        let ok = "      admin: { email: a@x.test, password: admin-pw }\n      groups: { native: g }\n";
        let text = load(ok, second).unwrap_err().join("\n");
        assert!(text.contains("only one client may have an `openwebui` block"), "{text}");
    }
}
