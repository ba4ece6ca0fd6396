//! `reach::<client>-/-><provider>`: a client the provider does not admit cannot open a
//! TCP connection to the provider — at any address of any replica, on any port a replica
//! listens on (read from its own namespace) or declares, nor through any port the engine
//! publishes for it on the host (reachable from every container through its gateways).
//!
//! `reach::<client>-/->app:<provider>`: no client at all reaches the app behind an
//! adapter sidecar directly; only the sidecar may.
//!
//! Containers outside the deployment on the client's networks are tried too (see
//! [`outsiders`]): one that honours the provider's credential is a way in.
//!
//! A port is judged only once its container is seen listening on it: until then a
//! refused connect proves nothing and the attempt is not ready. A connect that succeeds
//! is repeated; one the engine let through for a moment and never again is recorded as
//! transient, and only a reproducible one fails the check.

use std::collections::BTreeMap;
use std::sync::Arc;

use futures_util::future::BoxFuture;

use super::kit::door::{
    AskWho, Crossing, KnockPlan, judge_led, listeners_after_silence, references, surface, vip_doors,
};
use super::kit::vantage::client_target;
use crate::check::Spec;
use crate::check::{Check, Probe, RunContext, named};
use crate::config::Suite;
use crate::config::{Family, Mode, Provider, Scenario};
use crate::model::{Attempt, CheckName, Finding, Outcome, Relation};

pub mod outsiders;

pub fn plan(scenario: &Scenario) -> Vec<Arc<dyn Check>> {
    let mut checks: Vec<Arc<dyn Check>> = Vec::new();
    for provider in scenario.providers.iter().filter(|p| !p.disabled) {
        for client in scenario.clients.iter().filter(|c| !provider.allowed_consumers.contains(&c.id)) {
            checks.push(named(
                CheckName::pair(Family::Reach, &client.id, Relation::NotAdmitted, &provider.id),
                ReachCheck { client: client.id.clone(), provider: provider.id.clone(), app: false },
            ));
        }
        if provider.app.is_some() {
            for client in &scenario.clients {
                checks.push(named(
                    CheckName::pair(Family::Reach, &client.id, Relation::AppBehind, &provider.id),
                    ReachCheck { client: client.id.clone(), provider: provider.id.clone(), app: true },
                ));
            }
        }
    }
    checks
}

struct ReachCheck {
    client: String,
    provider: String,
    /// Probe the app behind the sidecar instead of the provider's endpoint.
    app: bool,
}

impl Probe for ReachCheck {
    fn run<'a>(&'a self, ctx: &'a RunContext) -> BoxFuture<'a, Attempt> {
        Box::pin(async move { self.run_noting(ctx).await.attempt })
    }

    fn run_noting<'a>(&'a self, ctx: &'a RunContext) -> BoxFuture<'a, Outcome> {
        Box::pin(async move {
            let (deployment, provider) = ctx.deployment(&self.provider);
            let topology = deployment.topology();
            let client = match client_target(&topology, &ctx.scenario, &self.client) {
                Ok(t) => t,
                Err(attempt) => return attempt.into(),
            };
            let (service, declared) = doors_of(provider, self.app);
            let targets = topology.running(&service).to_vec();
            if targets.is_empty() {
                return Attempt::not_ready(format!("`{service}` has no running container to probe"), vec![]).into();
            }
            let listening = match deployment.listeners_of(&targets).await {
                Ok(l) => l,
                Err(attempt) => return attempt.into(),
            };
            let mut gateways = topology.gateways_of(&client);
            if let Ok(facts) = deployment.proc_facts(&client).await {
                gateways.extend(facts.gateways);
            }
            gateways.sort();
            gateways.dedup();
            let mut surface = surface(&topology, &targets, &listening, &declared, &gateways);
            surface.doors.extend(vip_doors(&topology.vips_of(&service), &service, &surface.doors));
            let ends = std::iter::once(&client).chain(&targets);
            surface.settling = super::kit::connect::ipv6_settling(ends, surface.doors.iter().map(|d| d.addr.ip()));
            let swarm = deployment.mode == Mode::Swarm;
            let ask = swarm.then(|| AskWho {
                host: provider.url.host_str().unwrap_or_default().to_string(),
                path: provider.url.path().to_string(),
            });
            let timeout = ctx.suite.limits.connect_timeout;
            let from = format!("client {}", self.client);
            let plan = KnockPlan { doors: surface.doors.clone(), timeout, ask: ask.clone() };
            let knocks = match deployment.observe(&client, &from, plan).await {
                Ok(k) => k,
                Err(attempt) => return attempt.into(),
            };
            if let Some(after) = listeners_after_silence(&deployment, &targets, &knocks).await {
                match after {
                    Ok(l) => surface.listening_after = l,
                    Err(attempt) => return attempt.into(),
                }
            }
            if let Some(ask) = ask.filter(|_| knocks.iter().any(|k| k.first.is_ok())) {
                match references(&deployment, &targets, &surface.doors, &ask, timeout).await {
                    Ok(refs) => surface.references = Some(refs),
                    Err(attempt) => return attempt.into(),
                }
            } else if swarm {
                surface.references = Some(BTreeMap::new());
            }
            let what = if self.app {
                format!("the app behind `{}` ({service})", provider.id)
            } else {
                format!("`{}`", provider.id)
            };
            let lead = |f: Finding| {
                let f = if self.app {
                    f.prefixed("client {client} opened TCP to the app behind `{provider}` ({service}) at ")
                        .fact("service", &service)
                } else {
                    f.prefixed("client {client} is not admitted to `{provider}` but opened TCP to `{provider}` at ")
                };
                f.fact("client", &self.client).fact("provider", &provider.id)
            };
            let mut outcome = judge_led(&surface, &knocks, &what, Crossing::Lateral, lead);
            if !self.app {
                let secret = ctx.scenario.secret(&provider.credential).clone();
                let limits = ctx.suite.limits.clone();
                match outsiders::look(&deployment, (&self.client, &client), &from, provider, secret, limits).await {
                    Ok((findings, evidence)) => {
                        outcome.attempt = outsiders::merged(outcome.attempt, findings, evidence);
                    }
                    Err(attempt) => return attempt.into(),
                }
            }
            outcome.attempt.lead_with(deployment.probed_by(&client, &from));
            outcome
        })
    }
}

/// The service a reach check probes, and the ports it declares.
fn doors_of(provider: &Provider, app: bool) -> (String, Vec<u16>) {
    if app {
        let app = provider.app.as_ref().expect("planned only for providers with an app");
        return (app.service.clone(), app.ports.clone());
    }
    let mut ports = vec![provider.url.port_or_known_default().unwrap_or(80)];
    ports.extend(provider.app_ports.iter().copied());
    ports.sort();
    ports.dedup();
    (provider.service.clone(), ports)
}

/// The family, registered once (`checks::FAMILIES`).
pub const SPEC: Spec = Spec { family: Family::Reach, plan: planned, explain };

fn planned(scenario: &Scenario, _: &Suite) -> Vec<Arc<dyn Check>> {
    plan(scenario)
}

/// What a check of this family proves, and where it looks from (`cordon explain`); `None`
/// for one it does not plan.
fn explain(name: &CheckName) -> Option<(&'static str, &'static str)> {
    Some(match name.aspect.first().map(String::as_str) {
        _ if name.is_app() => (
            "no client reaches the app behind the provider's adapter sidecar directly: no TCP connect to any address of any app container, on any port it listens on or declares, or through a port published on the host",
            "the client container's own network namespace",
        ),
        _ => (
            "a client the provider does not admit opens no TCP connection to any address of any replica, on any port a replica listens on or declares, nor through any port published on the host; a success is repeated before it counts, and a port is judged only once the provider listens on it",
            "the client container's own network namespace",
        ),
    })
}
