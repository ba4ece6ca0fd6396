//! A small client for the parts of Open WebUI's HTTP API cordon reads and drives. It is
//! built inside the Open WebUI container's network namespace (its sockets open there) and
//! talks to the port on that namespace's loopback: nothing needs publishing.
//!
//! Same locks as the MCP client: no proxy from the environment, no redirects, connect and
//! read timeouts, a wall-clock limit per exchange and a cap on every body. Every session
//! token is registered with the redactor the moment it arrives.

use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};
use url::Url;

use crate::mcp::Limits;
use crate::secret::{Redactor, Secret};
use crate::text;

/// How much of an error body goes into evidence.
const DETAIL_CHARS: usize = 300;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ApiError {
    /// No HTTP answer: connection refused or reset, or a timeout. Open WebUI is starting.
    #[error("{method} {path}: no answer: {detail}")]
    Unreachable { method: String, path: String, detail: String },
    /// An answer with an unexpected status.
    #[error("{method} {path} answered {status}: {detail}")]
    Status { method: String, path: String, status: u16, detail: String },
    /// An answer cordon cannot read (not JSON, the wrong shape, too large).
    #[error("{method} {path}: {detail}")]
    Unreadable { method: String, path: String, detail: String },
}

impl ApiError {
    /// Worth retrying: nothing answered yet, or Open WebUI said it is not ready.
    pub fn is_not_ready(&self) -> bool {
        match self {
            ApiError::Unreachable { .. } => true,
            ApiError::Status { status, .. } => matches!(status, 502..=504),
            ApiError::Unreadable { .. } => false,
        }
    }
}

/// One HTTP answer: its status and body (capped).
#[derive(Debug, Clone)]
pub struct Answer {
    pub status: u16,
    pub body: Vec<u8>,
    /// `Set-Cookie` and `Location`, for the login flow.
    pub set_cookies: Vec<String>,
    pub location: Option<String>,
}

impl Answer {
    pub fn json(&self) -> Option<Value> {
        serde_json::from_slice(&self.body).ok()
    }

    /// Open WebUI's `{"detail": ...}` or the body's start, sanitized.
    pub fn detail(&self) -> String {
        match self.json().and_then(|v| v.get("detail").cloned()) {
            Some(Value::String(s)) => text::sanitize(&s.chars().take(DETAIL_CHARS).collect::<String>()),
            Some(other) => text::body_excerpt(other.to_string().as_bytes(), DETAIL_CHARS),
            None => text::body_excerpt(&self.body, DETAIL_CHARS),
        }
    }
}

/// A bearer for Open WebUI's API: a session token, registered with the redactor.
#[derive(Clone, Debug)]
pub struct Token(pub Secret);

#[derive(Clone)]
pub struct Api {
    http: reqwest::Client,
    base: Url,
    limits: Limits,
    redactor: Redactor,
}

impl Api {
    /// Builds the client; call it on the namespace's own thread.
    pub fn new(base: &Url, limits: &Limits, redactor: &Redactor) -> Result<Api, ApiError> {
        let http = http_client(limits, None).map_err(|detail| ApiError::Unreadable {
            method: "-".into(),
            path: base.to_string(),
            detail,
        })?;
        Ok(Api { http, base: base.clone(), limits: limits.clone(), redactor: redactor.clone() })
    }

    pub fn redactor(&self) -> &Redactor {
        &self.redactor
    }

    pub fn base(&self) -> &Url {
        &self.base
    }

    /// One request: `path` below the base URL, an optional bearer and JSON body.
    pub async fn send(
        &self,
        method: Method,
        path: &str,
        token: Option<&Token>,
        body: Option<&Value>,
    ) -> Result<Answer, ApiError> {
        let url = self.base.join(path).map_err(|e| ApiError::Unreadable {
            method: method.to_string(),
            path: path.into(),
            detail: format!("not a path: {e}"),
        })?;
        let mut request = self.http.request(method.clone(), url);
        if let Some(t) = token {
            request = request.bearer_auth(t.0.expose());
        }
        if let Some(b) = body {
            request = request.json(b);
        }
        exchange(request, &method, path, &self.limits).await
    }

    /// `send`, then the JSON of a 200 answer.
    pub async fn json(
        &self,
        method: Method,
        path: &str,
        token: &Token,
        body: Option<&Value>,
    ) -> Result<Value, ApiError> {
        let answer = self.send(method.clone(), path, Some(token), body).await?;
        expect_json(&answer, &method, path)
    }

    pub async fn ready(&self) -> Result<u16, ApiError> {
        self.send(Method::GET, "/ready", None, None).await.map(|a| a.status)
    }

    /// Signs in and registers the session token as a secret named after `who`.
    pub async fn signin(&self, who: &str, email: &str, password: &Secret) -> Result<Token, ApiError> {
        let body = json!({"email": email, "password": password.expose()});
        let path = "/api/v1/auths/signin";
        let value = self.json_unauthenticated(Method::POST, path, &body).await?;
        match value.get("token").and_then(Value::as_str) {
            Some(t) if !t.is_empty() => Ok(self.token(who, t)),
            _ => Err(ApiError::Unreadable {
                method: "POST".into(),
                path: path.into(),
                detail: "the sign-in answer holds no token".into(),
            }),
        }
    }

    /// Registers a bearer that arrived some other way (the OIDC login's cookie).
    pub fn token(&self, who: &str, value: &str) -> Token {
        Token(self.redactor.register(&format!("openwebui-session:{who}"), value.to_string()))
    }

    async fn json_unauthenticated(&self, method: Method, path: &str, body: &Value) -> Result<Value, ApiError> {
        let answer = self.send(method.clone(), path, None, Some(body)).await?;
        expect_json(&answer, &method, path)
    }
}

pub fn expect_json(answer: &Answer, method: &Method, path: &str) -> Result<Value, ApiError> {
    if answer.status != 200 {
        return Err(ApiError::Status {
            method: method.to_string(),
            path: path.into(),
            status: answer.status,
            detail: answer.detail(),
        });
    }
    answer.json().ok_or_else(|| ApiError::Unreadable {
        method: method.to_string(),
        path: path.into(),
        detail: format!("not JSON: {}", text::body_excerpt(&answer.body, 120)),
    })
}

/// A locked-down reqwest client; `pin` sends one host name to a fixed address (names are
/// resolved with the namespace's own resolver, never the host's).
pub fn http_client(limits: &Limits, pin: Option<(&str, std::net::SocketAddr)>) -> Result<reqwest::Client, String> {
    let mut builder = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .connect_timeout(limits.connect_timeout)
        .read_timeout(limits.read_timeout)
        .user_agent(concat!("cordon/", env!("CARGO_PKG_VERSION")));
    if let Some((host, addr)) = pin {
        builder = builder.resolve(host, addr);
    }
    builder.build().map_err(|e| format!("cannot build the http client: {e}"))
}

/// Sends `request` and reads the whole answer within the exchange limit and size cap.
pub async fn exchange(
    request: reqwest::RequestBuilder,
    method: &Method,
    path: &str,
    limits: &Limits,
) -> Result<Answer, ApiError> {
    let unreachable = |detail: String| ApiError::Unreachable { method: method.to_string(), path: path.into(), detail };
    let work = async {
        let mut resp = request.send().await.map_err(|e| unreachable(error_chain(&e)))?;
        let status = resp.status().as_u16();
        let header =
            |name: &str| resp.headers().get_all(name).iter().filter_map(|v| v.to_str().ok().map(str::to_string));
        let set_cookies: Vec<String> = header("set-cookie").collect();
        let location = header("location").next();
        let mut body = Vec::new();
        while let Some(chunk) = resp.chunk().await.map_err(|e| unreachable(error_chain(&e)))? {
            body.extend_from_slice(&chunk);
            if body.len() as u64 > limits.max_response_bytes {
                return Err(ApiError::Unreadable {
                    method: method.to_string(),
                    path: path.into(),
                    detail: format!("the answer is larger than {} bytes", limits.max_response_bytes),
                });
            }
        }
        Ok(Answer { status, body, set_cookies, location })
    };
    match tokio::time::timeout(limits.exchange_timeout, work).await {
        Ok(r) => r,
        Err(_) => Err(unreachable(format!("no whole answer within {:.0}s", limits.exchange_timeout.as_secs_f64()))),
    }
}

fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let s = s.to_string();
        if !out.contains(&s) {
            out.push_str(": ");
            out.push_str(&s);
        }
        source = source.and_then(|x| x.source());
    }
    text::sanitize(&out)
}

/// Polls `/ready` until it answers 200 or `budget` runs out; returns how long it took.
pub async fn wait_ready(api: &Api, budget: Duration) -> Result<Duration, String> {
    let started = tokio::time::Instant::now();
    let mut last = String::from("no answer yet");
    while started.elapsed() < budget {
        match api.ready().await {
            Ok(200) => return Ok(started.elapsed()),
            Ok(status) => last = format!("/ready answered {status}"),
            Err(e) => last = e.to_string(),
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    Err(format!("not ready within {:.0}s: {last}", budget.as_secs_f64()))
}
