//! End-to-end tests of the client against scripted HTTP servers on 127.0.0.1: raw
//! HTTP/1.1 written by hand, so the tests control every byte and every stall.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rstest::rstest;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

use super::*;

#[derive(Clone, Debug)]
struct Req {
    method: String,
    path: String,
    headers: HashMap<String, String>,
    body: Value,
}

impl Req {
    fn rpc_method(&self) -> &str {
        self.body.get("method").and_then(Value::as_str).unwrap_or("")
    }
    fn id(&self) -> Value {
        self.body.get("id").cloned().unwrap_or(Value::Null)
    }
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(String::as_str)
    }
}

enum Reply {
    Full {
        status: &'static str,
        headers: Vec<(&'static str, String)>,
        body: Vec<u8>,
    },
    /// Headers, then `chunk` again and again every `every` until the client hangs up.
    Endless {
        head: &'static str,
        chunk: Vec<u8>,
        every: Duration,
    },
    /// Headers, then whatever arrives on the channel.
    Feed {
        head: &'static str,
        rx: mpsc::UnboundedReceiver<Vec<u8>>,
    },
    /// Accept the request and never answer.
    Silent,
}

fn json_reply(status: &'static str, body: Value) -> Reply {
    Reply::Full {
        status,
        headers: vec![("content-type", "application/json".into())],
        body: body.to_string().into_bytes(),
    }
}

fn result(req: &Req, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": req.id(), "result": result})
}

fn accepted() -> Reply {
    Reply::Full { status: "202 Accepted", headers: vec![], body: vec![] }
}

type Handler = Arc<dyn Fn(&Req) -> Reply + Send + Sync>;

struct Server {
    addr: SocketAddr,
    seen: Arc<Mutex<Vec<Req>>>,
}

impl Server {
    async fn start(handler: impl Fn(&Req) -> Reply + Send + Sync + 'static) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let handler: Handler = Arc::new(handler);
        let log = seen.clone();
        tokio::spawn(async move {
            while let Ok((sock, _)) = listener.accept().await {
                tokio::spawn(serve_one(sock, handler.clone(), log.clone()));
            }
        });
        Self { addr, seen }
    }

    fn url(&self, path: &str) -> url::Url {
        url::Url::parse(&format!("http://{}{path}", self.addr)).unwrap()
    }

    fn client(&self, path: &str, transport: Transport, limits: Limits) -> McpClient {
        let endpoint = Endpoint::new(self.url(path), transport);
        McpClient::new(endpoint, None, limits).unwrap()
    }

    fn seen(&self) -> Vec<Req> {
        self.seen.lock().unwrap().clone()
    }
}

async fn serve_one(mut sock: TcpStream, handler: Handler, log: Arc<Mutex<Vec<Req>>>) {
    let mut buf = Vec::new();
    let head_end = loop {
        let mut chunk = [0u8; 4096];
        let n = match sock.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        buf.extend_from_slice(&chunk[..n]);
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
    let mut lines = head.split("\r\n");
    let mut start = lines.next().unwrap().split(' ');
    let (method, path) = (start.next().unwrap().to_string(), start.next().unwrap().to_string());
    let headers: HashMap<String, String> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let len: usize = headers.get("content-length").and_then(|v| v.parse().ok()).unwrap_or(0);
    while buf.len() < head_end + len {
        let mut chunk = [0u8; 4096];
        match sock.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
    let body = serde_json::from_slice(&buf[head_end..head_end + len]).unwrap_or(Value::Null);
    let req = Req { method, path, headers, body };
    log.lock().unwrap().push(req.clone());
    match handler(&req) {
        Reply::Full { status, headers, body } => {
            let mut out = format!("HTTP/1.1 {status}\r\nconnection: close\r\ncontent-length: {}\r\n", body.len());
            for (k, v) in headers {
                out.push_str(&format!("{k}: {v}\r\n"));
            }
            out.push_str("\r\n");
            let mut bytes = out.into_bytes();
            bytes.extend_from_slice(&body);
            let _ = sock.write_all(&bytes).await;
        }
        Reply::Endless { head, chunk, every } => {
            if sock.write_all(head.as_bytes()).await.is_err() {
                return;
            }
            while sock.write_all(&chunk).await.is_ok() {
                tokio::time::sleep(every).await;
            }
        }
        Reply::Feed { head, mut rx } => {
            if sock.write_all(head.as_bytes()).await.is_err() {
                return;
            }
            while let Some(bytes) = rx.recv().await {
                if sock.write_all(&bytes).await.is_err() {
                    return;
                }
            }
        }
        Reply::Silent => {
            tokio::time::sleep(Duration::from_secs(60)).await;
        }
    }
}

const SSE_HEAD: &str = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";
const JSON_HEAD: &str = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: close\r\n\r\n";

fn fast_limits() -> Limits {
    Limits {
        connect_timeout: Duration::from_secs(2),
        read_timeout: Duration::from_secs(2),
        max_response_bytes: 64 * 1024,
        sse_max_duration: Duration::from_millis(400),
        max_pages: 5,
        exchange_timeout: Duration::from_secs(5),
        max_tools: 100,
    }
}

fn names(list: &[&str]) -> std::collections::BTreeSet<String> {
    list.iter().map(|s| s.to_string()).collect()
}

#[tokio::test]
async fn endless_json_body_hits_the_size_cap() {
    let server =
        Server::start(|_| Reply::Endless { head: JSON_HEAD, chunk: vec![b' '; 8192], every: Duration::ZERO }).await;
    let err = server.client("/mcp", Transport::StreamableHttp, fast_limits()).connect().await.unwrap_err();
    assert!(matches!(&err, McpError::SizeCap { limit: 65536, .. }), "{err}");
    assert!(err.to_string().contains("65536 bytes"), "{err}");
    assert!(!err.is_not_ready());
}

#[tokio::test]
async fn declared_oversized_body_is_refused_before_reading() {
    let server = Server::start(|_| Reply::Full {
        status: "200 OK",
        headers: vec![("content-type", "application/json".into())],
        body: vec![b' '; 70_000],
    })
    .await;
    let err = server.client("/mcp", Transport::StreamableHttp, fast_limits()).connect().await.unwrap_err();
    assert!(matches!(err, McpError::SizeCap { .. }), "{err}");
}

#[tokio::test]
async fn endless_keep_alive_comments_hit_the_sse_duration_cap() {
    let server = Server::start(|_| Reply::Endless {
        head: SSE_HEAD,
        chunk: b": ping\n\n".to_vec(),
        every: Duration::from_millis(20),
    })
    .await;
    let started = Instant::now();
    let err = server.client("/mcp", Transport::StreamableHttp, fast_limits()).connect().await.unwrap_err();
    let took = started.elapsed();
    assert!(matches!(&err, McpError::SseDurationCap { limit, .. } if *limit == Duration::from_millis(400)), "{err}");
    assert!(took >= Duration::from_millis(350) && took < Duration::from_millis(1500), "took {took:?}");
}

#[tokio::test]
async fn sse_size_cap_counts_comments_too() {
    let server = Server::start(|_| Reply::Endless {
        head: SSE_HEAD,
        chunk: vec![b':'; 4096].into_iter().chain(*b"\n").collect(),
        every: Duration::ZERO,
    })
    .await;
    let limits = Limits { sse_max_duration: Duration::from_secs(10), ..fast_limits() };
    let err = server.client("/mcp", Transport::StreamableHttp, limits).connect().await.unwrap_err();
    assert!(matches!(err, McpError::SizeCap { .. }), "{err}");
}

#[tokio::test]
async fn a_redirect_is_reported_and_never_followed() {
    let server = Server::start(|_| Reply::Full {
        status: "302 Found",
        headers: vec![("location", "http://idp.example/login".into())],
        body: vec![],
    })
    .await;
    let err = server.client("/mcp", Transport::StreamableHttp, fast_limits()).connect().await.unwrap_err();
    match &err {
        McpError::Redirect { entry, status: 302, location: Some(l), .. } => {
            assert_eq!(entry, "server/discover");
            assert_eq!(l, "http://idp.example/login");
        }
        other => panic!("expected a redirect, got {other}"),
    }
    let text = err.to_string();
    assert!(text.contains("302 Found to http://idp.example/login"), "{text}");
    assert!(text.contains("cordon follows only same-origin 307/308"), "{text}");
    assert_eq!(server.seen().len(), 1, "a redirect must not be followed");
    assert!(!err.is_not_ready());
}

#[tokio::test]
async fn the_legacy_sse_get_redirect_is_reported_too() {
    let server = Server::start(|_| Reply::Full {
        status: "307 Temporary Redirect",
        headers: vec![("location", "/login".into())],
        body: vec![],
    })
    .await;
    let err = server.client("/sse", Transport::Sse, fast_limits()).connect().await.unwrap_err();
    assert!(matches!(&err, McpError::Redirect { status: 307, entry, .. } if entry == "SSE GET"), "{err}");
}

#[tokio::test]
async fn refused_connection_and_silence_are_not_ready() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let endpoint = Endpoint::new(format!("http://{addr}/mcp").parse().unwrap(), Transport::StreamableHttp);
    let err = McpClient::new(endpoint, None, fast_limits()).unwrap().connect().await.unwrap_err();
    assert!(matches!(err, McpError::Connect { .. }), "{err}");
    assert!(err.is_not_ready());

    let server = Server::start(|_| Reply::Silent).await;
    let limits = Limits { read_timeout: Duration::from_millis(200), ..fast_limits() };
    let err = server.client("/mcp", Transport::StreamableHttp, limits).connect().await.unwrap_err();
    assert!(matches!(err, McpError::Timeout { phase: "response headers", .. }), "{err}");
    assert!(err.is_not_ready());
}

#[tokio::test]
async fn html_is_not_mcp() {
    let server = Server::start(|_| Reply::Full {
        status: "200 OK",
        headers: vec![("content-type", "text/html; charset=utf-8".into())],
        body: b"<html>welcome</html>".to_vec(),
    })
    .await;
    let err = server.client("/mcp", Transport::StreamableHttp, fast_limits()).connect().await.unwrap_err();
    assert!(
        matches!(&err, McpError::NotMcp { status: 200, body_excerpt, .. } if body_excerpt.contains("welcome")),
        "{err}"
    );
}

/// A stateful server shaped like the Python SDK 1.x: discover is a 400, initialize
/// answers over SSE with a session id, later requests need the session headers.
fn stateful_server(req: &Req) -> Reply {
    let has_session =
        req.header("mcp-session-id") == Some("s-1") && req.header("mcp-protocol-version") == Some("2025-06-18");
    match (req.method.as_str(), req.rpc_method()) {
        ("POST", "initialize") => {
            let msg = result(
                req,
                json!({"protocolVersion": "2025-06-18", "capabilities": {"tools": {}}, "serverInfo": {"name": "demo", "version": "1"}}),
            );
            Reply::Full {
                status: "200 OK",
                headers: vec![("content-type", "text/event-stream".into()), ("mcp-session-id", "s-1".into())],
                body: format!(": hello\r\n\r\nevent: message\r\ndata: {{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{{}}}}\r\n\r\nevent: message\r\ndata: {msg}\r\n\r\n").into_bytes(),
            }
        }
        ("POST", _) if !has_session => json_reply(
            "400 Bad Request",
            json!({"jsonrpc":"2.0","id":"server-error","error":{"code":-32600,"message":"Bad Request: Missing session ID"}}),
        ),
        ("POST", "notifications/initialized") => accepted(),
        ("POST", "tools/list") => {
            let cursor = req.body.pointer("/params/cursor").and_then(Value::as_str);
            let page = match cursor {
                None => {
                    json!({"tools": [{"name": "add", "description": "Add", "inputSchema": {"type": "object"}}], "nextCursor": "2"})
                }
                Some(_) => json!({"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]}),
            };
            json_reply("200 OK", result(req, page))
        }
        ("POST", "tools/call") => json_reply(
            "200 OK",
            result(
                req,
                json!({"content":[{"type":"text","text":"5"}],"structuredContent":{"result":5},"isError":false}),
            ),
        ),
        ("DELETE", _) => Reply::Full { status: "200 OK", headers: vec![], body: vec![] },
        _ => json_reply("404 Not Found", json!({})),
    }
}

#[tokio::test]
async fn stateful_fallback_handshake_list_call_close() {
    let server = Server::start(stateful_server).await;
    let client = server.client("/mcp", Transport::StreamableHttp, fast_limits());
    let session = client.connect().await.unwrap();
    assert_eq!(session.era, Era::Stateful { protocol_version: "2025-06-18".into() });
    assert_eq!(session.server_name.as_deref(), Some("demo"));
    assert!(session.session_id_present);

    let tools = client.list_tools(&session).await.unwrap();
    assert_eq!(tools.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(), ["add", "echo"]);
    let r = client.call_tool(&session, "add", json!({"a": 2, "b": 3})).await.unwrap();
    assert!(!r.is_error);
    assert_eq!(r.text, ["5"]);
    client.close(session).await;

    let seen = server.seen();
    let steps: Vec<(&str, &str)> = seen.iter().map(|r| (r.method.as_str(), r.rpc_method())).collect();
    assert_eq!(
        steps,
        [
            ("POST", "server/discover"),
            ("POST", "initialize"),
            ("POST", "notifications/initialized"),
            ("POST", "tools/list"),
            ("POST", "tools/list"),
            ("POST", "tools/call"),
            ("DELETE", ""),
        ]
    );
    let discover = &seen[0];
    assert_eq!(discover.header("mcp-protocol-version"), Some("2026-07-28"));
    assert_eq!(discover.body.pointer("/params/_meta/io.modelcontextprotocol~1clientInfo/name"), Some(&json!("cordon")));
    let init = &seen[1];
    assert_eq!(init.body.pointer("/params/protocolVersion"), Some(&json!("2025-06-18")));
    assert_eq!(init.header("mcp-session-id"), None);
    for r in &seen {
        assert_eq!(r.header("accept-encoding"), Some("identity"));
        assert_eq!(r.header("authorization"), None);
        if r.method == "POST" {
            assert_eq!(r.header("accept"), Some("application/json, text/event-stream"));
        }
    }
    assert_eq!(seen[6].header("mcp-session-id"), Some("s-1"));
}

/// A 2026-07-28 server: discover succeeds; requests must carry the envelope and
/// matching routing headers, and no session.
fn stateless_server(req: &Req) -> Reply {
    let meta_ok =
        req.body.pointer("/params/_meta/io.modelcontextprotocol~1protocolVersion") == Some(&json!("2026-07-28"));
    let headers_ok =
        req.header("mcp-protocol-version") == Some("2026-07-28") && req.header("mcp-method") == Some(req.rpc_method());
    if !meta_ok || !headers_ok || req.header("mcp-session-id").is_some() {
        return json_reply(
            "400 Bad Request",
            json!({"jsonrpc":"2.0","id":req.id(),"error":{"code":-32001,"message":"header mismatch"}}),
        );
    }
    match req.rpc_method() {
        "server/discover" => json_reply(
            "200 OK",
            result(
                req,
                json!({"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}}, "resultType": "complete",
                "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "modern", "version": "2"}}}),
            ),
        ),
        "tools/list" => {
            json_reply("200 OK", result(req, json!({"tools": [{"name": "add", "inputSchema": {"type": "object"}}]})))
        }
        "tools/call" if req.header("mcp-name") == Some("add") => {
            json_reply("200 OK", result(req, json!({"content": [{"type": "text", "text": "oops"}], "isError": true})))
        }
        _ => json_reply("400 Bad Request", json!({})),
    }
}

#[tokio::test]
async fn stateless_2026_needs_no_initialize() {
    let server = Server::start(stateless_server).await;
    let client = server.client("/mcp", Transport::StreamableHttp, fast_limits());
    let session = client.connect().await.unwrap();
    assert_eq!(session.era, Era::Stateless2026);
    assert_eq!(session.server_name.as_deref(), Some("modern"));
    assert!(!session.session_id_present);
    assert_eq!(client.list_tools(&session).await.unwrap().len(), 1);
    assert!(client.call_tool(&session, "add", json!({})).await.unwrap().is_error);
    client.close(session).await;
    let methods: Vec<String> = server.seen().iter().map(|r| r.rpc_method().to_string()).collect();
    assert_eq!(methods, ["server/discover", "tools/list", "tools/call"]);
}

#[tokio::test]
async fn unauthorized_on_both_paths_is_an_http_error_with_evidence() {
    let server = Server::start(|_| Reply::Full {
        status: "401 Unauthorized",
        headers: vec![
            ("content-type", "application/json".into()),
            ("www-authenticate", "Bearer error=\"invalid_token\"".into()),
        ],
        body: br#"{"error":"invalid_token"}"#.to_vec(),
    })
    .await;
    let err = server.client("/mcp", Transport::StreamableHttp, fast_limits()).connect().await.unwrap_err();
    match &err {
        McpError::Http { entry, status: 401, www_authenticate: Some(w), body_excerpt, .. } => {
            assert_eq!(entry, "initialize");
            assert!(w.contains("invalid_token"));
            assert!(body_excerpt.contains("invalid_token"));
        }
        other => panic!("expected http 401, got {other}"),
    }
    assert!(err.to_string().contains("401 Unauthorized"), "{err}");
    assert!(!err.is_not_ready());
    assert_eq!(server.seen().len(), 2);
}

#[tokio::test]
async fn the_bearer_is_sent_and_the_pin_replaces_dns() {
    let server = Server::start(|_| json_reply("401 Unauthorized", json!({"error": "unauthenticated"}))).await;
    let url: url::Url = format!("http://provider.invalid:{}/mcp", server.addr.port()).parse().unwrap();
    let endpoint = Endpoint {
        url,
        transport: Transport::StreamableHttp,
        pin: Some("127.0.0.1:0".parse().unwrap()),
        fallbacks: vec![],
    };
    let secret = crate::secret::Redactor::new().register("tok", "s3cr3t-value".into());
    let client = McpClient::new(endpoint, Some(secret), fast_limits()).unwrap();
    let answer = client.exchange(&Ask::new(EntryPoint::ToolsList).modern(), &names(&["add"])).await.unwrap();
    assert_eq!(answer.status, 401);
    assert!(!answer.body.discloses());
    assert!(answer.body.messages.is_empty());
    let seen = server.seen();
    assert_eq!(seen[0].header("authorization"), Some("Bearer s3cr3t-value"));
    assert_eq!(seen[0].header("host"), Some(format!("provider.invalid:{}", server.addr.port()).as_str()));
    assert_eq!(seen[0].rpc_method(), "tools/list");
    assert_eq!(seen[0].header("mcp-method"), Some("tools/list"));
}

#[rstest]
#[case::initialize(Ask::new(EntryPoint::Initialize), "POST", "initialize")]
#[case::discover(Ask::new(EntryPoint::Discover).modern(), "POST", "server/discover")]
#[case::tools_list(Ask::new(EntryPoint::ToolsList), "POST", "tools/list")]
#[case::tools_call(Ask::new(EntryPoint::ToolsCall).calling("add", json!({"a": 1})).modern(), "POST", "tools/call")]
#[case::sse_get(Ask::new(EntryPoint::SseGet), "GET", "")]
#[tokio::test]
async fn an_exchange_reads_every_event_and_reports_without_judging(
    #[case] ask: Ask,
    #[case] method: &str,
    #[case] rpc: &str,
) {
    // A server that leaks: a harmless event first, then the tool inventory over SSE,
    // then keeps the stream open.
    let server = Server::start(|req| {
        let msg = json!({"jsonrpc":"2.0","id":req.id(),"result":{"tools":[{"name":"secret_tool"}]}});
        let (tx, rx) = mpsc::unbounded_channel();
        tx.send(b"event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\"}\n\n".to_vec())
            .unwrap();
        tx.send(format!("event: message\ndata: {msg}\n\n").into_bytes()).unwrap();
        std::mem::forget(tx); // keep the stream open
        Reply::Feed { head: "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nmcp-session-id: x\r\n\r\n", rx }
    })
    .await;
    let limits = Limits { read_timeout: Duration::from_millis(300), ..fast_limits() };
    let client = server.client("/mcp", Transport::StreamableHttp, limits);
    let started = Instant::now();
    let answer = client.exchange(&ask, &names(&["secret_tool"])).await.unwrap();
    assert!(started.elapsed() < Duration::from_secs(2), "the read window ends an open stream");
    assert_eq!(answer.ask, ask);
    assert_eq!(answer.method, method);
    assert_eq!(answer.status, 200);
    assert!(answer.session_id.is_some());
    assert!(answer.body.inventory && answer.body.has_result());
    assert_eq!(answer.body.sse_events, 2, "every event is read, not the first");
    assert!(answer.body.names.contains("secret_tool"));
    assert!(!answer.body.ended);
    let seen = server.seen();
    assert_eq!(seen[0].method, method);
    assert_eq!(seen[0].rpc_method(), rpc);
    if ask.entry == EntryPoint::SseGet {
        assert_eq!(seen[0].header("accept"), Some("text/event-stream"));
    }
}

#[tokio::test]
async fn an_sse_answer_that_says_nothing_ends_after_the_read_window() {
    let server = Server::start(|_| Reply::Endless {
        head: SSE_HEAD,
        chunk: b": ping\n\n".to_vec(),
        every: Duration::from_millis(50),
    })
    .await;
    let limits =
        Limits { read_timeout: Duration::from_millis(300), sse_max_duration: Duration::from_secs(10), ..fast_limits() };
    let started = Instant::now();
    let answer = server
        .client("/sse", Transport::Sse, limits)
        .exchange(&Ask::new(EntryPoint::SseGet), &names(&[]))
        .await
        .unwrap();
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_eq!(answer.status, 200);
    assert!(answer.body.excerpt.starts_with(": ping"));
    assert!(answer.body.messages.is_empty());
    assert!(!answer.body.discloses());
}

#[tokio::test]
async fn a_body_dripping_one_byte_at_a_time_is_cut_at_the_exchange_limit() {
    let server =
        Server::start(|_| Reply::Endless { head: JSON_HEAD, chunk: b" ".to_vec(), every: Duration::from_millis(100) })
            .await;
    let limits =
        Limits { exchange_timeout: Duration::from_millis(700), read_timeout: Duration::from_secs(10), ..fast_limits() };
    let client = server.client("/mcp", Transport::StreamableHttp, limits);
    let started = Instant::now();
    let err = client.connect().await.unwrap_err();
    assert!(started.elapsed() < Duration::from_millis(1500), "took {:?}", started.elapsed());
    assert!(matches!(err, McpError::Timeout { .. }), "{err}");
}

/// A legacy HTTP+SSE server: GET /sse announces /messages/?session_id=1; each POST there
/// gets 202 and its reply goes out on the GET stream.
fn legacy_server() -> impl Fn(&Req) -> Reply + Send + Sync + 'static {
    let stream: Arc<Mutex<Option<mpsc::UnboundedSender<Vec<u8>>>>> = Arc::default();
    move |req| match (req.method.as_str(), req.path.as_str()) {
        ("GET", "/sse") => {
            let (tx, rx) = mpsc::unbounded_channel();
            tx.send(b"event: endpoint\r\ndata: /messages/?session_id=1\r\n\r\n: ping\r\n\r\n".to_vec()).unwrap();
            *stream.lock().unwrap() = Some(tx);
            Reply::Feed { head: SSE_HEAD, rx }
        }
        ("POST", "/messages/?session_id=1") => {
            let reply = match req.rpc_method() {
                "initialize" => Some(result(
                    req,
                    json!({"protocolVersion": "2024-11-05", "capabilities": {}, "serverInfo": {"name": "old"}}),
                )),
                "tools/list" => Some(result(req, json!({"tools": [{"name": "add", "inputSchema": {}}]}))),
                "tools/call" => {
                    Some(json!({"jsonrpc":"2.0","id":req.id(),"error":{"code":-32602,"message":"Unknown tool"}}))
                }
                _ => None,
            };
            if let Some(reply) = reply {
                let tx = stream.lock().unwrap().clone().unwrap();
                // Unrelated traffic first: a notification and a reply to another id.
                let noise = json!({"jsonrpc":"2.0","method":"notifications/message","params":{}});
                let other = json!({"jsonrpc":"2.0","id": 999_999,"result":{}});
                tx.send(format!("event: message\ndata: {noise}\n\nevent: message\ndata: {other}\n\nevent: message\ndata: {reply}\n\n").into_bytes()).unwrap();
            }
            accepted()
        }
        _ => json_reply("404 Not Found", json!({})),
    }
}

#[tokio::test]
async fn legacy_sse_session_routes_replies_by_id() {
    let server = Server::start(legacy_server()).await;
    let limits = Limits { sse_max_duration: Duration::from_secs(5), ..fast_limits() };
    let client = server.client("/sse", Transport::Sse, limits);
    let session = client.connect().await.unwrap();
    assert_eq!(session.era, Era::LegacySse);
    assert_eq!(session.server_name.as_deref(), Some("old"));
    assert_eq!(session.message_url.as_ref().unwrap().path(), "/messages/");
    let (a, b) = tokio::join!(client.list_tools(&session), client.list_tools(&session));
    assert_eq!(a.unwrap()[0].name, "add");
    assert_eq!(b.unwrap()[0].name, "add");
    let err = client.call_tool(&session, "nope", json!({})).await.unwrap_err();
    assert!(matches!(&err, McpError::JsonRpc { code: -32602, method, .. } if method == "tools/call"), "{err}");

    let other = server.client("/sse", Transport::Sse, fast_limits());
    let ask = Ask::new(EntryPoint::Initialize).at_message_url(session.message_url.as_ref().unwrap().as_str());
    let answer = other.exchange(&ask, &names(&["add"])).await.unwrap();
    assert_eq!(answer.status, 202);
    assert_eq!(answer.method, "POST");
    client.close(session).await;
}

#[tokio::test]
async fn legacy_requests_fail_once_the_stream_hits_its_cap() {
    let server = Server::start(legacy_server()).await;
    let limits = Limits { sse_max_duration: Duration::from_millis(300), ..fast_limits() };
    let client = server.client("/sse", Transport::Sse, limits);
    let session = client.connect().await.unwrap();
    tokio::time::sleep(Duration::from_millis(400)).await;
    let err = client.list_tools(&session).await.unwrap_err();
    assert!(matches!(err, McpError::SseDurationCap { .. }), "{err}");
}

fn http_err(status: u16, body: &str) -> McpError {
    McpError::Http {
        entry: "initialize".into(),
        url: "http://p/mcp".into(),
        status,
        content_type: None,
        www_authenticate: None,
        body_excerpt: body.into(),
    }
}

#[rstest]
#[case::s500(http_err(500, ""), true)]
#[case::s503(http_err(503, ""), true)]
#[case::s504(http_err(504, ""), true)]
#[case::s502_plain(http_err(502, "<html>bad gateway</html>"), true)]
#[case::s502_upstream_down(
    http_err(
        502,
        r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"upstream_error","data":{"upstream_status":0}}}"#
    ),
    true
)]
#[case::s502_upstream_5xx(
    http_err(
        502,
        r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"upstream_error","data":{"upstream_status":503}}}"#
    ),
    true
)]
#[case::s502_upstream_refused(
    http_err(
        502,
        r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"upstream_error","data":{"upstream_status":401}}}"#
    ),
    false
)]
#[case::s401(http_err(401, ""), false)]
#[case::s404(http_err(404, ""), false)]
#[case::rpc(McpError::JsonRpc { method: "initialize".into(), code: -32600, message: "x".into() }, false)]
#[case::size(McpError::SizeCap { url: "u".into(), limit: 1 }, false)]
fn not_ready_versus_final(#[case] err: McpError, #[case] not_ready: bool) {
    assert_eq!(err.is_not_ready(), not_ready, "{err}");
}

#[test]
fn entry_points_display_their_wire_names() {
    let names: Vec<String> = [
        EntryPoint::Initialize,
        EntryPoint::Discover,
        EntryPoint::ToolsList,
        EntryPoint::ToolsCall,
        EntryPoint::SseGet,
    ]
    .iter()
    .map(ToString::to_string)
    .collect();
    assert_eq!(names, ["initialize", "server/discover", "tools/list", "tools/call", "SSE GET"]);
}

#[test]
fn client_and_its_futures_can_cross_threads() {
    fn send_sync<T: Send + Sync>(_: &T) {}
    fn send<T: Send>(_: &T) {}
    let endpoint = Endpoint::new("http://127.0.0.1:9/mcp".parse().unwrap(), Transport::StreamableHttp);
    let client = McpClient::new(endpoint, None, Limits::default()).unwrap();
    send_sync(&client);
    send(&client.connect());
    let n = names(&[]);
    let ask = Ask::new(EntryPoint::SseGet);
    send(&client.exchange(&ask, &n));
    fn session_is_send_sync(s: &Session, c: &McpClient) {
        send_sync(s);
        send(&c.list_tools(s));
        send(&c.call_tool(s, "x", Value::Null));
    }
    let _ = session_is_send_sync;
}

#[tokio::test]
async fn raw_sse_get_stops_at_a_legacy_endpoint_event() {
    let server = Server::start(legacy_server()).await;
    let limits =
        Limits { read_timeout: Duration::from_secs(5), sse_max_duration: Duration::from_secs(10), ..fast_limits() };
    let started = Instant::now();
    let answer = server
        .client("/sse", Transport::Sse, limits)
        .exchange(&Ask::new(EntryPoint::SseGet), &names(&[]))
        .await
        .unwrap();
    assert!(started.elapsed() < Duration::from_secs(2), "the endpoint event settles it");
    assert!(answer.body.excerpt.contains("event: endpoint"));
    assert!(answer.body.endpoint_event);
}

/// A pinned endpoint falls back to its next address when the first refuses, as a client's
/// connect loop does over its libc's answers (a replica listening on one family only).
#[tokio::test]
async fn a_refused_address_falls_back_to_the_next() {
    let server = Server::start(stateless_server).await;
    let port = server.addr.port();
    let named = url::Url::parse(&format!("http://provider.test:{port}/mcp")).unwrap();
    // 127.0.0.2 is loopback too, but nothing listens there on this port.
    let refused: SocketAddr = format!("127.0.0.2:{port}").parse().unwrap();
    let endpoint = Endpoint::new(named, Transport::StreamableHttp).pinned_in_order(&[refused, server.addr]);
    assert_eq!(endpoint.addresses(), vec![refused, server.addr]);
    let client = McpClient::new(endpoint.clone(), None, fast_limits()).unwrap();
    let session = client.connect().await.unwrap();
    assert_eq!(session.era, Era::Stateless2026);
    // Without the fallback, the same endpoint cannot connect at all.
    let alone = McpClient::new(endpoint.pinned_in_order(&[refused]), None, fast_limits()).unwrap();
    assert!(matches!(alone.connect().await, Err(McpError::Connect { .. })));
}
