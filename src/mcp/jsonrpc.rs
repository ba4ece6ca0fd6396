//! JSON-RPC 2.0 framing: building requests and picking our reply out of whatever else a
//! server sends on the same channel (notifications, its own requests, replies to other
//! ids, batches).

use serde::Deserialize;
use serde::de::{Deserializer, IgnoredAny};
use serde_json::{Value, json};

pub(crate) fn request(id: u64, method: &str, params: Value) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params })
}

pub(crate) fn notification(method: &str, params: Value) -> Value {
    json!({ "jsonrpc": "2.0", "method": method, "params": params })
}

/// Why the reply to our request is not a result.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum ReplyError {
    Rpc { code: i64, message: String, data: Option<Value> },
    Malformed(String),
}

pub(crate) fn is_jsonrpc(v: &Value) -> bool {
    match v {
        Value::Object(m) => m.get("jsonrpc").and_then(Value::as_str) == Some("2.0"),
        Value::Array(items) => !items.is_empty() && items.iter().all(is_jsonrpc),
        _ => false,
    }
}

/// The numeric id of a reply (a message with `result` or `error` and no `method`), if any.
/// Servers echo the id as sent, but a string form of our number is accepted too.
pub(crate) fn reply_id(msg: &Value) -> Option<u64> {
    let m = msg.as_object()?;
    if m.contains_key("method") || !(m.contains_key("result") || m.contains_key("error")) {
        return None;
    }
    match m.get("id")? {
        Value::Number(n) => n.as_u64(),
        Value::String(s) => s.parse().ok(),
        _ => None,
    }
}

/// Finds the reply to request `id` in one decoded message (or batch).
///
/// `None` means "not ours, keep reading": notifications, server-to-client requests and
/// replies to other ids. An error reply with a null id is taken as ours, because a server
/// that could not parse our request has no id to echo and nothing else is in flight on
/// the POST that carried it.
pub(crate) fn match_reply(msg: &Value, id: u64) -> Option<Result<Value, ReplyError>> {
    if let Value::Array(items) = msg {
        return items.iter().find_map(|m| match_reply(m, id));
    }
    let m = msg.as_object()?;
    if m.contains_key("method") {
        return None;
    }
    let null_id_error = m.get("id").is_none_or(Value::is_null) && m.contains_key("error");
    if reply_id(msg) != Some(id) && !null_id_error {
        return None;
    }
    if let Some(err) = m.get("error") {
        let code = err.get("code").and_then(Value::as_i64);
        let message = err.get("message").and_then(Value::as_str);
        return Some(match (code, message) {
            (Some(code), message) => Err(ReplyError::Rpc {
                code,
                message: message.unwrap_or("").to_string(),
                data: err.get("data").cloned(),
            }),
            (None, _) => Err(ReplyError::Malformed(format!("error object without an integer code: {err}"))),
        });
    }
    Some(Ok(m.get("result").cloned().unwrap_or(Value::Null)))
}

/// One message as far as matching it to a request needs: read without building the tree
/// of its `result`, which is skipped. A tools/list page of 4 MiB of small objects would
/// otherwise cost tens of MB as a `Value` before anything looks at it.
#[derive(Deserialize)]
struct Envelope {
    #[serde(default)]
    jsonrpc: Option<IgnoredString>,
    #[serde(default, deserialize_with = "some_value")]
    id: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    method: bool,
    #[serde(default, deserialize_with = "present")]
    result: bool,
    #[serde(default, deserialize_with = "some_value")]
    error: Option<Value>,
}

/// `"2.0"` or something else, without keeping a long string.
#[derive(Default)]
struct IgnoredString(bool);

impl<'de> Deserialize<'de> for IgnoredString {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Value::deserialize(d)?;
        Ok(IgnoredString(v.as_str() == Some("2.0")))
    }
}

fn present<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    IgnoredAny::deserialize(d)?;
    Ok(true)
}

/// Present (even as `null`) is `Some`.
fn some_value<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

impl Envelope {
    /// [`match_reply`]'s rules, on the envelope.
    fn reply_to(&self, id: u64) -> Option<Result<(), ReplyError>> {
        if self.method {
            return None;
        }
        let theirs = match &self.id {
            Some(Value::Number(n)) => n.as_u64(),
            Some(Value::String(s)) => s.parse().ok(),
            _ => None,
        };
        let is_reply = (self.result || self.error.is_some()) && theirs == Some(id);
        let null_id_error = self.id.as_ref().is_none_or(Value::is_null) && self.error.is_some();
        if !is_reply && !null_id_error {
            return None;
        }
        Some(match &self.error {
            Some(err) => Err(rpc_error(err)),
            None => Ok(()),
        })
    }
}

fn rpc_error(err: &Value) -> ReplyError {
    let code = err.get("code").and_then(Value::as_i64);
    let message = err.get("message").and_then(Value::as_str);
    match code {
        Some(code) => {
            ReplyError::Rpc { code, message: message.unwrap_or("").to_string(), data: err.get("data").cloned() }
        }
        None => ReplyError::Malformed(format!("error object without an integer code: {err}")),
    }
}

/// The text of the successful reply to request `id` (a body, an SSE event's data).
pub(crate) struct Reply {
    pub text: Vec<u8>,
    pub id: u64,
}

impl Reply {
    /// Its `result`, parsed.
    pub fn result(self, method: &str) -> Result<Value, super::McpError> {
        take_result(&self.text, self.id)
            .ok_or_else(|| super::McpError::Protocol { detail: format!("{method}: the reply carries no result") })
    }
}

/// What one JSON text (a body, an SSE event's data) holds for request `id`.
#[derive(Debug, PartialEq)]
pub(crate) struct Scanned {
    /// Every message in it says `"jsonrpc": "2.0"` (and a batch is not empty).
    pub jsonrpc: bool,
    /// The reply to `id`, if it is in there: `Ok` for a result.
    pub reply: Option<Result<(), ReplyError>>,
}

fn first_byte(text: &[u8]) -> Option<u8> {
    text.iter().copied().find(|b| !b.is_ascii_whitespace())
}

/// One message, if `text` is an object (a derived struct would also take an array).
fn object(text: &[u8]) -> Option<serde_json::Result<Envelope>> {
    (first_byte(text) == Some(b'{')).then(|| serde_json::from_slice(text))
}

fn batch(text: &[u8]) -> Option<serde_json::Result<Vec<Envelope>>> {
    (first_byte(text) == Some(b'[')).then(|| serde_json::from_slice(text))
}

/// Scans `text` for the reply to `id`; `Err` when it is not JSON at all.
pub(crate) fn scan(text: &[u8], id: u64) -> Result<Scanned, serde_json::Error> {
    if let Some(Ok(one)) = object(text) {
        let jsonrpc = one.jsonrpc.as_ref().is_some_and(|j| j.0);
        return Ok(Scanned { jsonrpc, reply: one.reply_to(id) });
    }
    if let Some(Ok(batch)) = batch(text) {
        let jsonrpc = !batch.is_empty() && batch.iter().all(|m| m.jsonrpc.as_ref().is_some_and(|j| j.0));
        return Ok(Scanned { jsonrpc, reply: batch.iter().find_map(|m| m.reply_to(id)) });
    }
    // Any other JSON value (a string, a number, a batch holding one) is no reply.
    let v = serde_json::from_slice::<Value>(text)?;
    Ok(Scanned { jsonrpc: is_jsonrpc(&v), reply: match_reply(&v, id).map(|r| r.map(|_| ())) })
}

/// Ids of the replies in `text`, for routing (legacy SSE); `Err` when it is not JSON.
pub(crate) fn reply_ids(text: &[u8]) -> Result<Vec<u64>, serde_json::Error> {
    let id_of = |m: &Envelope| match (&m.id, m.method, m.result || m.error.is_some()) {
        (Some(Value::Number(n)), false, true) => n.as_u64(),
        (Some(Value::String(s)), false, true) => s.parse().ok(),
        _ => None,
    };
    if let Some(Ok(one)) = object(text) {
        return Ok(id_of(&one).into_iter().collect());
    }
    if let Some(Ok(batch)) = batch(text) {
        return Ok(batch.iter().filter_map(id_of).collect());
    }
    serde_json::from_slice::<Value>(text).map(|_| vec![])
}

/// The `result` of the reply to `id` in `text`, moved out of the parsed message.
pub(crate) fn take_result(text: &[u8], id: u64) -> Option<Value> {
    fn take(msg: Value, id: u64) -> Option<Value> {
        match msg {
            Value::Array(items) => items.into_iter().find_map(|m| take(m, id)),
            Value::Object(mut m) => {
                let ours = matches!(match_reply_ref(&m, id), Some(Ok(())));
                ours.then(|| m.remove("result").unwrap_or(Value::Null))
            }
            _ => None,
        }
    }
    take(serde_json::from_slice(text).ok()?, id)
}

fn match_reply_ref(m: &serde_json::Map<String, Value>, id: u64) -> Option<Result<(), ReplyError>> {
    let env = Envelope {
        jsonrpc: None,
        id: m.get("id").cloned(),
        method: m.contains_key("method"),
        result: m.contains_key("result"),
        error: m.get("error").cloned(),
    };
    env.reply_to(id)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case::notification(json!({"jsonrpc":"2.0","method":"notifications/message","params":{}}))]
    #[case::server_request(json!({"jsonrpc":"2.0","id":3,"method":"ping"}))]
    #[case::other_id(json!({"jsonrpc":"2.0","id":4,"result":{}}))]
    #[case::other_id_error(json!({"jsonrpc":"2.0","id":4,"error":{"code":-1,"message":"x"}}))]
    #[case::not_an_object(json!("hello"))]
    fn skips_what_is_not_our_reply(#[case] msg: Value) {
        assert_eq!(match_reply(&msg, 3), None);
    }

    #[rstest]
    #[case::number(json!({"jsonrpc":"2.0","id":3,"result":{"ok":true}}))]
    #[case::string_id(json!({"jsonrpc":"2.0","id":"3","result":{"ok":true}}))]
    #[case::in_batch(json!([{"jsonrpc":"2.0","method":"n"},{"jsonrpc":"2.0","id":3,"result":{"ok":true}}]))]
    fn finds_our_result(#[case] msg: Value) {
        assert_eq!(match_reply(&msg, 3), Some(Ok(json!({"ok":true}))));
    }

    #[test]
    fn error_reply_keeps_code_message_and_data() {
        let msg = json!({"jsonrpc":"2.0","id":3,"error":{"code":-32000,"message":"upstream_error","data":{"upstream_status":0}}});
        assert_eq!(
            match_reply(&msg, 3),
            Some(Err(ReplyError::Rpc {
                code: -32000,
                message: "upstream_error".into(),
                data: Some(json!({"upstream_status":0}))
            }))
        );
    }

    #[rstest]
    #[case::result(json!({"jsonrpc":"2.0","id":3,"result":{"ok":true}}))]
    #[case::string_id(json!({"jsonrpc":"2.0","id":"3","result":null}))]
    #[case::in_batch(json!([{"jsonrpc":"2.0","method":"n"},{"jsonrpc":"2.0","id":3,"result":{}}]))]
    #[case::other_id(json!({"jsonrpc":"2.0","id":4,"result":{}}))]
    #[case::notification(json!({"jsonrpc":"2.0","method":"notifications/message","params":{}}))]
    #[case::server_request(json!({"jsonrpc":"2.0","id":3,"method":"ping"}))]
    #[case::error(json!({"jsonrpc":"2.0","id":3,"error":{"code":-32000,"message":"m","data":{"x":1}}}))]
    #[case::null_id_error(json!({"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"p"}}))]
    #[case::codeless(json!({"jsonrpc":"2.0","id":3,"error":{"message":"nope"}}))]
    #[case::not_jsonrpc(json!({"id":3,"result":{}}))]
    #[case::a_string(json!("hello"))]
    #[case::empty_batch(json!([]))]
    fn scanning_agrees_with_matching_the_tree(#[case] msg: Value) {
        let scanned = scan(msg.to_string().as_bytes(), 3).unwrap();
        assert_eq!(scanned.reply, match_reply(&msg, 3).map(|r| r.map(|_| ())), "{msg}");
        assert_eq!(scanned.jsonrpc, is_jsonrpc(&msg), "{msg}");
        if let Some(Ok(())) = scanned.reply {
            assert_eq!(take_result(msg.to_string().as_bytes(), 3), match_reply(&msg, 3).unwrap().ok());
        }
    }

    #[test]
    fn reply_ids_for_routing() {
        assert_eq!(reply_ids(br#"{"jsonrpc":"2.0","id":5,"result":{}}"#).unwrap(), vec![5]);
        assert_eq!(
            reply_ids(br#"[{"id":5,"result":{}},{"id":"6","error":{}},{"id":7,"method":"x"}]"#).unwrap(),
            vec![5, 6]
        );
        assert!(reply_ids(b"not json").is_err());
    }

    #[test]
    fn null_id_error_is_ours() {
        let msg = json!({"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}});
        assert!(matches!(match_reply(&msg, 9), Some(Err(ReplyError::Rpc { code: -32700, .. }))));
    }

    #[test]
    fn error_without_code_is_malformed() {
        let msg = json!({"jsonrpc":"2.0","id":1,"error":{"message":"nope"}});
        assert!(matches!(match_reply(&msg, 1), Some(Err(ReplyError::Malformed(_)))));
    }

    #[test]
    fn reply_id_ignores_requests_and_notifications() {
        assert_eq!(reply_id(&json!({"jsonrpc":"2.0","id":5,"method":"ping"})), None);
        assert_eq!(reply_id(&json!({"jsonrpc":"2.0","method":"n"})), None);
        assert_eq!(reply_id(&json!({"jsonrpc":"2.0","id":5,"result":{}})), Some(5));
    }

    #[test]
    fn builds_requests_and_notifications() {
        assert_eq!(
            request(1, "tools/list", json!({})),
            json!({"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}})
        );
        assert!(notification("notifications/initialized", json!({})).get("id").is_none());
        assert!(is_jsonrpc(&json!({"jsonrpc":"2.0","id":1,"result":{}})));
        assert!(!is_jsonrpc(&json!({"error":"unauthenticated"})));
    }
}
