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
//!       nonce_arguments: { native: text }   # the read argument its result echoes
//!       oidc:
//!         control: http://idp:9000/control
//!         control_credential: idp-control-token
//! ```
//!
//! `groups` names, per provider, the Open WebUI group its connection is granted to. Every
//! provider that admits the client (and is not disabled) needs one; a group of a provider
//! the client may not use (disabled, or not admitting it) is "another app's group", the
//! one `openwebui::access::wrong_app` puts a user in.
//!
//! `nonce_arguments` names, per provider, the argument of its `read` whose value the tool's
//! result carries back (an echo): `openwebui::tool_call` appends a fresh nonce to it and
//! requires the nonce in the result Open WebUI recorded. A read without one is proven by
//! Open WebUI's record of the call and its result alone.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;
use serde_saphyr::{Location, Spanned};
use url::Url;

use crate::config::error::ConfigError;

mod oidc;
pub use oidc::{IdpAdmin, Keycloak, KeycloakGrant, Oidc};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct OpenWebuiFile {
    url: Option<Spanned<String>>,
    admin: Spanned<AdminFile>,
    #[serde(default)]
    groups: BTreeMap<String, Spanned<String>>,
    model: Option<String>,
    #[serde(default)]
    nonce_arguments: BTreeMap<String, Spanned<String>>,
    oidc: Option<Spanned<oidc::OidcFile>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct AdminFile {
    email: String,
    /// A credential id under `credentials`.
    password: Spanned<String>,
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
    /// The model `openwebui::tool_call::*` asks for a tool call.
    pub model: Option<String>,
    /// provider id → the argument of its read whose value the result echoes.
    pub nonce_arguments: BTreeMap<String, String>,
    pub oidc: Option<Oidc>,
}

pub const DEFAULT_URL: &str = "http://127.0.0.1:8080";

/// What validation needs to know about one provider, seen from this client.
pub(crate) struct ProviderFacts<'a> {
    pub id: &'a str,
    pub admits_client: bool,
    pub disabled: bool,
    /// The arguments of its `read`, if it declares one.
    pub read_arguments: Option<&'a serde_json::Value>,
}

/// Validates the block at `key` (`clients.<id>.openwebui`); every problem is one located
/// error.
pub(crate) fn resolve(
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
    let mut references = vec![(raw.admin.value.password.clone(), format!("{key}.admin.password"))];
    if let Some(o) = &raw.oidc {
        references.extend(oidc::credential_references(&o.value, &format!("{key}.oidc")));
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
    for (provider, argument) in &raw.nonce_arguments {
        let at = format!("{key}.nonce_arguments.{provider}");
        match providers.iter().find(|p| p.id == provider).map(|p| p.read_arguments) {
            None => error(&argument.referenced, at, format!("`{provider}` is not a provider of this scenario")),
            Some(None) => error(&argument.referenced, at, format!("provider `{provider}` declares no `read`")),
            Some(Some(arguments)) if !arguments.get(&argument.value).is_some_and(serde_json::Value::is_string) => {
                let names: Vec<&str> =
                    arguments.as_object().map(|o| o.keys().map(String::as_str).collect()).unwrap_or_default();
                let message = format!(
                    "the read of `{provider}` has no string argument `{}` to carry a nonce (arguments: {})",
                    argument.value,
                    names.join(", ")
                );
                error(&argument.referenced, at, message);
            }
            Some(Some(_)) => {}
        }
    }
    let oidc = raw.oidc.as_ref().and_then(|o| oidc::resolve(o, &format!("{key}.oidc"), &mut error));
    match url {
        Some(url) if errors.is_empty() => Ok(OpenWebui {
            url,
            admin_email: raw.admin.value.email.clone(),
            admin_password: raw.admin.value.password.value.clone(),
            groups: raw.groups.iter().map(|(p, g)| (p.clone(), g.value.clone())).collect(),
            model: raw.model.clone(),
            nonce_arguments: raw.nonce_arguments.iter().map(|(p, a)| (p.clone(), a.value.clone())).collect(),
            oidc,
        }),
        _ => Err(errors),
    }
}

/// One Open WebUI per scenario: its checks are named `openwebui::...` without a client.
pub(crate) fn at_most_one(file: &Path, clients: &[(&String, Location)]) -> Vec<ConfigError> {
    crate::config::apps::at_most_one(file, "openwebui", clients)
}

#[cfg(test)]
mod tests {
    use crate::config::Scenario;

    /// After [`crate::config::testing::native_for`].
    const BASE_REST: &str = r#"  wiki:
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
        let head = crate::config::testing::native_for("owui", "webui", "{ text: hi, n: 1 }");
        crate::config::testing::load(&format!("{head}{BASE_REST}{block}{extra}"))
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
            "      nonce_arguments: { native: n, wiki: text, ghost: x }\n",
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
            "clients.webui.openwebui.nonce_arguments.native: the read of `native` has no string argument `n` to carry a nonce (arguments: n, text)",
            "clients.webui.openwebui.nonce_arguments.wiki: provider `wiki` declares no `read`",
            "clients.webui.openwebui.nonce_arguments.ghost: `ghost` is not a provider of this scenario",
        ] {
            assert!(text.contains(expected), "missing {expected:?} in:\n{text}");
        }
        assert!(errors.iter().all(|e| !e.starts_with("0:")), "every error has a line: {text}");
    }

    #[test]
    fn a_keycloak_realm_changes_the_groups_instead_of_a_control_endpoint() {
        let block = concat!(
            "      admin: { email: a@x.test, password: admin-pw }\n",
            "      groups: { native: roles/native/mcp }\n",
            "      oidc:\n",
            "        keycloak:\n",
            "          url: http://keycloak:8080\n",
            "          realm: platform\n",
            "          admin: { username: admin, password: admin-pw }\n",
            "          groups: { roles/native/mcp: /mcp/native }\n",
        );
        let s = load(block, "").unwrap();
        let o = s.clients[0].openwebui.as_ref().unwrap().oidc.as_ref().unwrap();
        let crate::config::IdpAdmin::Keycloak(k) = &o.admin else { panic!("keycloak") };
        assert_eq!(
            (k.realm.as_str(), k.admin_realm.as_str(), k.client_id.as_str()),
            ("platform", "master", "admin-cli")
        );
        assert_eq!(o.admin.url().as_str(), "http://keycloak:8080/");
        assert_eq!(k.group_path("roles/native/mcp"), "/mcp/native");
        assert_eq!(k.group_path("roles/files/mcp"), "/roles/files/mcp");
        assert!(
            matches!(&k.grant, crate::config::KeycloakGrant::Password { username, password } if username == "admin" && password == "admin-pw")
        );

        let both = concat!(
            "      admin: { email: a@x.test, password: admin-pw }\n",
            "      groups: { native: g }\n",
            "      oidc:\n",
            "        control: http://idp:9000/control\n",
            "        control_credential: admin-pw\n",
            "        keycloak: { url: 'ftp://kc', realm: 'a/b', admin: { username: u, client_secret: missing } }\n",
        );
        let text = load(both, "").unwrap_err().join("\n");
        for expected in [
            "clients.webui.openwebui.oidc: name exactly one way to change the test user's groups",
            "clients.webui.openwebui.oidc.keycloak.admin.client_secret: credential `missing` is not defined",
        ] {
            assert!(text.contains(expected), "missing {expected:?} in:\n{text}");
        }
        let bad = concat!(
            "      admin: { email: a@x.test, password: admin-pw }\n",
            "      groups: { native: g }\n",
            "      oidc:\n",
            "        keycloak: { url: 'ftp://kc', realm: 'a/b', admin: { username: u, client_secret: admin-pw } }\n",
        );
        let text = load(bad, "").unwrap_err().join("\n");
        for expected in [
            "clients.webui.openwebui.oidc.keycloak.url: `ftp://kc` must be an http URL",
            "clients.webui.openwebui.oidc.keycloak.realm: `a/b` is not a realm name",
            "clients.webui.openwebui.oidc.keycloak.admin: give `username` and `password`",
        ] {
            assert!(text.contains(expected), "missing {expected:?} in:\n{text}");
        }
        let half = "      admin: { email: a@x.test, password: admin-pw }\n      groups: { native: g }\n      oidc: { control: http://idp:9000/control }\n";
        assert!(load(half, "").unwrap_err().join("\n").contains("`control` and `control_credential` go together"));
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
