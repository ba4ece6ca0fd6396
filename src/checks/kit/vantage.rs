//! Where a check stands and what it talks to: the replicas of a provider a container
//! reaches (each by its addresses on a shared network), a client's running container,
//! endpoints pinned to an address in the order the namespace's libc gives them, and the
//! vantage points the contract checks probe every replica from.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use crate::check::{Check, Probe, RunContext, named};
use crate::config::{Family, Provider, Scenario};
use crate::engine::Target;
use crate::mcp::Endpoint;
use crate::model::{Attempt, CheckName};
use crate::netns::Place;
use crate::netns::plan::Plan;
use crate::topology::Topology;

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
pub fn for_enabled_providers<P: Probe>(
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
        _ => ctx
            .pool
            .run(&vantage.place, move |view| plan.observe(view))
            .await
            .map_err(|e| Attempt::not_ready(format!("cannot probe from {}: {e}", vantage.label), vec![])),
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

#[cfg(test)]
#[path = "vantage_tests.rs"]
mod tests;
