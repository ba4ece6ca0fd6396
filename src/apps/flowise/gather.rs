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
    AccessView, ApiKeySeen, AuthorSeen, EntrySeen, FlowSeen, GuardSeen, RegistryView, RunSeen, UsedTool, VariableSeen,
};
use crate::apps::webapp::{ApiError, leaks_in};
use crate::secret::Redactor;
use crate::text;

const REPLY_CHARS: usize = 400;
const OUTPUT_CHARS: usize = 600;
pub const LOAD_METHOD: &str = "/api/v1/node-load-method/customMcpServerTool";

/// Flowise's `message` (its errors carry a stack too), or what a 200 made.
fn detail(answer: &crate::apps::webapp::Answer) -> String {
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
    // A bearer kept in a variable reaches a flow as `{{$vars.x}}` and is stored unencrypted.
    for variable in items(&session.json(Method::GET, "/api/v1/variables", None).await?) {
        let mut leaks = Vec::new();
        leaks_in(&variable, "", credentials, &mut leaks);
        view.variables.push(VariableSeen { name: s(&variable, "name"), kind: s(&variable, "type"), leaks });
    }
    Ok(view)
}

/// The JSON at `path`, or nothing when it answers 404.
async fn still(session: &Session, path: &str) -> Result<Option<Value>, ApiError> {
    let answer = session.send(Method::GET, path, None).await?;
    if answer.status == 404 {
        return Ok(None);
    }
    crate::apps::webapp::expect_json(&answer, &Method::GET, path).map(Some)
}

fn flow_seen(flow: &Value, credentials: &Redactor) -> FlowSeen {
    let mut leaks = Vec::new();
    leaks_in(flow, "", credentials, &mut leaks);
    let data: Value =
        flow.get("flowData").and_then(Value::as_str).and_then(|t| serde_json::from_str(t).ok()).unwrap_or_default();
    let mut servers = Vec::new();
    let mut actions = Vec::new();
    for (_, config) in mcp_configs(&data) {
        servers.push(s(config, "mcpServerId"));
        actions.extend(chosen_actions(config));
    }
    FlowSeen { id: s(flow, "id"), name: s(flow, "name"), kind: s(flow, "type"), servers, actions, leaks }
}

/// Every Custom MCP Server configuration in a flow, whatever the flow's shape: a
/// chatflow's `customMcpServerTool` node (its inputs), an Agentflow Tool node that selected
/// it (`selectedToolConfig`), an Agent node's `agentTools` entries — any object naming an
/// `mcpServerId` — each with the id of the node that holds it.
fn mcp_configs(flow_data: &Value) -> Vec<(String, &Value)> {
    fn walk<'a>(v: &'a Value, node: &str, out: &mut Vec<(String, &'a Value)>) {
        match v {
            Value::Object(map) => {
                if map.get("mcpServerId").and_then(Value::as_str).is_some_and(|id| !id.is_empty()) {
                    out.push((node.to_string(), v));
                }
                for child in map.values() {
                    walk(child, node, out);
                }
            }
            Value::Array(items) => items.iter().for_each(|i| walk(i, node, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    for node in flow_data.get("nodes").and_then(Value::as_array).into_iter().flatten() {
        walk(node, node.get("id").and_then(Value::as_str).unwrap_or_default(), &mut out);
    }
    out
}

fn chosen_actions(config: &Value) -> Vec<String> {
    match config.get("mcpActions") {
        Some(Value::String(t)) => serde_json::from_str(t).unwrap_or_default(),
        Some(v @ Value::Array(_)) => serde_json::from_value(v.clone()).unwrap_or_default(),
        _ => vec![],
    }
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
    let named: Vec<&Value> = entries.iter().filter(|e| s(e, "name") == ask.entry).collect();
    seen.entries = named.iter().map(|e| s(e, "id")).collect();
    seen.entry_origins = named.iter().map(|e| super::observe::origin_of(&s(e, "serverUrl")).to_string()).collect();
    seen.uses = flow_seen(flow, &Redactor::new()).servers;
    seen.flow_type = s(flow, "type");
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
            let flow_data: Value = flow
                .get("flowData")
                .and_then(Value::as_str)
                .and_then(|t| serde_json::from_str(t).ok())
                .unwrap_or_default();
            for used in used_tools(&v, &flow_data) {
                seen.used.push(UsedTool {
                    input: flat(&used.input, OUTPUT_CHARS),
                    output: flat(&used.output, OUTPUT_CHARS),
                    ..used
                });
            }
        }
    }
    Ok(seen)
}

fn as_text(x: Option<&Value>) -> String {
    match x {
        Some(Value::String(t)) => t.clone(),
        Some(other) => other.to_string(),
        None => String::new(),
    }
}

/// Flowise's own record of the tools a prediction ran, whatever the flow's shape: a
/// chatflow's `usedTools`; an Agentflow's executed nodes (`agentFlowExecutedData`): an Agent
/// node's `usedTools`, and a Tool node that ran the Custom MCP Server tool, named by the
/// one action its configuration selects.
pub fn used_tools(prediction: &Value, flow_data: &Value) -> Vec<UsedTool> {
    let recorded = |u: &Value| UsedTool {
        tool: s(u, "tool"),
        input: as_text(u.get("toolInput")),
        output: as_text(u.get("toolOutput")),
    };
    let mut out: Vec<UsedTool> =
        prediction.get("usedTools").and_then(Value::as_array).into_iter().flatten().map(recorded).collect();
    let configs = mcp_configs(flow_data);
    for step in prediction.get("agentFlowExecutedData").and_then(Value::as_array).into_iter().flatten() {
        let data = step.get("data").unwrap_or(&Value::Null);
        for u in data.pointer("/output/usedTools").and_then(Value::as_array).into_iter().flatten() {
            out.push(recorded(u));
        }
        if data.pointer("/input/selectedTool").and_then(Value::as_str) != Some("customMcpServerTool") {
            continue;
        }
        let node = s(step, "nodeId");
        let actions: Vec<String> =
            configs.iter().filter(|(n, _)| *n == node).flat_map(|(_, c)| chosen_actions(c)).collect();
        out.push(UsedTool {
            tool: match actions.as_slice() {
                [one] => one.clone(),
                _ => actions.join(","),
            },
            input: as_text(data.pointer("/input/toolInputArgs")),
            output: as_text(data.pointer("/output/content")),
        });
    }
    out
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
        crate::apps::webapp::refuse_new_work()?;
        let name = super::ephemeral::name("ssrf-probe");
        let body = json!({"name": name, "serverUrl": url, "authType": "NONE"});
        let answer = session.send(Method::POST, ENTRIES, Some(&body)).await?;
        if let Some(id) = answer.json().as_ref().and_then(|v| v.get("id")).and_then(Value::as_str) {
            eph.entry(id);
        }
        view.guard.push(GuardSeen { url: url.into(), status: answer.status, detail: detail(&answer) });
    }
    crate::apps::webapp::refuse_new_work()?;
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

#[cfg(test)]
mod tests {
    use super::*;

    /// An Agentflow (Flowise 3.1.4's shape) whose Tool node calls the entry `e1`'s `echo`,
    /// and whose Agent node may call `e2`'s tools.
    fn agentflow() -> Value {
        json!({"nodes": [
            {"id": "startAgentflow_0", "data": {"name": "startAgentflow", "inputs": {}}},
            {"id": "toolAgentflow_0", "data": {"name": "toolAgentflow", "inputs": {
                "selectedTool": "customMcpServerTool",
                "selectedToolConfig": {"mcpServerId": "e1", "mcpActions": "[\"echo\"]"},
                "toolInputArgs": [{"inputArgName": "text", "inputArgValue": "hi"}]}}},
            {"id": "agentAgentflow_0", "data": {"name": "agentAgentflow", "inputs": {"agentTools": [
                {"agentSelectedTool": "customMcpServerTool",
                 "agentSelectedToolConfig": {"mcpServerId": "e2", "mcpActions": ["status"]}}]}}}
        ]})
    }

    #[test]
    fn every_flow_shape_names_the_entries_it_uses() {
        let flow =
            json!({"id": "f", "name": "infinito:native", "type": "AGENTFLOW", "flowData": agentflow().to_string()});
        let seen = flow_seen(&flow, &Redactor::new());
        assert_eq!(seen.servers, ["e1", "e2"]);
        assert_eq!(seen.actions, ["echo", "status"]);
        let chatflow = json!({"nodes": [{"id": "c0", "data": {"name": "customMcpServerTool",
            "inputs": {"mcpServerId": "e3", "mcpActions": "[\"add\"]"}}}]});
        let flow = json!({"id": "g", "name": "x", "type": "CHATFLOW", "flowData": chatflow.to_string()});
        assert_eq!(flow_seen(&flow, &Redactor::new()).servers, ["e3"]);
    }

    #[test]
    fn an_agentflow_s_tool_node_and_agent_node_record_their_calls() {
        let prediction = json!({"text": "hi", "agentFlowExecutedData": [
            {"nodeId": "startAgentflow_0", "data": {"output": {"question": "q"}}},
            {"nodeId": "toolAgentflow_0", "data": {
                "input": {"toolInputArgs": [{"inputArgName": "text", "inputArgValue": "hi"}], "selectedTool": "customMcpServerTool"},
                "output": {"content": "hi"}}},
            {"nodeId": "agentAgentflow_0", "data": {"output": {"content": "done",
                "usedTools": [{"tool": "status", "toolInput": {}, "toolOutput": "{\"status\":\"ok\"}"}]}}}
        ]});
        let used = used_tools(&prediction, &agentflow());
        let tools: Vec<(&str, &str)> = used.iter().map(|u| (u.tool.as_str(), u.output.as_str())).collect();
        assert_eq!(tools, [("echo", "hi"), ("status", "{\"status\":\"ok\"}")]);
        // A chatflow's own record still counts.
        let chat = json!({"usedTools": [{"tool": "echo", "toolInput": {"text": "hi"}, "toolOutput": "hi"}]});
        assert_eq!(used_tools(&chat, &Value::Null)[0].tool, "echo");
    }
}
