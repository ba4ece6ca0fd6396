//! Legacy HTTP+SSE: replies to POSTed requests arrive on a long-lived GET stream, so a
//! background task reads that stream and hands each reply to whoever waits for its id.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use reqwest::header;
use serde_json::Value;
use tokio::sync::oneshot;
use tokio::time::Instant;
use url::Url;

use super::http::{self, Head, SseStream};
use super::jsonrpc::{self, Reply};
use super::streamable::{self, Headers};
use super::{Era, McpClient, McpError, Session};

/// The live stream of one legacy session. Dropping it stops the reader task, which
/// drops the GET and so ends the session on the server.
pub(crate) struct LegacyStream {
    pub message_url: Url,
    router: Arc<Router>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for LegacyStream {
    fn drop(&mut self) {
        self.task.abort();
    }
}

#[derive(Default)]
struct Router {
    state: Mutex<RouterState>,
}

#[derive(Default)]
struct RouterState {
    /// Each waiter gets the text of the message (or batch) that holds its reply.
    waiters: HashMap<u64, oneshot::Sender<String>>,
    /// Why the stream is gone; later requests fail with it instead of waiting.
    ended: Option<McpError>,
}

impl Router {
    fn register(&self, id: u64) -> Result<oneshot::Receiver<String>, McpError> {
        let mut state = self.state.lock().expect("router lock poisoned");
        if let Some(e) = &state.ended {
            return Err(e.clone());
        }
        let (tx, rx) = oneshot::channel();
        state.waiters.insert(id, tx);
        Ok(rx)
    }

    fn forget(&self, id: u64) {
        self.state.lock().expect("router lock poisoned").waiters.remove(&id);
    }

    /// Hands `text` to the waiters of the replies it holds (`ids`); notifications and
    /// server-to-client requests have none and are dropped.
    fn route(&self, text: &str, ids: &[u64]) {
        let mut state = self.state.lock().expect("router lock poisoned");
        for id in ids {
            if let Some(tx) = state.waiters.remove(id) {
                let _ = tx.send(text.to_string());
            }
        }
    }

    fn end(&self, why: McpError) {
        let mut state = self.state.lock().expect("router lock poisoned");
        state.ended.get_or_insert(why);
        // Dropping the senders wakes every waiter, which then reads `ended`.
        state.waiters.clear();
    }

    fn ended(&self) -> McpError {
        let state = self.state.lock().expect("router lock poisoned");
        state.ended.clone().unwrap_or_else(|| McpError::Protocol { detail: "legacy sse stream ended".into() })
    }
}

async fn read_stream(mut stream: SseStream, router: Arc<Router>, url: String) {
    let why = loop {
        match stream.next().await {
            Ok(Some(ev)) if ev.event == "message" => match jsonrpc::reply_ids(ev.data.as_bytes()) {
                Ok(ids) => router.route(&ev.data, &ids),
                Err(_) => {
                    break McpError::Protocol {
                        detail: format!(
                            "legacy sse stream {url} sent a message event that is not json: {}",
                            http::excerpt(ev.data.as_bytes())
                        ),
                    };
                }
            },
            Ok(Some(_)) => {}
            Ok(None) => {
                break McpError::Protocol { detail: format!("legacy sse stream {url} was closed by the server") };
            }
            Err(e) => break e,
        }
    };
    router.end(why);
}

pub(crate) fn sse_get(client: &McpClient) -> reqwest::RequestBuilder {
    let mut req = client.http.get(client.request_url(&client.endpoint.url)).header(header::ACCEPT, "text/event-stream");
    req = client.authorize(req);
    req
}

/// The message endpoint must stay on the stream's origin: the bearer goes with every
/// POST, and a server must not be able to send it elsewhere.
fn message_url(sse_url: &Url, data: &str) -> Result<Url, McpError> {
    let url = sse_url.join(data.trim()).map_err(|e| McpError::Protocol {
        detail: format!("legacy sse stream {sse_url} announced an invalid endpoint {:?}: {e}", data.trim()),
    })?;
    if url.origin() != sse_url.origin() {
        return Err(McpError::Protocol {
            detail: format!(
                "legacy sse stream {sse_url} announced endpoint {url} on another origin; cordon does not send credentials there"
            ),
        });
    }
    Ok(url)
}

pub(crate) async fn connect(client: &McpClient) -> Result<Session, McpError> {
    let url = &client.endpoint.url;
    let started = Instant::now();
    let opened = http::within(&client.limits, url.as_str(), "the SSE GET and its endpoint event", async {
        open_stream(client, url, started).await
    })
    .await?;
    let (stream, message_url) = opened;
    let router = Arc::new(Router::default());
    let task = tokio::spawn(read_stream(stream, router.clone(), url.to_string()));
    let legacy = LegacyStream { message_url: message_url.clone(), router, task };

    let result = request(client, &legacy, "initialize", streamable::initialize_params()).await?.result("initialize")?;
    let Some(version) = result.get("protocolVersion").and_then(Value::as_str).map(str::to_string) else {
        return Err(McpError::Protocol {
            detail: format!("initialize at {message_url}: the result has no protocolVersion"),
        });
    };
    streamable::post_notification(client, &message_url, "notifications/initialized", Headers::new()).await?;
    Ok(Session {
        era: Era::LegacySse,
        server_name: result.pointer("/serverInfo/name").and_then(Value::as_str).map(str::to_string),
        session_id_present: true,
        message_url: Some(message_url),
        session_id: None,
        protocol_version: Some(version),
        legacy: Some(legacy),
    })
}

/// GETs the stream and reads up to its `endpoint` event.
async fn open_stream(client: &McpClient, url: &Url, started: Instant) -> Result<(SseStream, Url), McpError> {
    let (mut resp, hops) = http::send(sse_get(client), url.as_str(), &client.limits, client.endpoint.pin).await?;
    client.record_answer(&resp, hops);
    let head = Head::of(&resp);
    streamable::reject_non_success(client, &mut resp, &head, "SSE GET", url).await?;
    if !head.is_sse() {
        let body = streamable::read_quote(client, &mut resp).await;
        return Err(McpError::NotMcp {
            entry: "SSE GET".into(),
            url: url.to_string(),
            status: head.status,
            content_type: head.content_type,
            body_excerpt: http::excerpt(&body),
        });
    }
    let mut stream = SseStream::new(resp, &head, url.as_str(), &client.limits, started);
    let endpoint = loop {
        match stream.next().await? {
            Some(ev) if ev.event == "endpoint" => break ev.data,
            Some(_) => {}
            None => {
                return Err(McpError::Protocol {
                    detail: format!("legacy sse stream {url} ended before its endpoint event"),
                });
            }
        }
    };
    let message_url = message_url(url, &endpoint)?;
    Ok((stream, message_url))
}

pub(crate) async fn request(
    client: &McpClient,
    stream: &LegacyStream,
    method: &str,
    params: Value,
) -> Result<Reply, McpError> {
    let id = client.next_id();
    let rx = stream.router.register(id)?;
    let result = post_and_wait(client, stream, id, rx, method, params).await;
    stream.router.forget(id);
    result
}

async fn post_and_wait(
    client: &McpClient,
    stream: &LegacyStream,
    id: u64,
    rx: oneshot::Receiver<String>,
    method: &str,
    params: Value,
) -> Result<Reply, McpError> {
    let url = &stream.message_url;
    let body = jsonrpc::request(id, method, params);
    http::within(
        &client.limits,
        url.as_str(),
        "the whole exchange",
        post_and_read(client, stream, url, id, rx, method, &body),
    )
    .await
}

async fn post_and_read(
    client: &McpClient,
    stream: &LegacyStream,
    url: &Url,
    id: u64,
    rx: oneshot::Receiver<String>,
    method: &str,
    body: &Value,
) -> Result<Reply, McpError> {
    let (mut resp, hops) = http::send(
        streamable::post(client, url, body, &Headers::new()),
        url.as_str(),
        &client.limits,
        client.endpoint.pin,
    )
    .await?;
    client.record_answer(&resp, hops);
    let head = Head::of(&resp);
    streamable::reject_non_success(client, &mut resp, &head, method, url).await?;
    // The spec says 202 and the reply on the stream; a server that answers in the POST
    // body instead is taken at its word.
    let posted = http::read_body(&mut resp, &head, url.as_str(), &client.limits).await?;
    if let Ok(jsonrpc::Scanned { reply: Some(reply), .. }) = jsonrpc::scan(&posted, id) {
        return reply.map(|()| Reply { text: posted, id }).map_err(|e| streamable::reply_error(method, e));
    }
    // The reader task ends at the stream's duration cap, which wakes this wait; the
    // timeout is only a second line of defence.
    let text = match tokio::time::timeout(client.limits.sse_max_duration, rx).await {
        Ok(Ok(text)) => text,
        Ok(Err(_)) => return Err(stream.router.ended()),
        Err(_) => {
            return Err(McpError::SseDurationCap {
                url: client.endpoint.url.to_string(),
                limit: client.limits.sse_max_duration,
            });
        }
    };
    match jsonrpc::scan(text.as_bytes(), id).ok().and_then(|s| s.reply) {
        Some(reply) => {
            reply.map(|()| Reply { text: text.into_bytes(), id }).map_err(|e| streamable::reply_error(method, e))
        }
        None => {
            Err(McpError::Protocol { detail: format!("{method}: routed a message that is not the reply to id {id}") })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn endpoint_is_resolved_against_the_sse_url() {
        let sse = Url::parse("http://p:8000/sse").unwrap();
        assert_eq!(
            message_url(&sse, "/messages/?session_id=ab\n").unwrap().as_str(),
            "http://p:8000/messages/?session_id=ab"
        );
        assert_eq!(message_url(&sse, "messages?s=1").unwrap().as_str(), "http://p:8000/messages?s=1");
    }

    #[test]
    fn endpoint_on_another_origin_is_refused() {
        let sse = Url::parse("http://p:8000/sse").unwrap();
        assert!(matches!(message_url(&sse, "http://evil:8000/m"), Err(McpError::Protocol { .. })));
        assert!(matches!(message_url(&sse, "http://p:9000/m"), Err(McpError::Protocol { .. })));
    }

    #[tokio::test]
    async fn router_delivers_by_id_and_wakes_waiters_when_the_stream_ends() {
        let router = Router::default();
        let rx1 = router.register(1).unwrap();
        let rx2 = router.register(2).unwrap();
        for msg in [
            json!({"jsonrpc":"2.0","method":"notifications/message","params":{}}),
            json!({"jsonrpc":"2.0","id":2,"result":{"two":true}}),
        ] {
            let text = msg.to_string();
            router.route(&text, &jsonrpc::reply_ids(text.as_bytes()).unwrap());
        }
        let got: Value = serde_json::from_str(&rx2.await.unwrap()).unwrap();
        assert_eq!(got["result"]["two"], true);
        router.end(McpError::Protocol { detail: "gone".into() });
        assert!(rx1.await.is_err());
        assert!(matches!(router.register(3), Err(McpError::Protocol { .. })));
    }
}
