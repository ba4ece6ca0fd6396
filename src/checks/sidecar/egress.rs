//! `sidecar::<provider>::egress`: an adapter sidecar holds its provider's credential, so
//! it "MUST use … a provider-only network, and no unrelated outbound network access".
//! From each sidecar replica's own namespace: no TCP connect succeeds to any address of
//! any other container of the deployment (other providers, their apps, clients, shared
//! infrastructure) or of any container on its networks that the deployment does not own
//! (a leftover, a debugging shell, another project's), on any port it listens on, nor to any port the engine publishes on
//! the host (through the sidecar's gateways). Its app and its DNS servers are the only
//! ones that may answer, and its app must answer: a sidecar that reaches nothing at all
//! proves nothing.
//!
//! Judged as `reach` judges (a success is repeated before it counts; in swarm a door
//! counts only when it answers as the container behind it answers from its own
//! namespace, since packets to an overlay the sidecar is not on may be answered
//! upstream).

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::{BoxFuture, join_all};
use serde::{Deserialize, Serialize};

use crate::check::{Check, Probe, RunContext, named};
use crate::checks::kit::door::{self, AskWho, Crossing, Door, Knock, Surface, Via, knock_all};
use crate::config::{Family, Mode, Provider, Scenario};
use crate::dns::ResolvConf;
use crate::engine::Target;
use crate::model::{Attempt, CheckName, Outcome};
use crate::netns::NsView;
use crate::topology::Topology;

pub fn plan(scenario: &Scenario) -> Vec<Arc<dyn Check>> {
    scenario
        .providers
        .iter()
        .filter(|p| p.sidecar_networks.is_some() && !p.disabled)
        .map(|p| {
            named(
                CheckName::of_provider(Family::Sidecar, &p.id, Some("egress")),
                EgressCheck { provider: p.id.clone() },
            )
        })
        .collect()
}

struct EgressCheck {
    provider: String,
}

/// What the sidecar does: knock on every door but its DNS servers', and on its app's.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct EgressPlan {
    pub doors: Vec<Door>,
    /// The app's doors: they must open (the control).
    pub app: Vec<Door>,
    pub timeout: Duration,
    pub ask: Option<AskWho>,
}

/// What the sidecar saw.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct EgressSeen {
    /// Doors not tried: port 53 of a name server in the sidecar's resolv.conf.
    pub dns: Vec<Door>,
    pub knocks: Vec<Knock>,
    pub app: Vec<Knock>,
}

impl EgressPlan {
    pub async fn observe(self, view: Rc<NsView>) -> EgressSeen {
        let servers = ResolvConf::parse(&view.files.resolv_conf).nameservers;
        let (dns, doors): (Vec<Door>, Vec<Door>) =
            self.doors.into_iter().partition(|d| d.addr.port() == 53 && servers.contains(&d.addr.ip()));
        let (knocks, app) = futures_util::join!(
            knock_all(doors, self.timeout, self.ask.clone()),
            knock_all(self.app, self.timeout, None)
        );
        EgressSeen { dns, knocks, app }
    }
}

impl Probe for EgressCheck {
    fn run<'a>(&'a self, ctx: &'a RunContext) -> BoxFuture<'a, Attempt> {
        Box::pin(async move { self.run_noting(ctx).await.attempt })
    }

    fn run_noting<'a>(&'a self, ctx: &'a RunContext) -> BoxFuture<'a, Outcome> {
        Box::pin(async move {
            let (deployment, provider) = ctx.deployment(&self.provider);
            let topology = deployment.topology();
            let sidecars = topology.running(&provider.service).to_vec();
            if sidecars.is_empty() {
                return Attempt::not_ready(
                    format!("sidecar service `{}` has no running container", provider.service),
                    vec![],
                )
                .into();
            }
            let others = others(&topology, provider);
            let listening = match deployment.listeners_of(&others).await {
                Ok(l) => l,
                Err(attempt) => return attempt.into(),
            };
            let ask =
                (deployment.mode == Mode::Swarm).then(|| AskWho { host: "egress-probe".into(), path: "/".into() });
            let timeout = ctx.suite.limits.connect_timeout;
            let mut findings = Vec::new();
            let mut evidence = Vec::new();
            let mut not_ready = Vec::new();
            let mut transient = Vec::new();
            let sides = Sides { topology: &topology, provider, others: &others, listening: &listening, ask, timeout };
            // Every replica at once: each waits out its connect timeouts.
            let seen = join_all(sidecars.iter().map(|sidecar| sides.observe(&deployment, sidecar))).await;
            for (sidecar, seen) in sidecars.iter().zip(seen) {
                let (surface, seen) = match seen {
                    Ok(x) => x,
                    Err(attempt) => return attempt.into(),
                };
                evidence.push(deployment.probed_by(sidecar, &format!("sidecar {}", provider.service)));
                evidence.extend(outsiders_tried(&topology, sidecar));
                let Outcome { attempt: verdict, transient: t } = judge(&sidecar.name, provider, &surface, &seen);
                let prefix = if sidecars.len() > 1 { format!("{}: ", sidecar.name) } else { String::new() };
                transient.extend(t.into_iter().map(|l| format!("{prefix}{l}")));
                match verdict {
                    Attempt::Fail { findings: f, evidence: e } => {
                        findings.extend(f);
                        evidence.extend(e.into_iter().map(|l| format!("{prefix}{l}")));
                    }
                    Attempt::NotReady { reason, evidence: e } => {
                        not_ready.push(format!("{prefix}{reason}"));
                        evidence.extend(e.into_iter().map(|l| format!("{prefix}{l}")));
                    }
                    other => evidence.extend(other.evidence().iter().map(|l| format!("{prefix}{l}"))),
                }
            }
            Outcome { attempt: Attempt::settle(findings, not_ready, evidence), transient }
        })
    }
}

/// What every sidecar replica is judged against.
struct Sides<'a> {
    topology: &'a Topology,
    provider: &'a Provider,
    others: &'a [Target],
    listening: &'a BTreeMap<String, Vec<crate::netns::listener::Listener>>,
    /// Swarm: who answers at a door that opened.
    ask: Option<AskWho>,
    timeout: Duration,
}

impl Sides<'_> {
    /// The doors from one replica (through its own gateways too), and what it saw there.
    async fn observe(
        &self,
        deployment: &crate::deployment::Deployment,
        sidecar: &Target,
    ) -> Result<(Surface, EgressSeen), Attempt> {
        let from = format!("sidecar {}", self.provider.service);
        let mut gateways = self.topology.gateways_of(sidecar);
        if let Ok(facts) = deployment.proc_facts(sidecar).await {
            gateways.extend(facts.gateways);
        }
        gateways.sort();
        gateways.dedup();
        let mut surface = door::surface(self.topology, self.others, self.listening, &[], &gateways);
        let services: std::collections::BTreeSet<&str> = self.others.iter().map(|t| t.service.as_str()).collect();
        for service in services {
            let vips = door::vip_doors(&self.topology.vips_of(service), service, &surface.doors);
            surface.doors.extend(vips);
        }
        let ends = std::iter::once(sidecar).chain(self.others);
        surface.settling = crate::checks::kit::connect::ipv6_settling(ends, surface.doors.iter().map(|d| d.addr.ip()));
        let plan = EgressPlan {
            doors: surface.doors.clone(),
            app: app_doors(self.topology, self.provider, sidecar),
            timeout: self.timeout,
            ask: self.ask.clone(),
        };
        let seen = deployment.observe(sidecar, &from, plan).await?;
        if let Some(after) = door::listeners_after_silence(deployment, self.others, &seen.knocks).await {
            surface.listening_after = after?;
        }
        match &self.ask {
            Some(ask) if seen.knocks.iter().any(|k| k.first.is_ok()) => {
                surface.references =
                    Some(door::references(deployment, self.others, &surface.doors, ask, self.timeout).await?);
            }
            Some(_) => surface.references = Some(BTreeMap::new()),
            None => {}
        }
        Ok((surface, seen))
    }
}

/// Every running container of the deployment but the sidecar's own service and its app,
/// and every running container on the deployment's networks that is not the deployment's
/// (a leftover, a debugging shell, another project's): whoever owns an endpoint the
/// sidecar can reach, it is egress.
fn others(topology: &Topology, provider: &Provider) -> Vec<Target> {
    let own: Vec<&str> =
        std::iter::once(provider.service.as_str()).chain(provider.app.as_ref().map(|a| a.service.as_str())).collect();
    topology
        .services
        .iter()
        .filter(|(s, _)| !own.contains(&s.as_str()))
        .flat_map(|(_, ts)| ts.iter().cloned())
        .chain(topology.outsiders.values().cloned())
        .collect()
}

/// Evidence: each container tried that is not the deployment's, and who owns it.
fn outsiders_tried(topology: &Topology, sidecar: &Target) -> Vec<String> {
    let shared: Vec<&str> = sidecar.attachments.iter().map(|a| a.network.as_str()).collect();
    topology
        .outsiders
        .values()
        .filter(|t| t.attachments.iter().any(|a| shared.contains(&a.network.as_str())))
        .map(|t| {
            let owner = if t.project.is_empty() {
                "of no compose project or stack".to_string()
            } else {
                format!("of project or stack `{}`", t.project)
            };
            format!(
                "{} is not the deployment's ({owner}): tried like any other container on the sidecar's networks",
                t.name
            )
        })
        .collect()
}

/// The app's declared ports at each app container's address on a network the sidecar
/// shares.
fn app_doors(topology: &Topology, provider: &Provider, sidecar: &Target) -> Vec<Door> {
    let Some(app) = &provider.app else { return vec![] };
    let shared: Vec<&str> = sidecar.attachments.iter().map(|a| a.network.as_str()).collect();
    let mut out = Vec::new();
    for t in topology.running(&app.service) {
        for att in t.attachments.iter().filter(|a| shared.contains(&a.network.as_str())) {
            let Some(addr) = att.ipv4.map(IpAddr::V4).or(att.ipv6.map(IpAddr::V6)) else { continue };
            for port in &app.ports {
                out.push(Door {
                    addr: SocketAddr::new(addr, *port),
                    container: t.name.clone(),
                    network: topology.network_key(&att.network).to_string(),
                    via: Via::Direct,
                });
            }
        }
    }
    out
}

/// Pure: no door but the app's and DNS opens; the app's does.
pub fn judge(sidecar: &str, provider: &Provider, surface: &Surface, seen: &EgressSeen) -> Outcome {
    let mut evidence: Vec<String> =
        seen.dns.iter().map(|d| format!("{d}: a name server of the sidecar, allowed")).collect();
    for k in &seen.app {
        match &k.first {
            Ok(()) => evidence.push(format!("{}: its app answers (the control)", k.door)),
            Err(e) => {
                return Attempt::not_ready(
                    format!(
                        "sidecar {sidecar} does not reach its own app at {} ({e}): a sidecar that reaches nothing proves nothing",
                        k.door
                    ),
                    evidence,
                )
                .into();
            }
        }
    }
    if provider.app.is_none() {
        evidence.push(format!("provider `{}` declares no `app`: every other container is someone else's", provider.id));
    }
    let tried: Vec<Door> = seen.knocks.iter().map(|k| k.door.clone()).collect();
    if tried.is_empty() {
        evidence
            .push("no other container of the deployment listens on an address or port the sidecar could try".into());
        return Attempt::Pass { evidence }.into();
    }
    let tried_surface = Surface { doors: tried, ..surface.clone() };
    let who = format!("sidecar replica {sidecar} of `{}`", provider.id);
    let Outcome { attempt, transient } =
        door::judge(&tried_surface, &seen.knocks, &who, "a container that is not its app", Crossing::Egress);
    let attempt = match attempt {
        Attempt::Fail { findings, evidence: e } => {
            evidence.extend(e);
            Attempt::failed(findings, evidence)
        }
        Attempt::NotReady { reason, evidence: e } => {
            evidence.extend(e);
            Attempt::not_ready(reason, evidence)
        }
        other => {
            evidence.extend(other.evidence().iter().cloned());
            Attempt::Pass { evidence }
        }
    };
    Outcome { attempt, transient }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::kit::connect::ConnectError;
    use crate::model::FindingKind;

    fn door(addr: &str, container: &str) -> Door {
        Door { addr: addr.parse().unwrap(), container: container.into(), network: "net-gitea".into(), via: Via::Direct }
    }

    fn knock(d: Door, open: bool) -> Knock {
        let r = |ok: bool| if ok { Ok(()) } else { Err(ConnectError::NoAnswer { within_ms: 1000 }) };
        Knock {
            door: d,
            first: r(open),
            repeats: if open { vec![Ok(()), Ok(()), Ok(())] } else { vec![] },
            answer: None,
        }
    }

    fn provider(app: bool) -> Provider {
        let mut p = crate::checks::kit::testing::provider_for_tests("gitea", &["get_status"]);
        p.app = app.then(|| crate::config::AppSpec { service: "gitea".into(), ports: vec![3000] });
        p
    }

    fn seen(knocks: Vec<Knock>, app: Vec<Knock>) -> EgressSeen {
        EgressSeen { dns: vec![], knocks, app }
    }

    #[test]
    fn only_the_app_answers() {
        let app = vec![knock(door("10.0.5.2:3000", "gitea_1"), true)];
        let closed = vec![knock(door("10.0.5.9:8000", "legacy_1"), false)];
        let s = Surface { doors: closed.iter().map(|k| k.door.clone()).collect(), ..Default::default() };
        assert!(judge("gitea-mcp_1", &provider(true), &s, &seen(closed, app.clone())).attempt.is_pass());
        let open = vec![knock(door("10.0.5.9:8000", "legacy_1"), true)];
        match judge("gitea-mcp_1", &provider(true), &s, &seen(open, app)).attempt {
            Attempt::Fail { findings, .. } => {
                assert_eq!(findings[0].kind, FindingKind::Egress);
                assert_eq!(
                    findings[0].sentence(),
                    "sidecar replica gitea-mcp_1 of `gitea` opened TCP to a container that is not its app at 10.0.5.9:8000 (legacy_1 on network net-gitea): egress through a shared network"
                );
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_sidecar_that_reaches_not_even_its_app_proves_nothing() {
        let app = vec![knock(door("10.0.5.2:3000", "gitea_1"), false)];
        let a = judge("gitea-mcp_1", &provider(true), &Surface::default(), &seen(vec![], app)).attempt;
        assert!(
            matches!(a, Attempt::NotReady { ref reason, .. } if reason.contains("does not reach its own app")),
            "{a:?}"
        );
    }

    #[test]
    fn nothing_else_listening_passes_and_says_so() {
        let app = vec![knock(door("10.0.5.2:3000", "gitea_1"), true)];
        let a = judge("gitea-mcp_1", &provider(true), &Surface::default(), &seen(vec![], app)).attempt;
        assert!(a.evidence().iter().any(|l| l.contains("no other container")), "{a:?}");
    }
}
