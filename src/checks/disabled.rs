//! `disabled::<provider>`: a surface the platform switched off is dark from every client:
//! its name resolves to nothing but the wildcard set, and no address of it — resolved or
//! of a leftover container — gives any HTTP answer (a 401 means something still listens).

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use futures_util::future::{BoxFuture, join_all};

use super::position::{ClientView, Position, join, pinned, tcp_connect};
use super::refusal::summarize;
use crate::config::{Family, Provider, Scenario};
use crate::mcp::{EntryPoint, Limits, McpClient};
use crate::model::{Attempt, CheckName};
use crate::runner::{Check, Probe, RunContext, named};

pub fn plan(scenario: &Scenario) -> Vec<Arc<dyn Check>> {
    scenario
        .providers
        .iter()
        .filter(|p| p.disabled)
        .map(|p| named(CheckName::new(Family::Disabled, p.id.clone()), DisabledCheck { provider: p.id.clone() }))
        .collect()
}

struct DisabledCheck {
    provider: String,
}

/// What one client saw: findings that fail the check, and evidence.
struct Seen {
    findings: Vec<String>,
    evidence: Vec<String>,
    not_ready: Option<String>,
}

impl Probe for DisabledCheck {
    fn run<'a>(&'a self, ctx: &'a RunContext) -> BoxFuture<'a, Attempt> {
        Box::pin(async move {
            let (topology, provider) = ctx.deployment(&self.provider);
            let provider = provider.clone();
            let leftovers: Vec<(IpAddr, String)> = topology
                .running(&provider.service)
                .iter()
                .flat_map(|t| t.addresses().into_iter().map(move |a| (a, t.name.clone())))
                .collect();
            let mut evidence = vec![match leftovers.is_empty() {
                true => format!("no running container of service `{}`", provider.service),
                false => format!(
                    "running container(s) of service `{}`: {}",
                    provider.service,
                    leftovers.iter().map(|(a, n)| format!("{n} at {a}")).collect::<Vec<_>>().join(", ")
                ),
            }];
            let mut positions = Vec::new();
            let mut seen_ids = Vec::new();
            for client in &ctx.scenario.clients {
                if let Some(target) = topology.running(&client.service).first() {
                    seen_ids.push(target.id.clone());
                    positions.push((Position::of(&format!("client {}", client.id), target), true));
                }
            }
            // The provider's own network, seen by whatever else runs on it. Only TCP and
            // HTTP are judged there: that container's resolver is not a client's.
            for network in &provider.networks {
                let on_it = topology.services.values().flatten().find(|t| {
                    !seen_ids.contains(&t.id)
                        && t.attachments.iter().any(|a| topology.network_key(&a.network) == network)
                });
                match on_it {
                    Some(target) => {
                        seen_ids.push(target.id.clone());
                        positions
                            .push((Position::of(&format!("network {network} via {}", target.service), target), false));
                    }
                    None => evidence.push(format!("network {network}: no other running container on it to look from")),
                }
            }
            if positions.is_empty() {
                return Attempt::not_ready("no running client container to look from", evidence);
            }
            let limits = ctx.suite.limits.clone();
            let seen = join_all(positions.into_iter().map(|(position, resolve)| {
                let provider = provider.clone();
                let leftovers = leftovers.clone();
                let limits = limits.clone();
                let label = position.label();
                async move {
                    let mut seen = Seen { findings: vec![], evidence: vec![], not_ready: None };
                    let attempt = position
                        .run(move |netns| async move {
                            let netns = netns.expect("a container position runs in a namespace");
                            look_from(&label, &netns, resolve, &provider, &leftovers, limits).await
                        })
                        .await;
                    match attempt {
                        Attempt::Fail { reason, evidence } => {
                            seen.findings.push(reason);
                            seen.evidence = evidence;
                        }
                        Attempt::Pass { evidence } => seen.evidence = evidence,
                        Attempt::NotReady { reason, evidence } => {
                            seen.not_ready = Some(reason);
                            seen.evidence = evidence;
                        }
                        Attempt::Skip { reason } => seen.evidence.push(reason),
                    }
                    seen
                }
            }))
            .await;
            let mut findings = Vec::new();
            let mut not_ready = Vec::new();
            for s in seen {
                findings.extend(s.findings);
                not_ready.extend(s.not_ready);
                evidence.extend(s.evidence);
            }
            if !findings.is_empty() {
                Attempt::fail(findings.join("; "), evidence)
            } else if !not_ready.is_empty() {
                Attempt::not_ready(not_ready.join("; "), evidence)
            } else {
                Attempt::Pass { evidence }
            }
        })
    }
}

async fn look_from(
    label: &str,
    netns: &crate::netns::NetnsContext,
    resolve: bool,
    provider: &Provider,
    leftovers: &[(IpAddr, String)],
    limits: Limits,
) -> Attempt {
    let host = provider.url.host_str().unwrap_or_default().to_string();
    let port = provider.url.port_or_known_default().unwrap_or(80);
    let mut evidence = Vec::new();
    let mut findings = Vec::new();
    let mut routed = Vec::new();
    if resolve {
        let view = match ClientView::learn(netns).await {
            Ok(v) => v,
            Err(attempt) => return attempt,
        };
        let answers = match view.resolver.lookup(&host).await {
            Ok(a) => a,
            Err(e) => return Attempt::not_ready(format!("{label}: resolving {host}: {e}"), vec![]),
        };
        routed = answers.iter().copied().filter(|a| !view.wildcard.contains(a)).collect();
        evidence.push(format!("{label}: {host} → [{}]; {}", join(&answers), view.wildcard_evidence()));
        if !routed.is_empty() {
            findings.push(format!(
                "still routed: from {label} `{host}` resolves to [{}] outside the wildcard set",
                join(&routed)
            ));
        }
    }
    if !resolve {
        evidence.push(format!("{label}: probing the surface's container addresses, if any, on port {port}"));
    }
    let mut targets: Vec<IpAddr> = routed;
    targets.extend(leftovers.iter().map(|(a, _)| *a));
    targets.sort();
    targets.dedup();
    for addr in targets {
        if let Err(e) = tcp_connect(SocketAddr::new(addr, port), limits.connect_timeout).await {
            evidence.push(format!("{label}: {addr}:{port}: {e}"));
            continue;
        }
        findings.push(format!("still accepting TCP: from {label} {addr}:{port}"));
        let client = match McpClient::new(pinned(provider, addr), None, limits.clone()) {
            Ok(c) => c,
            Err(e) => return Attempt::fail(format!("cannot build the HTTP client: {e}"), evidence),
        };
        for entry in [EntryPoint::SseGet, EntryPoint::ToolsList] {
            match client.raw_exchange(entry, None).await {
                Ok(answer) => {
                    evidence.push(format!("{label}: {}", summarize(&answer)));
                    findings.push(format!(
                        "still listening: from {label} {} at {addr}:{port} answered {}",
                        entry, answer.status
                    ));
                }
                Err(e) => evidence.push(format!("{label}: {entry} at {addr}:{port}: no HTTP answer ({e})")),
            }
        }
    }
    if findings.is_empty() { Attempt::Pass { evidence } } else { Attempt::fail(findings.join("; "), evidence) }
}
