//! `session::<client>-><provider>`: from the client's namespace, at the address the
//! client's libc would use and at every other replica it shares a network with, with
//! the credential that client holds: the handshake succeeds, the tools list is read and
//! the deterministic read answers as contracted.

use std::net::IpAddr;
use std::sync::Arc;

use futures_util::future::{BoxFuture, join_all};
use serde::{Deserialize, Serialize};

use super::contract::judge_read;
use super::name::{self, NameSeen};
use super::{client_target, pinned, replicas_from};
use crate::config::{Family, ReadSpec, Scenario};
use crate::mcp::{Endpoint, Era, EraChoice, Hop, Limits, McpClient, McpError, Tool, ToolResult};
use crate::model::{Attempt, CheckName, Finding, FindingKind};
use crate::runner::{Check, Probe, RunContext, named};
use crate::secret::Secret;

pub fn plan(scenario: &Scenario) -> Vec<Arc<dyn Check>> {
    let mut checks: Vec<Arc<dyn Check>> = Vec::new();
    for provider in scenario.providers.iter().filter(|p| !p.disabled) {
        for client in &provider.allowed_consumers {
            checks.push(named(
                CheckName::pair(Family::Session, client, "->", &provider.id),
                SessionCheck { client: client.clone(), provider: provider.id.clone() },
            ));
        }
    }
    checks
}

/// An error as observed: its text, and whether it is the "not ready yet" kind.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ErrorSeen {
    pub text: String,
    pub not_ready: bool,
}

impl From<&McpError> for ErrorSeen {
    fn from(e: &McpError) -> Self {
        ErrorSeen { text: e.to_string(), not_ready: e.is_not_ready() }
    }
}

/// One session at one replica: how far it got and what it saw.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SessionRun {
    pub replica: String,
    pub era: Option<Era>,
    pub hops: Vec<Hop>,
    pub failed: Option<(String, ErrorSeen)>,
    pub tools: Option<Vec<Tool>>,
    pub read: Option<ToolResult>,
}

impl SessionRun {
    pub fn evidence(&self) -> Vec<String> {
        let era = match &self.era {
            Some(Era::Stateless2026) => "Stateless2026 (revision 2026-07-28, no session)".to_string(),
            Some(Era::Stateful { protocol_version }) => format!("Stateful ({protocol_version})"),
            Some(Era::LegacySse) => "LegacySse (HTTP+SSE)".to_string(),
            None => "none (no session)".to_string(),
        };
        let mut out = vec![format!("{}: era: {era}", self.replica)];
        out.extend(self.hops.iter().map(|h| format!("{}: {h}", self.replica)));
        if let Some(tools) = &self.tools {
            let names = tools.iter().map(|t| t.name.as_str());
            out.push(format!("{}: tools/list [{}]", self.replica, crate::text::name_list(names, 40)));
        }
        if let Some((step, e)) = &self.failed {
            out.push(format!("{}: {step} failed: {}", self.replica, e.text));
        }
        out
    }
}

/// What to do in one session.
#[derive(Clone)]
pub struct SessionPlan {
    pub replica: String,
    pub endpoint: Endpoint,
    pub secret: Secret,
    pub limits: Limits,
    pub era: EraChoice,
    pub list: bool,
    pub read: Option<ReadSpec>,
}

/// Opens a session, lists tools and/or calls the read tool, and closes it. Runs in the
/// namespace of the position.
pub async fn run_session(plan: SessionPlan) -> SessionRun {
    let mut run =
        SessionRun { replica: plan.replica.clone(), era: None, hops: vec![], failed: None, tools: None, read: None };
    let client = match McpClient::new(plan.endpoint, Some(plan.secret), plan.limits) {
        Ok(c) => c,
        Err(e) => {
            run.failed = Some(("building the HTTP client".into(), (&e).into()));
            return run;
        }
    };
    let session = match client.connect_era(plan.era).await {
        Ok(s) => s,
        Err(e) => {
            run.hops = client.hops();
            run.failed = Some(("the handshake".into(), (&e).into()));
            return run;
        }
    };
    run.era = Some(session.era.clone());
    if plan.list {
        match client.list_tools(&session).await {
            Ok(tools) => run.tools = Some(tools),
            Err(e) => run.failed = Some(("tools/list".into(), (&e).into())),
        }
    }
    if let (Some(read), None) = (&plan.read, &run.failed) {
        match client.call_tool(&session, &read.tool, read.arguments.clone()).await {
            Ok(result) => run.read = Some(result),
            Err(e) => run.failed = Some((format!("tools/call {}", read.tool), (&e).into())),
        }
    }
    client.close(session).await;
    run.hops = client.hops();
    run
}

/// Pure: a session that failed is not ready (retried) or a failure naming the replica;
/// a read that came back is judged against its expectation.
pub fn judge_runs(runs: &[SessionRun], read: Option<&ReadSpec>, mut evidence: Vec<String>) -> Attempt {
    let mut findings = Vec::new();
    let mut not_ready = Vec::new();
    for run in runs {
        evidence.extend(run.evidence());
        if let Some((step, e)) = &run.failed {
            let text = format!("{}: {step} failed: {}", run.replica, e.text);
            if e.not_ready {
                not_ready.push(text);
            } else {
                let kind =
                    if step.starts_with("tools/call") { FindingKind::ReadFailed } else { FindingKind::SessionFailed };
                findings.push(Finding::new(kind, text).fact("replica", &run.replica));
            }
            continue;
        }
        if let (Some(read), Some(result)) = (read, &run.read) {
            if let Attempt::Fail { findings: f, evidence: e } = judge_read(&read.tool, &read.expect, result, vec![]) {
                evidence.extend(e.into_iter().map(|l| format!("{}: {l}", run.replica)));
                findings.extend(f.into_iter().map(|mut f| {
                    f.message = format!("{}: {}", run.replica, f.message);
                    f.fact("replica", &run.replica)
                }));
            }
        }
    }
    if !findings.is_empty() {
        Attempt::failed(findings, evidence)
    } else if !not_ready.is_empty() {
        Attempt::not_ready(not_ready.join("; "), evidence)
    } else {
        Attempt::Pass { evidence }
    }
}

struct SessionCheck {
    client: String,
    provider: String,
}

/// What the client saw: the name, and a session at each address it would use.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SessionObservation {
    pub name: NameSeen,
    pub runs: Vec<SessionRun>,
}

impl Probe for SessionCheck {
    fn run<'a>(&'a self, ctx: &'a RunContext) -> BoxFuture<'a, Attempt> {
        Box::pin(async move {
            let (deployment, provider) = ctx.deployment(&self.provider);
            let client = ctx.scenario.clients.iter().find(|c| c.id == self.client).expect("validated consumer");
            let Some(credential) = client.credentials.get(&provider.id) else {
                return Attempt::failed(
                    vec![Finding::new(
                        FindingKind::SessionFailed,
                        format!(
                            "client `{}` is admitted to `{}` but the scenario gives it no credential for it (clients.{}.credentials.{})",
                            client.id, provider.id, client.id, provider.id
                        ),
                    )],
                    vec![],
                );
            };
            let topology = deployment.topology();
            let target = match client_target(&topology, &ctx.scenario, &client.id) {
                Ok(t) => t,
                Err(attempt) => return attempt,
            };
            let replicas: Vec<(IpAddr, String)> =
                replicas_from(&topology, &provider.service, &target).into_iter().map(|r| (r.addr, r.label())).collect();
            let secret = ctx.scenario.secret(credential).clone();
            let limits = ctx.suite.limits.clone();
            let read = provider.read.clone();
            let host = provider.url.host_str().unwrap_or_default().to_string();
            let p = provider.clone();
            let observed = deployment
                .run_in(&target, &format!("client {}", client.id), move |view| async move {
                    let name = name::observe(&view, &host).await?;
                    // The address the client's libc gives first, then every replica. The
                    // credential never goes to an address that is not a replica: a name
                    // that leads elsewhere fails on the name alone.
                    let mut addrs: Vec<(IpAddr, String)> = Vec::new();
                    if let Some(first) = name.answer.first()
                        && let Some((_, label)) = replicas.iter().find(|(a, _)| *a == first)
                    {
                        addrs.push((first, format!("{label}, the client's first answer")));
                    }
                    for (a, l) in &replicas {
                        if !addrs.iter().any(|(x, _)| x == a) {
                            addrs.push((*a, l.clone()));
                        }
                    }
                    let plans = addrs.into_iter().map(|(addr, replica)| SessionPlan {
                        replica,
                        endpoint: pinned(&p, addr),
                        secret: secret.clone(),
                        limits: limits.clone(),
                        era: EraChoice::Auto,
                        list: true,
                        read: read.clone(),
                    });
                    let runs = join_all(plans.map(run_session)).await;
                    Ok::<_, Attempt>(SessionObservation { name, runs })
                })
                .await;
            let observation = match observed {
                Ok(Ok(o)) => o,
                Ok(Err(attempt)) | Err(attempt) => return attempt,
            };
            let providers = topology.running(&provider.service);
            let roles = name::roles(&observation.name, providers, Some(&target), &topology);
            let evidence = observation.name.evidence();
            if let Err(findings) = name::judge(&observation.name, &roles, &format!("client {}", client.id)) {
                return Attempt::failed(findings, evidence);
            }
            judge_runs(&observation.runs, provider.read.as_ref(), evidence)
        })
    }
}
