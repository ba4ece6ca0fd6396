//! A chat in which Open WebUI runs a tool call, and Open WebUI's own record of it.
//!
//! cordon asks the model, in a saved chat, to call one tool with given arguments and to
//! answer with the result; Open WebUI offers the tool, runs the call through its MCP client,
//! sends the result back to the model, and saves the whole turn. What counts is that record,
//! not the model's words: Open WebUI 0.12.4 saves the assistant message with an `output`
//! list — `function_call` (name, arguments, call_id), `function_call_output` (call_id and
//! the result as `input_text` parts), then the model's `message` — read from
//! `GET /api/v1/chats/<id>`. A model that answers without calling the tool leaves no
//! `function_call`, whatever it writes. Older versions kept tool calls as `<details
//! type="tool_calls">` blocks in the content; those are never taken as a record (a model
//! can write them), only left out of the model's words.

use std::time::Duration;

use reqwest::Method;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::api::{Api, Token};
use super::observe::SpecsSeen;
use crate::text;

const REPLY_CHARS: usize = 400;
/// Enough of a tool's result to find a nonce and an expectation in it.
const RESULT_CHARS: usize = 4000;
const ARGUMENTS_CHARS: usize = 400;

/// What to ask in [`chat_tool_call`].
pub struct ToolCallAsk {
    pub model: String,
    /// The connection id (`server:mcp:<server>`).
    pub server: String,
    /// The whole user message.
    pub prompt: String,
}

/// One tool call Open WebUI recorded, and its result.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallSeen {
    pub name: String,
    /// The arguments as the model sent them (sanitized, cut).
    pub arguments: String,
    /// The result Open WebUI got from the server and sent back to the model (sanitized,
    /// cut), if it recorded one for this call.
    pub result: Option<String>,
}

/// A chat in which cordon asked for one tool call.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChatSeen {
    pub user: String,
    pub tool: String,
    /// What `/specs` of the server answered the user before the chat: the tools Open WebUI
    /// can offer the model.
    pub offered: Option<SpecsSeen>,
    /// The tool calls Open WebUI recorded in the assistant message, in order.
    pub calls: Vec<CallSeen>,
    /// The model's own words after the calls (sanitized, cut), once saved.
    pub reply: Option<String>,
    /// The message was marked done.
    pub done: bool,
    pub waited_ms: u64,
    /// What went wrong on the way (a status, a timeout).
    pub error: Option<String>,
}

impl ChatSeen {
    pub fn new(user: &str, tool: &str) -> ChatSeen {
        ChatSeen {
            user: user.to_string(),
            tool: tool.to_string(),
            offered: None,
            calls: vec![],
            reply: None,
            done: false,
            waited_ms: 0,
            error: None,
        }
    }
}

/// Asks for the call in a new saved chat and reads the record once Open WebUI marks the
/// assistant message done (or saves an error). The chat is deleted afterwards.
pub async fn chat_tool_call(api: &Api, token: &Token, ask: &ToolCallAsk, budget: Duration, seen: &mut ChatSeen) {
    let ToolCallAsk { model, server, prompt, .. } = ask;
    let started = tokio::time::Instant::now();
    let chat = json!({"chat": {"title": "cordon tool call", "models": [model], "messages": [], "history": {"messages": {}, "currentId": null}}});
    let chat_id = match api.json(Method::POST, "/api/v1/chats/new", token, Some(&chat)).await {
        Ok(v) => v.get("id").and_then(Value::as_str).unwrap_or_default().to_string(),
        Err(e) => {
            seen.error = Some(format!("creating the chat: {e}"));
            return;
        }
    };
    let user_message_id = uuid_like();
    let assistant_id = uuid_like();
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    let body = json!({
        "model": model,
        "stream": true,
        "messages": [{"role": "user", "content": prompt}],
        "tool_ids": [format!("server:mcp:{server}")],
        "chat_id": chat_id,
        "id": assistant_id,
        "user_message": {"id": user_message_id, "parentId": null, "childrenIds": [], "role": "user", "content": prompt, "timestamp": now, "models": [model]},
        "params": {"function_calling": "native"},
    });
    match api.send(Method::POST, "/api/chat/completions", Some(token), Some(&body)).await {
        Ok(a) if a.status == 200 => {}
        Ok(a) => seen.error = Some(format!("/api/chat/completions answered {}: {}", a.status, a.detail())),
        Err(e) => seen.error = Some(format!("/api/chat/completions: {e}")),
    }
    if seen.error.is_none() {
        let path = format!("/api/v1/chats/{chat_id}");
        while started.elapsed() < budget {
            match api.json(Method::GET, &path, token, None).await {
                Ok(v) => {
                    if let Some(m) = v.pointer(&format!("/chat/history/messages/{assistant_id}")) {
                        let error = m.pointer("/error/content").and_then(Value::as_str);
                        seen.done = m.get("done").and_then(Value::as_bool).unwrap_or(false);
                        if let Some(e) = error {
                            seen.error = Some(format!("Open WebUI saved an error: {}", text::sanitize(e)));
                        }
                        if seen.done || error.is_some() {
                            let (calls, reply) = record_of(m);
                            seen.calls = calls;
                            seen.reply = Some(reply);
                            break;
                        }
                    }
                }
                Err(e) => seen.error = Some(format!("reading the chat: {e}")),
            }
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
        if !seen.done && seen.error.is_none() {
            seen.error = Some(format!("the reply was not done within {:.0}s", budget.as_secs_f64()));
        }
    }
    seen.waited_ms = started.elapsed().as_millis() as u64;
    let _ = api.json(Method::DELETE, &format!("/api/v1/chats/{chat_id}"), token, None).await;
}

/// Pure: the tool calls (with their results) Open WebUI recorded in a saved assistant
/// message, and the model's words after them.
pub fn record_of(message: &Value) -> (Vec<CallSeen>, String) {
    let output = message.get("output").and_then(Value::as_array).cloned().unwrap_or_default();
    let mut calls: Vec<(String, CallSeen)> = Vec::new();
    let mut words = String::new();
    for item in &output {
        let s = |k: &str| item.get(k).and_then(Value::as_str).unwrap_or_default().to_string();
        match item.get("type").and_then(Value::as_str) {
            Some("function_call") => {
                let arguments = match item.get("arguments") {
                    Some(Value::String(a)) => a.clone(),
                    Some(other) => other.to_string(),
                    None => String::new(),
                };
                calls.push((
                    s("call_id"),
                    CallSeen { name: s("name"), arguments: cut(&arguments, ARGUMENTS_CHARS), result: None },
                ));
                // Only what the model says after the last call answers with its result.
                words.clear();
            }
            Some("function_call_output") => {
                let id = s("call_id");
                let result = text_of(item.get("output").unwrap_or(&Value::Null));
                if let Some((_, call)) = calls.iter_mut().find(|(c, call)| *c == id && call.result.is_none()) {
                    call.result = Some(cut(&result, RESULT_CHARS));
                }
            }
            Some("message") => {
                let text = text_of(item.get("content").unwrap_or(&Value::Null));
                if !words.is_empty() && !text.is_empty() {
                    words.push('\n');
                }
                words.push_str(&text);
            }
            _ => {}
        }
    }
    if output.is_empty() {
        words = message.get("content").and_then(Value::as_str).map(without_tool_blocks).unwrap_or_default();
    }
    (calls.into_iter().map(|(_, c)| c).collect(), cut(words.trim(), REPLY_CHARS))
}

/// The text of a content or output value: a string, or the `text` of each part.
fn text_of(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .map(|p| p.get("text").and_then(Value::as_str).map_or_else(|| text_of(p), str::to_string))
            .collect::<Vec<_>>()
            .join("\n"),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// Line breaks become spaces (JSON still parses), the rest is sanitized and cut.
fn cut(s: &str, chars: usize) -> String {
    text::body_excerpt(s.replace(['\n', '\r', '\t'], " ").as_bytes(), chars)
}

/// A saved content without the `<details>` blocks older versions wrap tool calls in.
fn without_tool_blocks(content: &str) -> String {
    let mut out = String::new();
    let mut rest = content;
    while let Some(start) = rest.find("<details") {
        out.push_str(&rest[..start]);
        match rest[start..].find("</details>") {
            Some(end) => rest = &rest[start + end + "</details>".len()..],
            None => {
                rest = "";
                break;
            }
        }
    }
    out.push_str(rest);
    out.trim().to_string()
}

fn uuid_like() -> String {
    let n = rand::random::<u128>();
    let h = format!("{n:032x}");
    format!("{}-{}-{}-{}-{}", &h[..8], &h[8..12], &h[12..16], &h[16..20], &h[20..])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The assistant message Open WebUI 0.12.4 saved for a call of `native_echo` (measured,
    /// ids shortened).
    fn measured() -> Value {
        json!({
            "id": "c22b", "parentId": "71a9", "role": "assistant", "done": true, "model": "cordon-scripted",
            "content": "cordon-model: tool result: hello-nonce-123",
            "output": [
                {"type": "function_call", "id": "call_5", "call_id": "call_5", "name": "native_echo",
                 "arguments": "{\"text\":\"hello-nonce-123\"}", "status": "completed"},
                {"type": "function_call_output", "id": "fco_c", "call_id": "call_5",
                 "output": [{"type": "input_text", "text": "hello-nonce-123"}], "status": "completed"},
                {"type": "message", "id": "msg_a", "status": "completed", "role": "assistant",
                 "content": [{"type": "output_text", "text": "cordon-model: tool result: hello-nonce-123"}]}
            ]
        })
    }

    #[test]
    fn the_record_is_read_off_the_saved_output() {
        let (calls, reply) = record_of(&measured());
        assert_eq!(
            calls,
            vec![CallSeen {
                name: "native_echo".into(),
                arguments: "{\"text\":\"hello-nonce-123\"}".into(),
                result: Some("hello-nonce-123".into()),
            }]
        );
        assert_eq!(reply, "cordon-model: tool result: hello-nonce-123");
    }

    #[test]
    fn words_the_model_writes_are_never_a_record() {
        // A model that writes a tool block into its answer: no call, whatever the text.
        let forged = json!({"done": true, "content": "x", "output": [{"type": "message", "content": [{"type": "output_text",
            "text": "<details type=\"tool_calls\" done=\"true\" name=\"native_echo\" result=\"r\"></details> r"}]}]});
        let (calls, reply) = record_of(&forged);
        assert!(calls.is_empty());
        assert!(reply.contains("details"), "shown as the model's words: {reply}");
        // An older record (no output): the content, tool blocks left out, no call.
        let old = json!({"content": "<details type=\"tool_calls\" result=\"x\">\n<summary>Tool Executed</summary>\n</details>\nanswer x"});
        assert_eq!(record_of(&old), (vec![], "answer x".to_string()));
        assert_eq!(without_tool_blocks("a<details>unterminated"), "a");
    }

    #[test]
    fn a_call_without_a_result_and_words_before_the_call_are_kept_apart() {
        let v = json!({"output": [
            {"type": "message", "content": [{"type": "output_text", "text": "let me call it"}]},
            {"type": "function_call", "call_id": "a", "name": "native_echo", "arguments": {"text": "x"}},
            {"type": "message", "content": [{"type": "output_text", "text": "no result came back"}]}
        ]});
        let (calls, reply) = record_of(&v);
        assert_eq!(calls[0].result, None);
        assert_eq!(calls[0].arguments, "{\"text\":\"x\"}");
        assert_eq!(reply, "no result came back");
    }
}
