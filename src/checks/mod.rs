//! Check families. Each module plans its checks from the scenario, observes inside a
//! network namespace (typed observations, no verdicts), and judges with a pure function
//! of observations and scenario that its tests feed tables of observations.
pub mod contract;
pub mod disabled;
pub mod name;
pub mod name_tries;
pub mod plan;
pub mod reach;
pub mod refusal;
pub mod route;
pub mod session;
pub mod sidecar;
pub mod wire;

#[cfg(test)]
mod swarm_tests;

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use crate::config::{Family, Mode, Provider, Scenario, Suite};
use crate::engine::Target;
use crate::mcp::{Endpoint, McpError};
use crate::model::{Attempt, CheckName};
use crate::netns::Place;
use plan::Plan;
use crate::runner::{Check, RunContext, Skipped, named};
use crate::topology::Topology;

/// Every check the suite's families ask for, in a stable order.
pub fn plan(scenario: &Scenario, suite: &Suite) -> Vec<Arc<dyn Check>> {
    let mut checks: Vec<Arc<dyn Check>> = Vec::new();
    for family in &suite.families {
        match family {
            Family::Contract => checks.extend(contract::plan(scenario)),
            Family::Route => checks.extend(route::plan(scenario)),
            Family::Reach => checks.extend(reach::plan(scenario)),
            Family::Session => checks.extend(session::plan(scenario)),
            Family::Disabled => checks.extend(disabled::plan(scenario)),
            Family::Sidecar => checks.extend(sidecar::plan(scenario)),
            Family::Openwebui => unreachable!("suite validation admits no openwebui family yet"),
        }
    }
    if suite.mode == Mode::Host {
        for provider in scenario.providers.iter().filter(|p| p.disabled) {
            checks.push(named(
                CheckName::of_provider(Family::Disabled, &provider.id, None),
                Skipped {
                    reason: "host mode cannot see a disabled surface from a client's network namespace; run the compose or swarm suite".into(),
                },
            ));
        }
    }
    checks
}

/// An error on the way to a verdict: "not ready" errors are retried, the rest are final.
pub fn attempt_from_error(context: &str, error: &McpError, evidence: Vec<String>) -> Attempt {
    let reason = format!("{context}: {error}");
    if error.is_not_ready() { Attempt::not_ready(reason, evidence) } else { Attempt::fail(reason, evidence) }
}

/// One replica of a service, by an address the probing container can reach.
#[derive(Clone, Debug)]
pub struct Replica {
    pub container: String,
    pub addr: IpAddr,
    pub network: String,
}

impl Replica {
    pub fn label(&self) -> String {
        format!("{} at {} on {}", self.container, self.addr, self.network)
    }
}

/// Every running replica of `service`, each by its first address on a network `from`
/// shares (a replica on no shared network is left out: `from` cannot reach it).
pub fn replicas_from(topology: &Topology, service: &str, from: &Target) -> Vec<Replica> {
    let shared: Vec<&str> = from.attachments.iter().map(|a| a.network.as_str()).collect();
    topology
        .running(service)
        .iter()
        .filter_map(|t| {
            let att = t.attachments.iter().find(|a| shared.contains(&a.network.as_str()))?;
            let addr = att.ipv4.map(IpAddr::V4).or(att.ipv6.map(IpAddr::V6))?;
            Some(Replica { container: t.name.clone(), addr, network: topology.network_key(&att.network).to_string() })
        })
        .collect()
}

/// The running container of a scenario client (its first, if scaled), or why none.
pub fn client_target(topology: &Topology, scenario: &Scenario, client: &str) -> Result<Target, Attempt> {
    let service = scenario.clients.iter().find(|c| c.id == client).map(|c| c.service.as_str()).unwrap_or(client);
    topology.running(service).first().cloned().ok_or_else(|| {
        Attempt::not_ready(format!("client `{client}` has no running container of service `{service}`"), vec![])
    })
}

/// An endpoint pinned to `addr`, so the HTTP client never resolves on its own (it would
/// read the host's resolv.conf, not the container's).
pub fn pinned(provider: &Provider, addr: IpAddr) -> Endpoint {
    let port = provider.url.port_or_known_default().unwrap_or(80);
    Endpoint { url: provider.url.clone(), transport: provider.transport, pin: None }.pinned_to(SocketAddr::new(addr, port))
}

/// Where the contract checks of a provider stand and what they talk to: in host mode the
/// URL as written from cordon's own namespace; otherwise the first admitted client with a
/// running container (else the provider's own container), and every replica of the
/// provider by an address reachable from there.
pub struct Vantage {
    pub place: Place,
    pub target: Option<Target>,
    /// e.g. `client webui`.
    pub position: String,
    /// The position, its container and how it is entered, for evidence.
    pub label: String,
    /// (replica label, endpoint pinned to it)
    pub endpoints: Vec<(String, Endpoint)>,
}

pub fn contract_vantage(ctx: &RunContext, provider: &Provider) -> Result<Vantage, Attempt> {
    let Some(deployment) = &ctx.deployment else {
        let endpoint = Endpoint { url: provider.url.clone(), transport: provider.transport, pin: None };
        return Ok(Vantage {
            place: Place::Host,
            target: None,
            position: "cordon".into(),
            label: Place::Host.label(),
            endpoints: vec![(provider.url.to_string(), endpoint)],
        });
    };
    let topology = deployment.topology();
    let position = provider
        .allowed_consumers
        .iter()
        .filter_map(|c| ctx.scenario.clients.iter().find(|x| &x.id == c))
        .find_map(|c| topology.running(&c.service).first().map(|t| (t.clone(), format!("client {}", c.id))))
        .or_else(|| topology.running(&provider.service).first().map(|t| (t.clone(), format!("provider {}", provider.id))));
    let Some((target, label)) = position else {
        return Err(Attempt::not_ready(
            format!("no running container of an admitted client or of provider `{}` to probe from", provider.id),
            vec![],
        ));
    };
    let replicas = replicas_from(&topology, &provider.service, &target);
    if replicas.is_empty() {
        return Err(Attempt::not_ready(
            format!("no replica of provider `{}` is on a network {label} shares", provider.id),
            vec![],
        ));
    }
    let endpoints = replicas.iter().map(|r| (r.label(), pinned(provider, r.addr))).collect();
    Ok(Vantage {
        place: crate::deployment::Deployment::place(&target, &label),
        label: deployment.probed_by(&target, &label).trim_start_matches("probed from ").to_string(),
        position: label,
        target: Some(target),
        endpoints,
    })
}

/// Runs `plan` at the vantage point: in the position's namespace (wherever its node is),
/// or in cordon's own.
pub async fn observe_at<P: Plan>(ctx: &RunContext, vantage: &Vantage, plan: P) -> Result<P::Observation, Attempt> {
    match (&ctx.deployment, &vantage.target) {
        (Some(deployment), Some(target)) => deployment.observe(target, &vantage.position, plan).await,
        _ => {
            let observed = ctx
                .pool
                .run(&vantage.place, move |view| plan.wrap().observe(view))
                .await
                .map_err(|e| Attempt::not_ready(format!("cannot probe from {}: {e}", vantage.label), vec![]))?;
            P::unwrap(observed).ok_or_else(|| Attempt::not_ready("the probe answered with another kind of observation", vec![]))
        }
    }
}

/// Puts `line` first in the attempt's evidence.
pub fn push_evidence(attempt: &mut Attempt, line: String) {
    if let Attempt::Pass { evidence } | Attempt::Fail { evidence, .. } | Attempt::NotReady { evidence, .. } = attempt {
        evidence.insert(0, line);
    }
}

/// Ok when a TCP connection opens within `timeout`; the error says how it failed.
pub async fn tcp_connect(addr: SocketAddr, timeout: Duration) -> Result<(), String> {
    match tokio::time::timeout(timeout, tokio::net::TcpStream::connect(addr)).await {
        Ok(Ok(_stream)) => Ok(()),
        // A reset comes from the peer: the address is reachable, only the port is closed.
        Ok(Err(e)) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
            Err("refused (a TCP reset: the address is reachable at IP level, nothing listens on the port)".into())
        }
        Ok(Err(e)) => Err(format!("{e}")),
        Err(_) => Err(format!("no answer within {:.1}s", timeout.as_secs_f64())),
    }
}

pub fn join_addrs(addrs: &[IpAddr]) -> String {
    addrs.iter().map(IpAddr::to_string).collect::<Vec<_>>().join(", ")
}
