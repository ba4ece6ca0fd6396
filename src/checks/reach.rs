//! `reach::<client>-/-><provider>`: a client the provider does not admit cannot open a
//! TCP connection to any address of any of the provider's containers, on the endpoint
//! port or the app ports the scenario declares — whatever networks they share.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use futures_util::future::{BoxFuture, join_all};

use super::position::{Position, client_container, tcp_connect};
use super::route::pair_name;
use crate::config::{Family, Scenario};
use crate::model::Attempt;
use crate::runner::{Check, Probe, RunContext, named};

pub fn plan(scenario: &Scenario) -> Vec<Arc<dyn Check>> {
    let mut checks: Vec<Arc<dyn Check>> = Vec::new();
    for provider in scenario.providers.iter().filter(|p| !p.disabled) {
        for client in scenario.clients.iter().filter(|c| !provider.allowed_consumers.contains(&c.id)) {
            checks.push(named(
                pair_name(Family::Reach, &client.id, "-/->", &provider.id),
                ReachCheck { client: client.id.clone(), provider: provider.id.clone() },
            ));
        }
    }
    checks
}

struct ReachCheck {
    client: String,
    provider: String,
}

/// One address and port to try, and where the engine says it lives.
#[derive(Clone)]
struct PortProbe {
    addr: SocketAddr,
    container: String,
    network: String,
}

impl Probe for ReachCheck {
    fn run<'a>(&'a self, ctx: &'a RunContext) -> BoxFuture<'a, Attempt> {
        Box::pin(async move {
            let (topology, provider) = ctx.deployment(&self.provider);
            let client_target = match client_container(&topology, &ctx.scenario, &self.client) {
                Ok(t) => t,
                Err(attempt) => return attempt,
            };
            let mut probes = Vec::new();
            for (target, ports) in topology.provider_surfaces(provider) {
                for att in &target.attachments {
                    let addrs = att.ipv4.map(IpAddr::V4).into_iter().chain(att.ipv6.map(IpAddr::V6));
                    for addr in addrs {
                        for port in &ports {
                            probes.push(PortProbe {
                                addr: SocketAddr::new(addr, *port),
                                container: target.name.clone(),
                                network: topology.network_key(&att.network).to_string(),
                            });
                        }
                    }
                }
            }
            if probes.is_empty() {
                return Attempt::not_ready(
                    format!("provider `{}` has no container address to probe", provider.id),
                    vec![],
                );
            }
            let timeout = ctx.suite.limits.connect_timeout;
            let label = format!("client {}", self.client);
            let provider_id = provider.id.clone();
            Position::of(&label, &client_target)
                .run(move |_netns| async move {
                    let outcomes = join_all(probes.iter().map(|p| tcp_connect(p.addr, timeout))).await;
                    let mut leaks = Vec::new();
                    let mut evidence = Vec::new();
                    for (probe, outcome) in probes.iter().zip(outcomes) {
                        match outcome {
                            Ok(()) => {
                                leaks.push(format!("{} ({} on network {})", probe.addr, probe.container, probe.network));
                                evidence.push(format!("{} ({} on {}): connected", probe.addr, probe.container, probe.network));
                            }
                            Err(e) => evidence.push(format!("{} ({} on {}): {e}", probe.addr, probe.container, probe.network)),
                        }
                    }
                    if leaks.is_empty() {
                        Attempt::Pass { evidence }
                    } else {
                        Attempt::fail(format!("{label} is not admitted to `{provider_id}` but opened TCP to {}: lateral reach through a shared network", leaks.join(", ")), evidence)
                    }
                })
                .await
        })
    }
}
