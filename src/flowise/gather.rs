//! Gathering observations through Flowise's API: the registry and every flow (with any
//! scenario credential found in a plain field), a run of a managed chatflow through the
//! prediction API, and what the SSRF guard and a flow author's API key see. Runs in the
//! Flowise container's namespace; what it makes it records in [`super::ephemeral`].

use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};

use super::api::{Session, items, with_key};
use super::ephemeral::{ENTRIES, Ephemeral};
use super::observe::{
    AccessView, ApiKeySeen, AuthorSeen, EntrySeen, FlowSeen, GuardSeen, RegistryView, RunSeen, UsedTool,
};
use crate::secret::Redactor;
use crate::text;
use crate::webapp::{ApiError, leaks_in};

const REPLY_CHARS: usize = 400;
const OUTPUT_CHARS: usize = 600;
pub const LOAD_METHOD: &str = "/api/v1/node-load-method/customMcpServerTool";

/// Flowise's `message` (its errors carry a stack too), or what a 200 made.
fn detail(answer: &crate::webapp::Answer) -> String {
    let v = answer.json().unwrap_or_default();
    match (v.get("message").and_then(Value::as_str), v.get("id").and_then(Value::as_str)) {
        (Some(m), _) => text::sanitize(m),
        (None, Some(id)) => format!("Flowise stored it as entry {id}"),
        _ => answer.detail(),
    }
}

fn s(v: &Value, key: &str) -> String {
    v.get(key).and_then(Value::as_str).unwrap_or_default().to_string()
}

/// The registry and every flow, as the admin sees them.
pub async fn registry(session: &Session, credentials: &Redactor) -> Result<RegistryView, ApiError> {
    let mut view = RegistryView::default();
    for listed in items(&session.json(Method::GET, ENTRIES, None).await?) {
        let id = s(&listed, "id");
        // An entry may vanish between the listing and its read (another check's probe
        // entry, deleted at once): what is gone is not judged.
        let (Some(detail), Some(tools_json)) = (
            still(session, &format!("{ENTRIES}/{id}")).await?,
            still(session, &format!("{ENTRIES}/{id}/tools")).await?,
        ) else {
            continue;
        };
        let tools = crate::mcp::parse_tools(&tools_json).unwrap_or_default();
        let mut leaks = Vec::new();
        leaks_in(&listed, "", credentials, &mut leaks);
        leaks_in(&detail, "", credentials, &mut leaks);
        leaks.sort_by(|a, b| (&a.field, &a.credential).cmp(&(&b.field, &b.credential)));
        leaks.dedup();
        let header_names = detail
            .pointer("/authConfig/headers")
            .and_then(Value::as_object)
            .map(|h| h.keys().cloned().collect())
            .unwrap_or_default();
        view.entries.push(EntrySeen {
            name: s(&listed, "name"),
            shown_url: s(&listed, "serverUrl"),
            auth_type: s(&listed, "authType"),
            status: s(&listed, "status"),
            header_names,
            schema_sha256: (!tools.is_empty()).then(|| crate::mcp::schema_hash(&tools)),
            tools: tools.into_iter().map(|t| t.name).collect(),
            leaks,
            id,
        });
    }
    for flow in items(&session.json(Method::GET, "/api/v1/chatflows", None).await?) {
        view.flows.push(flow_seen(&flow, credentials));
    }
    Ok(view)
}

/// The JSON at `path`, or nothing when it answers 404.
async fn still(session: &Session, path: &str) -> Result<Option<Value>, ApiError> {
    let answer = session.send(Method::GET, path, None).await?;
    if answer.status == 404 {
        return Ok(None);
    }
    crate::openwebui::api::expect_json(&answer, &Method::GET, path).map(Some)
}

fn flow_seen(flow: &Value, credentials: &Redactor) -> FlowSeen {
    let mut leaks = Vec::new();
    leaks_in(flow, "", credentials, &mut leaks);
    let data: Value =
        flow.get("flowData").and_then(Value::as_str).and_then(|t| serde_json::from_str(t).ok()).unwrap_or_default();
    let mut servers = Vec::new();
    let mut actions = Vec::new();
    for node in data.get("nodes").and_then(Value::as_array).into_iter().flatten() {
        if node.pointer("/data/name").and_then(Value::as_str) != Some("customMcpServerTool") {
            continue;
        }
        if let Some(id) = node.pointer("/data/inputs/mcpServerId").and_then(Value::as_str) {
            servers.push(id.to_string());
        }
        let chosen = node.pointer("/data/inputs/mcpActions");
        let chosen: Vec<String> = match chosen {
            Some(Value::String(t)) => serde_json::from_str(t).unwrap_or_default(),
            Some(v @ Value::Array(_)) => serde_json::from_value(v.clone()).unwrap_or_default(),
            _ => vec![],
        };
        actions.extend(chosen);
    }
    FlowSeen { id: s(flow, "id"), name: s(flow, "name"), kind: s(flow, "type"), servers, actions, leaks }
}

/// What to run: the managed chatflow `name`, its managed entry, and the question.
pub struct RunAsk {
    pub chatflow: String,
    pub entry: String,
    pub question: String,
    pub budget: Duration,
}

/// Runs the managed chatflow through `POST /api/v1/prediction/<id>` (the public
/// prediction API; a chatflow protected by an API key is run through the admin's
/// `internal-prediction` instead), reads Flowise's record of the tools it ran, and
/// deletes the chat messages the run left.
pub async fn run(session: &Session, ask: &RunAsk, eph: &Ephemeral) -> Result<RunSeen, ApiError> {
    let mut seen = RunSeen { chatflow: ask.chatflow.clone(), ..RunSeen::default() };
    let flows = items(&session.json(Method::GET, "/api/v1/chatflows", None).await?);
    let named: Vec<&Value> = flows.iter().filter(|f| s(f, "name") == ask.chatflow).collect();
    let flow = match named.as_slice() {
        [one] => *one,
        [] => {
            seen.error = Some(format!("Flowise holds no chatflow named `{}`", ask.chatflow));
            return Ok(seen);
        }
        many => {
            seen.error = Some(format!("{} chatflows are named `{}`: exactly one is managed", many.len(), ask.chatflow));
            return Ok(seen);
        }
    };
    let entries = items(&session.json(Method::GET, ENTRIES, None).await?);
    seen.entries = entries.iter().filter(|e| s(e, "name") == ask.entry).map(|e| s(e, "id")).collect();
    seen.uses = flow_seen(flow, &Redactor::new()).servers;
    let id = s(flow, "id");
    // cordon names the chat, so it can delete what the run leaves even when Flowise
    // answers with an error.
    let chat = uuid_like();
    eph.chat(&id, &chat);
    let body = json!({"question": ask.question, "streaming": false, "chatId": chat});
    let patient = session.app.patient(ask.budget)?;
    let started = tokio::time::Instant::now();
    let mut via = format!("POST /api/v1/prediction/{id}");
    let mut answer = patient.send(Method::POST, &format!("/api/v1/prediction/{id}"), &[], Some(&body)).await;
    if matches!(&answer, Ok(a) if a.status == 401 || a.status == 403) {
        via = format!("POST /api/v1/internal-prediction/{id} (the chatflow wants an API key)");
        let patient = session.on(patient.clone());
        answer = patient.send(Method::POST, &format!("/api/v1/internal-prediction/{id}"), Some(&body)).await;
    }
    seen.via = via;
    seen.waited_ms = started.elapsed().as_millis() as u64;
    if answer.is_ok() {
        eph.answered(&chat);
    }
    match answer {
        Err(e) => seen.error = Some(e.to_string()),
        Ok(a) => {
            seen.status = Some(a.status);
            let v = a.json().unwrap_or_default();
            if let Some(theirs) = v.get("chatId").and_then(Value::as_str).filter(|c| *c != chat) {
                eph.chat(&id, theirs);
            }
            if a.status != 200 {
                seen.error = Some(format!("answered {}: {}", a.status, detail(&a)));
            }
            let flat = |t: &str, n: usize| text::body_excerpt(t.replace(['\n', '\r', '\t'], " ").as_bytes(), n);
            seen.reply = v.get("text").and_then(Value::as_str).map(|t| flat(t, REPLY_CHARS));
            for u in v.get("usedTools").and_then(Value::as_array).into_iter().flatten() {
                let as_text = |x: Option<&Value>| match x {
                    Some(Value::String(t)) => t.clone(),
                    Some(other) => other.to_string(),
                    None => String::new(),
                };
                seen.used.push(UsedTool {
                    tool: s(u, "tool"),
                    input: flat(&as_text(u.get("toolInput")), OUTPUT_CHARS),
                    output: flat(&as_text(u.get("toolOutput")), OUTPUT_CHARS),
                });
            }
        }
    }
    Ok(seen)
}

fn uuid_like() -> String {
    let h = format!("{:032x}", rand::random::<u128>());
    format!("{}-{}-4{}-8{}-{}", &h[..8], &h[8..12], &h[13..16], &h[17..20], &h[20..])
}

/// The permissions of a flow author: chatflows, nothing of tools or credentials.
pub const AUTHOR_PERMISSIONS: [&str; 4] =
    ["chatflows:view", "chatflows:create", "chatflows:update", "chatflows:delete"];

/// Addresses the SSRF guard must deny (its default list): loopback, the cloud metadata
/// address, RFC 1918. Registering an entry makes no connection.
pub const GUARDED: [&str; 3] = ["http://127.0.0.1:9/mcp", "http://169.254.169.254/mcp", "http://10.255.255.1:9/mcp"];

/// The SSRF guard's answers, what a flow author's key sees, and every API key.
pub async fn access(session: &Session, eph: &Ephemeral, managed_prefix: &str) -> Result<AccessView, ApiError> {
    let mut view = AccessView::default();
    let entries = items(&session.json(Method::GET, ENTRIES, None).await?);
    let managed: Vec<(String, String)> = entries
        .iter()
        .filter(|e| s(e, "name").starts_with(managed_prefix))
        .map(|e| (s(e, "id"), s(e, "name")))
        .collect();
    view.managed = managed.iter().map(|(_, n)| n.clone()).collect();
    let ids_named = |v: &Value| -> Vec<String> {
        items(v)
            .iter()
            .filter_map(|x| {
                let id = x.get("id").or_else(|| x.get("name")).and_then(Value::as_str)?;
                managed.iter().find(|(m, _)| m == id).map(|(_, n)| n.clone())
            })
            .collect()
    };
    for url in GUARDED {
        crate::webapp::refuse_new_work()?;
        let name = super::ephemeral::name("ssrf-probe");
        let body = json!({"name": name, "serverUrl": url, "authType": "NONE"});
        let answer = session.send(Method::POST, ENTRIES, Some(&body)).await?;
        if let Some(id) = answer.json().as_ref().and_then(|v| v.get("id")).and_then(Value::as_str) {
            eph.entry(id);
        }
        view.guard.push(GuardSeen { url: url.into(), status: answer.status, detail: detail(&answer) });
    }
    crate::webapp::refuse_new_work()?;
    let body = json!({"keyName": super::ephemeral::name("flow-author"), "permissions": AUTHOR_PERMISSIONS});
    let made = items(&session.json(Method::POST, "/api/v1/apikey", Some(&body)).await?);
    let mine = made.iter().find(|k| s(k, "keyName") == super::ephemeral::name("flow-author"));
    if let Some(k) = mine {
        eph.key(&s(k, "id"));
        let key = eph.redactor().register("flowise-author-key", s(k, "apiKey"));
        let app = &session.app;
        let list = with_key(app, &key, Method::GET, ENTRIES, None).await?;
        let load = json!({"loadMethod": "listServers"});
        let offered = with_key(app, &key, Method::POST, LOAD_METHOD, Some(&load)).await?;
        view.author = Some(AuthorSeen {
            permissions: AUTHOR_PERMISSIONS.iter().map(|p| p.to_string()).collect(),
            list_status: list.status,
            listed: list.json().map(|v| ids_named(&v)).unwrap_or_default(),
            load_method_status: offered.status,
            offered: offered
                .json()
                .map(|v| {
                    items(&v)
                        .iter()
                        .filter_map(|o| {
                            let id = o.get("name").and_then(Value::as_str)?;
                            managed.iter().find(|(m, _)| m == id).map(|(_, n)| n.clone())
                        })
                        .collect()
                })
                .unwrap_or_default(),
        });
    }
    for k in items(&session.json(Method::GET, "/api/v1/apikey", None).await?) {
        let name = s(&k, "keyName");
        // Flowise lists every key's value: mask them in anything cordon writes.
        for field in ["apiKey", "apiSecret"] {
            eph.redactor().register(&format!("flowise-api-key:{name}"), s(&k, field));
        }
        if name.starts_with(super::ephemeral::PREFIX) {
            continue;
        }
        let permissions = k
            .get("permissions")
            .and_then(Value::as_array)
            .map(|p| p.iter().filter_map(Value::as_str).map(str::to_string).collect())
            .unwrap_or_default();
        view.keys.push(ApiKeySeen { name, permissions });
    }
    Ok(view)
}
