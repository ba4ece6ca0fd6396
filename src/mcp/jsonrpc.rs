//! JSON-RPC 2.0 framing: building requests and picking our reply out of whatever else a
//! server sends on the same channel (notifications, its own requests, replies to other
//! ids, batches).

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
