//! Pure judges of the `n8n` family: observations in, findings out. No I/O; the tests feed
//! them tables of observations.

use crate::apps::n8n::observe::{ClientNodeSeen, ExposureSeen, RunSeen, TriggerSeen, WorkflowSeen};
use crate::config::{Provider, ReadSpec};
use crate::model::{Finding, FindingKind};

fn drift(provider: &str, template: &'static str) -> Finding {
    Finding::new(FindingKind::WorkflowDrift, template).fact("provider", provider)
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
    /// The scenario's id of the provider's credential.
    pub credential: String,
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
            credential: provider.credential.clone(),
        }
    }
}

fn leak_finding(w: &WorkflowSeen, leak: &crate::apps::webapp::Leak) -> Finding {
    Finding::new(
        FindingKind::SecretInPlain,
        "workflow `{workflow}` holds the value of credential `{credential}` in {field} (only n8n's credential store may hold it)",
    )
    .fact("workflow", &w.name)
    .fact("credential", &leak.credential)
    .fact("field", &leak.field)
}

/// The managed workflow of the provider, or the finding that there is not exactly one.
pub fn managed_workflow<'a>(workflows: &'a [WorkflowSeen], want: &WantedClient) -> Result<&'a WorkflowSeen, Finding> {
    let named: Vec<&WorkflowSeen> = workflows.iter().filter(|w| w.name == want.workflow).collect();
    match named.as_slice() {
        [one] => Ok(one),
        [] => Err(drift(&want.provider, "no managed workflow `{workflow}` for provider `{provider}`")
            .fact("workflow", &want.workflow)),
        many => Err(drift(&want.provider, "{count} workflows are named `{workflow}`: exactly one is managed")
            .fact("count", many.len())
            .fact("workflow", &want.workflow)),
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
            findings.push(
                drift(&want.provider, "workflow `{workflow}` has no MCP Client Tool node for {url}")
                    .fact("workflow", &w.name)
                    .fact("url", &want.url),
            );
        }
        if !w.active {
            findings.push(
                drift(&want.provider, "workflow `{workflow}` is inactive: its production webhook does not run")
                    .fact("workflow", &w.name),
            );
        }
    }
    // Its managed workflow holds no credential at all, and no other workflow (managed or
    // made by a person) holds the provider's.
    for w in workflows {
        let ours = workflow.is_some_and(|x| x.id == w.id);
        let leaks = w.leaks.iter().filter(|l| ours || l.credential == want.credential);
        findings.extend(leaks.map(|leak| leak_finding(w, leak)));
    }
    for (w, n) in nodes {
        let at =
            |template: &'static str| drift(&want.provider, template).fact("node", &n.node).fact("workflow", &w.name);
        if normalize(&n.endpoint) != normalize(&want.url) {
            findings.push(
                at("`{node}` in workflow `{workflow}` points at {endpoint}, not at {url}")
                    .fact("endpoint", &n.endpoint)
                    .fact("url", &want.url),
            );
        }
        match n.authentication.as_str() {
            "bearerAuth" | "headerAuth" if n.credential.is_some() => {}
            "bearerAuth" | "headerAuth" => findings
                .push(at("`{node}` in workflow `{workflow}` uses {auth} with no credential").fact("auth", &n.authentication)),
            other => findings.push(
                at("`{node}` in workflow `{workflow}` authenticates with `{auth}`: only Bearer or Header authentication from n8n's credential store may reach a provider")
                    .fact("auth", other),
            ),
        }
        match n.include.as_str() {
            "selected" if n.include_tools.is_empty() => findings.push(at(
                "`{node}` in workflow `{workflow}` selects tools from an empty list, which n8n 1.100.1 reads as every tool the server serves",
            )),
            "selected" => {
                let outside: Vec<&String> = n.include_tools.iter().filter(|t| !want.allowlist.contains(t)).collect();
                if !outside.is_empty() {
                    findings.push(
                        at("`{node}` in workflow `{workflow}` includes tools outside the allowlist: [{tools}]")
                            .fact("tools", outside.iter().map(|t| t.as_str()).collect::<Vec<_>>().join(", ")),
                    );
                }
                if let Some(read) = &want.read
                    && !n.include_tools.contains(&read.tool)
                {
                    findings.push(
                        at("`{node}` in workflow `{workflow}` does not include the read tool `{tool}`")
                            .fact("tool", &read.tool),
                    );
                }
            }
            "except" => findings.push(
                at("`{node}` in workflow `{workflow}` has `include: except` [{excluded}]: it offers every tool the server serves but those, so a tool the server adds is offered too; an explicit include list of the allowed tools is required")
                    .fact("excluded", n.exclude_tools.join(", ")),
            ),
            other => findings.push(
                at("`{node}` in workflow `{workflow}` has `include: {include}`: an explicit include list of the allowed tools is required, never all")
                    .fact("include", other),
            ),
        }
    }
    findings
}

/// The run half of `n8n::client::<p>`: n8n's own execution record shows the MCP Client
/// Tool node ran the read tool and got a result that meets the read's expectation, and
/// the agent got it back.
pub fn judge_client_run(want: &WantedClient, read: &ReadSpec, seen: &RunSeen, nonce: Option<&str>) -> Vec<Finding> {
    let fail =
        |template: &'static str| Finding::new(FindingKind::ToolCallFailed, template).fact("provider", &want.provider);
    let tool = &read.tool;
    if seen.status.is_none() && seen.calls.is_empty() {
        let f = match &seen.error {
            Some(error) => {
                fail("running workflow `{workflow}` got no answer after {waited_ms} ms: {error}").fact("error", error)
            }
            None => fail("running workflow `{workflow}` got no answer after {waited_ms} ms: no answer"),
        };
        return vec![f.fact("workflow", &seen.workflow).fact("waited_ms", seen.waited_ms)];
    }
    if let Some(failed) = seen.calls.iter().find(|c| c.status == "error" || c.error.is_some()) {
        let f = match &failed.error {
            Some(error) => fail("n8n's MCP Client Tool `{node}` failed in the run: {error}").fact("error", error),
            None => fail("n8n's MCP Client Tool `{node}` failed in the run: error"),
        };
        return vec![f.fact("node", &failed.node)];
    }
    let Some(call) = seen.calls.iter().find(|c| &c.tool == tool) else {
        let ran: Vec<&str> = seen.calls.iter().map(|c| c.tool.as_str()).collect();
        let mut f = fail(match (&seen.execution, &seen.error) {
            (Some(_), Some(_)) => {
                "n8n's record of the run (execution {execution}) shows no call of `{tool}` (tools run: [{tools}]) ({error}); the agent answered {reply}"
            }
            (Some(_), None) => {
                "n8n's record of the run (execution {execution}) shows no call of `{tool}` (tools run: [{tools}]); the agent answered {reply}"
            }
            (None, Some(_)) => {
                "n8n's record of the run shows no call of `{tool}` (tools run: [{tools}]) ({error}); the agent answered {reply}"
            }
            (None, None) => {
                "n8n's record of the run shows no call of `{tool}` (tools run: [{tools}]); the agent answered {reply}"
            }
        })
        .fact("tool", tool)
        .fact("tools", ran.join(", "))
        .fact("reply", format!("{:?}", seen.reply.clone().unwrap_or_default()));
        if let Some(execution) = &seen.execution {
            f = f.fact("execution", execution);
        }
        if let Some(error) = &seen.error {
            f = f.fact("error", error);
        }
        return vec![f];
    };
    if !crate::apps::clientapp::recorded_result_holds(&call.output, read, nonce) {
        let f = fail("the call of `{tool}` returned {output}, which does not meet the read's expectation ")
            .fact("tool", tool)
            .fact("output", format!("{:?}", call.output));
        return vec![crate::apps::clientapp::expecting(f, &read.expect, nonce)];
    }
    let reply = seen.reply.clone().unwrap_or_default();
    if crate::apps::clientapp::reply_carries_result(&reply, read, nonce) {
        vec![]
    } else {
        vec![
            fail("the agent never got the result of `{tool}` back: it answered {reply}")
                .fact("tool", tool)
                .fact("reply", format!("{reply:?}")),
        ]
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
            return vec![
                drift(p, "no MCP Server Trigger serves path `{path}` (the provider's URL {url})")
                    .fact("path", path)
                    .fact("url", &provider.url),
            ];
        }
        many => {
            let names: Vec<&str> = many.iter().map(|(w, _)| w.name.as_str()).collect();
            return vec![
                drift(p, "{count} MCP Server Triggers serve path `{path}` (workflows {workflows})")
                    .fact("count", many.len())
                    .fact("path", path)
                    .fact("workflows", names.join(", ")),
            ];
        }
    };
    let mut findings: Vec<Finding> = w.leaks.iter().map(|leak| leak_finding(w, leak)).collect();
    let at = |f: Finding| f.fact("node", &t.node).fact("workflow", &w.name);
    if t.type_version < 2.0 {
        findings.push(at(drift(
            p,
            "the MCP Server Trigger `{node}` of workflow `{workflow}` is typeVersion {version}: version 2 or later is required (Streamable HTTP at the path itself)",
        )
        .fact("version", t.type_version)));
    }
    match t.authentication.as_str() {
        "bearerAuth" | "headerAuth" if t.credential.is_some() => {}
        "bearerAuth" | "headerAuth" => findings.push(at(drift(
            p,
            "the MCP Server Trigger `{node}` of workflow `{workflow}` uses {auth} with no credential",
        )
        .fact("auth", &t.authentication))),
        other => findings.push(at(drift(
            p,
            "the MCP Server Trigger `{node}` of workflow `{workflow}` has authentication `{auth}`: Bearer authentication is required, anyone on its networks may call its tools",
        )
        .fact("auth", other))),
    }
    if w.active == provider.disabled {
        let f = if w.active {
            drift(p, "workflow `{workflow}` is active although the provider is disabled")
        } else {
            drift(p, "workflow `{workflow}` is inactive although the provider is enabled")
        };
        findings.push(f.fact("workflow", &w.name));
    }
    if !provider.disabled {
        match exposure {
            Some(ExposureSeen { tools: Some(tools), .. }) => {
                let mut served = tools.clone();
                served.sort();
                let mut allowed = provider.tools.allowlist.clone();
                allowed.sort();
                if served != allowed {
                    findings.push(at(Finding::new(
                        FindingKind::ToolsMismatch,
                        "the MCP Server Trigger `{node}` of workflow `{workflow}` exposes [{tools}] (tool nodes [{tool_nodes}]), the allowlist is [{allowlist}]",
                    )
                    .fact("tools", served.join(", "))
                    .fact("tool_nodes", t.tools.join(", "))
                    .fact("allowlist", allowed.join(", "))
                    .fact("provider", p)));
                }
            }
            Some(ExposureSeen { error: Some(e), url, .. }) => findings.push(
                Finding::new(
                    FindingKind::SessionFailed,
                    "{url} did not list its tools to the provider's bearer: {error}",
                )
                .fact("url", url)
                .fact("error", e)
                .fact("provider", p),
            ),
            _ => {}
        }
    }
    findings
}

/// Why n8n may hold no managed workflow for a provider of the scenario.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Unwanted {
    /// The provider is disabled: its credential must be revoked, not its workflow kept.
    Disabled,
    /// The provider does not admit this client (`consumer_not_allowed`).
    NotAdmitted,
}

/// What `n8n::workflows` needs of the scenario: which providers this n8n may hold a
/// managed workflow for, and which it may not, with their URLs.
#[derive(Clone, Debug, Default)]
pub struct ManagedSet {
    pub client: String,
    pub prefix: String,
    /// The provider n8n itself serves: its workflow is the MCP Server Trigger's.
    pub server: Option<String>,
    /// Providers it is admitted to: (id, URL).
    pub admitted: Vec<(String, String)>,
    /// Providers it may hold nothing for: id → (why, URL).
    pub unwanted: std::collections::BTreeMap<String, (Unwanted, String)>,
}

impl ManagedSet {
    pub fn of(scenario: &crate::config::Scenario, client: &str, prefix: &str, server: Option<&str>) -> ManagedSet {
        let mut set = ManagedSet {
            client: client.to_string(),
            prefix: prefix.to_string(),
            server: server.map(str::to_string),
            ..ManagedSet::default()
        };
        // n8n's own provider too: its workflow is the trigger's (judged by `n8n::server`),
        // but a client node that calls it is a consumer like any other.
        for p in &scenario.providers {
            let url = p.url.to_string();
            if p.disabled {
                set.unwanted.insert(p.id.clone(), (Unwanted::Disabled, url));
            } else if p.allowed_consumers.iter().any(|c| c == client) {
                set.admitted.push((p.id.clone(), url));
            } else {
                set.unwanted.insert(p.id.clone(), (Unwanted::NotAdmitted, url));
            }
        }
        set
    }

    /// The unwanted provider a node's endpoint reaches: its URL, or its origin when no
    /// admitted provider shares that origin.
    fn unwanted_at(&self, endpoint: &str) -> Option<(&str, &Unwanted)> {
        let origin = |u: &str| url::Url::parse(u).ok().map(|u| u.origin().ascii_serialization());
        let exact = self.unwanted.iter().find(|(_, (_, url))| normalize(url) == normalize(endpoint));
        let shared = |o: &Option<String>| self.admitted.iter().any(|(_, url)| &origin(url) == o);
        let by_origin = || {
            let o = origin(endpoint);
            (o.is_some() && !shared(&o)).then(|| self.unwanted.iter().find(|(_, (_, url))| origin(url) == o)).flatten()
        };
        exact.or_else(by_origin).map(|(id, (why, _))| (id.as_str(), why))
    }
}

/// How a workflow stands, for a finding: active or not, and the credentials its MCP
/// Client Tool nodes use.
fn standing(w: &WorkflowSeen) -> String {
    let credentials: Vec<String> =
        w.clients.iter().filter_map(|n| n.credential.as_ref()).map(|c| format!("`{c}`")).collect();
    let state = if w.active { "active" } else { "inactive" };
    if credentials.is_empty() {
        state.to_string()
    } else {
        format!("{state}, its MCP Client Tool nodes use credential {}", credentials.join(", "))
    }
}

fn unwanted_sentence(why: &Unwanted, template_disabled: &'static str, template_not_admitted: &'static str) -> Finding {
    match why {
        Unwanted::Disabled => Finding::new(FindingKind::WorkflowDrift, template_disabled),
        Unwanted::NotAdmitted => Finding::new(FindingKind::WorkflowDrift, template_not_admitted),
    }
}

/// `n8n::workflows`: every workflow n8n holds under the managed prefix is one the
/// scenario allows: none for a disabled provider (disabling a surface revokes the
/// credential, it does not keep the workflow), none for a provider that does not admit
/// this client, none under the prefix for no provider of the scenario; and no MCP Client
/// Tool node of a managed workflow reaches a disabled or non-admitting provider.
/// Workflows without the prefix are a person's and are left alone here (the client
/// checks still read them for a provider's bearer).
pub fn judge_workflows(workflows: &[WorkflowSeen], set: &ManagedSet) -> Vec<Finding> {
    let mut findings = Vec::new();
    for w in workflows.iter().filter(|w| w.name.starts_with(&set.prefix)) {
        let provider = &w.name[set.prefix.len()..];
        // n8n's own MCP Server Trigger workflow, whatever its name: `n8n::server` judges it.
        let serves = !w.triggers.is_empty() && w.clients.is_empty();
        if set.server.as_deref() == Some(provider) || serves {
            continue;
        }
        let named_for_unwanted = set.unwanted.get(provider);
        if let Some((why, _)) = named_for_unwanted {
            findings.push(
                unwanted_sentence(
                    why,
                    "workflow `{workflow}` is kept for provider `{provider}`, which is disabled: none may be, its credential must be revoked ({standing})",
                    "workflow `{workflow}` is kept for provider `{provider}`, which does not admit `{client}` (consumer_not_allowed): none may be ({standing})",
                )
                .fact("workflow", &w.name)
                .fact("provider", provider)
                .fact("client", &set.client)
                .fact("standing", standing(w)),
            );
        } else if !set.admitted.iter().any(|(id, _)| id == provider) {
            findings.push(
                Finding::new(
                    FindingKind::WorkflowDrift,
                    "workflow `{workflow}` carries the managed prefix `{prefix}` but names no provider of the scenario ({standing})",
                )
                .fact("workflow", &w.name)
                .fact("prefix", &set.prefix)
                .fact("standing", standing(w)),
            );
        }
        for n in &w.clients {
            let Some((target, why)) = set.unwanted_at(&n.endpoint) else { continue };
            if named_for_unwanted.is_some() && target == provider {
                continue;
            }
            findings.push(
                unwanted_sentence(
                    why,
                    "`{node}` in workflow `{workflow}` points at {endpoint}, provider `{provider}`, which is disabled: no managed workflow may reach it",
                    "`{node}` in workflow `{workflow}` points at {endpoint}, provider `{provider}`, which does not admit `{client}` (consumer_not_allowed)",
                )
                .fact("node", &n.node)
                .fact("workflow", &w.name)
                .fact("endpoint", &n.endpoint)
                .fact("provider", target)
                .fact("client", &set.client),
            );
        }
    }
    findings
}
