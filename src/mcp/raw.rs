//! Single uninterpreted exchanges for refusal checks: what a client sends at one entry
//! point, and everything the server answered, without deciding success or failure.

use serde_json::{Value, json};
use tokio::time::Instant;
use url::Url;

use super::http::{self, Head, SseStream};
use super::jsonrpc;
use super::streamable::{self, Headers};
use super::{EntryPoint, McpClient, McpError, RawAnswer, Transport};

pub(crate) async fn exchange(
    client: &McpClient,
    entry: EntryPoint,
    post_url: Option<&Url>,
) -> Result<RawAnswer, McpError> {
    let endpoint_url = &client.endpoint.url;
    let post_target = post_url.unwrap_or(endpoint_url);
    let (method, url, req) = match entry {
        EntryPoint::SseGet => ("GET", endpoint_url, super::legacy::sse_get(client)),
        EntryPoint::Initialize | EntryPoint::MessagePost => {
            if entry == EntryPoint::MessagePost && client.endpoint.transport == Transport::Sse && post_url.is_none() {
                return Err(McpError::Protocol {
                    detail: "a legacy message POST needs the message endpoint of another client's live session".into(),
                });
            }
            let body = jsonrpc::request(client.next_id(), "initialize", streamable::initialize_params());
            ("POST", post_target, streamable::post(client, post_target, &body, &Headers::new()))
        }
        EntryPoint::Discover | EntryPoint::ToolsList => {
            let rpc_method = if entry == EntryPoint::Discover { "server/discover" } else { "tools/list" };
            let (params, headers) = streamable::modern(rpc_method, json!({}));
            let body = jsonrpc::request(client.next_id(), rpc_method, params);
            ("POST", post_target, streamable::post(client, post_target, &body, &headers))
        }
    };
    let started = Instant::now();
    let mut resp = http::send(req, url.as_str(), &client.limits).await?;
    let head = Head::of(&resp);
    let (body_excerpt, jsonrpc, discloses_tools) = if head.is_sse() {
        read_sse(client, resp, url, started).await
    } else {
        let deadline = (started + client.limits.sse_max_duration).max(Instant::now() + client.limits.read_timeout);
        let body = http::read_body_prefix(&mut resp, client.limits.max_response_bytes, deadline).await;
        let (rpc, discloses) = inspect(&body);
        (http::excerpt(&body), rpc, discloses)
    };
    Ok(RawAnswer {
        entry,
        method: method.to_string(),
        url: url.to_string(),
        status: head.status,
        content_type: head.content_type,
        location: head.location,
        www_authenticate: head.www_authenticate,
        session_id_present: head.session_id.is_some(),
        body_excerpt,
        jsonrpc,
        discloses_tools,
    })
}

/// Reads events for one `read_timeout` window, or until an event that settles the
/// question: a legacy `endpoint` (a session was granted) or a JSON-RPC reply. A stream
/// that stays open is itself the answer, so running out of time is not an error.
async fn read_sse(
    client: &McpClient,
    resp: reqwest::Response,
    url: &Url,
    started: Instant,
) -> (String, Option<Value>, bool) {
    let window = Instant::now() + client.limits.read_timeout;
    let mut stream = SseStream::new(resp, url.as_str(), &client.limits, started);
    let mut first_message = None;
    let mut discloses = false;
    while let Ok(Some(ev)) = stream.next_before(window).await {
        let (msg, leak) = inspect(ev.data.as_bytes());
        discloses |= leak;
        if ev.event == "endpoint" {
            break;
        }
        if ev.event == "message"
            && let Some(msg) = msg
        {
            let is_reply = msg.get("result").is_some() || msg.get("error").is_some();
            if is_reply {
                return (http::excerpt(&stream.head_bytes), Some(msg), discloses);
            }
            first_message.get_or_insert(msg);
        }
    }
    (http::excerpt(&stream.head_bytes), first_message, discloses)
}

/// The JSON-RPC message in `body`, if it is one, and whether it discloses tools.
fn inspect(body: &[u8]) -> (Option<Value>, bool) {
    match serde_json::from_slice::<Value>(body) {
        Ok(v) => {
            let leak = discloses_tools(&v);
            (jsonrpc::is_jsonrpc(&v).then_some(v), leak)
        }
        Err(_) => {
            let text = String::from_utf8_lossy(body);
            (None, text.contains("\"tools\"") && text.contains("\"name\""))
        }
    }
}

fn discloses_tools(v: &Value) -> bool {
    match v {
        Value::Object(m) => {
            let here = m
                .get("tools")
                .and_then(Value::as_array)
                .is_some_and(|tools| tools.iter().any(|t| t.get("name").is_some()));
            here || m.values().any(discloses_tools)
        }
        Value::Array(items) => items.iter().any(discloses_tools),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case::result(br#"{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a"}]}}"#, true)]
    #[case::in_error_data(br#"{"error":"denied","data":{"tools":[{"name":"a","inputSchema":{}}]}}"#, true)]
    #[case::empty_list(br#"{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}"#, false)]
    #[case::names_only(br#"{"tools":["a","b"]}"#, false)]
    #[case::refusal(br#"{"error":"unauthenticated"}"#, false)]
    #[case::truncated(br#"{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a","desc"#, true)]
    #[case::html(b"<html>login</html>", false)]
    fn disclosure(#[case] body: &[u8], #[case] leak: bool) {
        assert_eq!(inspect(body).1, leak);
    }

    #[test]
    fn only_json_rpc_is_reported_as_json_rpc() {
        assert!(inspect(br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"x"}}"#).0.is_some());
        assert!(inspect(br#"{"error":"unauthenticated"}"#).0.is_none());
    }
}
