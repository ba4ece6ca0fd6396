//! Flowise's API as an admin sees it: a session (the `token`, `refreshToken` and
//! `connect.sid` cookies of `POST /api/v1/auth/login`, sent back with
//! `x-request-from: internal`, as Flowise's own UI does), and requests with an API key
//! (`Authorization: Bearer <key>`), as a non-admin principal makes them. Every cookie
//! value and key is registered with the redactor the moment it arrives.

use reqwest::Method;
use serde_json::{Value, json};

use crate::apps::webapp::{Answer, ApiError, WebApp};
use crate::secret::{Redactor, Secret};

/// The admin's signed-in session.
#[derive(Clone)]
pub struct Session {
    pub app: WebApp,
    cookie: Secret,
}

impl Session {
    /// Signs in with `email` and `password`; every cookie is registered as a secret.
    pub async fn open(app: &WebApp, email: &str, password: &Secret, redactor: &Redactor) -> Result<Session, ApiError> {
        let path = "/api/v1/auth/login";
        let body = json!({"email": email, "password": password.expose()});
        let answer = app.send(Method::POST, path, &[], Some(&body)).await?;
        if answer.status != 200 {
            return Err(ApiError::Status {
                method: "POST".into(),
                path: path.into(),
                status: answer.status,
                detail: answer.detail(),
            });
        }
        let pairs: Vec<String> =
            answer.set_cookies.iter().filter_map(|c| c.split(';').next()).map(|kv| kv.trim().to_string()).collect();
        for kv in &pairs {
            if let Some((name, value)) = kv.split_once('=') {
                redactor.register(&format!("flowise-cookie:{name}"), value.to_string());
            }
        }
        if !pairs.iter().any(|kv| kv.starts_with("token=")) {
            return Err(ApiError::Unreadable {
                method: "POST".into(),
                path: path.into(),
                detail: "the sign-in set no `token` cookie".into(),
            });
        }
        let cookie = redactor.register("flowise-session", pairs.join("; "));
        Ok(Session { app: app.clone(), cookie })
    }

    /// The same session on another client (one that waits longer).
    pub fn on(&self, app: WebApp) -> Session {
        Session { app, cookie: self.cookie.clone() }
    }

    pub async fn send(&self, method: Method, path: &str, body: Option<&Value>) -> Result<Answer, ApiError> {
        let headers = [("x-request-from", "internal"), ("cookie", self.cookie.expose())];
        self.app.send(method, path, &headers, body).await
    }

    /// `send`, then the JSON of a 200 answer.
    pub async fn json(&self, method: Method, path: &str, body: Option<&Value>) -> Result<Value, ApiError> {
        let answer = self.send(method.clone(), path, body).await?;
        crate::apps::webapp::expect_json(&answer, &method, path)
    }
}

/// A request made with an API key, as a non-admin principal.
pub async fn with_key(
    app: &WebApp,
    key: &Secret,
    method: Method,
    path: &str,
    body: Option<&Value>,
) -> Result<Answer, ApiError> {
    let bearer = format!("Bearer {}", key.expose());
    app.send(method, path, &[("authorization", bearer.as_str())], body).await
}

/// A list answer: Flowise returns a bare array, or `{data, total}` when paginated.
pub fn items(v: &Value) -> Vec<Value> {
    match v {
        Value::Array(a) => a.clone(),
        other => other.get("data").and_then(Value::as_array).cloned().unwrap_or_default(),
    }
}
