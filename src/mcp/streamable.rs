//! Streamable HTTP: every message is a POST; the reply is JSON or an SSE stream.

use reqwest::header;
use serde_json::{Value, json};
use std::time::Duration;

use tokio::time::Instant;
use url::Url;

use super::http::{self, Head, SESSION_HEADER, SseStream};
use super::jsonrpc::{self, Reply, ReplyError};
use super::{
    CLIENT_NAME, Era, EraChoice, HANDSHAKE_PROTOCOL_VERSION, MODERN_PROTOCOL_VERSION, McpClient, McpError, Session,
};

pub(crate) const VERSION_HEADER: &str = "mcp-protocol-version";
const METHOD_HEADER: &str = "mcp-method";
const NAME_HEADER: &str = "mcp-name";
const ACCEPT_BOTH: &str = "application/json, text/event-stream";

pub(crate) type Headers = Vec<(&'static str, String)>;

fn client_info() -> Value {
    json!({ "name": CLIENT_NAME, "version": env!("CARGO_PKG_VERSION") })
}

pub(crate) fn initialize_params() -> Value {
    json!({ "protocolVersion": HANDSHAKE_PROTOCOL_VERSION, "capabilities": {}, "clientInfo": client_info() })
}

/// Adds what revision 2026-07-28 wants on every request: the `_meta` envelope, and
/// routing headers that must agree with the body (the Python SDK rejects a mismatch).
pub(crate) fn modern(method: &str, mut params: Value) -> (Value, Headers) {
    if !params.is_object() {
        params = json!({});
    }
    let obj = params.as_object_mut().expect("made an object above");
    let meta = obj.entry("_meta").or_insert_with(|| json!({}));
    if let Some(meta) = meta.as_object_mut() {
        meta.insert("io.modelcontextprotocol/protocolVersion".into(), json!(MODERN_PROTOCOL_VERSION));
        meta.insert("io.modelcontextprotocol/clientInfo".into(), client_info());
        meta.insert("io.modelcontextprotocol/clientCapabilities".into(), json!({}));
    }
    let mut headers: Headers =
        vec![(VERSION_HEADER, MODERN_PROTOCOL_VERSION.to_string()), (METHOD_HEADER, method.to_string())];
    let name_key = match method {
        "tools/call" | "prompts/get" => Some("name"),
        "resources/read" => Some("uri"),
        _ => None,
    };
    if let Some(name) = name_key.and_then(|k| obj.get(k)).and_then(Value::as_str) {
        headers.push((NAME_HEADER, encode_header_value(name)));
    }
    (params, headers)
}

/// Printable ASCII without edge whitespace goes verbatim; anything else is wrapped as
/// `=?base64?…?=` so it survives as an HTTP field (the 2026-07-28 rule).
fn encode_header_value(v: &str) -> String {
    let safe = v.bytes().all(|b| (0x20..=0x7e).contains(&b))
        && v == v.trim()
        && !(v.starts_with("=?base64?") && v.ends_with("?="));
    if safe {
        v.to_string()
    } else {
        format!("=?base64?{}?=", base64::Engine::encode(&base64::engine::general_purpose::STANDARD, v))
    }
}

/// A POST of one JSON-RPC message, as every MCP HTTP client sends it.
pub(crate) fn post(client: &McpClient, url: &Url, body: &Value, headers: &Headers) -> reqwest::RequestBuilder {
    let mut req = client
        .http
        .post(client.request_url(url))
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::ACCEPT, ACCEPT_BOTH)
        .body(serde_json::to_vec(body).expect("a Value always serialises"));
    req = client.authorize(req);
    for (name, value) in headers {
        req = req.header(*name, value);
    }
    req
}

/// Turns a non-2xx head into its error, quoting the start of the body.
pub(crate) async fn reject_non_success(
    client: &McpClient,
    resp: &mut reqwest::Response,
    head: &Head,
    entry: &str,
    url: &Url,
) -> Result<(), McpError> {
    if (300..400).contains(&head.status) {
        return Err(McpError::Redirect {
            entry: entry.to_string(),
            url: url.to_string(),
            status: head.status,
            location: head.location.clone(),
        });
    }
    if !(200..300).contains(&head.status) {
        let body = read_quote(client, resp).await;
        return Err(McpError::Http {
            entry: entry.to_string(),
            url: url.to_string(),
            status: head.status,
            content_type: head.content_type.clone(),
            www_authenticate: head.www_authenticate.clone(),
            body_excerpt: http::excerpt(&body),
        });
    }
    Ok(())
}

/// The start of a body that is only quoted as evidence, bounded in size and time.
pub(crate) async fn read_quote(client: &McpClient, resp: &mut reqwest::Response) -> Vec<u8> {
    let limits = &client.limits;
    let deadline = Instant::now() + limits.read_timeout;
    http::read_body_prefix(resp, limits.max_response_bytes.min(64 * 1024), deadline).await.0
}

pub(crate) fn reply_error(method: &str, e: ReplyError) -> McpError {
    match e {
        ReplyError::Rpc { code, message, .. } => McpError::JsonRpc { method: method.to_string(), code, message },
        ReplyError::Malformed(detail) => McpError::Protocol { detail: format!("{method} reply: {detail}") },
    }
}

/// Sends request `method` and returns its (successful) reply and the reply's head; a
/// request turned away busy is asked again for the client's patience.
pub(crate) async fn post_request(
    client: &McpClient,
    url: &Url,
    method: &str,
    params: Value,
    headers: Headers,
) -> Result<(Reply, Head), McpError> {
    let started = Instant::now();
    let mut pause = Duration::from_millis(250);
    loop {
        let outcome = post_request_once(client, url, method, params.clone(), headers.clone()).await;
        let busy = matches!(outcome, Err(McpError::Http { status: 429 | 503, .. }));
        if !busy || started.elapsed() + pause > client.busy_patience {
            return outcome;
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_secs(2));
    }
}

async fn post_request_once(
    client: &McpClient,
    url: &Url,
    method: &str,
    params: Value,
    headers: Headers,
) -> Result<(Reply, Head), McpError> {
    let id = client.next_id();
    let body = jsonrpc::request(id, method, params);
    http::within(&client.limits, url.as_str(), "the whole exchange", async {
        let started = Instant::now();
        let (mut resp, hops) =
            http::send(post(client, url, &body, &headers), url.as_str(), &client.limits, client.endpoint.pin).await?;
        client.record_answer(&resp, hops);
        let head = Head::of(&resp);
        reject_non_success(client, &mut resp, &head, method, url).await?;
        let reply = read_reply(client, resp, &head, id, method, url, started).await?;
        Ok((reply, head))
    })
    .await
}

async fn read_reply(
    client: &McpClient,
    mut resp: reqwest::Response,
    head: &Head,
    id: u64,
    method: &str,
    url: &Url,
    started: Instant,
) -> Result<Reply, McpError> {
    let not_mcp = |body: &[u8]| McpError::NotMcp {
        entry: method.to_string(),
        url: url.to_string(),
        status: head.status,
        content_type: head.content_type.clone(),
        body_excerpt: http::excerpt(body),
    };
    let listing = method == "tools/list";
    if head.is_sse() {
        let mut stream = SseStream::new(resp, head, url.as_str(), &client.limits, started);
        while let Some(ev) = stream.next().await? {
            if listing {
                client.count_listing_bytes(ev.data.len() as u64)?;
            }
            if ev.event != "message" {
                continue;
            }
            let Ok(scanned) = jsonrpc::scan(ev.data.as_bytes(), id) else {
                return Err(not_mcp(ev.data.as_bytes()));
            };
            match scanned.reply {
                Some(Ok(())) => return Ok(Reply { text: ev.data.into_bytes(), id }),
                Some(Err(e)) => return Err(reply_error(method, e)),
                None => {}
            }
        }
        return Err(McpError::Protocol {
            detail: format!("{method} at {url}: the sse stream ended without a reply to request id {id}"),
        });
    }
    if head.is_json() {
        let body = http::read_body(&mut resp, head, url.as_str(), &client.limits).await?;
        if listing {
            client.count_listing_bytes(body.len() as u64)?;
        }
        let scanned = match jsonrpc::scan(&body, id) {
            Ok(s) if s.jsonrpc => s,
            _ => return Err(not_mcp(&body)),
        };
        return match scanned.reply {
            Some(Ok(())) => Ok(Reply { text: body, id }),
            Some(Err(e)) => Err(reply_error(method, e)),
            None => Err(McpError::Protocol {
                detail: format!("{method} at {url}: the json reply carries no response to request id {id}"),
            }),
        };
    }
    let body = read_quote(client, &mut resp).await;
    if body.is_empty() && head.content_type.is_none() {
        return Err(McpError::Protocol {
            detail: format!("{method} at {url} got {} with no body; a request needs a json or sse reply", head.status),
        });
    }
    Err(not_mcp(&body))
}

/// Sends a notification; any 2xx is accepted (202 is what the spec asks for).
pub(crate) async fn post_notification(
    client: &McpClient,
    url: &Url,
    method: &str,
    headers: Headers,
) -> Result<(), McpError> {
    let body = jsonrpc::notification(method, json!({}));
    http::within(&client.limits, url.as_str(), "the whole exchange", async {
        let (mut resp, hops) =
            http::send(post(client, url, &body, &headers), url.as_str(), &client.limits, client.endpoint.pin).await?;
        client.record_answer(&resp, hops);
        let head = Head::of(&resp);
        reject_non_success(client, &mut resp, &head, method, url).await
    })
    .await
}

fn supports_modern(discover: &Value) -> bool {
    discover
        .get("supportedVersions")
        .and_then(Value::as_array)
        .is_some_and(|v| v.iter().any(|v| v.as_str() == Some(MODERN_PROTOCOL_VERSION)))
}

fn server_name(result: &Value) -> Option<String> {
    result
        .pointer("/_meta/io.modelcontextprotocol~1serverInfo/name")
        .or_else(|| result.pointer("/serverInfo/name"))
        .and_then(Value::as_str)
        .map(str::to_string)
}

pub(crate) async fn connect(client: &McpClient, era: EraChoice) -> Result<Session, McpError> {
    let url = &client.endpoint.url;
    let (params, headers) = modern("server/discover", json!({}));
    let discovered = match era {
        EraChoice::Auto => post_request(client, url, "server/discover", params, headers).await,
        EraChoice::Handshake => {
            Err(McpError::JsonRpc { method: "server/discover".into(), code: 0, message: "skipped".into() })
        }
    };
    match discovered {
        Ok((reply, _)) => {
            let result = reply.result("server/discover")?;
            if !supports_modern(&result) {
                // Speaks discover but not this revision: a handshake-era server.
                return connect_handshake(client).await;
            }
            return Ok(Session {
                era: Era::Stateless2026,
                server_name: server_name(&result),
                session_id_present: false,
                message_url: None,
                session_id: None,
                protocol_version: Some(MODERN_PROTOCOL_VERSION.to_string()),
                legacy: None,
            });
        }
        Err(McpError::Http { status: 400..=499, .. } | McpError::JsonRpc { .. }) => {}
        Err(e) => return Err(e),
    }
    connect_handshake(client).await
}

async fn connect_handshake(client: &McpClient) -> Result<Session, McpError> {
    let url = &client.endpoint.url;
    let (reply, head) = post_request(client, url, "initialize", initialize_params(), Vec::new()).await?;
    let result = reply.result("initialize")?;
    let Some(version) = result.get("protocolVersion").and_then(Value::as_str).map(str::to_string) else {
        return Err(McpError::Protocol { detail: format!("initialize at {url}: the result has no protocolVersion") });
    };
    let session = Session {
        era: Era::Stateful { protocol_version: version.clone() },
        server_name: server_name(&result),
        session_id_present: head.session_id.is_some(),
        message_url: None,
        session_id: head.session_id,
        protocol_version: Some(version),
        legacy: None,
    };
    post_notification(client, url, "notifications/initialized", session_headers(&session)).await?;
    Ok(session)
}

fn session_headers(session: &Session) -> Headers {
    let mut headers = Headers::new();
    if let Some(id) = &session.session_id {
        headers.push((SESSION_HEADER, id.clone()));
    }
    if let Some(v) = &session.protocol_version {
        headers.push((VERSION_HEADER, v.clone()));
    }
    headers
}

pub(crate) async fn request(
    client: &McpClient,
    session: &Session,
    method: &str,
    params: Value,
) -> Result<Reply, McpError> {
    let url = &client.endpoint.url;
    let (params, headers) = match session.era {
        Era::Stateless2026 => modern(method, params),
        _ => (params, session_headers(session)),
    };
    post_request(client, url, method, params, headers).await.map(|(result, _)| result)
}

pub(crate) async fn delete_session(client: &McpClient, session: &Session) {
    if session.session_id.is_none() {
        return;
    }
    let url = &client.endpoint.url;
    let mut req = client.http.delete(client.request_url(url));
    req = client.authorize(req);
    for (name, value) in session_headers(session) {
        req = req.header(name, value);
    }
    let _ = http::within(
        &client.limits,
        url.as_str(),
        "DELETE",
        http::send(req, url.as_str(), &client.limits, client.endpoint.pin),
    )
    .await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modern_envelope_and_routing_headers() {
        let (params, headers) = modern("tools/call", json!({"name": "add", "arguments": {}}));
        assert_eq!(params["_meta"]["io.modelcontextprotocol/protocolVersion"], "2026-07-28");
        assert_eq!(params["_meta"]["io.modelcontextprotocol/clientCapabilities"], json!({}));
        assert!(headers.contains(&(METHOD_HEADER, "tools/call".into())));
        assert!(headers.contains(&(NAME_HEADER, "add".into())));
        assert!(headers.contains(&(VERSION_HEADER, "2026-07-28".into())));
    }

    #[test]
    fn header_values_outside_printable_ascii_are_base64_wrapped() {
        assert_eq!(encode_header_value("read_tool"), "read_tool");
        assert_eq!(encode_header_value("é"), "=?base64?w6k=?=");
        assert_eq!(encode_header_value(" x"), "=?base64?IHg=?=");
    }

    #[test]
    fn server_name_from_discover_meta_or_server_info() {
        assert_eq!(
            server_name(&json!({"_meta": {"io.modelcontextprotocol/serverInfo": {"name": "p"}}})).as_deref(),
            Some("p")
        );
        assert_eq!(server_name(&json!({"serverInfo": {"name": "q"}})).as_deref(), Some("q"));
    }
}
