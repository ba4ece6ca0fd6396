//! A hand-rolled MCP client for conformance checks.
//!
//! Off-the-shelf MCP clients hide exactly what cordon must judge: they follow redirects,
//! retry, decompress, and turn a 401 into an exception without its headers. This client
//! speaks the three wire eras (2026-07-28 stateless, stateful Streamable HTTP, legacy
//! HTTP+SSE) over one plain `reqwest::Client` and reports every answer with its raw
//! status, content type and headers, under hard limits on time, size and pages.

mod exchange;
pub(crate) mod http;
mod jsonrpc;
mod legacy;
mod sized;
mod sse;
mod streamable;
mod tools;

use std::collections::BTreeSet;
use std::fmt;
use std::net::SocketAddr;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde_json::Value;

use crate::secret::Secret;

pub use exchange::{Ask, Exchange, SessionSource};
#[cfg(test)]
pub use exchange::{BodyFacts, RpcFacts};
pub use http::Hop;
pub use sized::PageSeen;
pub use tools::{Schema, canonical_json, parse_tools, schema_hash};

/// The stateless revision cordon probes first.
pub const MODERN_PROTOCOL_VERSION: &str = "2026-07-28";
/// The handshake-era revision cordon proposes in `initialize`.
pub const HANDSHAKE_PROTOCOL_VERSION: &str = "2025-06-18";
const CLIENT_NAME: &str = "cordon";

/// Hard limits; every request of a client obeys all of them.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Limits {
    pub connect_timeout: Duration,
    /// Per read: resets whenever bytes arrive, so it bounds stalls, not total time.
    pub read_timeout: Duration,
    /// Per response, and for all pages of one `tools/list` together.
    pub max_response_bytes: u64,
    /// Wall time of an SSE stream from the start of the request that opened it. A legacy
    /// SSE session lives on one stream, so the whole legacy session must fit in it.
    pub sse_max_duration: Duration,
    pub max_pages: usize,
    /// Wall time of one whole exchange: headers and body. A server dripping one byte at
    /// a time resets `read_timeout` forever; this it cannot.
    pub exchange_timeout: Duration,
    /// Tools one listing may hold before cordon stops counting.
    pub max_tools: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            connect_timeout: Duration::from_secs(3),
            read_timeout: Duration::from_secs(10),
            max_response_bytes: 4 * 1024 * 1024,
            sse_max_duration: Duration::from_secs(15),
            max_pages: 20,
            exchange_timeout: Duration::from_secs(15),
            max_tools: 10_000,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Transport {
    StreamableHttp,
    Sse,
}

/// Which wire era to speak: whatever the server offers first (as real clients do), or
/// the handshake era on purpose (to compare what each era is shown).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum EraChoice {
    Auto,
    /// `initialize` handshake only, never `server/discover`.
    Handshake,
}

/// Which wire era a provider answered in.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Era {
    /// Revision 2026-07-28: `server/discover`, no initialize, no session.
    Stateless2026,
    /// `initialize` handshake; a session id may or may not have been issued.
    Stateful { protocol_version: String },
    /// HTTP+SSE (2024-11-05 transport): GET stream plus a POST endpoint.
    LegacySse,
}

#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Endpoint {
    pub url: url::Url,
    pub transport: Transport,
    /// Connect to this address instead of resolving the URL's host name; the Host header
    /// still names the host. Port 0 keeps the URL's port. Ignored when the URL host is
    /// an IP literal.
    pub pin: Option<SocketAddr>,
    /// Where to connect when `pin` does not accept, in order, as a client's connect loop
    /// walks the addresses its libc returned (a dual-stack replica refusing IPv4 but
    /// listening on IPv6 is still reached).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fallbacks: Vec<SocketAddr>,
}

impl Endpoint {
    /// The URL as written, resolved the usual way.
    pub fn new(url: url::Url, transport: Transport) -> Endpoint {
        Endpoint { url, transport, pin: None, fallbacks: vec![] }
    }

    /// Pinned to `addrs` in order: the first, then the others as fallbacks. Empty leaves
    /// the endpoint as it is.
    pub fn pinned_in_order(&self, addrs: &[SocketAddr]) -> Endpoint {
        let Some((first, rest)) = addrs.split_first() else { return self.clone() };
        let mut e = self.pinned_to(*first);
        if e.url.domain().is_some() {
            e.fallbacks = rest.to_vec();
        }
        e
    }

    /// Every address this endpoint may connect to, in order.
    pub fn addresses(&self) -> Vec<SocketAddr> {
        self.pin.into_iter().chain(self.fallbacks.iter().copied()).collect()
    }

    /// The same endpoint, talking to `addr` (address and port). A host name stays in the
    /// URL (the Host header names it) and is pinned to the address; an address literal is
    /// replaced.
    pub fn pinned_to(&self, addr: SocketAddr) -> Endpoint {
        let mut url = self.url.clone();
        let _ = url.set_port(Some(addr.port()));
        if url.domain().is_none() {
            let _ = url.set_ip_host(addr.ip());
        }
        Endpoint { url, transport: self.transport, pin: Some(addr), fallbacks: vec![] }
    }

    /// The same pin, another port.
    pub fn at_port(&self, port: u16) -> Endpoint {
        let addr = self.pin.map(|p| p.ip()).unwrap_or(std::net::IpAddr::from([127, 0, 0, 1]));
        self.pinned_to(SocketAddr::new(addr, port))
    }
}

pub struct McpClient {
    endpoint: Endpoint,
    bearer: Option<Secret>,
    /// Send the credential as this URL query parameter, with no `Authorization` header:
    /// a misplaced credential every server must refuse.
    query_credential: Option<String>,
    limits: Limits,
    http: reqwest::Client,
    next_id: AtomicU64,
    /// Same-origin redirects followed so far, for evidence.
    hops: Mutex<Vec<Hop>>,
    /// The address the last answer came from.
    peer: Mutex<Option<SocketAddr>>,
    /// Bytes of the listing in progress, against `max_response_bytes` for all pages.
    listing_bytes: AtomicU64,
    /// How long a request turned away busy (429, 503) is asked again before the answer
    /// stands: a provider at its concurrency limit (another check's burst) says nothing
    /// of this request. Zero for a client that judges the busy answers themselves.
    busy_patience: Duration,
}

/// How long a request turned away busy is asked again by default: longer than a limits
/// burst holds a provider's slots (its slow call, cut at `timeout_seconds` or by cordon
/// a few seconds later).
pub const BUSY_PATIENCE: Duration = Duration::from_secs(15);

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

impl Session {
    /// The `Mcp-Session-Id` the server issued, to present again (never printed).
    pub fn session_id(&self) -> Option<&str> {
        self.session_id.as_deref()
    }

    pub fn protocol_version(&self) -> Option<&str> {
        self.protocol_version.as_deref()
    }
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

#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Tool {
    pub name: String,
    pub description: Option<String>,
    /// Canonical JSON text; `null` when the server omitted `inputSchema`.
    pub input_schema: Schema,
}

#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct ToolResult {
    pub is_error: bool,
    /// The `text` of every `type: "text"` content item, in order.
    pub text: Vec<String>,
    pub structured: Option<Value>,
    pub raw: Value,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum EntryPoint {
    Initialize,
    Discover,
    ToolsList,
    ToolsCall,
    SseGet,
    /// `DELETE` of a session (session-bound only).
    Delete,
}

impl fmt::Display for EntryPoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            EntryPoint::Initialize => "initialize",
            EntryPoint::Discover => "server/discover",
            EntryPoint::ToolsList => "tools/list",
            EntryPoint::ToolsCall => "tools/call",
            EntryPoint::SseGet => "SSE GET",
            EntryPoint::Delete => "DELETE",
        })
    }
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
        "{entry} got {} to {} from {url} (a redirect is not a refusal of the MCP protocol; cordon follows only same-origin 307/308, at most 3 hops)",
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
    #[error("tools/list served more than {limit} tools (tool cap)")]
    ToolCap { limit: usize },
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
        Ok(Self {
            endpoint,
            bearer,
            query_credential: None,
            limits,
            http,
            next_id: AtomicU64::new(1),
            hops: Mutex::new(Vec::new()),
            peer: Mutex::new(None),
            listing_bytes: AtomicU64::new(0),
            busy_patience: BUSY_PATIENCE,
        })
    }

    /// A client whose requests turned away busy are answered as they came (the limits
    /// check judges them).
    pub fn impatient(mut self) -> Self {
        self.busy_patience = Duration::ZERO;
        self
    }

    /// This client sends its credential in the URL query parameter `param` instead of the
    /// `Authorization` header.
    pub fn credential_in_query(mut self, param: &str) -> Self {
        self.query_credential = Some(param.to_string());
        self
    }

    /// `url` as this client requests it: with the credential as a query parameter when
    /// it sends it there.
    pub(crate) fn request_url(&self, url: &url::Url) -> url::Url {
        let mut url = url.clone();
        if let (Some(secret), Some(param)) = (&self.bearer, &self.query_credential) {
            url.query_pairs_mut().append_pair(param, secret.expose());
        }
        url
    }

    /// `req` with the `Authorization` header, unless the credential goes in the query.
    pub(crate) fn authorize(&self, req: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        match (&self.bearer, &self.query_credential) {
            (Some(secret), None) => req.bearer_auth(secret.expose()),
            _ => req,
        }
    }

    /// Same-origin redirects this client followed, for evidence.
    pub fn hops(&self) -> Vec<Hop> {
        self.hops.lock().expect("hops lock").clone()
    }

    /// Records where an answer came from: the redirects followed, and the address the
    /// connection ended up on (the pin, or a fallback after it).
    pub(crate) fn record_answer(&self, resp: &reqwest::Response, hops: Vec<Hop>) {
        if let Some(peer) = resp.remote_addr() {
            *self.peer.lock().expect("peer lock") = Some(peer);
        }
        if !hops.is_empty() {
            self.hops.lock().expect("hops lock").extend(hops);
        }
    }

    /// The address the last answer came from.
    pub fn peer(&self) -> Option<SocketAddr> {
        *self.peer.lock().expect("peer lock")
    }

    /// Counts bytes of the listing in progress; errs past the size cap.
    pub(crate) fn count_listing_bytes(&self, n: u64) -> Result<(), McpError> {
        let total = self.listing_bytes.fetch_add(n, Ordering::Relaxed) + n;
        if total > self.limits.max_response_bytes {
            return Err(McpError::SizeCap {
                url: format!("{} (all tools/list pages together)", self.endpoint.url),
                limit: self.limits.max_response_bytes,
            });
        }
        Ok(())
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
        self.connect_era(EraChoice::Auto).await
    }

    /// [`Self::connect`], choosing the era on purpose.
    pub async fn connect_era(&self, era: EraChoice) -> Result<Session, McpError> {
        match self.endpoint.transport {
            Transport::StreamableHttp => streamable::connect(self, era).await,
            Transport::Sse => legacy::connect(self).await,
        }
    }

    /// `tools/list`, following `nextCursor` up to `limits.max_pages` pages, with at most
    /// `max_response_bytes` for all pages together and at most `max_tools` tools.
    pub async fn list_tools(&self, session: &Session) -> Result<Vec<Tool>, McpError> {
        self.listing_bytes.store(0, Ordering::Relaxed);
        tools::paginate(self.limits.max_pages, self.limits.max_tools, |cursor, room| async move {
            let params = match cursor {
                Some(c) => serde_json::json!({ "cursor": c }),
                None => serde_json::json!({}),
            };
            let reply = self.reply(session, "tools/list", params).await?;
            tools::Page::from_large_reply(reply.text, reply.id, room).await
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

    /// One exchange as asked, with this client's bearer (or none), observed whole.
    /// `names` are the tool names whose appearance in the answer counts as disclosure.
    /// Transport errors before a status line (connect, timeout) are errors; anything
    /// after the status line is observed, not judged.
    pub async fn exchange(&self, ask: &Ask, names: &BTreeSet<String>) -> Result<Exchange, McpError> {
        exchange::exchange(self, ask, names).await
    }

    /// Sends one request in the session's era and returns its `result`.
    async fn request(&self, session: &Session, method: &str, params: Value) -> Result<Value, McpError> {
        self.reply(session, method, params).await?.result(method)
    }

    /// Sends one request in the session's era and returns the text of its (successful)
    /// reply, unparsed.
    async fn reply(&self, session: &Session, method: &str, params: Value) -> Result<jsonrpc::Reply, McpError> {
        match &session.legacy {
            Some(stream) => legacy::request(self, stream, method, params).await,
            None => streamable::request(self, session, method, params).await,
        }
    }
}

#[cfg(test)]
mod props;
#[cfg(test)]
mod tests;
