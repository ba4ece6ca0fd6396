//! `session::<client>-><provider>`: from the client's namespace, at the address the
//! client's libc would use and at every other replica it shares a network with, with
//! the credential that client holds: the handshake succeeds, the tools list is read and
//! the deterministic read answers as contracted.

use std::net::{IpAddr, SocketAddr};
use std::rc::Rc;
use std::sync::Arc;

use futures_util::future::{BoxFuture, join_all};
use serde::{Deserialize, Serialize};

use super::kit::name::{self, NameSeen};
use super::kit::name_tries::{NameTry, ThroughTheName, judge_name_tries, through_the_name};
use super::kit::sessions::{SessionPlan, SessionRun, judge_runs, run_session};
use super::kit::vantage::{client_target, replicas_from};
use super::kit::wire;
use crate::check::Spec;
use crate::check::{Check, Probe, RunContext, named};
use crate::config::Suite;
use crate::config::{Family, Mode, ReadSpec, Scenario};
use crate::mcp::{Endpoint, EraChoice, Limits};
use crate::model::{Attempt, CheckName, Finding, FindingKind, Relation};
use crate::netns::NsView;
use crate::secret::Secret;

pub fn plan(scenario: &Scenario) -> Vec<Arc<dyn Check>> {
    let mut checks: Vec<Arc<dyn Check>> = Vec::new();
    for provider in scenario.providers.iter().filter(|p| !p.disabled) {
        for client in &provider.allowed_consumers {
            checks.push(named(
                CheckName::pair(Family::Session, client, Relation::Admitted, &provider.id),
                SessionCheck { client: client.clone(), provider: provider.id.clone() },
            ));
        }
    }
    checks
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
        let name = name::observe(&view, &self.host, &self.known).await.map_err(Attempt::into_reason)?;
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
        let tries = super::kit::name_tries::ERAS.iter().flat_map(|era| (0..self.name_tries).map(move |k| (*era, k)));
        let route = ThroughTheName {
            host: &self.host,
            replicas: &self.replicas,
            vips: &self.vips,
            endpoint: &self.endpoint,
            port: self.port,
            secret: &self.secret,
            limits: &self.limits,
            read: self.read.as_ref(),
        };
        let name_tries = join_all(tries.map(|(era, k)| through_the_name(&view, &route, era, k))).await;
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
                        "client `{client}` is admitted to `{provider}` but the scenario gives it no credential for it (clients.{client}.credentials.{provider})",
                    ).fact("client", &client.id).fact("provider", &provider.id)],
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

/// The family, registered once (`checks::FAMILIES`).
pub const SPEC: Spec = Spec { family: Family::Session, plan: planned, explain };

fn planned(scenario: &Scenario, _: &Suite) -> Vec<Arc<dyn Check>> {
    plan(scenario)
}

/// What a check of this family proves, and where it looks from (`cordon explain`).
fn explain(_: &CheckName) -> Option<(&'static str, &'static str)> {
    Some((
        "with the credential the client holds, at the address the client's libc gives first and at every other replica: the handshake succeeds, the tools list is read and the deterministic read answers as contracted",
        "the client container's own network namespace",
    ))
}
