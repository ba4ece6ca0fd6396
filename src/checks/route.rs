//! `route::<client>-><provider>`: from the client's own namespace, the provider's name
//! resolves to an address outside the wildcard set W that belongs to a provider container
//! on a network the client shares, and that address accepts TCP on the endpoint port.

use std::net::SocketAddr;
use std::sync::Arc;

use futures_util::future::BoxFuture;

use super::position::{Position, Resolution, client_container, join, tcp_connect, with_resolution};
use crate::config::{Family, Scenario};
use crate::model::{Attempt, CheckName};
use crate::runner::{Check, Probe, RunContext, named};

pub fn plan(scenario: &Scenario) -> Vec<Arc<dyn Check>> {
    let mut checks: Vec<Arc<dyn Check>> = Vec::new();
    for provider in scenario.providers.iter().filter(|p| !p.disabled) {
        for client in &provider.allowed_consumers {
            checks.push(named(
                pair_name(Family::Route, client, "->", &provider.id),
                RouteCheck { client: client.clone(), provider: provider.id.clone() },
            ));
        }
    }
    checks
}

pub fn pair_name(family: Family, client: &str, arrow: &str, provider: &str) -> CheckName {
    CheckName::new(family, format!("{client}{arrow}{provider}"))
}

pub fn describe(resolution: &Resolution) -> String {
    match resolution {
        Resolution::Nothing => "the name does not resolve".into(),
        Resolution::OnlyWildcard(addrs) => format!(
            "it resolves only to wildcard address(es) [{}]: the name answers through the wildcard DNS record, not through a route to the provider",
            join(addrs)
        ),
        Resolution::Foreign(addrs) => {
            format!("it resolves to [{}], which is no provider container on a network the client shares", join(addrs))
        }
        Resolution::Owned { owned, stray } => {
            let owned: Vec<String> = owned.iter().map(|(a, n)| format!("{a} on {n}")).collect();
            match stray.is_empty() {
                true => format!("it resolves to [{}]", owned.join(", ")),
                false => format!(
                    "it resolves to the provider at [{}] but also to [{}], where a client may land instead",
                    owned.join(", "),
                    join(stray)
                ),
            }
        }
    }
}

struct RouteCheck {
    client: String,
    provider: String,
}

impl Probe for RouteCheck {
    fn run<'a>(&'a self, ctx: &'a RunContext) -> BoxFuture<'a, Attempt> {
        Box::pin(async move {
            let (topology, provider) = ctx.deployment(&self.provider);
            let provider = provider.clone();
            let client_target = match client_container(&topology, &ctx.scenario, &self.client) {
                Ok(t) => t,
                Err(attempt) => return attempt,
            };
            let timeout = ctx.suite.limits.connect_timeout;
            let label = format!("client {}", self.client);
            let host = provider.url.host_str().unwrap_or_default().to_string();
            let port = provider.url.port_or_known_default().unwrap_or(80);
            let position = Position::of(&label, &client_target);
            with_resolution(
                position,
                provider,
                topology,
                Some(client_target),
                move |resolution, mut evidence| async move {
                    let Resolution::Owned { owned: addrs, stray } = &resolution else {
                        return Attempt::fail(
                            format!("no route from {label} to `{host}`: {}", describe(&resolution)),
                            evidence,
                        );
                    };
                    if !stray.is_empty() {
                        return Attempt::fail(
                            format!("ambiguous route from {label} to `{host}`: {}", describe(&resolution)),
                            evidence,
                        );
                    }
                    let mut refusals = Vec::new();
                    for (addr, network) in addrs {
                        match tcp_connect(SocketAddr::new(*addr, port), timeout).await {
                            Ok(()) => {
                                evidence.push(format!("{addr}:{port} on network {network} accepted TCP"));
                                return Attempt::Pass { evidence };
                            }
                            Err(e) => refusals.push(format!("{addr}:{port} on {network}: {e}")),
                        }
                    }
                    evidence.extend(refusals.iter().cloned());
                    // The address is the provider's own: a refused connect is a provider
                    // still starting, retried until the deadline.
                    Attempt::not_ready(
                        format!(
                            "`{host}` resolves to the provider but no address accepts TCP on port {port}: {}",
                            refusals.join("; ")
                        ),
                        evidence,
                    )
                },
            )
            .await
        })
    }
}
