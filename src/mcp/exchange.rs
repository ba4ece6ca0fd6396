//! Single exchanges, observed whole: what a client sends at one entry point, and every
//! fact of what came back — status, the headers a verdict rests on, redirects followed,
//! and the body read to its end (every SSE event, decoded if the server compressed it
//! anyway) reduced to facts: JSON-RPC messages, tool names disclosed, a session handed
//! out. Nothing here judges; refusal, disabled and liveness checks do.

use std::collections::BTreeSet;
use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::time::Instant;
use url::Url;

use super::http::{self, Decoder, Head, Hop, SESSION_HEADER};
use super::jsonrpc;
use super::sse::SseParser;
use super::streamable::{self, Headers, VERSION_HEADER};
use super::{EntryPoint, HANDSHAKE_PROTOCOL_VERSION, McpClient, McpError};

/// Whose session id an ask borrows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum SessionSource {
    /// The valid bearer's session, in the era the server offered first.
    Valid,
    /// The valid bearer's `initialize`-handshake session, opened on purpose when the
    /// server offered the stateless era first: every era it speaks is a way in.
    ValidHandshake,
    /// An id that came back on a refusal.
    HandedOut,
}

impl SessionSource {
    /// Borrowed from the valid bearer: serving on it means the session is not bound.
    pub fn is_valid_bearers(self) -> bool {
        matches!(self, SessionSource::Valid | SessionSource::ValidHandshake)
    }
}

impl fmt::Display for SessionSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SessionSource::Valid => "the valid session",
            SessionSource::ValidHandshake => "the valid initialize-handshake session",
            SessionSource::HandedOut => "an id a refusal handed out",
        })
    }
}

/// One request to send.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Ask {
    pub entry: EntryPoint,
    /// Send revision 2026-07-28's `_meta` envelope and routing headers.
    pub modern: bool,
    /// Carry this `Mcp-Session-Id` (borrowed from another session). Never printed.
    pub session: Option<String>,
    /// The protocol version that session negotiated, sent with its id (a server rejects a
    /// version it did not agree to before it ever looks at the bearer).
    #[serde(default)]
    pub version: Option<String>,
    /// Where the session came from.
    pub session_from: Option<SessionSource>,
    /// POST to this URL (a live legacy session's message endpoint) instead of the
    /// endpoint.
    pub message_url: Option<String>,
    /// `tools/call`: the tool and its arguments.
    pub tool: Option<(String, Value)>,
}

impl Ask {
    pub fn new(entry: EntryPoint) -> Self {
        Ask { entry, modern: false, session: None, version: None, session_from: None, message_url: None, tool: None }
    }

    pub fn modern(mut self) -> Self {
        self.modern = true;
        self
    }

    pub fn with_session(mut self, id: &str, from: SessionSource) -> Self {
        self.session = Some(id.to_string());
        self.session_from = Some(from);
        self
    }

    /// With the protocol version the borrowed session negotiated.
    pub fn negotiated(mut self, version: Option<&str>) -> Self {
        self.version = version.map(str::to_string);
        self
    }

    pub fn at_message_url(mut self, url: &str) -> Self {
        self.message_url = Some(url.to_string());
        self
    }

    pub fn calling(mut self, tool: &str, arguments: Value) -> Self {
        self.tool = Some((tool.to_string(), arguments));
        self
    }

    /// The JSON-RPC method the ask sends (none for the SSE GET).
    pub fn rpc_method(&self) -> Option<&'static str> {
        match self.entry {
            EntryPoint::Initialize => Some("initialize"),
            EntryPoint::Discover => Some("server/discover"),
            EntryPoint::ToolsList => Some("tools/list"),
            EntryPoint::ToolsCall => Some("tools/call"),
            EntryPoint::SseGet | EntryPoint::Delete => None,
        }
    }

    /// Same request shape (entry point, era, where it goes), whoever sends it.
    pub fn same_shape(&self, other: &Ask) -> bool {
        self.entry == other.entry
            && self.modern == other.modern
            && self.session.is_some() == other.session.is_some()
            && self.message_url.is_some() == other.message_url.is_some()
    }
}

impl fmt::Display for Ask {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.entry)?;
        if let Some((tool, _)) = &self.tool {
            write!(f, " {}", crate::text::sanitize(tool))?;
        }
        if matches!(self.entry, EntryPoint::SseGet | EntryPoint::Delete) {
            if let Some(from) = &self.session_from {
                write!(f, " (with the session id of {from})")?;
            }
        } else {
            f.write_str(if self.modern { " (2026-07-28 headers" } else { " (plain JSON-RPC" })?;
            match (&self.session_from, &self.message_url) {
                (Some(from), _) => write!(f, ", with the session id of {from})"),
                (None, Some(_)) => f.write_str(", at a live session's message URL)"),
                (None, None) => f.write_str(", no session)"),
            }?;
        }
        Ok(())
    }
}

/// What a body held, reduced to the facts refusal and liveness judges need.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct BodyFacts {
    /// Bytes read (after decoding).
    pub bytes: u64,
    /// The server ended the body; false when cordon stopped at a cap or its window.
    pub ended: bool,
    /// The server compressed it and it could not be decoded.
    pub undecodable: Option<String>,
    /// Sanitized start of the body (binary summarised).
    pub excerpt: String,
    /// Every JSON-RPC message: the JSON body, or each SSE event's data.
    pub messages: Vec<RpcFacts>,
    pub sse_events: u32,
    /// A legacy `endpoint` event: the server handed out a message URL (a session).
    pub endpoint_event: bool,
    /// A `tools` array of named objects, anywhere.
    pub inventory: bool,
    /// Names of the contract's tools (or those served to the valid bearer) found in it.
    pub names: BTreeSet<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RpcFacts {
    pub result: bool,
    pub error_code: Option<i64>,
}

impl BodyFacts {
    pub fn has_result(&self) -> bool {
        self.messages.iter().any(|m| m.result)
    }

    pub fn has_error(&self) -> bool {
        self.messages.iter().any(|m| m.error_code.is_some())
    }

    pub fn discloses(&self) -> bool {
        self.inventory || !self.names.is_empty()
    }
}

/// One exchange as it happened.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Exchange {
    pub ask: Ask,
    pub method: String,
    pub url: String,
    pub status: u16,
    pub content_type: Option<String>,
    pub content_encoding: Option<String>,
    pub location: Option<String>,
    pub www_authenticate: Option<String>,
    /// An `Mcp-Session-Id` came back (the value, for reuse; never printed). Not proof of a
    /// session: the Python SDK sets a fresh one even on its 400/406 error replies.
    pub session_id: Option<String>,
    pub hops: Vec<Hop>,
    pub body: BodyFacts,
}

impl Exchange {
    pub fn media_type(&self) -> Option<String> {
        http::media_type(self.content_type.as_deref())
    }

    pub fn is_html(&self) -> bool {
        self.media_type().as_deref() == Some("text/html")
    }

    pub fn is_event_stream(&self) -> bool {
        self.media_type().as_deref() == Some("text/event-stream")
    }

    /// One line of evidence.
    pub fn summary(&self) -> String {
        format!("{}: {} {} → {}{}", self.ask, self.method, self.url, self.status_and_hops(), self.details())
    }

    /// The line that proves a rule broken, the status first, then `who` asked, then what was
    /// asked, the body last: a console that cuts it to its width keeps what matters.
    pub fn proof(&self, who: &str) -> String {
        format!("{} ← {who}{}: {} {}{}", self.status_and_hops(), self.ask, self.method, self.url, self.details())
    }

    fn status_and_hops(&self) -> String {
        let mut line = self.status.to_string();
        for hop in &self.hops {
            line.push_str(&format!(" ({hop})"));
        }
        line
    }

    /// Headers worth showing, then the body.
    fn details(&self) -> String {
        let mut line = String::new();
        if let Some(ct) = &self.content_type {
            line.push_str(&format!(", content-type {ct}"));
        }
        if let Some(ce) = &self.content_encoding {
            line.push_str(&format!(", content-encoding {ce}"));
        }
        if let Some(loc) = &self.location {
            line.push_str(&format!(", location {loc}"));
        }
        if let Some(w) = &self.www_authenticate {
            line.push_str(&format!(", www-authenticate {}", crate::text::body_excerpt(w.as_bytes(), 120)));
        }
        if self.session_id.is_some() {
            line.push_str(", mcp-session-id issued");
        }
        if self.body.sse_events > 0 {
            line.push_str(&format!(", {} sse event(s)", self.body.sse_events));
        }
        if !self.body.ended {
            line.push_str(", body not ended");
        }
        if !self.body.excerpt.is_empty() {
            line.push_str(&format!(", body {}", crate::text::body_excerpt(self.body.excerpt.as_bytes(), 160)));
        }
        line
    }
}

/// Sends `ask` with the client's bearer (or none) and reads the whole answer.
pub(crate) async fn exchange(client: &McpClient, ask: &Ask, names: &BTreeSet<String>) -> Result<Exchange, McpError> {
    let endpoint_url = client.endpoint.url.clone();
    let url = match &ask.message_url {
        Some(u) => Url::parse(u).map_err(|e| McpError::Protocol { detail: format!("bad message url {u}: {e}") })?,
        None => endpoint_url,
    };
    let limits = client.limits.clone();
    http::within(&limits, url.as_str(), "the whole exchange", async {
        let mut session_headers = Headers::new();
        if let Some(id) = &ask.session {
            session_headers.push((SESSION_HEADER, id.clone()));
            if !ask.modern {
                let version = ask.version.clone().unwrap_or_else(|| HANDSHAKE_PROTOCOL_VERSION.to_string());
                session_headers.push((VERSION_HEADER, version));
            }
        }
        let (method, req) = match ask.entry {
            EntryPoint::SseGet => ("GET", with_headers(super::legacy::sse_get(client), &session_headers)),
            EntryPoint::Delete => (
                "DELETE",
                with_headers(client.authorize(client.http.delete(client.request_url(&url))), &session_headers),
            ),
            _ => {
                let rpc = ask.rpc_method().expect("a POST entry point");
                let params = match &ask.tool {
                    Some((tool, args)) => json!({ "name": tool, "arguments": args }),
                    None if rpc == "initialize" => streamable::initialize_params(),
                    None => json!({}),
                };
                let (params, mut headers) =
                    if ask.modern { streamable::modern(rpc, params) } else { (params, Headers::new()) };
                headers.extend(session_headers);
                let body = jsonrpc::request(client.next_id(), rpc, params);
                ("POST", streamable::post(client, &url, &body, &headers))
            }
        };
        let (mut resp, hops) = http::send(req, url.as_str(), &limits, client.endpoint.pin).await?;
        let head = Head::of(&resp);
        let mut excluded = names.clone();
        // The name the client itself sent is no disclosure when it comes back.
        if let Some((tool, _)) = &ask.tool {
            excluded.remove(tool);
        }
        let body = read_facts(&mut resp, &head, &limits, &excluded).await;
        Ok(Exchange {
            ask: ask.clone(),
            method: method.to_string(),
            url: url.to_string(),
            status: head.status,
            content_type: head.content_type.clone(),
            content_encoding: head.content_encoding.clone(),
            location: head.location.clone(),
            www_authenticate: head.www_authenticate.clone(),
            session_id: head.session_id.clone(),
            hops,
            body,
        })
    })
    .await
}

fn with_headers(mut req: reqwest::RequestBuilder, headers: &Headers) -> reqwest::RequestBuilder {
    for (name, value) in headers {
        req = req.header(*name, value);
    }
    req
}

/// Reads the body to its end, to the size cap, or for one read window, whichever comes
/// first — every SSE event, not the first — decoding what the server compressed anyway;
/// then reduces it to facts. An `endpoint` event ends the read at once: the answer has
/// handed out a session, and nothing later can make it a refusal.
async fn read_facts(
    resp: &mut reqwest::Response,
    head: &Head,
    limits: &super::Limits,
    names: &BTreeSet<String>,
) -> BodyFacts {
    let window = Instant::now() + limits.read_timeout;
    let cap = limits.max_response_bytes;
    let mut facts = BodyFacts::default();
    let mut decoder = Decoder::for_encoding(head.content_encoding.as_deref());
    if decoder.is_none() {
        facts.undecodable = Some(format!(
            "content-encoding `{}` is not one cordon can decode",
            head.content_encoding.as_deref().unwrap_or("")
        ));
    }
    let sse = head.is_sse();
    let mut parser = SseParser::new();
    let mut events = Vec::new();
    let mut decoded: Vec<u8> = Vec::new();
    let mut raw: Vec<u8> = Vec::new();
    loop {
        let chunk = match tokio::time::timeout_at(window, resp.chunk()).await {
            Ok(Ok(Some(chunk))) => chunk,
            Ok(Ok(None)) => {
                facts.ended = true;
                break;
            }
            _ => break,
        };
        if raw.len() < http::EXCERPT_CHARS * 4 {
            raw.extend_from_slice(&chunk[..chunk.len().min(http::EXCERPT_CHARS * 4)]);
        }
        let Some(d) = decoder.as_mut() else { continue };
        let out = match d.feed(&chunk) {
            Ok(out) => out,
            Err(e) => {
                facts.undecodable =
                    Some(format!("cannot decode its {} body: {e}", head.content_encoding.as_deref().unwrap_or("")));
                decoder = None;
                continue;
            }
        };
        if decoded.len() as u64 + out.len() as u64 > cap {
            let room = cap.saturating_sub(decoded.len() as u64) as usize;
            decoded.extend_from_slice(&out[..room.min(out.len())]);
            break;
        }
        if sse {
            let fresh = parser.feed(&out);
            let endpoint = fresh.iter().any(|e| e.event == "endpoint");
            events.extend(fresh);
            decoded.extend_from_slice(&out);
            if endpoint {
                break;
            }
        } else {
            decoded.extend_from_slice(&out);
        }
    }
    facts.bytes = decoded.len() as u64;
    if facts.undecodable.is_some() {
        facts.excerpt = http::excerpt(&raw);
        return facts;
    }
    facts.excerpt = http::excerpt(&decoded);
    if sse || looks_like_sse(&decoded) {
        if !sse {
            events = parser.feed(&decoded);
        }
        // A stream cut short still counts its last event.
        events.extend(parser.feed(b"\n\n"));
        for ev in events {
            facts.sse_events += 1;
            if ev.event == "endpoint" {
                facts.endpoint_event = true;
            }
            scan_text(ev.data.as_bytes(), names, &mut facts);
        }
    } else {
        scan_text(&decoded, names, &mut facts);
    }
    facts
}

fn looks_like_sse(bytes: &[u8]) -> bool {
    let start = &bytes[..bytes.len().min(16)];
    start.starts_with(b"event:") || start.starts_with(b"data:") || start.starts_with(b"id:")
}

/// Facts of one JSON text (a body or one event's data), or of plain text.
fn scan_text(bytes: &[u8], names: &BTreeSet<String>, facts: &mut BodyFacts) {
    match serde_json::from_slice::<Value>(bytes) {
        Ok(v) => {
            for msg in jsonrpc_messages(&v) {
                facts.messages.push(RpcFacts {
                    result: msg.get("result").is_some(),
                    error_code: msg.get("error").map(|e| e.get("code").and_then(Value::as_i64).unwrap_or(0)),
                });
            }
            scan_json(&v, names, facts, 0);
        }
        Err(_) => {
            let text = String::from_utf8_lossy(bytes);
            // JSON cut at the cap still shows an inventory's shape.
            if text.contains("\"tools\"") && text.contains("\"name\"") {
                facts.inventory = true;
            }
            facts.names.extend(names_in_text(&text, names));
        }
    }
}

fn jsonrpc_messages(v: &Value) -> Vec<&Value> {
    match v {
        Value::Array(items) => items.iter().filter(|m| jsonrpc::is_jsonrpc(m)).collect(),
        one if jsonrpc::is_jsonrpc(one) => vec![one],
        _ => vec![],
    }
}

/// Deep enough for any real body; a deeper one is not walked further (and serde_json
/// already refuses nesting past 128).
const MAX_DEPTH: usize = 64;

fn scan_json(v: &Value, names: &BTreeSet<String>, facts: &mut BodyFacts, depth: usize) {
    if depth > MAX_DEPTH {
        return;
    }
    match v {
        Value::String(s) if names.contains(s) => {
            facts.names.insert(s.clone());
        }
        Value::Array(items) => items.iter().for_each(|i| scan_json(i, names, facts, depth + 1)),
        Value::Object(map) => {
            if let Some(Value::Array(tools)) = map.get("tools")
                && tools.iter().any(|t| t.get("name").is_some_and(Value::is_string))
            {
                facts.inventory = true;
            }
            for (key, value) in map {
                // A map keyed by tool name (`{"tools": {"add": {...}}}`) names them too.
                if names.contains(key) && (value.is_object() || value.is_array()) {
                    facts.names.insert(key.clone());
                }
                scan_json(value, names, facts, depth + 1);
            }
        }
        _ => {}
    }
}

/// Tool names in plain text (HTML, a text/plain list). A name with a character no
/// English word has (`_`, `-`, `.`, `/`, a digit) counts wherever it stands as a token;
/// a plain word (`add`, `status`) only when quoted, or when two names appear together.
pub fn names_in_text(text: &str, names: &BTreeSet<String>) -> BTreeSet<String> {
    let is_token_char = |c: char| c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | '/' | ':');
    let tokens: BTreeSet<&str> =
        text.split(|c: char| !is_token_char(c)).map(|t| t.trim_matches(|c| matches!(c, '.' | ':'))).collect();
    let mut distinctive = BTreeSet::new();
    let mut words = BTreeSet::new();
    for name in names {
        let plain_word = name.chars().all(|c| c.is_ascii_alphabetic());
        if !plain_word && tokens.contains(name.as_str()) {
            distinctive.insert(name.clone());
        } else if plain_word {
            let quoted = text.contains(&format!("\"{name}\"")) || text.contains(&format!("'{name}'"));
            if quoted {
                distinctive.insert(name.clone());
            } else if tokens.contains(name.as_str()) {
                words.insert(name.clone());
            }
        }
    }
    if words.len() >= 2 || (!words.is_empty() && !distinctive.is_empty()) {
        distinctive.extend(words);
    }
    distinctive
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn names(list: &[&str]) -> BTreeSet<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    fn facts(body: &[u8]) -> BodyFacts {
        let mut f = BodyFacts::default();
        scan_text(body, &names(&["add", "echo", "get_status", "status"]), &mut f);
        f
    }

    #[rstest]
    #[case::inventory(br#"{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"zzz"}]}}"#, true, &[][..])]
    #[case::in_error_data(br#"{"error":"denied","data":{"tools":[{"name":"add","inputSchema":{}}]}}"#, true, &["add"][..])]
    #[case::bare_strings(br#"{"tools":["add","echo"]}"#, false, &["add", "echo"][..])]
    #[case::keyed_by_name(br#"{"tools":{"get_status":{"type":"object"}}}"#, false, &["get_status"][..])]
    #[case::refusal(br#"{"error":"unauthenticated","status":401}"#, false, &[][..])]
    #[case::empty_list(br#"{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}"#, false, &[][..])]
    #[case::truncated(br#"{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"add","desc"#, true, &["add"][..])]
    #[case::html_word(b"<html>Please add a token</html>", false, &[][..])]
    #[case::html_list(b"<ul><li>get_status</li></ul>", false, &["get_status"][..])]
    #[case::plain_words(b"tools: add, echo", false, &["add", "echo"][..])]
    fn disclosure(#[case] body: &[u8], #[case] inventory: bool, #[case] found: &[&str]) {
        let f = facts(body);
        assert_eq!(f.inventory, inventory, "{f:?}");
        assert_eq!(f.names, names(found));
    }

    #[test]
    fn json_rpc_messages_are_counted() {
        let f = facts(
            br#"[{"jsonrpc":"2.0","id":1,"result":{}},{"jsonrpc":"2.0","id":2,"error":{"code":-32001,"message":"x"}}]"#,
        );
        assert!(f.has_result() && f.has_error());
        assert_eq!(f.messages[1].error_code, Some(-32001));
        assert!(facts(br#"{"error":"unauthenticated"}"#).messages.is_empty());
    }

    #[test]
    fn asks_describe_themselves() {
        assert_eq!(Ask::new(EntryPoint::ToolsList).modern().to_string(), "tools/list (2026-07-28 headers, no session)");
        assert_eq!(
            Ask::new(EntryPoint::ToolsCall)
                .calling("add", json!({}))
                .with_session("x", SessionSource::Valid)
                .to_string(),
            "tools/call add (plain JSON-RPC, with the session id of the valid session)"
        );
        assert_eq!(Ask::new(EntryPoint::SseGet).to_string(), "SSE GET");
    }
}
