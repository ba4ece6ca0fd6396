//! A small client for the parts of Open WebUI's HTTP API cordon reads and drives. It is
//! built inside the Open WebUI container's network namespace (its sockets open there) and
//! talks to the port on that namespace's loopback: nothing needs publishing.
//!
//! The HTTP plumbing (locks, errors, answers) is every app's ([`crate::apps::webapp`]).
//! Every session token is registered with the redactor the moment it arrives.

use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};
use url::Url;

pub use crate::apps::webapp::{Answer, ApiError};
use crate::apps::webapp::{WebApp, expect_json};
use crate::mcp::Limits;
use crate::secret::{Redactor, Secret};

/// A bearer for Open WebUI's API: a session token, registered with the redactor.
#[derive(Clone, Debug)]
pub struct Token(pub Secret);

/// Open WebUI's API: the locked-down client every app shares ([`WebApp`]), with the
/// redactor its session tokens are registered with.
#[derive(Clone)]
pub struct Api {
    app: WebApp,
    redactor: Redactor,
}

impl Api {
    /// Builds the client; call it on the namespace's own thread.
    pub fn new(base: &Url, limits: &Limits, redactor: &Redactor) -> Result<Api, ApiError> {
        Ok(Api { app: WebApp::new(base, limits)?, redactor: redactor.clone() })
    }

    pub fn redactor(&self) -> &Redactor {
        &self.redactor
    }

    pub fn base(&self) -> &Url {
        self.app.base()
    }

    /// One request: `path` below the base URL, an optional bearer and JSON body.
    pub async fn send(
        &self,
        method: Method,
        path: &str,
        token: Option<&Token>,
        body: Option<&Value>,
    ) -> Result<Answer, ApiError> {
        let bearer = token.map(|t| format!("Bearer {}", t.0.expose()));
        let headers: Vec<(&str, &str)> = bearer.iter().map(|b| ("authorization", b.as_str())).collect();
        self.app.send(method, path, &headers, body).await
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
