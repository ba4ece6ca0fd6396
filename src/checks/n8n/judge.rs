//! Pure judges of the `n8n` family: observations in, findings out. No I/O; the tests feed
//! them tables of observations.

use crate::config::{Provider, ReadSpec};
use crate::model::{Finding, FindingKind};
use crate::n8n::observe::{ClientNodeSeen, ExposureSeen, RunSeen, TriggerSeen, WorkflowSeen};

fn drift(provider: &str, message: String) -> Finding {
    Finding::text(FindingKind::WorkflowDrift, message).fact("provider", provider)
}

fn normalize(url: &str) -> &str {
    url.trim_end_matches('/')
}

/// What `n8n::client::<p>` needs of the scenario, owned.
#[derive(Clone, Debug)]
pub struct WantedClient {
    pub provider: String,
    /// `<prefix><provider>`.
    pub workflow: String,
    pub prefix: String,
    pub url: String,
    pub allowlist: Vec<String>,
    pub read: Option<ReadSpec>,
}

impl WantedClient {
    pub fn of(provider: &Provider, prefix: &str) -> WantedClient {
        WantedClient {
            provider: provider.id.clone(),
            workflow: format!("{prefix}{}", provider.id),
            prefix: prefix.to_string(),
            url: provider.url.to_string(),
            allowlist: provider.tools.allowlist.clone(),
            read: provider.read.clone(),
        }
    }
}

/// The managed workflow of the provider, or the finding that there is not exactly one.
pub fn managed_workflow<'a>(workflows: &'a [WorkflowSeen], want: &WantedClient) -> Result<&'a WorkflowSeen, Finding> {
    let named: Vec<&WorkflowSeen> = workflows.iter().filter(|w| w.name == want.workflow).collect();
    match named.as_slice() {
        [one] => Ok(one),
        [] => Err(drift(
            &want.provider,
            format!("no managed workflow `{}` for provider `{}`", want.workflow, want.provider),
        )),
        many => Err(drift(
            &want.provider,
            format!("{} workflows are named `{}`: exactly one is managed", many.len(), want.workflow),
        )),
    }
}

/// The configuration half of `n8n::client::<p>`: every MCP Client Tool node of a managed
/// workflow that is the provider's (in its workflow, or pointing at its URL) points at
/// the provider, authenticates with a Bearer or Header credential, and includes an
/// explicit, non-empty list of allowed tools that holds the read tool; the workflow is
/// active; no scenario credential sits in a node's parameters.
pub fn judge_client_config(workflows: &[WorkflowSeen], want: &WantedClient) -> Vec<Finding> {
    let mut findings = Vec::new();
    let workflow = match managed_workflow(workflows, want) {
        Ok(w) => Some(w),
        Err(f) => {
            findings.push(f);
            None
        }
    };
    let managed = workflows.iter().filter(|w| w.name.starts_with(&want.prefix));
    let mut nodes: Vec<(&WorkflowSeen, &ClientNodeSeen)> = Vec::new();
    for w in managed {
        for n in &w.clients {
            let ours = Some(w.id.as_str()) == workflow.map(|x| x.id.as_str());
            if ours || normalize(&n.endpoint) == normalize(&want.url) {
                nodes.push((w, n));
            }
        }
    }
    if let Some(w) = workflow {
        if !w.clients.iter().any(|n| normalize(&n.endpoint) == normalize(&want.url)) {
            findings.push(drift(
                &want.provider,
                format!("workflow `{}` has no MCP Client Tool node for {}", w.name, want.url),
            ));
        }
        if !w.active {
            findings.push(drift(
                &want.provider,
                format!("workflow `{}` is inactive: its production webhook does not run", w.name),
            ));
        }
        for leak in &w.leaks {
            findings.push(
                Finding::text(
                    FindingKind::SecretInPlain,
                    format!(
                        "workflow `{}` holds the value of credential `{}` in {} (only n8n's credential store may hold it)",
                        w.name, leak.credential, leak.field
                    ),
                )
                .fact("credential", &leak.credential),
            );
        }
    }
    for (w, n) in nodes {
        let at = format!("`{}` in workflow `{}`", n.node, w.name);
        if normalize(&n.endpoint) != normalize(&want.url) {
            findings.push(drift(&want.provider, format!("{at} points at {}, not at {}", n.endpoint, want.url)));
        }
        match n.authentication.as_str() {
            "bearerAuth" | "headerAuth" if n.credential.is_some() => {}
            "bearerAuth" | "headerAuth" => {
                findings.push(drift(&want.provider, format!("{at} uses {} with no credential", n.authentication)))
            }
            other => findings.push(drift(
                &want.provider,
                format!("{at} authenticates with `{other}`: only Bearer or Header authentication from n8n's credential store may reach a provider"),
            )),
        }
        match n.include.as_str() {
            "selected" if n.include_tools.is_empty() => findings.push(drift(
                &want.provider,
                format!(
                    "{at} selects tools from an empty list, which n8n 1.100.1 reads as every tool the server serves"
                ),
            )),
            "selected" => {
                let outside: Vec<&String> = n.include_tools.iter().filter(|t| !want.allowlist.contains(t)).collect();
                if !outside.is_empty() {
                    findings.push(drift(
                        &want.provider,
                        format!(
                            "{at} includes tools outside the allowlist: [{}]",
                            outside.iter().map(|t| t.as_str()).collect::<Vec<_>>().join(", ")
                        ),
                    ));
                }
                if let Some(read) = &want.read
                    && !n.include_tools.contains(&read.tool)
                {
                    findings
                        .push(drift(&want.provider, format!("{at} does not include the read tool `{}`", read.tool)));
                }
            }
            other => findings.push(drift(
                &want.provider,
                format!(
                    "{at} has `include: {other}`: an explicit include list of the allowed tools is required, never all"
                ),
            )),
        }
    }
    findings
}

/// The run half of `n8n::client::<p>`: n8n's own execution record shows the MCP Client
/// Tool node ran the read tool and got a result that meets the read's expectation, and
/// the agent got it back.
pub fn judge_client_run(want: &WantedClient, read: &ReadSpec, seen: &RunSeen, nonce: Option<&str>) -> Vec<Finding> {
    let fail = |m: String| vec![Finding::text(FindingKind::ToolCallFailed, m).fact("provider", &want.provider)];
    let tool = &read.tool;
    if seen.status.is_none() && seen.calls.is_empty() {
        let why = seen.error.clone().unwrap_or_else(|| "no answer".into());
        return fail(format!("running workflow `{}` got no answer after {} ms: {why}", seen.workflow, seen.waited_ms));
    }
    if let Some(failed) = seen.calls.iter().find(|c| c.status == "error" || c.error.is_some()) {
        return fail(format!(
            "n8n's MCP Client Tool `{}` failed in the run: {}",
            failed.node,
            failed.error.clone().unwrap_or_else(|| "error".into())
        ));
    }
    let Some(call) = seen.calls.iter().find(|c| &c.tool == tool) else {
        let ran: Vec<&str> = seen.calls.iter().map(|c| c.tool.as_str()).collect();
        let why = seen.error.clone().map(|e| format!(" ({e})")).unwrap_or_default();
        return fail(format!(
            "n8n's record of the run{} shows no call of `{tool}` (tools run: [{}]){why}; the agent answered {:?}",
            seen.execution.as_ref().map(|e| format!(" (execution {e})")).unwrap_or_default(),
            ran.join(", "),
            seen.reply.clone().unwrap_or_default()
        ));
    };
    if !crate::checks::clientapp::recorded_result_holds(&call.output, read, nonce) {
        return fail(format!(
            "the call of `{tool}` returned {:?}, which does not meet the read's expectation {}{}",
            call.output,
            crate::checks::flowise::describe(&read.expect),
            nonce.map(|n| format!(" with this call's nonce {n}")).unwrap_or_default()
        ));
    }
    let reply = seen.reply.clone().unwrap_or_default();
    if crate::checks::clientapp::reply_carries_result(&reply, read, nonce) {
        vec![]
    } else {
        fail(format!("the agent never got the result of `{tool}` back: it answered {reply:?}"))
    }
}

/// `n8n::server`: exactly one MCP Server Trigger serves the provider's path; it is
/// typeVersion 2 or later, requires Bearer or Header authentication from a credential,
/// is active exactly when the provider is enabled, and its endpoint serves exactly the
/// allowlist to the provider's own bearer.
pub fn judge_server(
    provider: &Provider,
    path: &str,
    triggers: &[(&WorkflowSeen, &TriggerSeen)],
    exposure: Option<&ExposureSeen>,
) -> Vec<Finding> {
    let p = provider.id.as_str();
    let ours: Vec<&(&WorkflowSeen, &TriggerSeen)> = triggers.iter().filter(|(_, t)| t.path == path).collect();
    let (w, t) = match ours.as_slice() {
        [one] => **one,
        [] => {
            return vec![drift(
                p,
                format!("no MCP Server Trigger serves path `{path}` (the provider's URL {})", provider.url),
            )];
        }
        many => {
            let names: Vec<&str> = many.iter().map(|(w, _)| w.name.as_str()).collect();
            return vec![drift(
                p,
                format!("{} MCP Server Triggers serve path `{path}` (workflows {})", many.len(), names.join(", ")),
            )];
        }
    };
    let mut findings = Vec::new();
    let at = format!("the MCP Server Trigger `{}` of workflow `{}`", t.node, w.name);
    if t.type_version < 2.0 {
        findings.push(drift(
            p,
            format!(
                "{at} is typeVersion {}: version 2 or later is required (Streamable HTTP at the path itself)",
                t.type_version
            ),
        ));
    }
    match t.authentication.as_str() {
        "bearerAuth" | "headerAuth" if t.credential.is_some() => {}
        "bearerAuth" | "headerAuth" => findings.push(drift(p, format!("{at} uses {} with no credential", t.authentication))),
        other => findings.push(drift(
            p,
            format!("{at} has authentication `{other}`: Bearer authentication is required, anyone on its networks may call its tools"),
        )),
    }
    if w.active == provider.disabled {
        let state = if w.active {
            "active although the provider is disabled"
        } else {
            "inactive although the provider is enabled"
        };
        findings.push(drift(p, format!("workflow `{}` is {state}", w.name)));
    }
    if !provider.disabled {
        match exposure {
            Some(ExposureSeen { tools: Some(tools), .. }) => {
                let mut served = tools.clone();
                served.sort();
                let mut allowed = provider.tools.allowlist.clone();
                allowed.sort();
                if served != allowed {
                    findings.push(
                        Finding::text(
                            FindingKind::ToolsMismatch,
                            format!(
                                "{at} exposes [{}] (tool nodes [{}]), the allowlist is [{}]",
                                served.join(", "),
                                t.tools.join(", "),
                                allowed.join(", ")
                            ),
                        )
                        .fact("provider", p),
                    );
                }
            }
            Some(ExposureSeen { error: Some(e), url, .. }) => findings.push(
                Finding::text(
                    FindingKind::SessionFailed,
                    format!("{url} did not list its tools to the provider's bearer: {e}"),
                )
                .fact("provider", p),
            ),
            _ => {}
        }
    }
    findings
}
