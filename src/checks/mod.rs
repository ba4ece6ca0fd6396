//! Check families. Each module plans its checks from the scenario, observes inside a
//! network namespace (typed observations, no verdicts), and judges with a pure function
//! of observations and scenario that its tests feed tables of observations.
pub mod answers;
pub mod arguments;
pub mod calls;
pub mod clientapp;
pub mod contract;
pub mod credentials;
pub mod disabled;
pub mod egress;
pub mod flowise;
pub mod limits;
pub mod n8n;
pub mod name;
pub mod name_tries;
pub mod openwebui;
pub mod plan;
pub mod reach;
pub mod refusal;
pub mod route;
pub mod secrets;
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
use crate::mcp::Endpoint;
use crate::model::{Attempt, CheckName};
use crate::netns::Place;
use crate::runner::{Check, RunContext, Skipped, named};
use crate::topology::Topology;
use plan::Plan;

/// Every check the suite's families ask for, in a stable order.
pub fn plan(scenario: &Scenario, suite: &Suite) -> Vec<Arc<dyn Check>> {
    let mut checks: Vec<Arc<dyn Check>> = Vec::new();
    for family in &suite.families {
        match family {
            Family::Contract => {
                checks.extend(contract::plan(scenario));
                checks.extend(calls::plan(scenario));
                checks.extend(arguments::plan(scenario));
                checks.extend(limits::plan(scenario));
            }
            Family::Route => checks.extend(route::plan(scenario)),
            Family::Reach => checks.extend(reach::plan(scenario)),
            Family::Session => checks.extend(session::plan(scenario)),
            Family::Disabled => checks.extend(disabled::plan(scenario)),
            Family::Sidecar => {
                checks.extend(sidecar::plan(scenario));
                checks.extend(egress::plan(scenario));
            }
            Family::Openwebui => checks.extend(openwebui::plan(scenario, suite)),
            Family::Credentials => checks.extend(credentials::plan(scenario)),
            Family::Secrets => checks.extend(secrets::plan(scenario)),
            Family::Flowise => checks.extend(flowise::plan(scenario)),
            Family::N8n => checks.extend(n8n::plan(scenario)),
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

/// One replica of a service, by an address the probing container can reach.
#[derive(Clone, Debug)]
pub struct Replica {
    pub container: String,
    /// Its first address on the shared network (IPv4 when it has one).
    pub addr: IpAddr,
    /// Every address it has on that network (IPv4 and IPv6 on a dual-stack network): a
    /// client's connect loop falls back from one to the next.
    pub addrs: Vec<IpAddr>,
    pub network: String,
}

impl Replica {
    pub fn label(&self) -> String {
        let others: Vec<String> = self.addrs.iter().filter(|a| **a != self.addr).map(IpAddr::to_string).collect();
        if others.is_empty() {
            format!("{} at {} on {}", self.container, self.addr, self.network)
        } else {
            format!("{} at {} (and {}) on {}", self.container, self.addr, others.join(", "), self.network)
        }
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
            let addrs: Vec<IpAddr> = att.ipv4.map(IpAddr::V4).into_iter().chain(att.ipv6.map(IpAddr::V6)).collect();
            let addr = *addrs.first()?;
            Some(Replica {
                container: t.name.clone(),
                addr,
                addrs,
                network: topology.network_key(&att.network).to_string(),
            })
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
    pinned_all(provider, &[addr])
}

/// An endpoint pinned to `addrs` in order, falling back from one to the next.
pub fn pinned_all(provider: &Provider, addrs: &[IpAddr]) -> Endpoint {
    let port = provider.url.port_or_known_default().unwrap_or(80);
    let addrs: Vec<SocketAddr> = addrs.iter().map(|a| SocketAddr::new(*a, port)).collect();
    Endpoint::new(provider.url.clone(), provider.transport).pinned_in_order(&addrs)
}

/// The endpoint with its addresses in the order the namespace's libc would give them.
pub fn in_libc_order(view: &crate::netns::NsView, endpoint: &Endpoint) -> Endpoint {
    let addrs = endpoint.addresses();
    if addrs.len() < 2 {
        return endpoint.clone();
    }
    let ips: Vec<IpAddr> = addrs.iter().map(SocketAddr::ip).collect();
    let ordered: Vec<SocketAddr> =
        view.in_libc_order(&ips).into_iter().filter_map(|ip| addrs.iter().find(|a| a.ip() == ip).copied()).collect();
    endpoint.pinned_in_order(&ordered)
}

/// `at` for every (replica, endpoint) of a plan at once, each endpoint's addresses in the
/// order the namespace's libc gives them.
pub async fn at_every_replica<T, Fut>(
    view: &crate::netns::NsView,
    endpoints: &[(String, Endpoint)],
    at: impl Fn(String, Endpoint) -> Fut,
) -> Vec<T>
where
    Fut: std::future::Future<Output = T>,
{
    futures_util::future::join_all(endpoints.iter().map(|(r, e)| at(r.clone(), in_libc_order(view, e)))).await
}

/// One check named `contract::<p>::<aspect>` for every provider that is not disabled.
pub fn for_enabled_providers<P: crate::runner::Probe>(
    scenario: &Scenario,
    aspect: &str,
    probe: impl Fn(&str) -> P,
) -> Vec<Arc<dyn Check>> {
    scenario
        .providers
        .iter()
        .filter(|p| !p.disabled)
        .map(|p| named(CheckName::of_provider(Family::Contract, &p.id, Some(aspect)), probe(&p.id)))
        .collect()
}

/// Where the contract checks of a provider stand and what they talk to: in host mode the
/// URL as written from cordon's own namespace; otherwise a container's namespace (an
/// admitted client's, else a provider replica's own) and the replicas of the provider it
/// reaches, each by an address on a network they share.
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

/// Every replica of the provider, each probed from the first position (admitted clients
/// first, then the replicas themselves) that shares a network with it: one vantage per
/// position used.
pub fn contract_vantages(ctx: &RunContext, provider: &Provider) -> Result<Vec<Vantage>, Attempt> {
    let Some(deployment) = &ctx.deployment else {
        return Ok(vec![host_vantage(provider)]);
    };
    let topology = deployment.topology();
    let candidates = positions(ctx, &topology, provider);
    let vantages: Vec<Vantage> = cover(&topology, &provider.service, &candidates)
        .into_iter()
        .map(|(i, replicas)| vantage_at(deployment, provider, &candidates[i].0, &candidates[i].1, &replicas))
        .collect();
    if vantages.is_empty() { Err(no_position(provider)) } else { Ok(vantages) }
}

/// Pure: assigns every running replica of `service` to the first candidate that reaches
/// it; (candidate index, its replicas), in candidate order.
pub fn cover(topology: &Topology, service: &str, candidates: &[(Target, String)]) -> Vec<(usize, Vec<Replica>)> {
    let mut assigned: Vec<(usize, Vec<Replica>)> = Vec::new();
    let mut covered: Vec<String> = Vec::new();
    for (i, (target, _)) in candidates.iter().enumerate() {
        let fresh: Vec<Replica> =
            replicas_from(topology, service, target).into_iter().filter(|r| !covered.contains(&r.container)).collect();
        if !fresh.is_empty() {
            covered.extend(fresh.iter().map(|r| r.container.clone()));
            assigned.push((i, fresh));
        }
    }
    assigned
}

/// Where contract checks may stand, in order of preference: the running containers of
/// admitted clients, then the provider's own replicas (each reaches at least itself).
fn positions(ctx: &RunContext, topology: &Topology, provider: &Provider) -> Vec<(Target, String)> {
    let clients = provider
        .allowed_consumers
        .iter()
        .filter_map(|c| ctx.scenario.clients.iter().find(|x| &x.id == c))
        .filter_map(|c| topology.running(&c.service).first().map(|t| (t.clone(), format!("client {}", c.id))));
    let replicas = topology.running(&provider.service).iter().map(|t| (t.clone(), format!("provider {}", provider.id)));
    clients.chain(replicas).collect()
}

fn host_vantage(provider: &Provider) -> Vantage {
    let endpoint = Endpoint::new(provider.url.clone(), provider.transport);
    Vantage {
        place: Place::Host,
        target: None,
        position: "cordon".into(),
        label: Place::Host.label(),
        endpoints: vec![(provider.url.to_string(), endpoint)],
    }
}

fn vantage_at(
    deployment: &crate::deployment::Deployment,
    provider: &Provider,
    target: &Target,
    label: &str,
    replicas: &[Replica],
) -> Vantage {
    Vantage {
        place: crate::deployment::Deployment::place(target, label),
        position: label.to_string(),
        label: deployment.probed_by(target, label).trim_start_matches("probed from ").to_string(),
        target: Some(target.clone()),
        endpoints: replicas.iter().map(|r| (r.label(), pinned_all(provider, &r.addrs))).collect(),
    }
}

fn no_position(provider: &Provider) -> Attempt {
    Attempt::not_ready(
        format!("no running container of an admitted client or of provider `{}` to probe from", provider.id),
        vec![],
    )
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
            P::unwrap(observed)
                .ok_or_else(|| Attempt::not_ready("the probe answered with another kind of observation", vec![]))
        }
    }
}

/// Puts `line` first in the attempt's evidence.
pub fn push_evidence(attempt: &mut Attempt, line: String) {
    if let Attempt::Pass { evidence } | Attempt::Fail { evidence, .. } | Attempt::NotReady { evidence, .. } = attempt {
        evidence.insert(0, line);
    }
}

/// Runs the plan `plan_for` makes of each vantage's endpoints, in that vantage's
/// namespace (or through a carrier on its node), every vantage at once so their waits
/// overlap; every observation in order, and where they were probed from.
pub async fn observe_everywhere<P, T>(
    ctx: &RunContext,
    vantages: &[Vantage],
    plan_for: impl Fn(&[(String, Endpoint)]) -> P,
) -> Result<(Vec<T>, String), Attempt>
where
    P: Plan<Observation = Vec<T>>,
{
    let runs =
        futures_util::future::join_all(vantages.iter().map(|v| observe_at(ctx, v, plan_for(&v.endpoints)))).await;
    let mut all = Vec::new();
    for run in runs {
        all.extend(run?);
    }
    Ok((all, vantages.iter().map(|v| v.label.as_str()).collect::<Vec<_>>().join(", ")))
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

#[cfg(test)]
mod tests;

/// A provider with nothing but an id, an allowlist and defaults, for judges' tables.
#[cfg(test)]
pub(crate) fn provider_for_tests(id: &str, allowlist: &[&str]) -> Provider {
    Provider {
        id: id.into(),
        url: format!("http://{id}:8000/mcp").parse().expect("a URL"),
        transport: crate::mcp::Transport::StreamableHttp,
        credential: format!("{id}-token"),
        refusal: Default::default(),
        allowed_consumers: vec![],
        tools: crate::config::ToolsContract {
            allowlist: allowlist.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        },
        read: None,
        disabled: false,
        app_ports: vec![],
        service: id.into(),
        sidecar_networks: None,
        app: None,
        networks: vec![],
        boundary: Default::default(),
    }
}

/// IPv6 addresses still in duplicate address detection on the way between containers:
/// the host's (a new network's bridge holds its gateway address tentative for a second
/// or two after `up`) and the containers' own, on a /64 of `addrs` or of a container's
/// own IPv6 address. Read from `/proc/1` (the host: cordon runs there, or in its image
/// with `--pid host`) and from each local container's `/proc/<pid>`; what cannot be read
/// (a task on another node) counts as settled.
pub(crate) fn ipv6_settling<'a>(
    containers: impl IntoIterator<Item = &'a Target>,
    addrs: impl IntoIterator<Item = IpAddr>,
) -> Vec<String> {
    let prefix = |a: std::net::Ipv6Addr| u128::from(a) >> 64;
    let mut prefixes: std::collections::BTreeSet<u128> =
        addrs.into_iter().filter_map(|a| if let IpAddr::V6(v6) = a { Some(prefix(v6)) } else { None }).collect();
    let mut places = vec![(1, "the host".to_string())];
    for t in containers {
        prefixes.extend(t.attachments.iter().filter_map(|a| a.ipv6).map(prefix));
        if t.pid != 0 {
            places.push((t.pid, t.name.clone()));
        }
    }
    if prefixes.is_empty() {
        return vec![];
    }
    let mut out = Vec::new();
    for (pid, place) in places {
        for (addr, interface) in crate::netns::procfs::tentative_ipv6(pid).unwrap_or_default() {
            if prefixes.contains(&prefix(addr)) {
                out.push(format!("{addr} on {interface} ({place})"));
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

/// Why a closed IPv6 door is not judged yet (see [`ipv6_settling`]).
pub(crate) fn settling_reason(settling: &[String]) -> String {
    format!(
        "IPv6 duplicate address detection still running for {}: a failed IPv6 connect proves nothing yet",
        settling.join(", ")
    )
}
