//! The HTTP layer: one locked-down reqwest client, error mapping, a wall-clock limit on
//! every exchange, same-origin redirects, decoding of bodies a server compressed anyway,
//! and body readers that enforce the size and SSE duration caps while the bytes arrive.

use std::collections::VecDeque;
use std::future::Future;
use std::io::Write;
use std::sync::OnceLock;

use reqwest::header::{self, HeaderMap, HeaderValue};
use tokio::time::Instant;
use url::Url;

use super::sse::{SseEvent, SseParser};
use super::{Endpoint, Limits, McpError};

pub(crate) const SESSION_HEADER: &str = "mcp-session-id";
pub(crate) const EXCERPT_CHARS: usize = 300;
/// Enough bytes for 300 characters of up to 4-byte UTF-8.
const EXCERPT_BYTES: usize = EXCERPT_CHARS * 4;
/// Same-origin 307/308 hops followed before a redirect counts as an answer.
pub const MAX_REDIRECTS: usize = 3;

/// TLS configuration is built once per process: reading the system's roots for every
/// client cost a disk scan per probe. An http endpoint needs none at all.
fn tls_config(https: bool) -> rustls::ClientConfig {
    static WITH_ROOTS: OnceLock<Option<rustls::ClientConfig>> = OnceLock::new();
    static EMPTY: OnceLock<rustls::ClientConfig> = OnceLock::new();
    let empty = || {
        EMPTY
            .get_or_init(|| {
                rustls::ClientConfig::builder()
                    .with_root_certificates(rustls::RootCertStore::empty())
                    .with_no_client_auth()
            })
            .clone()
    };
    if !https {
        return empty();
    }
    WITH_ROOTS
        .get_or_init(|| {
            use rustls_platform_verifier::ConfigVerifierExt;
            rustls::ClientConfig::with_platform_verifier().ok()
        })
        .clone()
        .unwrap_or_else(empty)
}

pub(crate) fn build_client(endpoint: &Endpoint, limits: &Limits) -> Result<reqwest::Client, McpError> {
    let mut headers = HeaderMap::new();
    // No decompression is compiled into reqwest; saying so keeps honest servers from
    // compressing, so the size cap counts the bytes they really sent. A server that
    // compresses anyway is decoded by cordon itself, within the cap.
    headers.insert(header::ACCEPT_ENCODING, HeaderValue::from_static("identity"));
    let mut builder = reqwest::Client::builder()
        .tls_backend_preconfigured(tls_config(endpoint.url.scheme() == "https"))
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .connect_timeout(limits.connect_timeout)
        .read_timeout(limits.read_timeout)
        .default_headers(headers)
        .user_agent(concat!("cordon/", env!("CARGO_PKG_VERSION")));
    if let (Some(_), Some(host)) = (endpoint.pin, endpoint.url.domain()) {
        // In order: the connector tries the next address when one does not accept.
        builder = builder.resolve_to_addrs(host, &endpoint.addresses());
    }
    builder.build().map_err(|e| McpError::Protocol { detail: format!("cannot build the http client: {}", chain(&e)) })
}

/// The headers a verdict is built from.
#[derive(Clone, Debug, Default)]
pub(crate) struct Head {
    pub status: u16,
    pub content_type: Option<String>,
    pub content_encoding: Option<String>,
    pub location: Option<String>,
    pub www_authenticate: Option<String>,
    pub session_id: Option<String>,
}

impl Head {
    pub fn of(resp: &reqwest::Response) -> Self {
        let get = |name: &str| {
            resp.headers().get(name).map(|v| crate::text::sanitize(&String::from_utf8_lossy(v.as_bytes())))
        };
        Self {
            status: resp.status().as_u16(),
            content_type: get("content-type"),
            content_encoding: get("content-encoding").filter(|e| !e.trim().eq_ignore_ascii_case("identity")),
            location: get("location"),
            www_authenticate: get("www-authenticate"),
            // Kept as sent: it is echoed back verbatim when reused.
            session_id: resp.headers().get(SESSION_HEADER).and_then(|v| v.to_str().ok()).map(str::to_string),
        }
    }

    /// The media type without parameters, lowercased.
    pub fn media_type(&self) -> Option<String> {
        media_type(self.content_type.as_deref())
    }

    pub fn is_sse(&self) -> bool {
        self.media_type().as_deref() == Some("text/event-stream")
    }

    pub fn is_json(&self) -> bool {
        self.media_type().is_some_and(|m| m == "application/json" || m.ends_with("+json"))
    }
}

/// A content type's media type, without parameters, lowercased.
pub(crate) fn media_type(content_type: Option<&str>) -> Option<String> {
    content_type.map(|ct| ct.split(';').next().unwrap_or("").trim().to_ascii_lowercase())
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
    let detail = crate::text::sanitize(&chain(&e));
    if e.is_connect() {
        return McpError::Connect { url, detail };
    }
    // The connection opened, but what came back was not HTTP (or broke off mid-answer).
    if is_parse_error(&e) {
        return McpError::Protocol { detail: format!("{url} answered something that is not HTTP ({phase}): {detail}") };
    }
    // Closed or reset before a complete status line: nothing answered properly yet.
    McpError::Connect { url, detail }
}

fn is_parse_error(e: &reqwest::Error) -> bool {
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        if let Some(h) = s.downcast_ref::<hyper::Error>() {
            return h.is_parse() || h.is_parse_status() || h.is_parse_too_large();
        }
        source = s.source();
    }
    false
}

/// Runs one whole exchange (headers and body) under the exchange limit: a server that
/// drips a byte at a time resets the read timeout forever, but not this.
pub(crate) async fn within<T>(
    limits: &Limits,
    url: &str,
    what: &'static str,
    fut: impl Future<Output = Result<T, McpError>>,
) -> Result<T, McpError> {
    match tokio::time::timeout(limits.exchange_timeout, fut).await {
        Ok(r) => r,
        Err(_) => Err(McpError::Timeout { url: url.to_string(), phase: what, after: limits.exchange_timeout }),
    }
}

/// One followed redirect.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Hop {
    pub status: u16,
    pub from: String,
    pub to: String,
}

impl std::fmt::Display for Hop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "followed a same-origin {} from {} to {}", self.status, self.from, self.to)
    }
}

/// Where a 307/308 may lead: only back to the same scheme, host and port, so no
/// credential ever leaves the origin. Anything else is an answer, not a hop.
pub(crate) fn same_origin_target(from: &Url, status: u16, location: Option<&str>) -> Option<Url> {
    if status != 307 && status != 308 {
        return None;
    }
    let to = from.join(location?).ok()?;
    (to.origin() == from.origin()).then_some(to)
}

/// Sends `req`, following at most [`MAX_REDIRECTS`] same-origin 307/308 hops (they keep
/// method, body and headers). Returns the final response and the hops followed.
///
/// When what came back is not HTTP, the first bytes of it are read again over a plain
/// connection to `pin` (or to the URL's address literal) and quoted in the error.
pub(crate) async fn send(
    req: reqwest::RequestBuilder,
    url: &str,
    limits: &Limits,
    pin: Option<std::net::SocketAddr>,
) -> Result<(reqwest::Response, Vec<Hop>), McpError> {
    let mut hops = Vec::new();
    let mut req = req;
    let mut current = Url::parse(url).map_err(|e| McpError::Protocol { detail: format!("bad url {url}: {e}") })?;
    loop {
        let retry = req.try_clone();
        crate::cost::MCP_REQUESTS.add(1);
        let resp = match req.send().await {
            Ok(resp) => resp,
            Err(e) if is_parse_error(&e) => {
                let mut err = map_err(e, current.as_str(), "response headers", limits);
                if let (McpError::Protocol { detail }, Some(seen)) = (&mut err, peek_raw(&current, pin, limits).await) {
                    detail.push_str(&format!("; it sent: {seen}"));
                }
                return Err(err);
            }
            Err(e) => return Err(map_err(e, current.as_str(), "response headers", limits)),
        };
        let location = resp.headers().get(header::LOCATION).and_then(|v| v.to_str().ok()).map(str::to_string);
        let next = same_origin_target(&current, resp.status().as_u16(), location.as_deref());
        match (next, retry) {
            (Some(to), Some(retry)) if hops.len() < MAX_REDIRECTS => {
                hops.push(Hop {
                    status: resp.status().as_u16(),
                    from: current.to_string(),
                    to: crate::text::sanitize(to.as_str()),
                });
                let (client, request) = retry.build_split();
                let mut request = request.map_err(|e| McpError::Protocol { detail: chain(&e) })?;
                *request.url_mut() = to.clone();
                req = reqwest::RequestBuilder::from_parts(client, request);
                current = to;
            }
            _ => return Ok((resp, hops)),
        }
    }
}

/// The first bytes a server sends to a plain HTTP/1.1 request, for evidence when what it
/// sent cordon's HTTP client was not HTTP. Only plain http, only to an address cordon
/// already talks to (the pin or an address literal: nothing is resolved here).
async fn peek_raw(url: &Url, pin: Option<std::net::SocketAddr>, limits: &Limits) -> Option<String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    if url.scheme() != "http" {
        return None;
    }
    let port = url.port_or_known_default()?;
    let ip = match (pin, url.host()?) {
        (Some(p), _) => p.ip(),
        (None, url::Host::Ipv4(ip)) => ip.into(),
        (None, url::Host::Ipv6(ip)) => ip.into(),
        (None, url::Host::Domain(_)) => return None,
    };
    let peek = async {
        let mut s = tokio::net::TcpStream::connect((ip, port)).await.ok()?;
        let host = url.host_str().unwrap_or("");
        let head = format!("GET {} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n", url.path());
        s.write_all(head.as_bytes()).await.ok()?;
        let mut buf = vec![0u8; 256];
        let mut got = 0;
        while got < buf.len() {
            // A server that sends a little and then holds the line still gets quoted.
            match tokio::time::timeout(std::time::Duration::from_millis(500), s.read(&mut buf[got..])).await {
                Ok(Ok(n)) if n > 0 => got += n,
                _ => break,
            }
        }
        buf.truncate(got);
        (!buf.is_empty()).then(|| crate::text::body_excerpt(&buf, 160))
    };
    tokio::time::timeout(limits.connect_timeout + limits.read_timeout.min(std::time::Duration::from_secs(2)), peek)
        .await
        .ok()
        .flatten()
}

/// Undoes a `Content-Encoding` the server applied although cordon asked for identity,
/// feeding compressed chunks in and handing decoded bytes out, under the size cap.
pub(crate) enum Decoder {
    Identity,
    Gzip(flate2::write::GzDecoder<Vec<u8>>),
    Deflate(flate2::write::ZlibDecoder<Vec<u8>>),
    RawDeflate(flate2::write::DeflateDecoder<Vec<u8>>),
    Brotli(Box<brotli_decompressor::DecompressorWriter<Vec<u8>>>),
}

impl Decoder {
    /// `None` for an encoding cordon cannot read.
    pub fn for_encoding(encoding: Option<&str>) -> Option<Decoder> {
        let Some(encoding) = encoding else { return Some(Decoder::Identity) };
        Some(match encoding.trim().to_ascii_lowercase().as_str() {
            "" | "identity" => Decoder::Identity,
            "gzip" | "x-gzip" => Decoder::Gzip(flate2::write::GzDecoder::new(Vec::new())),
            "deflate" => Decoder::Deflate(flate2::write::ZlibDecoder::new(Vec::new())),
            "br" => Decoder::Brotli(Box::new(brotli_decompressor::DecompressorWriter::new(Vec::new(), 4096))),
            _ => return None,
        })
    }

    /// Decoded bytes for one compressed chunk.
    pub fn feed(&mut self, chunk: &[u8]) -> Result<Vec<u8>, String> {
        fn drain<W: Write>(
            w: &mut W,
            chunk: &[u8],
            inner: impl FnOnce(&mut W) -> &mut Vec<u8>,
        ) -> Result<Vec<u8>, String> {
            w.write_all(chunk).map_err(|e| e.to_string())?;
            w.flush().map_err(|e| e.to_string())?;
            Ok(std::mem::take(inner(w)))
        }
        match self {
            Decoder::Identity => Ok(chunk.to_vec()),
            Decoder::Gzip(d) => drain(d, chunk, |d| d.get_mut()),
            Decoder::Deflate(d) => match drain(d, chunk, |d| d.get_mut()) {
                // "deflate" is zlib by the RFC, raw deflate by common practice: try both.
                Err(_) if d.total_out() == 0 => {
                    let mut raw = flate2::write::DeflateDecoder::new(Vec::new());
                    let out = drain(&mut raw, chunk, |d| d.get_mut())?;
                    *self = Decoder::RawDeflate(raw);
                    Ok(out)
                }
                other => other,
            },
            Decoder::RawDeflate(d) => drain(d, chunk, |d| d.get_mut()),
            Decoder::Brotli(d) => drain(d.as_mut(), chunk, |d| d.get_mut()),
        }
    }
}

/// Reads a whole body, failing as soon as it passes `limits.max_response_bytes` (raw or
/// decoded).
pub(crate) async fn read_body(
    resp: &mut reqwest::Response,
    head: &Head,
    url: &str,
    limits: &Limits,
) -> Result<Vec<u8>, McpError> {
    let limit = limits.max_response_bytes;
    if resp.content_length().is_some_and(|n| n > limit) {
        return Err(McpError::SizeCap { url: url.to_string(), limit });
    }
    let mut decoder = Decoder::for_encoding(head.content_encoding.as_deref()).ok_or_else(|| McpError::Protocol {
        detail: format!(
            "{url} compressed its answer with `{}` although cordon asked for identity, and cordon cannot decode it",
            head.content_encoding.as_deref().unwrap_or("")
        ),
    })?;
    let mut raw = 0u64;
    let mut body = Vec::new();
    while let Some(chunk) = resp.chunk().await.map_err(|e| map_err(e, url, "response body", limits))? {
        raw += chunk.len() as u64;
        let decoded = decoder.feed(&chunk).map_err(|e| McpError::Protocol {
            detail: format!("{url}: cannot decode its {} body: {e}", head.content_encoding.as_deref().unwrap_or("")),
        })?;
        if raw > limit || body.len() as u64 + decoded.len() as u64 > limit {
            return Err(McpError::SizeCap { url: url.to_string(), limit });
        }
        body.extend_from_slice(&decoded);
    }
    Ok(body)
}

/// Like [`read_body`] but stops quietly at `limit` bytes, at `deadline`, or at a transport
/// error: for bodies that are only quoted as evidence, where the status already says
/// what happened. Returns the raw bytes and whether the body ended by itself.
pub(crate) async fn read_body_prefix(resp: &mut reqwest::Response, limit: u64, deadline: Instant) -> (Vec<u8>, bool) {
    let mut body = Vec::new();
    loop {
        match tokio::time::timeout_at(deadline, resp.chunk()).await {
            Ok(Ok(Some(chunk))) => {
                let room = limit.saturating_sub(body.len() as u64) as usize;
                body.extend_from_slice(&chunk[..chunk.len().min(room)]);
                if room <= chunk.len() {
                    return (body, false);
                }
            }
            Ok(Ok(None)) => return (body, true),
            _ => return (body, false),
        }
    }
}

/// Text for evidence: sanitized, cut to [`EXCERPT_CHARS`]; binary is summarised, never
/// copied.
pub(crate) fn excerpt(bytes: &[u8]) -> String {
    crate::text::body_excerpt(&bytes[..bytes.len().min(EXCERPT_BYTES)], EXCERPT_CHARS)
}

/// An SSE response body read event by event under the size cap and a wall-clock
/// deadline. Keep-alive comments count towards both, so a server cannot hold the
/// stream open forever by pinging.
pub(crate) struct SseStream {
    resp: reqwest::Response,
    parser: SseParser,
    decoder: Decoder,
    queue: VecDeque<SseEvent>,
    url: String,
    limits: Limits,
    read: u64,
    deadline: Instant,
    /// The first bytes as received (decoded), for excerpts.
    pub head_bytes: Vec<u8>,
}

impl SseStream {
    /// `started` is when the request that opened the stream was sent.
    pub fn new(resp: reqwest::Response, head: &Head, url: &str, limits: &Limits, started: Instant) -> Self {
        Self {
            resp,
            parser: SseParser::new(),
            decoder: Decoder::for_encoding(head.content_encoding.as_deref()).unwrap_or(Decoder::Identity),
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
            let chunk = self
                .decoder
                .feed(&chunk)
                .map_err(|e| McpError::Protocol { detail: format!("{}: cannot decode its sse body: {e}", self.url) })?;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_same_origin_307_and_308_are_followed() {
        let from = Url::parse("http://p:8000/mcp").unwrap();
        assert_eq!(same_origin_target(&from, 307, Some("/mcp/")).unwrap().as_str(), "http://p:8000/mcp/");
        assert!(same_origin_target(&from, 308, Some("http://p:8000/v2/mcp")).is_some());
        assert!(same_origin_target(&from, 302, Some("/mcp/")).is_none(), "302 changes the method");
        assert!(same_origin_target(&from, 307, Some("http://idp:8000/login")).is_none());
        assert!(same_origin_target(&from, 307, Some("https://p:8000/mcp")).is_none());
        assert!(same_origin_target(&from, 307, Some("http://p:9000/mcp")).is_none());
        assert!(same_origin_target(&from, 307, None).is_none());
    }

    #[test]
    fn decoders_undo_what_servers_apply() {
        let text = b"{\"tools\":[{\"name\":\"add\"}]}";
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(text).unwrap();
        let gz = gz.finish().unwrap();
        let mut d = Decoder::for_encoding(Some("gzip")).unwrap();
        let mut out = Vec::new();
        for chunk in gz.chunks(5) {
            out.extend(d.feed(chunk).unwrap());
        }
        assert_eq!(out, text);
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        z.write_all(text).unwrap();
        assert_eq!(Decoder::for_encoding(Some("deflate")).unwrap().feed(&z.finish().unwrap()).unwrap(), text);
        let mut raw = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::default());
        raw.write_all(text).unwrap();
        assert_eq!(Decoder::for_encoding(Some("deflate")).unwrap().feed(&raw.finish().unwrap()).unwrap(), text);
        assert!(Decoder::for_encoding(Some("zstd")).is_none());
        assert!(Decoder::for_encoding(Some("gzip")).unwrap().feed(b"not gzip at all").is_err());
    }
}
