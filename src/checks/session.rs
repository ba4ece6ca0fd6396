//! `session::<client>-><provider>`: from the client's namespace, at the address the
//! client's libc would use and at every other replica it shares a network with, with
//! the credential that client holds: the handshake succeeds, the tools list is read and
//! the deterministic read answers as contracted.

use std::net::{IpAddr, SocketAddr};
use std::rc::Rc;
use std::sync::Arc;

use futures_util::future::{BoxFuture, join_all};
use serde::{Deserialize, Serialize};

use super::contract::judge_read;
use super::name::{self, NameSeen};
use super::name_tries::{NameTry, judge_name_tries, through_the_name};
use super::{client_target, replicas_from, wire};
use crate::config::{Family, Mode, ReadSpec, Scenario};
use crate::mcp::{Endpoint, Era, EraChoice, Hop, Limits, McpClient, McpError, Tool, ToolResult};
use crate::model::{Attempt, CheckName, Finding, FindingKind};
use crate::netns::NsView;
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
    /// The address the session's connections ended up on (after any fallback).
    #[serde(default)]
    pub connected: Option<SocketAddr>,
    /// The address it was pinned to first.
    #[serde(default)]
    pub first: Option<SocketAddr>,
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
        if let (Some(first), Some(connected)) = (self.first, self.connected)
            && first != connected
        {
            out.push(format!(
                "{}: {first} did not accept; the connect loop fell back to {connected}, as the client's does",
                self.replica
            ));
        }
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
#[derive(Clone, Serialize, Deserialize)]
pub struct SessionPlan {
    pub replica: String,
    pub endpoint: Endpoint,
    #[serde(with = "wire::secret")]
    pub secret: Secret,
    pub limits: Limits,
    pub era: EraChoice,
    pub list: bool,
    #[serde(with = "wire::read")]
    pub read: Option<ReadSpec>,
}

/// Several sessions at once, each at its own replica (contract reads).
#[derive(Clone, Serialize, Deserialize)]
pub struct SessionsPlan {
    pub sessions: Vec<SessionPlan>,
}

impl SessionsPlan {
    pub async fn observe(self, view: Rc<NsView>) -> Vec<SessionRun> {
        let sessions =
            self.sessions.into_iter().map(|p| SessionPlan { endpoint: super::in_libc_order(&view, &p.endpoint), ..p });
        join_all(sessions.map(run_session)).await
    }
}

/// Opens a session, lists tools and/or calls the read tool, and closes it. Runs in the
/// namespace of the position.
pub async fn run_session(plan: SessionPlan) -> SessionRun {
    let mut run = SessionRun {
        replica: plan.replica.clone(),
        connected: None,
        first: plan.endpoint.pin,
        era: None,
        hops: vec![],
        failed: None,
        tools: None,
        read: None,
    };
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
    run.connected = client.peer();
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
        if let (Some(read), Some(result)) = (read, &run.read)
            && let Attempt::Fail { findings: f, evidence: e } = judge_read(&read.tool, &read.expect, result, vec![])
        {
            evidence.extend(e.into_iter().map(|l| format!("{}: {l}", run.replica)));
            findings.extend(f.into_iter().map(|mut f| {
                f.message = format!("{}: {}", run.replica, f.message);
                f.fact("replica", &run.replica)
            }));
        }
    }
    Attempt::settle(findings, not_ready, evidence)
}

struct SessionCheck {
    client: String,
    provider: String,
}

/// Sessions through the name per check in swarm mode: with two replicas and no
/// affinity, six sessions of three requests each all stay on one replica by chance with
/// probability (1/4)^6 < 0.03 %.
pub const NAME_TRIES: usize = 6;

/// What the client saw: the name, a session at each address it would use, and (swarm)
/// sessions through the name, each request wherever the name sends it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SessionObservation {
    pub name: NameSeen,
    pub runs: Vec<SessionRun>,
    #[serde(default)]
    pub name_tries: Vec<NameTry>,
}

/// What the client does: resolve the name, then a session at every replica it would use.
#[derive(Clone, Serialize, Deserialize)]
pub struct SessionCheckPlan {
    pub host: String,
    /// Names the client's own resolver must know (see [`name::observe`]).
    #[serde(default)]
    pub known: Vec<String>,
    /// Every replica the client shares a network with: its addresses there, and its label.
    pub replicas: Vec<(Vec<IpAddr>, String)>,
    /// The endpoint as the client uses it (not pinned).
    pub endpoint: Endpoint,
    pub port: u16,
    #[serde(with = "wire::secret")]
    pub secret: Secret,
    pub limits: Limits,
    #[serde(with = "wire::read")]
    pub read: Option<ReadSpec>,
    /// Sessions to open through the name, every request resolving it again.
    pub name_tries: usize,
    /// Swarm (vip mode): (address, label) of the service's virtual IPs on networks the
    /// client shares. The name answers with one; the engine balances it over the tasks.
    #[serde(default)]
    pub vips: Vec<(IpAddr, String)>,
}

impl SessionCheckPlan {
    pub async fn observe(self, view: Rc<NsView>) -> Result<SessionObservation, String> {
        let name = name::observe(&view, &self.host, &self.known).await.map_err(super::plan::reason)?;
        // The address the client's libc gives first (its connect loop falling back along
        // the answer, as the client's does), then every replica. The credential never goes
        // to an address that is not a replica: a name that leads elsewhere fails on the
        // name alone.
        let replica_of = |a: &IpAddr| self.replicas.iter().find(|(addrs, _)| addrs.contains(a));
        let answered: Vec<SocketAddr> = name
            .answer
            .addrs
            .iter()
            .take_while(|a| replica_of(a).is_some())
            .map(|a| SocketAddr::new(*a, self.port))
            .collect();
        let mut plans: Vec<(Endpoint, String)> = Vec::new();
        if let Some(first) = answered.first()
            && let Some((_, label)) = replica_of(&first.ip())
        {
            plans.push((self.endpoint.pinned_in_order(&answered), format!("{label}, the client's first answer")));
        }
        for (addrs, label) in &self.replicas {
            let addrs: Vec<SocketAddr> =
                view.in_libc_order(addrs).into_iter().map(|a| SocketAddr::new(a, self.port)).collect();
            let endpoint = self.endpoint.pinned_in_order(&addrs);
            // The session through the name already went this exact way (same address,
            // same fallbacks, same Host): a second one would prove nothing more, and at
            // thousands of pairs it doubles the load on every single-replica provider.
            if plans.first().is_some_and(|(first, _)| first.addresses() == endpoint.addresses()) {
                continue;
            }
            plans.push((endpoint, label.clone()));
        }
        let plans = plans.into_iter().map(|(endpoint, replica)| SessionPlan {
            replica,
            endpoint,
            secret: self.secret.clone(),
            limits: self.limits.clone(),
            era: EraChoice::Auto,
            list: true,
            read: self.read.clone(),
        });
        let runs = join_all(plans.map(run_session)).await;
        let tries = super::name_tries::ERAS.iter().flat_map(|era| (0..self.name_tries).map(move |k| (*era, k)));
        let name_tries = join_all(tries.map(|(era, k)| through_the_name(&view, &self, era, k))).await;
        Ok(SessionObservation { name, runs, name_tries })
    }
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
            let replicas: Vec<(Vec<IpAddr>, String)> = replicas_from(&topology, &provider.service, &target)
                .into_iter()
                .map(|r| (r.addrs.clone(), r.label()))
                .collect();
            let swarm = deployment.mode == Mode::Swarm;
            let shared: Vec<&str> = target.attachments.iter().map(|a| a.network.as_str()).collect();
            let vips: Vec<(IpAddr, String)> = topology
                .vip_networks_of(&provider.service)
                .into_iter()
                .filter(|(_, network)| shared.contains(&network.as_str()))
                .map(|(addr, network)| {
                    (
                        addr,
                        format!(
                            "the VIP of service {} at {addr} on {}",
                            provider.service,
                            topology.network_key(&network)
                        ),
                    )
                })
                .collect();
            let plan = SessionCheckPlan {
                known: target.dns_names(),
                vips,
                host: provider.url.host_str().unwrap_or_default().to_string(),
                replicas,
                endpoint: Endpoint::new(provider.url.clone(), provider.transport),
                port: provider.url.port_or_known_default().unwrap_or(80),
                secret: ctx.scenario.secret(credential).clone(),
                limits: ctx.suite.limits.clone(),
                read: provider.read.clone(),
                // Swarm balances every connection over the replicas (DNS round robin or
                // the VIP): a session must survive its requests landing anywhere.
                name_tries: if swarm && provider.transport == crate::mcp::Transport::StreamableHttp {
                    NAME_TRIES
                } else {
                    0
                },
            };
            let from = format!("client {}", client.id);
            let observation = match deployment.observe(&target, &from, plan).await {
                Ok(Ok(o)) => o,
                Ok(Err(reason)) => return Attempt::not_ready(reason, vec![]),
                Err(attempt) => return attempt,
            };
            let providers = topology.running(&provider.service);
            let roles = name::roles(&observation.name, providers, Some(&target), &topology);
            let mut evidence = vec![deployment.probed_by(&target, &from)];
            evidence.extend(observation.name.evidence());
            if let Err(findings) = name::judge(&observation.name, &roles, &from) {
                if let Some(why) = deployment.unsettled(providers).await {
                    return Attempt::not_ready(why, evidence);
                }
                return Attempt::failed(findings, evidence);
            }
            let replicas_serve = !observation.runs.is_empty() && observation.runs.iter().all(|r| r.failed.is_none());
            let (findings, lines, waiting) = judge_name_tries(&observation.name_tries, replicas_serve);
            evidence.extend(lines);
            match judge_runs(&observation.runs, provider.read.as_ref(), evidence) {
                Attempt::Fail { findings: mut f, evidence } => {
                    f.extend(findings);
                    Attempt::failed(f, evidence)
                }
                Attempt::Pass { evidence } if !findings.is_empty() => Attempt::failed(findings, evidence),
                Attempt::Pass { evidence } if !waiting.is_empty() => Attempt::not_ready(waiting.join("; "), evidence),
                other => other,
            }
        })
    }
}

#[cfg(test)]
#[path = "session_tests.rs"]
mod tests;
