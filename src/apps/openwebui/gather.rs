//! Gathering observations through Open WebUI's API: the admin view, one user's view of
//! the MCP servers, a `/specs` answer, and group membership changes (a chat with a tool
//! call is in `chat`). Runs in the Open WebUI container's namespace.

use std::collections::{BTreeMap, BTreeSet};

use reqwest::Method;
use serde_json::{Value, json};

use super::api::{Api, ApiError, Token};
use super::observe::{AdminView, ConnectionSeen, GroupSeen, SpecsSeen, UserView};
use crate::secret::Secret;

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
