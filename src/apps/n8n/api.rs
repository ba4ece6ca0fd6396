//! n8n's public API (`/api/v1`, `X-N8N-API-KEY`) and its production webhooks, from inside
//! the n8n container's namespace. Listings follow `nextCursor`, with a cap.

use reqwest::Method;
use serde_json::Value;

use crate::apps::webapp::{Answer, ApiError, WebApp};
use crate::secret::Secret;

/// Pages of one listing cordon reads before it stops (250 items each).
const MAX_PAGES: usize = 40;

#[derive(Clone)]
pub struct N8nApi {
    pub app: WebApp,
    key: Secret,
}

impl N8nApi {
    pub fn new(app: WebApp, key: Secret) -> N8nApi {
        N8nApi { app, key }
    }

    pub async fn send(&self, method: Method, path: &str, body: Option<&Value>) -> Result<Answer, ApiError> {
        self.app.send(method, path, &[("x-n8n-api-key", self.key.expose())], body).await
    }

    pub async fn json(&self, method: Method, path: &str) -> Result<Value, ApiError> {
        let answer = self.send(method.clone(), path, None).await?;
        crate::apps::webapp::expect_json(&answer, &method, path)
    }

    /// Every item of a paginated listing at `path` (which may carry a query already).
    pub async fn all(&self, path: &str) -> Result<Vec<Value>, ApiError> {
        let mut out = Vec::new();
        let mut cursor: Option<String> = None;
        let sep = if path.contains('?') { '&' } else { '?' };
        for _ in 0..MAX_PAGES {
            let page_path = match &cursor {
                Some(c) => format!("{path}{sep}limit=250&cursor={c}"),
                None => format!("{path}{sep}limit=250"),
            };
            let page = self.json(Method::GET, &page_path).await?;
            out.extend(page.get("data").and_then(Value::as_array).cloned().unwrap_or_default());
            match page.get("nextCursor").and_then(Value::as_str) {
                Some(c) if !c.is_empty() && cursor.as_deref() != Some(c) => cursor = Some(c.to_string()),
                _ => return Ok(out),
            }
        }
        Err(ApiError::Unreadable {
            method: "GET".into(),
            path: path.into(),
            detail: format!("more than {MAX_PAGES} pages of 250: cordon stopped reading"),
        })
    }
}
