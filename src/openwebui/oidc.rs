//! A login through the real OpenID Connect authorization-code flow, as a browser would
//! do it: Open WebUI's login path → the identity provider's `/authorize` (which approves
//! the test user at once) → Open WebUI's callback, which sets the `token` cookie. A
//! cookie jar per host; redirects are followed by hand, and only between Open WebUI and
//! the identity provider. Names are resolved with the namespace's own resolver.
//!
//! The groups claim is set through the fixture identity provider's control endpoint.

use std::collections::BTreeMap;
use std::net::SocketAddr;

use reqwest::Method;
use serde_json::{Value, json};
use url::Url;

use super::api::{Api, Token, exchange, http_client};
use crate::mcp::Limits;
use crate::netns::NsView;
use crate::secret::Secret;

const MAX_HOPS: usize = 8;

/// One hop of the login, for evidence: method, host, path and status (no query: it holds
/// the state, the nonce and the code).
pub type Hop = String;

pub struct Login<'a> {
    pub view: &'a NsView,
    pub api: &'a Api,
    pub login_path: &'a str,
    /// The identity provider's origin (host and port of its control URL).
    pub idp: &'a Url,
    pub limits: &'a Limits,
}

fn origin(url: &Url) -> String {
    format!("{}:{}", url.host_str().unwrap_or_default(), url.port_or_known_default().unwrap_or(80))
}

impl Login<'_> {
    /// Logs `email` in; returns the session token (registered for redaction) and the hops.
    pub async fn login(&self, who: &str, email: &str) -> (Result<Token, String>, Vec<Hop>) {
        let mut hops = Vec::new();
        let result = self.run(who, email, &mut hops).await;
        (result, hops)
    }

    async fn run(&self, who: &str, email: &str, hops: &mut Vec<Hop>) -> Result<Token, String> {
        let allowed = [origin(self.api.base()), origin(self.idp)];
        let mut jar: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
        let mut url = self.api.base().join(self.login_path).map_err(|e| format!("login path: {e}"))?;
        for _ in 0..MAX_HOPS {
            let host = origin(&url);
            if !allowed.contains(&host) {
                return Err(format!(
                    "the login redirected to {host}, which is neither Open WebUI nor the identity provider"
                ));
            }
            if origin(&url) == origin(self.idp) && url.path().ends_with("/authorize") {
                // The identity provider approves the user it is told to: a browser would
                // have logged in as that user.
                url.query_pairs_mut().append_pair("login_hint", email);
            }
            let pin = self.pin(&url).await?;
            let client = http_client(self.limits, pin.as_ref().map(|(h, a)| (h.as_str(), *a)))?;
            let mut request = client.request(Method::GET, url.clone());
            if let Some(cookies) = jar.get(&host).filter(|c| !c.is_empty()) {
                let header: Vec<String> = cookies.iter().map(|(k, v)| format!("{k}={v}")).collect();
                request = request.header("cookie", header.join("; "));
            }
            let answer = exchange(request, &Method::GET, url.path(), self.limits).await.map_err(|e| e.to_string())?;
            hops.push(format!("GET {host}{} → {}", url.path(), answer.status));
            for cookie in &answer.set_cookies {
                if let Some((name, value)) = cookie.split(';').next().and_then(|nv| nv.split_once('=')) {
                    jar.entry(host.clone()).or_default().insert(name.trim().to_string(), value.trim().to_string());
                }
            }
            if let Some(token) =
                jar.get(&origin(self.api.base())).and_then(|c| c.get("token")).filter(|t| !t.is_empty())
            {
                return Ok(self.api.token(who, token));
            }
            let Some(location) = answer.location.clone().filter(|_| (300..400).contains(&answer.status)) else {
                return Err(format!(
                    "the login stopped at {host}{} with {}: {}",
                    url.path(),
                    answer.status,
                    answer.detail()
                ));
            };
            let next = url.join(&location).map_err(|e| format!("a redirect to an unreadable location: {e}"))?;
            if let Some((_, error)) = next.query_pairs().find(|(k, _)| k == "error") {
                return Err(format!("Open WebUI refused the login: {}", crate::text::sanitize(&error)));
            }
            url = next;
        }
        Err(format!("the login did not finish within {MAX_HOPS} redirects"))
    }

    /// Open WebUI's own address is used as written; any other host is resolved here.
    async fn pin(&self, url: &Url) -> Result<Option<(String, SocketAddr)>, String> {
        let Some(host) = url.domain() else { return Ok(None) };
        let answer = self.view.resolve(host).await.map_err(|e| format!("cannot resolve {host}: {e}"))?;
        let addr = answer.first().ok_or_else(|| format!("{host} resolves to nothing"))?;
        Ok(Some((host.to_string(), SocketAddr::new(addr, url.port_or_known_default().unwrap_or(80)))))
    }
}

/// Sets the groups claim the identity provider puts in `email`'s id token: a list, or
/// `None` for an empty list (`[]`).
pub async fn set_claim(
    view: &NsView,
    control: &Url,
    bearer: &Secret,
    limits: &Limits,
    email: &str,
    groups: &[String],
) -> Result<(), String> {
    control_call(
        view,
        control,
        bearer,
        limits,
        Method::POST,
        "users",
        Some(json!({"email": email, "name": email, "groups": groups})),
    )
    .await
}

pub async fn forget(view: &NsView, control: &Url, bearer: &Secret, limits: &Limits, email: &str) -> Result<(), String> {
    control_call(view, control, bearer, limits, Method::DELETE, &format!("users/{email}"), None).await
}

async fn control_call(
    view: &NsView,
    control: &Url,
    bearer: &Secret,
    limits: &Limits,
    method: Method,
    path: &str,
    body: Option<Value>,
) -> Result<(), String> {
    let base = if control.path().ends_with('/') {
        control.clone()
    } else {
        Url::parse(&format!("{control}/")).map_err(|e| e.to_string())?
    };
    let url = base.join(path).map_err(|e| e.to_string())?;
    let host = url.domain().ok_or("the control URL has no host name")?;
    let addr = view
        .resolve(host)
        .await
        .map_err(|e| format!("cannot resolve {host}: {e}"))?
        .first()
        .ok_or_else(|| format!("{host} resolves to nothing"))?;
    let client = http_client(limits, Some((host, SocketAddr::new(addr, url.port_or_known_default().unwrap_or(80)))))?;
    let mut request = client.request(method.clone(), url.clone()).bearer_auth(bearer.expose());
    if let Some(b) = body {
        request = request.json(&b);
    }
    let answer = exchange(request, &method, url.path(), limits).await.map_err(|e| e.to_string())?;
    if answer.status == 200 {
        Ok(())
    } else {
        Err(format!(
            "the identity provider's control endpoint answered {} to {method} {}: {}",
            answer.status,
            url.path(),
            answer.detail()
        ))
    }
}
