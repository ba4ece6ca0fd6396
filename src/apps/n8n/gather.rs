//! Gathering observations through n8n's API: every workflow with its MCP Client Tool and
//! MCP Server Trigger nodes (and any scenario credential found anywhere in it),
//! a run of a managed workflow through its production webhook read back from n8n's own
//! execution record, and what the MCP Server Trigger's endpoint serves. Runs in the n8n
//! container's namespace; the executions a run leaves are recorded in
//! [`super::ephemeral`] and deleted.

use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};

use super::api::N8nApi;
use super::ephemeral::Ephemeral;
use super::observe::{ClientNodeSeen, ExposureSeen, RunSeen, ToolRunSeen, TriggerSeen, WorkflowSeen};
use crate::apps::webapp::{ApiError, leaks_in};
use crate::mcp::{Endpoint, Limits, McpClient};
use crate::secret::{Redactor, Secret};
use crate::text;

pub const MCP_CLIENT: &str = "@n8n/n8n-nodes-langchain.mcpClientTool";
pub const MCP_TRIGGER: &str = "@n8n/n8n-nodes-langchain.mcpTrigger";
pub const WEBHOOK: &str = "n8n-nodes-base.webhook";
const REPLY_CHARS: usize = 400;
const OUTPUT_CHARS: usize = 600;

fn s(v: &Value, pointer: &str) -> String {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or_default().to_string()
}

fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect())
        .unwrap_or_default()
}

/// The name of the credential a node uses for `kind`, if any.
fn credential(node: &Value, kind: &str) -> Option<String> {
    node.pointer(&format!("/credentials/{kind}/name")).and_then(Value::as_str).map(str::to_string)
}

/// One workflow as the public API lists it (nodes and connections included).
pub fn workflow_seen(w: &Value, credentials: &Redactor) -> WorkflowSeen {
    let mut seen = WorkflowSeen {
        id: s(w, "/id"),
        name: s(w, "/name"),
        active: w.get("active").and_then(Value::as_bool).unwrap_or(false),
        ..WorkflowSeen::default()
    };
    // Every field of the workflow as the API returns it (staticData, pinData, settings,
    // meta, ...) and of each node (parameters, notes, a Sticky Note's content): a bearer
    // belongs in none of them. A node's `credentials` are references (id and name) to
    // n8n's own store, the one place it may sit.
    for (key, value) in w.as_object().into_iter().flatten().filter(|(k, _)| k.as_str() != "nodes") {
        leaks_in(value, key, credentials, &mut seen.leaks);
    }
    let nodes = w.get("nodes").and_then(Value::as_array).cloned().unwrap_or_default();
    for (i, node) in nodes.iter().enumerate() {
        for (key, value) in node.as_object().into_iter().flatten().filter(|(k, _)| k.as_str() != "credentials") {
            leaks_in(value, &format!("nodes[{i}] `{}`.{key}", s(node, "/name")), credentials, &mut seen.leaks);
        }
        let p = |key: &str| node.pointer(&format!("/parameters/{key}"));
        let text = |key: &str, default: &str| p(key).and_then(Value::as_str).unwrap_or(default).to_string();
        match node.get("type").and_then(Value::as_str) {
            Some(MCP_CLIENT) => {
                let authentication = text("authentication", "none");
                seen.clients.push(ClientNodeSeen {
                    node: s(node, "/name"),
                    endpoint: text("sseEndpoint", ""),
                    credential: match authentication.as_str() {
                        "bearerAuth" => credential(node, "httpBearerAuth"),
                        "headerAuth" => credential(node, "httpHeaderAuth"),
                        _ => None,
                    },
                    authentication,
                    include: text("include", "all"),
                    include_tools: strings(p("includeTools")),
                    exclude_tools: strings(p("excludeTools")),
                });
            }
            Some(MCP_TRIGGER) => {
                let name = s(node, "/name");
                let tools = connected_tools(w, &name);
                let authentication = text("authentication", "none");
                seen.triggers.push(TriggerSeen {
                    type_version: node.get("typeVersion").and_then(Value::as_f64).unwrap_or(1.0),
                    credential: match authentication.as_str() {
                        "bearerAuth" => credential(node, "httpBearerAuth"),
                        "headerAuth" => credential(node, "httpHeaderAuth"),
                        _ => None,
                    },
                    authentication,
                    path: text("path", ""),
                    tools,
                    node: name,
                });
            }
            Some(WEBHOOK) if seen.webhook.is_none() => seen.webhook = Some(text("path", "")),
            _ => {}
        }
    }
    seen
}

/// Names of the nodes whose `ai_tool` output goes into node `target`.
fn connected_tools(w: &Value, target: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (source, outputs) in w.get("connections").and_then(Value::as_object).into_iter().flatten() {
        let groups = outputs.get("ai_tool").and_then(Value::as_array).into_iter().flatten();
        for group in groups {
            if group.as_array().into_iter().flatten().any(|c| c.get("node").and_then(Value::as_str) == Some(target)) {
                out.push(source.clone());
            }
        }
    }
    out.sort();
    out
}

pub async fn workflows(api: &N8nApi, credentials: &Redactor) -> Result<Vec<WorkflowSeen>, ApiError> {
    Ok(api.all("/api/v1/workflows").await?.iter().map(|w| workflow_seen(w, credentials)).collect())
}

/// What to run: the workflow (its id and webhook path), the question, a nonce to find
/// n8n's record of this very run.
pub struct RunAsk {
    pub workflow: WorkflowSeen,
    pub question: String,
    pub budget: Duration,
}

/// POSTs the question to the workflow's production webhook, then reads n8n's execution
/// record of that run (found by the nonce in the body) and deletes it.
pub async fn run(api: &N8nApi, ask: &RunAsk, eph: &Ephemeral) -> Result<RunSeen, ApiError> {
    let w = &ask.workflow;
    let mut seen = RunSeen { workflow: w.name.clone(), ..RunSeen::default() };
    let Some(path) = w.webhook.clone().filter(|p| !p.is_empty()) else {
        seen.error = Some(format!("workflow `{}` has no Webhook trigger to run it through", w.name));
        return Ok(seen);
    };
    crate::apps::webapp::refuse_new_work()?;
    let nonce = super::ephemeral::name(&format!("run-{:08x}", rand::random::<u32>()));
    let body = json!({"question": ask.question, "cordon_run": nonce});
    let patient = api.app.patient(ask.budget)?;
    eph.run_started(&w.id, &nonce);
    let started = tokio::time::Instant::now();
    let answer = patient.send(Method::POST, &format!("/webhook/{path}"), &[], Some(&body)).await;
    seen.waited_ms = started.elapsed().as_millis() as u64;
    let flat = |t: &str, n: usize| text::body_excerpt(t.replace(['\n', '\r', '\t'], " ").as_bytes(), n);
    match answer {
        Err(e) => seen.error = Some(e.to_string()),
        Ok(a) => {
            seen.status = Some(a.status);
            let v = a.json().unwrap_or_default();
            seen.reply = v.get("output").and_then(Value::as_str).map(|t| flat(t, REPLY_CHARS));
            if a.status != 200 {
                seen.error = Some(format!("the webhook answered {}: {}", a.status, a.detail()));
            }
        }
    }
    // n8n answers 404 to a webhook it has not registered and records nothing.
    let expect_record = seen.status != Some(404);
    eph.run_answered(&nonce, expect_record);
    if !expect_record {
        return Ok(seen);
    }
    // n8n's API lists the record once n8n has finalized the run, which on a loaded host
    // can be seconds after the webhook answered.
    let looking = tokio::time::Instant::now();
    loop {
        let ours = super::ephemeral::records_of(api, &w.id, &nonce).await?;
        for (id, _) in &ours {
            eph.execution(&nonce, id);
        }
        if let Some((id, e)) = ours.first() {
            seen.execution = Some(id.clone());
            seen.calls = tool_runs(e, &flat);
            let running = matches!(e.get("status").and_then(Value::as_str), Some("new" | "running"));
            if !running || e.get("finished").and_then(Value::as_bool) == Some(true) || !seen.calls.is_empty() {
                break;
            }
        }
        if looking.elapsed() >= super::ephemeral::RECORD_WAIT {
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    Ok(seen)
}

/// Every MCP Client Tool node's runs in an execution record.
fn tool_runs(execution: &Value, flat: &dyn Fn(&str, usize) -> String) -> Vec<ToolRunSeen> {
    let mut out = Vec::new();
    let nodes = execution.pointer("/workflowData/nodes").and_then(Value::as_array).cloned().unwrap_or_default();
    let clients: Vec<String> = nodes
        .iter()
        .filter(|n| n.get("type").and_then(Value::as_str) == Some(MCP_CLIENT))
        .map(|n| s(n, "/name"))
        .collect();
    let run_data = execution.pointer("/data/resultData/runData").and_then(Value::as_object);
    for (node, runs) in run_data.into_iter().flatten() {
        if !clients.is_empty() && !clients.contains(node) {
            continue;
        }
        for run in runs.as_array().into_iter().flatten() {
            let is_tool = run.pointer("/data/ai_tool").is_some() || run.pointer("/inputOverride/ai_tool").is_some();
            if !is_tool && run.get("error").is_none() {
                continue;
            }
            let output = run.pointer("/data/ai_tool/0/0/json/response").map(|r| match r {
                Value::String(t) => t.clone(),
                other => other.to_string(),
            });
            out.push(ToolRunSeen {
                node: node.clone(),
                tool: s(run, "/inputOverride/ai_tool/0/0/json/tool/name"),
                status: s(run, "/executionStatus"),
                output: flat(&output.unwrap_or_default(), OUTPUT_CHARS),
                error: run.pointer("/error/message").and_then(Value::as_str).map(|m| {
                    let d = s(run, "/error/description");
                    flat(&if d.is_empty() { m.to_string() } else { format!("{m}: {d}") }, OUTPUT_CHARS)
                }),
            });
        }
    }
    out
}

/// `tools/list` of the MCP Server Trigger's endpoint with the provider's own bearer,
/// from n8n's namespace (`path` below n8n's base URL).
pub async fn exposure(
    base: &url::Url,
    path: &str,
    transport: crate::mcp::Transport,
    bearer: &Secret,
    limits: &Limits,
) -> ExposureSeen {
    let mut seen = ExposureSeen::default();
    let url = match base.join(path) {
        Ok(u) => u,
        Err(e) => {
            seen.error = Some(format!("{path} is not a path below {base}: {e}"));
            return seen;
        }
    };
    seen.url = url.to_string();
    let client = match McpClient::new(Endpoint::new(url, transport), Some(bearer.clone()), limits.clone()) {
        Ok(c) => c,
        Err(e) => {
            seen.error = Some(e.to_string());
            return seen;
        }
    };
    match client.connect().await {
        Ok(session) => {
            match client.list_tools(&session).await {
                Ok(tools) => seen.tools = Some(tools.into_iter().map(|t| t.name).collect()),
                Err(e) => seen.error = Some(format!("tools/list: {e}")),
            }
            client.close(session).await;
        }
        Err(e) => seen.error = Some(format!("connecting: {e}")),
    }
    seen
}
