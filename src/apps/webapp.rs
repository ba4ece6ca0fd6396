//! A small client for a client application's HTTP API (Flowise, n8n), built inside the
//! application container's network namespace and talking to its port on that namespace's
//! loopback: nothing needs publishing. Same locks as every HTTP client of cordon (no
//! proxy, no redirects, timeouts, a wall-clock limit per exchange, a cap on every body);
//! the plumbing is Open WebUI's ([`crate::apps::openwebui::api`]).

use reqwest::Method;
use serde_json::Value;
use url::Url;

pub use crate::apps::openwebui::api::{Answer, ApiError};
use crate::apps::openwebui::api::{exchange, http_client};

use crate::mcp::Limits;

#[derive(Clone)]
pub struct WebApp {
    http: reqwest::Client,
    base: Url,
    limits: Limits,
}

impl WebApp {
    /// Builds the client; call it on the namespace's own thread.
    pub fn new(base: &Url, limits: &Limits) -> Result<WebApp, ApiError> {
        let http = http_client(limits, None).map_err(|detail| ApiError::Unreadable {
            method: "-".into(),
            path: base.to_string(),
            detail,
        })?;
        Ok(WebApp { http, base: base.clone(), limits: limits.clone() })
    }

    /// A client that waits up to `limit` for one whole answer, silence included (a run
    /// that waits on a model and a tool sends nothing until it is done).
    pub fn patient(&self, limit: std::time::Duration) -> Result<WebApp, ApiError> {
        let mut limits = self.limits.clone();
        limits.exchange_timeout = limit;
        limits.read_timeout = limits.read_timeout.max(limit);
        WebApp::new(&self.base, &limits)
    }

    pub fn base(&self) -> &Url {
        &self.base
    }

    /// One request: `path` below the base URL, extra headers, an optional JSON body.
    pub async fn send(
        &self,
        method: Method,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<&Value>,
    ) -> Result<Answer, ApiError> {
        let url = self.base.join(path).map_err(|e| ApiError::Unreadable {
            method: method.to_string(),
            path: path.into(),
            detail: format!("not a path: {e}"),
        })?;
        let mut request = self.http.request(method.clone(), url);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        if let Some(b) = body {
            request = request.json(b);
        }
        exchange(request, &method, path, &self.limits).await
    }
}

/// A scenario credential found in a field the application shows in plain.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Leak {
    /// e.g. `authConfig.token`, `flowData.nodes[2].data.inputs.mcpServerConfig`.
    pub field: String,
    /// The scenario credential's id.
    pub credential: String,
}

/// Every string leaf of `v` in which a scenario credential appears, by its path.
pub fn leaks_in(v: &Value, path: &str, credentials: &crate::secret::Redactor, out: &mut Vec<Leak>) {
    match v {
        Value::String(s) => {
            // flowData and the discovered tools are JSON inside a string: walk them too.
            if let Ok(inner @ (Value::Object(_) | Value::Array(_))) = serde_json::from_str::<Value>(s) {
                leaks_in(&inner, path, credentials, out);
                return;
            }
            for credential in credentials_in(s, credentials) {
                out.push(Leak { field: path.to_string(), credential });
            }
        }
        Value::Array(a) => {
            a.iter().enumerate().for_each(|(i, x)| leaks_in(x, &format!("{path}[{i}]"), credentials, out))
        }
        Value::Object(m) => m.iter().for_each(|(k, x)| {
            let p = if path.is_empty() { k.clone() } else { format!("{path}.{k}") };
            leaks_in(x, &p, credentials, out)
        }),
        _ => {}
    }
}

/// Every scenario credential (by id) any of whose forms — as written, cut short,
/// percent-encoded, JSON-escaped, base64, hex — appears in `text`: the redactor's own
/// matching, on a redactor that holds only those credentials.
pub fn credentials_in(text: &str, credentials: &crate::secret::Redactor) -> Vec<String> {
    let redacted = credentials.redact(text);
    let mut found: Vec<String> = redacted
        .split("«redacted:")
        .skip(1)
        .filter_map(|rest| rest.split_once('»').map(|(label, _)| label.to_string()))
        .collect();
    found.sort();
    found.dedup();
    found
}

/// After Ctrl-C a check makes nothing new: its next call fails with this.
pub fn refuse_new_work() -> Result<(), ApiError> {
    if crate::interrupt::interrupted() {
        Err(ApiError::Unreadable { method: "-".into(), path: "-".into(), detail: "interrupted (Ctrl-C)".into() })
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::credentials_in;
    use crate::secret::Redactor;

    #[test]
    fn a_credential_is_found_in_any_form_and_named_by_its_id() {
        let r = Redactor::new();
        r.register("native-token", "native-secret-value-1".into());
        r.register("files-token", "files-secret-value-22".into());
        assert_eq!(credentials_in("http://x/mcp?token=native-secret-value-1", &r), ["native-token"]);
        let b64 = "bmF0aXZlLXNlY3JldC12YWx1ZS0x"; // base64 of native-secret-value-1
        assert_eq!(credentials_in(&format!("{{\"color\":\"{b64}\"}}"), &r), ["native-token"]);
        assert_eq!(credentials_in("Bearer files-secret-value-22 and native-secret-value-1", &r).len(), 2);
        assert!(credentials_in("{\"headers\":{\"Authorization\":\"************\"}}", &r).is_empty());
    }
}
