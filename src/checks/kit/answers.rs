//! What a `tools/call` came back with, as data the boundary judges read (call
//! allowlist, arguments, limits), and the sessions they open: one in the era the server
//! offers first and, when that is 2026-07-28, one more through the `initialize`
//! handshake older clients use.

use serde::{Deserialize, Serialize};

use super::sessions::ErrorSeen;
use crate::mcp::{Era, EraChoice, McpClient, McpError, Session, ToolResult};

/// The longest excerpt of a tool's text kept in an observation.
const TEXT_EXCERPT: usize = 200;

/// One `tools/call` answer, reduced to what a verdict rests on.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum CallAnswer {
    /// A `CallToolResult`.
    Result {
        is_error: bool,
        /// The text content, joined and cut to an excerpt.
        text: String,
        structured: bool,
        /// Content items, and the longest array in the structured (or JSON text) output.
        items: usize,
    },
    /// A JSON-RPC error reply (HTTP 200, or the body of a 4xx).
    RpcError { code: i64, message: String },
    /// A non-2xx answer that is not a JSON-RPC error cordon could read.
    Http { status: u16, body: String },
    /// No answer to judge: a transport error, a timeout, a reply that is not MCP.
    Failed(ErrorSeen),
}

impl CallAnswer {
    pub fn of(outcome: Result<ToolResult, McpError>) -> Self {
        match outcome {
            Ok(r) => CallAnswer::Result {
                is_error: r.is_error,
                text: crate::text::body_excerpt(r.text.join(" ").as_bytes(), TEXT_EXCERPT),
                structured: r.structured.is_some(),
                items: result_items(&r),
            },
            Err(McpError::JsonRpc { code, message, .. }) => CallAnswer::RpcError { code, message },
            Err(McpError::Http { status, body_excerpt, .. }) => match rpc_error_in(&body_excerpt) {
                Some((code, message)) if status < 500 && !busy(status) => CallAnswer::RpcError { code, message },
                _ => CallAnswer::Http { status, body: body_excerpt },
            },
            Err(e) => CallAnswer::Failed((&e).into()),
        }
    }

    /// A request other than `tools/call` (a listing): its result, or how it failed.
    pub fn of_request(outcome: Result<serde_json::Value, McpError>) -> Self {
        match outcome {
            Ok(v) => CallAnswer::Result {
                is_error: false,
                text: String::new(),
                structured: false,
                items: v.get("tools").and_then(|t| t.as_array()).map_or(0, Vec::len),
            },
            Err(e) => Self::of(Err(e)),
        }
    }

    /// Served: a result that is not an error.
    pub fn served(&self) -> bool {
        matches!(self, CallAnswer::Result { is_error: false, .. })
    }

    /// Not ready: no answer yet, a 5xx, or "too many requests".
    pub fn not_ready(&self) -> bool {
        match self {
            CallAnswer::Failed(e) => e.not_ready,
            CallAnswer::Http { status, .. } => *status >= 500 || busy(*status),
            _ => false,
        }
    }

    /// Turned away because the provider is busy (429, 503): says nothing of the request.
    pub fn busy(&self) -> bool {
        matches!(self, CallAnswer::Http { status, .. } if busy(*status))
    }

    /// The tool did not produce its output: a JSON-RPC error, a 4xx (but 429), or
    /// `isError: true` without structured output.
    pub fn refused(&self) -> bool {
        match self {
            CallAnswer::RpcError { .. } => true,
            CallAnswer::Http { status, .. } => (400..500).contains(status) && !busy(*status),
            CallAnswer::Result { is_error, structured, .. } => *is_error && !*structured,
            CallAnswer::Failed(_) => false,
        }
    }
}

/// 429 Too Many Requests and 503 Service Unavailable: a provider at its limit.
fn busy(status: u16) -> bool {
    matches!(status, 429 | 503)
}

impl std::fmt::Display for CallAnswer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CallAnswer::Result { is_error, text, structured, .. } => {
                write!(f, "a result with isError: {is_error}")?;
                if *structured {
                    f.write_str(" and structuredContent")?;
                }
                if text.is_empty() { Ok(()) } else { write!(f, " ({})", crate::text::sanitize(text)) }
            }
            CallAnswer::RpcError { code, message } => {
                write!(f, "JSON-RPC error {code} ({})", crate::text::body_excerpt(message.as_bytes(), 120))
            }
            CallAnswer::Http { status, body } => {
                write!(f, "HTTP {status} ({})", crate::text::body_excerpt(body.as_bytes(), 120))
            }
            CallAnswer::Failed(e) => write!(f, "no answer to judge: {}", e.text),
        }
    }
}

/// The `error` of a JSON-RPC reply quoted in an HTTP error body (the platform's adapter
/// refuses a denied call with 403 and such a body).
fn rpc_error_in(body: &str) -> Option<(i64, String)> {
    let v: serde_json::Value = serde_json::from_str(body).ok()?;
    let e = v.get("error")?;
    let code = e.get("code")?.as_i64()?;
    let message = e.get("message").and_then(|m| m.as_str()).unwrap_or_default().to_string();
    Some((code, message))
}

/// How many items a result holds: its content items, or the longest array in its
/// structured output (or its JSON text), whichever is more.
pub fn result_items(r: &ToolResult) -> usize {
    let content = r.raw.get("content").and_then(|c| c.as_array()).map_or(0, Vec::len);
    let parsed: Vec<serde_json::Value> = r.text.iter().filter_map(|t| serde_json::from_str(t).ok()).collect();
    let longest = r.structured.iter().chain(&parsed).map(|v| longest_array(v, 0)).max().unwrap_or(0);
    content.max(longest)
}

fn longest_array(v: &serde_json::Value, depth: usize) -> usize {
    if depth > 16 {
        return 0;
    }
    match v {
        serde_json::Value::Array(items) => {
            items.len().max(items.iter().map(|i| longest_array(i, depth + 1)).max().unwrap_or(0))
        }
        serde_json::Value::Object(map) => map.values().map(|i| longest_array(i, depth + 1)).max().unwrap_or(0),
        _ => 0,
    }
}

/// The era a session speaks, in words, for evidence.
pub fn era_words(era: &Era) -> String {
    match era {
        Era::Stateless2026 => "2026-07-28 (no session)".into(),
        Era::Stateful { protocol_version } => format!("the initialize handshake ({protocol_version})"),
        Era::LegacySse => "legacy HTTP+SSE".into(),
    }
}

/// A session in the era the server offers first and, when that is 2026-07-28, one more
/// through `initialize`. An error ends the list.
pub async fn sessions_in_every_era(client: &McpClient) -> Vec<Result<Session, ErrorSeen>> {
    let first = match client.connect().await {
        Ok(s) => s,
        Err(e) => return vec![Err((&e).into())],
    };
    let modern = first.era == Era::Stateless2026;
    let mut out = vec![Ok(first)];
    if modern {
        out.push(client.connect_era(EraChoice::Handshake).await.map_err(|e| (&e).into()));
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn result(raw: serde_json::Value) -> ToolResult {
        let text = raw["content"]
            .as_array()
            .map(|a| a.iter().filter_map(|i| i["text"].as_str().map(String::from)).collect())
            .unwrap_or_default();
        ToolResult {
            is_error: raw["isError"].as_bool().unwrap_or(false),
            text,
            structured: raw.get("structuredContent").cloned(),
            raw,
        }
    }

    #[test]
    fn answers_are_classified() {
        let ran = CallAnswer::of(Ok(result(json!({"content": [{"type": "text", "text": "deleted 3"}]}))));
        assert!(!ran.refused() && !ran.not_ready());
        let unknown = CallAnswer::of(Ok(result(
            json!({"content": [{"type": "text", "text": "Unknown tool: x"}], "isError": true}),
        )));
        assert!(unknown.refused());
        let with_output = CallAnswer::of(Ok(result(json!({"isError": true, "structuredContent": {"deleted": 3}}))));
        assert!(!with_output.refused(), "an error that carries a tool's output is no refusal");
        let adapter = CallAnswer::of(Err(McpError::Http {
            entry: "tools/call".into(),
            url: "u".into(),
            status: 403,
            content_type: None,
            www_authenticate: None,
            body_excerpt: r#"{"jsonrpc":"2.0","id":3,"error":{"code":-32600,"message":"unknown_tool"}}"#.into(),
        }));
        assert_eq!(adapter, CallAnswer::RpcError { code: -32600, message: "unknown_tool".into() });
        let upstream = CallAnswer::of(Err(McpError::Http {
            entry: "tools/call".into(),
            url: "u".into(),
            status: 502,
            content_type: None,
            www_authenticate: None,
            body_excerpt: r#"{"error":{"code":-32000,"message":"upstream_error"}}"#.into(),
        }));
        assert!(matches!(upstream, CallAnswer::Http { status: 502, .. }) && upstream.not_ready());
    }

    #[test]
    fn items_are_counted_in_content_and_structured_output() {
        let r =
            result(json!({"content": [{"type": "text", "text": "[1,2,3,4]"}], "structuredContent": {"rows": [1, 2]}}));
        assert_eq!(result_items(&r), 4);
        let r = result(json!({"content": [], "structuredContent": {"page": {"rows": [[1], [2], [3]]}}}));
        assert_eq!(result_items(&r), 3);
    }
}
