//! Where a probe runs, and what a client sees from there: the wildcard set W and the
//! provider's addresses as the client's own resolver answers.

use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use crate::config::Provider;
use crate::dns::{ClientResolver, WildcardSet};
use crate::engine::Target;
use crate::mcp::Endpoint;
use crate::model::Attempt;
use crate::netns::{self, NetnsContext};
use crate::topology::Topology;

/// A probe position: this process's namespace, or a container's.
#[derive(Debug, Clone)]
pub enum Position {
    Host,
    Container { pid: u32, label: String },
}

impl Position {
    pub fn of(label: &str, target: &Target) -> Position {
        Position::Container { pid: target.pid, label: format!("{label} ({})", target.name) }
    }

    pub fn label(&self) -> String {
        match self {
            Position::Host => "cordon's own network namespace".into(),
            Position::Container { label, .. } => label.clone(),
        }
    }

    /// Runs `job` here: directly, or on a thread inside the container's netns so every
    /// socket the job opens lives there.
    pub async fn run<F, Fut>(&self, job: F) -> Attempt
    where
        F: FnOnce(Option<NetnsContext>) -> Fut + Send + 'static,
        Fut: Future<Output = Attempt> + Send + 'static,
    {
        match self {
            Position::Host => job(None).await,
            Position::Container { pid, label } => {
                match netns::run_in_netns_async(*pid, move |ctx| job(Some(ctx))).await {
                    Ok(attempt) => attempt,
                    Err(e) => Attempt::not_ready(format!("cannot probe from {label}: {e}"), vec![]),
                }
            }
        }
    }
}

/// The client's resolver and what unknown names resolve to from there.
pub struct ClientView {
    pub resolver: ClientResolver,
    pub wildcard: WildcardSet,
}

impl ClientView {
    /// Learns W before anything else: no verdict may rest on a name alone.
    pub async fn learn(ctx: &NetnsContext) -> Result<ClientView, Attempt> {
        let resolver = ClientResolver::from_resolv_conf(&ctx.resolv_conf).map_err(|e| {
            Attempt::not_ready(
                format!("cannot configure the client's resolver from its resolv.conf: {e}"),
                vec![format!("resolv.conf: {}", ctx.resolv_conf.replace('\n', "; "))],
            )
        })?;
        let wildcard = resolver.learn_wildcard().await;
        if !wildcard.is_complete() {
            let errors: Vec<String> = wildcard.errors.iter().map(|(n, e)| format!("{n}: {e}")).collect();
            return Err(Attempt::not_ready(format!("could not learn the wildcard set: {}", errors.join("; ")), vec![]));
        }
        Ok(ClientView { resolver, wildcard })
    }

    pub fn wildcard_evidence(&self) -> String {
        let addrs: Vec<String> = self.wildcard.addrs.iter().map(IpAddr::to_string).collect();
        let probes: Vec<String> = self.wildcard.probes.iter().map(|(n, a)| format!("{n} → [{}]", join(a))).collect();
        format!("wildcard set W = {{{}}} (learned from {})", addrs.join(", "), probes.join(", "))
    }
}

/// What the provider's endpoint host resolves to from a client.
#[derive(Debug, Clone, PartialEq)]
pub enum Resolution {
    Nothing,
    /// Every answer is in W: the name "works" only through the wildcard record.
    OnlyWildcard(Vec<IpAddr>),
    /// Answers outside W, none of them a provider container on a shared network.
    Foreign(Vec<IpAddr>),
    /// Addresses of provider containers on networks the client shares, with the network;
    /// `stray` holds the other answers (wildcard or foreign) the same name also gave.
    Owned {
        owned: Vec<(IpAddr, String)>,
        stray: Vec<IpAddr>,
    },
}

/// Resolves `host` with the client's resolver and judges the answers against W and the
/// engine's view of the provider's containers.
pub async fn resolve_provider(
    view: &ClientView,
    host: &str,
    provider_targets: &[Target],
    client: Option<&Target>,
    topology: &Topology,
) -> Result<(Resolution, Vec<String>), Attempt> {
    let answers = view
        .resolver
        .lookup(host)
        .await
        .map_err(|e| Attempt::not_ready(format!("resolving {host}: {e}"), vec![view.wildcard_evidence()]))?;
    let mut evidence = vec![view.wildcard_evidence(), format!("{host} → [{}]", join(&answers))];
    if answers.is_empty() {
        return Ok((Resolution::Nothing, evidence));
    }
    let outside: Vec<IpAddr> = answers.iter().copied().filter(|a| !view.wildcard.contains(a)).collect();
    if outside.is_empty() {
        return Ok((Resolution::OnlyWildcard(answers), evidence));
    }
    let shared = |network: &str| client.is_none_or(|c| c.attachments.iter().any(|a| a.network == network));
    let mut owned = Vec::new();
    for addr in &outside {
        for target in provider_targets {
            for att in &target.attachments {
                let matches = att.ipv4.map(IpAddr::V4) == Some(*addr) || att.ipv6.map(IpAddr::V6) == Some(*addr);
                if matches && shared(&att.network) {
                    owned.push((*addr, topology.network_key(&att.network).to_string()));
                }
            }
        }
    }
    if owned.is_empty() {
        let names: Vec<String> = provider_targets.iter().map(|t| t.name.clone()).collect();
        evidence.push(format!("provider containers: {}", names.join(", ")));
        return Ok((Resolution::Foreign(outside), evidence));
    }
    let stray = answers.iter().copied().filter(|a| !owned.iter().any(|(o, _)| o == a)).collect();
    Ok((Resolution::Owned { owned, stray }, evidence))
}

/// An endpoint pinned to an address the client's resolver gave, so the HTTP client never
/// resolves on its own (it would read the host's resolv.conf, not the container's).
pub fn pinned(provider: &Provider, addr: IpAddr) -> Endpoint {
    let port = provider.url.port_or_known_default().unwrap_or(80);
    Endpoint { url: provider.url.clone(), transport: provider.transport, pin: Some(SocketAddr::new(addr, port)) }
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

pub fn join(addrs: &[IpAddr]) -> String {
    addrs.iter().map(IpAddr::to_string).collect::<Vec<_>>().join(", ")
}

/// Where the contract checks of a provider run: the first admitted client with a running
/// container, else the provider's own container (it sits on the provider's network).
pub fn contract_position(
    topology: &Arc<Topology>,
    scenario: &crate::config::Scenario,
    provider: &Provider,
) -> Option<(Position, Option<Target>)> {
    for consumer in &provider.allowed_consumers {
        let Some(client) = scenario.clients.iter().find(|c| &c.id == consumer) else { continue };
        if let Some(target) = topology.running(&client.service).first() {
            return Some((Position::of(&format!("client {}", client.id), target), Some(target.clone())));
        }
    }
    topology.running(&provider.service).first().map(|t| (Position::of(&format!("provider {}", provider.id), t), None))
}

/// Runs `job` at `position` once W is learned and the provider's host is resolved there
/// and judged against the engine's view; `client` is the container whose networks count
/// as shared (none: any network).
pub async fn with_resolution<F, Fut>(
    position: Position,
    provider: Provider,
    topology: Arc<Topology>,
    client: Option<Target>,
    job: F,
) -> Attempt
where
    F: FnOnce(Resolution, Vec<String>) -> Fut + Send + 'static,
    Fut: Future<Output = Attempt> + Send + 'static,
{
    position
        .run(move |netns| async move {
            let netns = netns.expect("a container position runs in a namespace");
            let view = match ClientView::learn(&netns).await {
                Ok(v) => v,
                Err(attempt) => return attempt,
            };
            let host = provider.url.host_str().unwrap_or_default().to_string();
            let targets = topology.running(&provider.service).to_vec();
            match resolve_provider(&view, &host, &targets, client.as_ref(), &topology).await {
                Ok((resolution, evidence)) => job(resolution, evidence).await,
                Err(attempt) => attempt,
            }
        })
        .await
}

/// The running container of a scenario client, or why there is none.
pub fn client_container(
    topology: &Topology,
    scenario: &crate::config::Scenario,
    client: &str,
) -> Result<Target, Attempt> {
    let service = scenario.clients.iter().find(|c| c.id == client).map(|c| c.service.as_str()).unwrap_or(client);
    topology.running(service).first().cloned().ok_or_else(|| {
        Attempt::not_ready(format!("client `{client}` has no running container of service `{service}`"), vec![])
    })
}
