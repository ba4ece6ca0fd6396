//! The HTTP layer: one locked-down reqwest client, error mapping, and body readers that
//! enforce the size and SSE duration caps while the bytes arrive (never after).

use std::collections::VecDeque;

use reqwest::header::{self, HeaderMap, HeaderValue};
use tokio::time::Instant;

use super::sse::{SseEvent, SseParser};
use super::{Endpoint, Limits, McpError};

pub(crate) const SESSION_HEADER: &str = "mcp-session-id";
pub(crate) const EXCERPT_CHARS: usize = 300;
/// Enough bytes for 300 characters of up to 4-byte UTF-8.
const EXCERPT_BYTES: usize = EXCERPT_CHARS * 4;

pub(crate) fn build_client(endpoint: &Endpoint, limits: &Limits) -> Result<reqwest::Client, McpError> {
    let mut headers = HeaderMap::new();
    // No compression feature is compiled in; saying so keeps servers from compressing
    // anyway, so the size cap counts the bytes the server really sent.
    headers.insert(header::ACCEPT_ENCODING, HeaderValue::from_static("identity"));
    let mut builder = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .connect_timeout(limits.connect_timeout)
        .read_timeout(limits.read_timeout)
        .default_headers(headers)
        .user_agent(concat!("cordon/", env!("CARGO_PKG_VERSION")));
    if let (Some(pin), Some(host)) = (endpoint.pin, endpoint.url.domain()) {
        builder = builder.resolve(host, pin);
    }
    builder.build().map_err(|e| McpError::Protocol { detail: format!("cannot build the http client: {}", chain(&e)) })
}

/// The headers a verdict is built from.
#[derive(Clone, Debug, Default)]
pub(crate) struct Head {
    pub status: u16,
    pub content_type: Option<String>,
    pub location: Option<String>,
    pub www_authenticate: Option<String>,
    pub session_id: Option<String>,
}

impl Head {
    pub fn of(resp: &reqwest::Response) -> Self {
        let get = |name: &str| resp.headers().get(name).map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
        Self {
            status: resp.status().as_u16(),
            content_type: get("content-type"),
            location: get("location"),
            www_authenticate: get("www-authenticate"),
            session_id: get(SESSION_HEADER),
        }
    }

    /// The media type without parameters, lowercased.
    pub fn media_type(&self) -> Option<String> {
        self.content_type.as_deref().map(|ct| ct.split(';').next().unwrap_or("").trim().to_ascii_lowercase())
    }

    pub fn is_sse(&self) -> bool {
        self.media_type().as_deref() == Some("text/event-stream")
    }

    pub fn is_json(&self) -> bool {
        self.media_type().is_some_and(|m| m == "application/json" || m.ends_with("+json"))
    }
}

/// Error text with its causes: reqwest's own Display hides why a connect failed.
pub(crate) fn chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let s_text = s.to_string();
        if !out.contains(&s_text) {
            out.push_str(": ");
            out.push_str(&s_text);
        }
        source = s.source();
    }
    out
}

/// Maps a transport error. `phase` names what was awaited when it was not the connect.
pub(crate) fn map_err(e: reqwest::Error, url: &str, phase: &'static str, limits: &Limits) -> McpError {
    let url = url.to_string();
    if e.is_timeout() {
        let (phase, after) =
            if e.is_connect() { ("connect", limits.connect_timeout) } else { (phase, limits.read_timeout) };
        return McpError::Timeout { url, phase, after };
    }
    if e.is_builder() {
        return McpError::Protocol { detail: format!("cannot build a request to {url}: {}", chain(&e)) };
    }
    // Refused, reset, closed before a status line, DNS: all "nothing answered properly yet".
    McpError::Connect { url, detail: chain(&e) }
}

pub(crate) async fn send(
    req: reqwest::RequestBuilder,
    url: &str,
    limits: &Limits,
) -> Result<reqwest::Response, McpError> {
    req.send().await.map_err(|e| map_err(e, url, "response headers", limits))
}

/// Reads a whole body, failing as soon as it passes `limits.max_response_bytes`.
pub(crate) async fn read_body(resp: &mut reqwest::Response, url: &str, limits: &Limits) -> Result<Vec<u8>, McpError> {
    let limit = limits.max_response_bytes;
    if resp.content_length().is_some_and(|n| n > limit) {
        return Err(McpError::SizeCap { url: url.to_string(), limit });
    }
    let mut body = Vec::new();
    while let Some(chunk) = resp.chunk().await.map_err(|e| map_err(e, url, "response body", limits))? {
        if body.len() as u64 + chunk.len() as u64 > limit {
            return Err(McpError::SizeCap { url: url.to_string(), limit });
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// Like [`read_body`] but stops quietly at `limit` bytes, at `deadline`, or at a transport
/// error: for bodies that are only quoted as evidence, where the status already says
/// what happened.
pub(crate) async fn read_body_prefix(resp: &mut reqwest::Response, limit: u64, deadline: Instant) -> Vec<u8> {
    let mut body = Vec::new();
    while let Ok(Ok(Some(chunk))) = tokio::time::timeout_at(deadline, resp.chunk()).await {
        let room = limit.saturating_sub(body.len() as u64) as usize;
        body.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if room <= chunk.len() {
            break;
        }
    }
    body
}

pub(crate) fn excerpt(bytes: &[u8]) -> String {
    String::from_utf8_lossy(&bytes[..bytes.len().min(EXCERPT_BYTES)]).chars().take(EXCERPT_CHARS).collect()
}

/// An SSE response body read event by event under the size cap and a wall-clock
/// deadline. Keep-alive comments count towards both, so a server cannot hold the
/// stream open forever by pinging.
pub(crate) struct SseStream {
    resp: reqwest::Response,
    parser: SseParser,
    queue: VecDeque<SseEvent>,
    url: String,
    limits: Limits,
    read: u64,
    deadline: Instant,
    /// The first bytes as received, for excerpts.
    pub head_bytes: Vec<u8>,
}

impl SseStream {
    /// `started` is when the request that opened the stream was sent.
    pub fn new(resp: reqwest::Response, url: &str, limits: &Limits, started: Instant) -> Self {
        Self {
            resp,
            parser: SseParser::new(),
            queue: VecDeque::new(),
            url: url.to_string(),
            limits: limits.clone(),
            read: 0,
            deadline: started + limits.sse_max_duration,
            head_bytes: Vec::new(),
        }
    }

    /// The next event; `None` when the server ended the stream.
    pub async fn next(&mut self) -> Result<Option<SseEvent>, McpError> {
        self.next_before(self.deadline).await
    }

    /// As [`Self::next`], but gives up at `until` (if earlier than the cap) with
    /// `SseDurationCap`; callers that pass their own window treat that as "window over".
    pub async fn next_before(&mut self, until: Instant) -> Result<Option<SseEvent>, McpError> {
        let until = until.min(self.deadline);
        loop {
            if let Some(ev) = self.queue.pop_front() {
                return Ok(Some(ev));
            }
            let chunk = match tokio::time::timeout_at(until, self.resp.chunk()).await {
                Err(_) => {
                    return Err(McpError::SseDurationCap {
                        url: self.url.clone(),
                        limit: self.limits.sse_max_duration,
                    });
                }
                Ok(r) => r.map_err(|e| map_err(e, &self.url, "sse event", &self.limits))?,
            };
            let Some(chunk) = chunk else { return Ok(None) };
            self.read += chunk.len() as u64;
            if self.read > self.limits.max_response_bytes {
                return Err(McpError::SizeCap { url: self.url.clone(), limit: self.limits.max_response_bytes });
            }
            if self.head_bytes.len() < EXCERPT_BYTES {
                let room = EXCERPT_BYTES - self.head_bytes.len();
                self.head_bytes.extend_from_slice(&chunk[..chunk.len().min(room)]);
            }
            self.queue.extend(self.parser.feed(&chunk));
        }
    }
}
