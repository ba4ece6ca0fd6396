//! The `oidc:` part of an `openwebui:` block: how `openwebui::access::last_group_removed::oidc`
//! gets a test user into (and out of) a group at the identity provider, and logs it in.
//!
//! ```yaml
//! oidc:
//!   login_path: /oauth/oidc/login          # Open WebUI's path that starts the login
//!   # cordon's fixture identity provider: its control endpoint sets the groups claim
//!   control: http://idp:9000/control
//!   control_credential: idp-control-token
//!   # or a Keycloak realm, through its admin REST API (instead of control):
//!   keycloak:
//!     url: http://keycloak:8080              # as Open WebUI's namespace reaches it
//!     realm: platform
//!     admin: { realm: master, client_id: admin-cli, username: admin, password: kc-admin-password }
//!     # or a service account: admin: { client_id: cordon, client_secret: kc-cordon-secret }
//!     groups: { roles/native/mcp: /roles/native/mcp }   # Open WebUI group → Keycloak group path
//! ```
//!
//! With Keycloak, cordon creates a test user (email, first and last name, a random password),
//! puts it in the Keycloak group behind the Open WebUI group (its path; `/<name>` unless
//! `groups` maps it), logs in through Keycloak's own login form, removes the membership,
//! logs in again, and deletes the user.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_saphyr::{Location, Spanned};
use url::Url;

pub const DEFAULT_LOGIN_PATH: &str = "/oauth/oidc/login";

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct OidcFile {
    login_path: Option<String>,
    /// The fixture identity provider's control endpoint.
    control: Option<Spanned<String>>,
    /// A credential id: the bearer the control endpoint accepts.
    control_credential: Option<Spanned<String>>,
    keycloak: Option<Spanned<KeycloakFile>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct KeycloakFile {
    url: Spanned<String>,
    realm: String,
    admin: Spanned<KeycloakAdminFile>,
    #[serde(default)]
    groups: BTreeMap<String, String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct KeycloakAdminFile {
    realm: Option<String>,
    client_id: Option<String>,
    username: Option<String>,
    /// Credential ids.
    password: Option<Spanned<String>>,
    client_secret: Option<Spanned<String>>,
}

#[derive(Debug, Clone)]
pub struct Oidc {
    pub login_path: String,
    pub admin: IdpAdmin,
}

/// How cordon changes the test user's groups at the identity provider.
#[derive(Debug, Clone)]
pub enum IdpAdmin {
    /// The fixture's control endpoint and the credential id of its bearer.
    Control {
        url: Url,
        credential: String,
    },
    Keycloak(Keycloak),
}

impl IdpAdmin {
    /// Where the identity provider is reached (its host is the provider's address set).
    pub fn url(&self) -> &Url {
        match self {
            IdpAdmin::Control { url, .. } => url,
            IdpAdmin::Keycloak(k) => &k.url,
        }
    }
}

#[derive(Debug, Clone)]
pub struct Keycloak {
    pub url: Url,
    pub realm: String,
    /// The realm the admin signs in to (`master` unless said).
    pub admin_realm: String,
    pub client_id: String,
    pub grant: KeycloakGrant,
    /// Open WebUI group name → Keycloak group path.
    pub groups: BTreeMap<String, String>,
}

impl Keycloak {
    /// The Keycloak group path behind an Open WebUI group.
    pub fn group_path(&self, group: &str) -> String {
        self.groups.get(group).cloned().unwrap_or_else(|| format!("/{}", group.trim_start_matches('/')))
    }
}

/// How cordon gets an admin token: credential ids, never values.
#[derive(Debug, Clone)]
pub enum KeycloakGrant {
    Password { username: String, password: String },
    ClientCredentials { secret: String },
}

/// Every credential id the block names, with its key, for the reference check.
pub(super) fn credential_references(o: &OidcFile, key: &str) -> Vec<(Spanned<String>, String)> {
    let mut out = Vec::new();
    if let Some(c) = &o.control_credential {
        out.push((c.clone(), format!("{key}.control_credential")));
    }
    if let Some(k) = &o.keycloak {
        let admin = &k.value.admin.value;
        for (c, name) in [(&admin.password, "password"), (&admin.client_secret, "client_secret")] {
            if let Some(c) = c {
                out.push((c.clone(), format!("{key}.keycloak.admin.{name}")));
            }
        }
    }
    out
}

fn http_url(text: &str) -> Option<Url> {
    Url::parse(text).ok().filter(|u| matches!(u.scheme(), "http" | "https") && u.host_str().is_some())
}

/// Validates the block at `key`; every problem goes to `error` with its location.
pub(super) fn resolve(
    block: &Spanned<OidcFile>,
    key: &str,
    error: &mut dyn FnMut(&Location, String, String),
) -> Option<Oidc> {
    let o = &block.value;
    let login_path = o.login_path.clone().unwrap_or_else(|| DEFAULT_LOGIN_PATH.into());
    let admin = match (&o.control, &o.control_credential, &o.keycloak) {
        (Some(control), Some(credential), None) => match http_url(&control.value) {
            Some(url) => Some(IdpAdmin::Control { url, credential: credential.value.clone() }),
            None => {
                let message = format!("`{}` must be an http URL with a host", control.value);
                error(&control.referenced, format!("{key}.control"), message);
                None
            }
        },
        (None, None, Some(k)) => keycloak(k, &format!("{key}.keycloak"), error).map(IdpAdmin::Keycloak),
        (Some(_), None, None) | (None, Some(_), None) => {
            let message = "`control` and `control_credential` go together".to_string();
            error(&block.referenced, key.to_string(), message);
            None
        }
        (None, None, None) | (Some(_), _, Some(_)) | (_, Some(_), Some(_)) => {
            let message = "name exactly one way to change the test user's groups: `control` (with \
                           `control_credential`) or `keycloak`"
                .to_string();
            error(&block.referenced, key.to_string(), message);
            None
        }
    };
    admin.map(|admin| Oidc { login_path, admin })
}

fn keycloak(
    k: &Spanned<KeycloakFile>,
    key: &str,
    error: &mut dyn FnMut(&Location, String, String),
) -> Option<Keycloak> {
    let file = &k.value;
    let url = http_url(&file.url.value);
    if url.is_none() {
        error(
            &file.url.referenced,
            format!("{key}.url"),
            format!("`{}` must be an http URL with a host", file.url.value),
        );
    }
    if file.realm.trim().is_empty() || file.realm.contains('/') {
        error(&k.referenced, format!("{key}.realm"), format!("`{}` is not a realm name", file.realm));
    }
    let admin = &file.admin.value;
    let grant = match (&admin.username, &admin.password, &admin.client_secret) {
        (Some(username), Some(password), None) => {
            Some(KeycloakGrant::Password { username: username.clone(), password: password.value.clone() })
        }
        (None, None, Some(secret)) => Some(KeycloakGrant::ClientCredentials { secret: secret.value.clone() }),
        _ => {
            let message = "give `username` and `password` (a password grant) or `client_secret` (a service \
                           account), not both"
                .to_string();
            error(&file.admin.referenced, format!("{key}.admin"), message);
            None
        }
    };
    Some(Keycloak {
        url: url?,
        realm: file.realm.clone(),
        admin_realm: admin.realm.clone().unwrap_or_else(|| "master".into()),
        client_id: admin.client_id.clone().unwrap_or_else(|| "admin-cli".into()),
        grant: grant?,
        groups: file.groups.clone(),
    })
}
