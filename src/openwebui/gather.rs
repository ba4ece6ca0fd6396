//! Gathering observations through Open WebUI's API: the admin view, one user's view of
//! the MCP servers, a `/specs` answer, a chat in which Open WebUI runs a tool call, and
//! group membership changes. Runs in the Open WebUI container's namespace.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};

use super::api::{Api, ApiError, Token};
use super::observe::{AdminView, ChatSeen, ConnectionSeen, GroupSeen, SpecsSeen, UserView};
use crate::secret::Secret;
use crate::text;

const REPLY_CHARS: usize = 400;

pub async fn admin_view(
    api: &Api,
    admin: &Token,
    credentials: &BTreeMap<String, Secret>,
) -> Result<AdminView, ApiError> {
    let servers = api.json(Method::GET, "/api/v1/configs/tool_servers", admin, None).await?;
    let connections = servers
        .get("TOOL_SERVER_CONNECTIONS")
        .and_then(Value::as_array)
        .map(|list| list.iter().map(|c| ConnectionSeen::from_json(c, credentials)).collect())
        .unwrap_or_default();
    Ok(AdminView { connections, groups: groups(api, admin).await?, destinations: BTreeMap::new() })
}

pub async fn groups(api: &Api, admin: &Token) -> Result<Vec<GroupSeen>, ApiError> {
    let groups = api.json(Method::GET, "/api/v1/groups/", admin, None).await?;
    Ok(groups
        .as_array()
        .into_iter()
        .flatten()
        .map(|g| GroupSeen {
            id: g.get("id").and_then(Value::as_str).unwrap_or_default().to_string(),
            name: g.get("name").and_then(Value::as_str).unwrap_or_default().to_string(),
        })
        .collect())
}

/// The ids of the groups named `name` (names are not unique in Open WebUI).
pub fn group_ids(groups: &[GroupSeen], name: &str) -> Vec<String> {
    groups.iter().filter(|g| g.name == name).map(|g| g.id.clone()).collect()
}

pub async fn specs(api: &Api, token: &Token, id: &str) -> Result<SpecsSeen, ApiError> {
    let path = format!("/api/v1/tools/id/server:mcp:{id}/specs");
    let answer = api.send(Method::GET, &path, Some(token), None).await?;
    let tools = (answer.status == 200).then(|| {
        answer
            .json()
            .and_then(|v| v.get("specs").and_then(Value::as_array).cloned())
            .unwrap_or_default()
            .iter()
            .filter_map(|s| s.get("name").and_then(Value::as_str).map(str::to_string))
            .collect()
    });
    Ok(SpecsSeen { status: answer.status, tools, detail: answer.detail() })
}

/// What `user` sees: the `server:mcp:*` entries of `/api/v1/tools/`, and `/specs` of every
/// id in `ids` (and of every listed one).
pub async fn user_view(api: &Api, token: &Token, user: &str, ids: &BTreeSet<String>) -> Result<UserView, ApiError> {
    let tools = api.json(Method::GET, "/api/v1/tools/", token, None).await?;
    let listed: BTreeSet<String> = tools
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t.get("id").and_then(Value::as_str))
        .filter_map(|id| id.strip_prefix("server:mcp:"))
        .map(str::to_string)
        .collect();
    let mut specs_of = BTreeMap::new();
    for id in ids.iter().chain(listed.iter()) {
        if !specs_of.contains_key(id) {
            specs_of.insert(id.clone(), specs(api, token, id).await?.status);
        }
    }
    Ok(UserView { user: user.to_string(), listed, specs: specs_of })
}

pub async fn add_member(api: &Api, admin: &Token, group: &str, user: &str) -> Result<(), ApiError> {
    let body = json!({"user_ids": [user]});
    api.json(Method::POST, &format!("/api/v1/groups/id/{group}/users/add"), admin, Some(&body)).await.map(drop)
}

pub async fn remove_member(api: &Api, admin: &Token, group: &str, user: &str) -> Result<(), ApiError> {
    let body = json!({"user_ids": [user]});
    api.json(Method::POST, &format!("/api/v1/groups/id/{group}/users/remove"), admin, Some(&body)).await.map(drop)
}

pub async fn delete_user(api: &Api, admin: &Token, id: &str) -> Result<(), ApiError> {
    api.json(Method::DELETE, &format!("/api/v1/users/{id}"), admin, None).await.map(drop)
}

/// The id of the user with this email, if any (admin view).
pub async fn user_id_by_email(api: &Api, admin: &Token, email: &str) -> Result<Option<String>, ApiError> {
    let all = api.json(Method::GET, "/api/v1/users/all", admin, None).await?;
    Ok(all
        .get("users")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .find(|u| u.get("email").and_then(Value::as_str) == Some(email))
        .and_then(|u| u.get("id").and_then(Value::as_str))
        .map(str::to_string))
}

/// What to ask for in [`chat_tool_call`].
pub struct ToolCallAsk {
    /// Who asks, for evidence.
    pub user: String,
    pub model: String,
    /// The connection id (`server:mcp:<server>`).
    pub server: String,
    /// The function as the model sees it.
    pub tool: String,
    pub arguments: Value,
}

/// Asks the model, in a saved chat, to call `tool` (named as Open WebUI names it for the
/// model, `<server id>_<tool>`) and reads the assistant's reply once Open WebUI marks it
/// done: Open WebUI runs the call through its MCP client and sends the result back to
/// the model, whose reply echoes it. The chat is deleted afterwards.
pub async fn chat_tool_call(api: &Api, token: &Token, ask: &ToolCallAsk, budget: Duration) -> ChatSeen {
    let ToolCallAsk { user, model, server, tool, arguments } = ask;
    let started = tokio::time::Instant::now();
    let mut seen = ChatSeen {
        user: user.to_string(),
        tool: tool.to_string(),
        reply: None,
        done: false,
        waited_ms: 0,
        error: None,
    };
    let prompt = format!("cordon-call {tool} {arguments}");
    let chat = json!({"chat": {"title": "cordon tool call", "models": [model], "messages": [], "history": {"messages": {}, "currentId": null}}});
    let chat_id = match api.json(Method::POST, "/api/v1/chats/new", token, Some(&chat)).await {
        Ok(v) => v.get("id").and_then(Value::as_str).unwrap_or_default().to_string(),
        Err(e) => {
            seen.error = Some(format!("creating the chat: {e}"));
            return seen;
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
                    let message = v.pointer(&format!("/chat/history/messages/{assistant_id}")).cloned();
                    if let Some(m) = message {
                        let content = m.get("content").and_then(Value::as_str).unwrap_or_default();
                        let error = m.pointer("/error/content").and_then(Value::as_str);
                        seen.done = m.get("done").and_then(Value::as_bool).unwrap_or(false);
                        if let Some(e) = error {
                            seen.error = Some(format!("Open WebUI saved an error: {}", text::sanitize(e)));
                        }
                        if seen.done || error.is_some() {
                            // Line breaks become spaces (JSON still parses), the rest is sanitized.
                            let flat = reply_text(content).replace(['\n', '\r', '\t'], " ");
                            seen.reply = Some(text::body_excerpt(flat.as_bytes(), REPLY_CHARS));
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
    seen
}

/// The model's own words in a saved reply: Open WebUI wraps tool calls in `<details>`
/// blocks (which hold the tool's output too); only what the model said counts.
fn reply_text(content: &str) -> String {
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
    use super::reply_text;

    #[test]
    fn the_reply_leaves_tool_blocks_out() {
        let saved = "<details type=\"tool_calls\" result=\"x\">\n<summary>Tool Executed</summary>\n</details>\ncordon-model: tool result: x";
        assert_eq!(reply_text(saved), "cordon-model: tool result: x");
        assert_eq!(reply_text("plain"), "plain");
        assert_eq!(reply_text("a<details>unterminated"), "a");
    }
}
