//! A hand-rolled MCP client for conformance checks.
//!
//! Off-the-shelf MCP clients hide exactly what cordon must judge: they follow redirects,
//! retry, decompress, and turn a 401 into an exception without its headers. This client
//! speaks the three wire eras (2026-07-28 stateless, stateful Streamable HTTP, legacy
//! HTTP+SSE) over one plain `reqwest::Client` and reports every answer with its raw
//! status, content type and headers, under hard limits on time, size and pages.

mod http;
mod jsonrpc;
mod legacy;
mod raw;
mod sse;
mod streamable;
mod tools;

use std::fmt;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde_json::Value;

use crate::secret::Secret;

pub use tools::{canonical_json, schema_hash};

/// The stateless revision cordon probes first.
pub const MODERN_PROTOCOL_VERSION: &str = "2026-07-28";
/// The handshake-era revision cordon proposes in `initialize`.
pub const HANDSHAKE_PROTOCOL_VERSION: &str = "2025-06-18";
const CLIENT_NAME: &str = "cordon";

/// Hard limits; every request of a client obeys all of them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Limits {
    pub connect_timeout: Duration,
    /// Per read: resets whenever bytes arrive, so it bounds stalls, not total time.
    pub read_timeout: Duration,
    pub max_response_bytes: u64,
    /// Wall time of an SSE stream from the start of the request that opened it. A legacy
    /// SSE session lives on one stream, so the whole legacy session must fit in it.
    pub sse_max_duration: Duration,
    pub max_pages: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            connect_timeout: Duration::from_secs(3),
            read_timeout: Duration::from_secs(10),
            max_response_bytes: 4 * 1024 * 1024,
            sse_max_duration: Duration::from_secs(15),
            max_pages: 20,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Transport {
    StreamableHttp,
    Sse,
}

/// Which wire era a provider answered in.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub enum Era {
    /// Revision 2026-07-28: `server/discover`, no initialize, no session.
    Stateless2026,
    /// `initialize` handshake; a session id may or may not have been issued.
    Stateful { protocol_version: String },
    /// HTTP+SSE (2024-11-05 transport): GET stream plus a POST endpoint.
    LegacySse,
}

#[derive(Clone, Debug)]
pub struct Endpoint {
    pub url: url::Url,
    pub transport: Transport,
    /// Connect to this address instead of resolving the URL's host name; the Host header
    /// still names the host. Port 0 keeps the URL's port. Ignored when the URL host is
    /// an IP literal.
    pub pin: Option<SocketAddr>,
}

pub struct McpClient {
    endpoint: Endpoint,
    bearer: Option<Secret>,
    limits: Limits,
    http: reqwest::Client,
    next_id: AtomicU64,
}

/// A connected session. Dropping it stops a legacy SSE stream; call
/// [`McpClient::close`] to also end a stateful session on the server.
pub struct Session {
    pub era: Era,
    pub server_name: Option<String>,
    /// The server issued a session: `Mcp-Session-Id` on the initialize reply
    /// (Streamable), or a message endpoint (legacy SSE, where the endpoint URL is the
    /// session handle). Always false for the stateless era.
    pub session_id_present: bool,
    /// Legacy SSE only: where this session POSTs its messages.
    pub message_url: Option<url::Url>,
    session_id: Option<String>,
    protocol_version: Option<String>,
    legacy: Option<legacy::LegacyStream>,
}

impl fmt::Debug for Session {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Session")
            .field("era", &self.era)
            .field("server_name", &self.server_name)
            .field("session_id_present", &self.session_id_present)
            .field("message_url", &self.message_url.as_ref().map(url::Url::as_str))
            .field("protocol_version", &self.protocol_version)
            .finish_non_exhaustive()
    }
}

#[derive(Clone, Debug, serde::Serialize)]
pub struct Tool {
    pub name: String,
    pub description: Option<String>,
    /// `null` when the server omitted `inputSchema`.
    pub input_schema: Value,
    pub raw: Value,
}

#[derive(Clone, Debug, serde::Serialize)]
pub struct ToolResult {
    pub is_error: bool,
    /// The `text` of every `type: "text"` content item, in order.
    pub text: Vec<String>,
    pub structured: Option<Value>,
    pub raw: Value,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum EntryPoint {
    Initialize,
    Discover,
    ToolsList,
    SseGet,
    MessagePost,
}

impl fmt::Display for EntryPoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            EntryPoint::Initialize => "initialize",
            EntryPoint::Discover => "server/discover",
            EntryPoint::ToolsList => "tools/list",
            EntryPoint::SseGet => "SSE GET",
            EntryPoint::MessagePost => "message POST",
        })
    }
}

/// One uninterpreted exchange, for refusal checks.
#[derive(Clone, Debug, serde::Serialize)]
pub struct RawAnswer {
    pub entry: EntryPoint,
    /// The HTTP method: `POST` or `GET`.
    pub method: String,
    pub url: String,
    pub status: u16,
    pub content_type: Option<String>,
    pub location: Option<String>,
    pub www_authenticate: Option<String>,
    /// An `Mcp-Session-Id` header was present. Not proof of a session: the Python SDK
    /// sets a fresh one even on its 400/406 error replies.
    pub session_id_present: bool,
    /// First 300 characters of the body (lossy UTF-8). For an SSE body: what arrived
    /// within `read_timeout` (up to the first JSON-RPC message).
    pub body_excerpt: String,
    /// The body (JSON) or first SSE message event, if it was a JSON-RPC message.
    pub jsonrpc: Option<Value>,
    /// The body holds a `"tools"` array with an object carrying `"name"`, anywhere in
    /// it. A body that is not JSON (e.g. cut at the size cap) counts when its text has
    /// both `"tools"` and `"name"`: a refusal check must err towards reporting a leak.
    pub discloses_tools: bool,
}

#[derive(Clone, Debug, thiserror::Error)]
pub enum McpError {
    #[error("cannot connect to {url}: {detail}")]
    Connect { url: String, detail: String },
    #[error("timed out waiting for {phase} from {url} after {after:?}")]
    Timeout { url: String, phase: &'static str, after: Duration },
    #[error(
        "{entry} at {url} got {} (content-type {}, www-authenticate {}): {body_excerpt}",
        status_text(*status), opt(content_type), opt(www_authenticate)
    )]
    Http {
        entry: String,
        url: String,
        status: u16,
        content_type: Option<String>,
        www_authenticate: Option<String>,
        body_excerpt: String,
    },
    #[error(
        "{entry} got {} redirect to {} from {url} (a redirect is not a refusal of the MCP protocol; cordon never follows redirects)",
        status_text(*status), opt(location)
    )]
    Redirect { entry: String, url: String, status: u16, location: Option<String> },
    #[error(
        "{entry} at {url} got {} with content-type {}, not an mcp reply: {body_excerpt}",
        status_text(*status), opt(content_type)
    )]
    NotMcp { entry: String, url: String, status: u16, content_type: Option<String>, body_excerpt: String },
    #[error("{method} returned json-rpc error {code}: {message}")]
    JsonRpc { method: String, code: i64, message: String },
    #[error("response from {url} exceeded the size cap of {limit} bytes")]
    SizeCap { url: String, limit: u64 },
    #[error("sse stream from {url} exceeded the duration cap of {limit:?}")]
    SseDurationCap { url: String, limit: Duration },
    #[error("tools/list pagination returned cursor {cursor:?} a second time (cursor cycle)")]
    CursorCycle { cursor: String },
    #[error("tools/list still had a nextCursor after {pages} pages (page cap)")]
    PageCap { pages: usize },
    #[error("protocol violation: {detail}")]
    Protocol { detail: String },
}

fn opt(v: &Option<String>) -> &str {
    v.as_deref().unwrap_or("none")
}

fn status_text(status: u16) -> String {
    let reason = reqwest::StatusCode::from_u16(status).ok().and_then(|s| s.canonical_reason());
    match reason {
        Some(r) => format!("{status} {r}"),
        None => status.to_string(),
    }
}

impl McpError {
    /// "Not ready" (retry until the deadline) versus a final verdict.
    ///
    /// A 502 is not ready unless its body is the platform adapter's JSON-RPC error whose
    /// `data.upstream_status` is a 1xx–4xx: then the upstream answered and refused, which
    /// retrying will not change.
    pub fn is_not_ready(&self) -> bool {
        match self {
            McpError::Connect { .. } | McpError::Timeout { .. } => true,
            McpError::Http { status: 500 | 503 | 504, .. } => true,
            McpError::Http { status: 502, body_excerpt, .. } => {
                let upstream = serde_json::from_str::<Value>(body_excerpt)
                    .ok()
                    .and_then(|v| v.pointer("/error/data/upstream_status").and_then(Value::as_u64));
                !matches!(upstream, Some(1..=499))
            }
            _ => false,
        }
    }
}

impl McpClient {
    pub fn new(endpoint: Endpoint, bearer: Option<Secret>, limits: Limits) -> Result<Self, McpError> {
        let http = http::build_client(&endpoint, &limits)?;
        Ok(Self { endpoint, bearer, limits, http, next_id: AtomicU64::new(1) })
    }

    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    fn next_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// Streamable: `server/discover` first; a 200 listing 2026-07-28 in
    /// `supportedVersions` is the stateless era. Any 4xx or JSON-RPC error falls back to
    /// `initialize` + `notifications/initialized`, as real clients do; a redirect, 5xx,
    /// timeout or non-MCP answer does not (it is reported as is). Legacy SSE: GET the
    /// stream, read the `endpoint` event, then handshake over it.
    pub async fn connect(&self) -> Result<Session, McpError> {
        match self.endpoint.transport {
            Transport::StreamableHttp => streamable::connect(self).await,
            Transport::Sse => legacy::connect(self).await,
        }
    }

    /// `tools/list`, following `nextCursor` up to `limits.max_pages` pages.
    pub async fn list_tools(&self, session: &Session) -> Result<Vec<Tool>, McpError> {
        tools::paginate(self.limits.max_pages, |cursor| {
            let params = match cursor {
                Some(c) => serde_json::json!({ "cursor": c }),
                None => serde_json::json!({}),
            };
            self.request(session, "tools/list", params)
        })
        .await
    }

    pub async fn call_tool(&self, session: &Session, name: &str, arguments: Value) -> Result<ToolResult, McpError> {
        let result =
            self.request(session, "tools/call", serde_json::json!({ "name": name, "arguments": arguments })).await?;
        tools::parse_tool_result(result)
    }

    /// Best effort: DELETE a stateful session, stop a legacy stream. Errors are ignored.
    pub async fn close(&self, session: Session) {
        if let Era::Stateful { .. } = session.era {
            streamable::delete_session(self, &session).await;
        }
        drop(session);
    }

    /// One uninterpreted exchange at `entry`, with this client's bearer (or none).
    ///
    /// POST entries go to `post_url` when given, else to the endpoint URL; `SseGet`
    /// always GETs the endpoint URL. `MessagePost` posts `initialize` (legacy SSE needs
    /// `post_url`: the message endpoint of another client's live session). Transport
    /// errors before a status line (connect, timeout) are errors; anything after the
    /// status line is reported, not judged.
    pub async fn raw_exchange(&self, entry: EntryPoint, post_url: Option<&url::Url>) -> Result<RawAnswer, McpError> {
        raw::exchange(self, entry, post_url).await
    }

    /// Sends one request in the session's era and returns its `result`.
    async fn request(&self, session: &Session, method: &str, params: Value) -> Result<Value, McpError> {
        match &session.legacy {
            Some(stream) => legacy::request(self, stream, method, params).await,
            None => streamable::request(self, session, method, params).await,
        }
    }
}

#[cfg(test)]
mod tests;
