//! Changing a test user's groups at the identity provider, for the OIDC access case:
//! through cordon's fixture control endpoint (`POST users {email, groups}`, which the
//! fixture's `/authorize` then approves at once), or through a Keycloak realm's admin REST
//! API (a real user with a password, group memberships by group path, a login through
//! Keycloak's own form). Runs in Open WebUI's namespace, names resolved there.

use reqwest::Method;
use serde_json::{Value, json};
use url::Url;

use super::oidc::{Idp, pinned_client};
use crate::apps::webapp::exchange;
use crate::config::{IdpAdmin, Keycloak, KeycloakGrant};
use crate::mcp::Limits;
use crate::secret::{Redactor, Secret};
use crate::text;

/// The identity provider's admin side, with its secrets.
pub struct Admin<'a> {
    pub idp: &'a Idp,
    pub how: &'a IdpAdmin,
    /// The control bearer, the Keycloak admin password or client secret.
    pub secret: &'a Secret,
    pub limits: &'a Limits,
    pub redactor: &'a Redactor,
}

/// What one HTTP call answered.
struct Reply {
    status: u16,
    body: Vec<u8>,
    location: Option<String>,
}

impl Reply {
    fn json(&self) -> Option<Value> {
        serde_json::from_slice(&self.body).ok()
    }

    fn detail(&self) -> String {
        text::body_excerpt(&self.body, 200)
    }
}

enum Body {
    None,
    Json(Value),
    Form(String),
}

impl Admin<'_> {
    /// Makes `email` a test user whose groups at the identity provider are exactly
    /// `groups` (Open WebUI group names); returns the password its login form wants, or
    /// `None` when the provider approves the user by `login_hint` (the fixture).
    pub async fn set_groups(&self, email: &str, groups: &[String]) -> Result<Option<Secret>, String> {
        match self.how {
            IdpAdmin::Control { .. } => {
                let body = json!({"email": email, "name": email, "groups": groups});
                self.control(Method::POST, "users", Body::Json(body)).await.map(|_| None)
            }
            IdpAdmin::Keycloak(k) => self.keycloak_set(k, email, groups).await.map(Some),
        }
    }

    /// Removes the test user (best effort: it may never have been made).
    pub async fn forget(&self, email: &str) -> Result<(), String> {
        match self.how {
            IdpAdmin::Control { .. } => self.control(Method::DELETE, &format!("users/{email}"), Body::None).await,
            IdpAdmin::Keycloak(k) => {
                let token = self.keycloak_token(k).await?;
                match self.keycloak_user(k, &token, email).await? {
                    Some(id) => {
                        let path = format!("users/{id}");
                        self.expect(k, &token, Method::DELETE, &path, Body::None, &[204]).await.map(drop)
                    }
                    None => Ok(()),
                }
            }
        }
    }

    async fn call(&self, method: Method, url: &Url, bearer: Option<&Secret>, body: Body) -> Result<Reply, String> {
        let client = pinned_client(self.limits, url, self.idp.addrs[0])?;
        let mut request = client.request(method.clone(), url.clone());
        if let Some(b) = bearer {
            request = request.bearer_auth(b.expose());
        }
        request = match body {
            Body::None => request,
            Body::Json(v) => request.json(&v),
            Body::Form(f) => request.header("content-type", "application/x-www-form-urlencoded").body(f),
        };
        let answer = exchange(request, &method, url.path(), self.limits).await.map_err(|e| e.to_string())?;
        Ok(Reply { status: answer.status, body: answer.body, location: answer.location })
    }

    async fn control(&self, method: Method, path: &str, body: Body) -> Result<(), String> {
        let url = below(self.how.url(), path)?;
        let reply = self.call(method.clone(), &url, Some(self.secret), body).await?;
        if reply.status == 200 {
            Ok(())
        } else {
            Err(format!(
                "the identity provider's control endpoint answered {} to {method} {}: {}",
                reply.status,
                url.path(),
                reply.detail()
            ))
        }
    }

    /// An admin access token (password or client-credentials grant), registered for
    /// redaction.
    async fn keycloak_token(&self, k: &Keycloak) -> Result<Secret, String> {
        let url = below(&k.url, &format!("realms/{}/protocol/openid-connect/token", k.admin_realm))?;
        let mut form = url::form_urlencoded::Serializer::new(String::new());
        form.append_pair("client_id", &k.client_id);
        match &k.grant {
            KeycloakGrant::Password { username, .. } => {
                form.append_pair("grant_type", "password");
                form.append_pair("username", username);
                form.append_pair("password", self.secret.expose());
            }
            KeycloakGrant::ClientCredentials { .. } => {
                form.append_pair("grant_type", "client_credentials");
                form.append_pair("client_secret", self.secret.expose());
            }
        }
        let reply = self.call(Method::POST, &url, None, Body::Form(form.finish())).await?;
        let token = reply.json().and_then(|v| v.get("access_token").and_then(Value::as_str).map(str::to_string));
        match (reply.status, token) {
            (200, Some(t)) => Ok(self.redactor.register("keycloak-admin-token", t)),
            (status, _) => {
                Err(format!("Keycloak refused cordon an admin token at {} ({status}): {}", url.path(), reply.detail()))
            }
        }
    }

    /// `<url>/admin/realms/<realm>/<path>`, answering one of `ok`.
    async fn expect(
        &self,
        k: &Keycloak,
        token: &Secret,
        method: Method,
        path: &str,
        body: Body,
        ok: &[u16],
    ) -> Result<Reply, String> {
        let url = below(&k.url, &format!("admin/realms/{}/{path}", k.realm))?;
        let reply = self.call(method.clone(), &url, Some(token), body).await?;
        if ok.contains(&reply.status) {
            Ok(reply)
        } else {
            Err(format!("Keycloak answered {} to {method} {}: {}", reply.status, url.path(), reply.detail()))
        }
    }

    async fn keycloak_user(&self, k: &Keycloak, token: &Secret, email: &str) -> Result<Option<String>, String> {
        let query = url::form_urlencoded::Serializer::new(String::new())
            .append_pair("email", email)
            .append_pair("exact", "true")
            .finish();
        let reply = self.expect(k, token, Method::GET, &format!("users?{query}"), Body::None, &[200]).await?;
        Ok(reply
            .json()
            .and_then(|v| v.as_array().cloned())
            .into_iter()
            .flatten()
            .find(|u| u.get("email").and_then(Value::as_str).is_some_and(|e| e.eq_ignore_ascii_case(email)))
            .and_then(|u| u.get("id").and_then(Value::as_str).map(str::to_string)))
    }

    async fn keycloak_set(&self, k: &Keycloak, email: &str, groups: &[String]) -> Result<Secret, String> {
        let token = self.keycloak_token(k).await?;
        let password = self.redactor.register("keycloak-test-user", format!("Pw-{:032x}", rand::random::<u128>()));
        let credential = json!({"type": "password", "value": password.expose(), "temporary": false});
        let id = match self.keycloak_user(k, &token, email).await? {
            Some(id) => {
                let path = format!("users/{id}/reset-password");
                self.expect(k, &token, Method::PUT, &path, Body::Json(credential), &[204]).await?;
                id
            }
            None => {
                // First and last name too: Keycloak's default user profile asks for them at
                // the first login otherwise.
                let user = json!({"username": email, "email": email, "emailVerified": true, "enabled": true,
                    "firstName": "cordon", "lastName": "test user", "credentials": [credential]});
                let reply = self.expect(k, &token, Method::POST, "users", Body::Json(user), &[201]).await?;
                match reply.location.as_deref().and_then(|l| l.rsplit('/').next()).filter(|id| !id.is_empty()) {
                    Some(id) => id.to_string(),
                    None => self
                        .keycloak_user(k, &token, email)
                        .await?
                        .ok_or_else(|| format!("Keycloak created {email} but does not find it"))?,
                }
            }
        };
        let mut wanted = Vec::new();
        for group in groups {
            let path = k.group_path(group);
            let encoded: Vec<String> = path
                .split('/')
                .map(|seg| url::form_urlencoded::byte_serialize(seg.as_bytes()).collect::<String>().replace('+', "%20"))
                .collect();
            let reply = self
                .expect(k, &token, Method::GET, &format!("group-by-path{}", encoded.join("/")), Body::None, &[200, 404])
                .await?;
            let gid = reply.json().and_then(|v| v.get("id").and_then(Value::as_str).map(str::to_string));
            match (reply.status, gid) {
                (200, Some(gid)) => wanted.push(gid),
                _ => return Err(format!("Keycloak realm `{}` has no group at path {path} (for `{group}`)", k.realm)),
            }
        }
        let reply = self.expect(k, &token, Method::GET, &format!("users/{id}/groups"), Body::None, &[200]).await?;
        let current: Vec<String> = reply
            .json()
            .and_then(|v| v.as_array().cloned())
            .into_iter()
            .flatten()
            .filter_map(|g| g.get("id").and_then(Value::as_str).map(str::to_string))
            .collect();
        for gid in current.iter().filter(|g| !wanted.contains(g)) {
            let path = format!("users/{id}/groups/{gid}");
            self.expect(k, &token, Method::DELETE, &path, Body::None, &[204]).await?;
        }
        for gid in wanted.iter().filter(|g| !current.contains(g)) {
            let path = format!("users/{id}/groups/{gid}");
            self.expect(k, &token, Method::PUT, &path, Body::None, &[204]).await?;
        }
        Ok(password)
    }
}

/// `base` + `/` + `path` (the base's own path kept).
fn below(base: &Url, path: &str) -> Result<Url, String> {
    let text = base.as_str().trim_end_matches('/');
    Url::parse(&format!("{text}/{path}")).map_err(|e| format!("{text}/{path}: {e}"))
}
