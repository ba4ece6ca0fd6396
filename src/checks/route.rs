//! `route::<client>-><provider>`: from the client's own namespace, the provider's name
//! resolves (as the client's libc resolves it) only to addresses of provider containers
//! on networks the client shares — never to the wildcard answer, another container, or a
//! hosts-file pin elsewhere — and every such address accepts TCP on the endpoint port.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::{BoxFuture, join_all};
use serde::{Deserialize, Serialize};

use super::kit::connect::{ConnectError, Connected, silenced_by_full_queue, tcp_connect_expecting_answer};
use super::kit::name::{self, NameSeen};
use super::kit::vantage::client_target;
use crate::check::Spec;
use crate::check::{Check, Probe, RunContext, named};
use crate::config::Suite;
use crate::config::{Family, Scenario};
use crate::model::{Attempt, CheckName, Finding, FindingKind, Relation};
use crate::netns::NsView;
use crate::netns::listener::Listener;

pub fn plan(scenario: &Scenario) -> Vec<Arc<dyn Check>> {
    let mut checks: Vec<Arc<dyn Check>> = Vec::new();
    for provider in scenario.providers.iter().filter(|p| !p.disabled) {
        for client in &provider.allowed_consumers {
            checks.push(named(
                CheckName::pair(Family::Route, client, Relation::Admitted, &provider.id),
                RouteCheck { client: client.clone(), provider: provider.id.clone() },
            ));
        }
    }
    checks
}

struct RouteCheck {
    client: String,
    provider: String,
}

/// What the client saw: the name, and a TCP connect to every answer outside W.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RouteObservation {
    pub name: NameSeen,
    pub port: u16,
    pub connects: Vec<(SocketAddr, Connected)>,
}

/// What the client does: resolve the name, connect to every answer outside W.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RoutePlan {
    pub host: String,
    /// Names the client's own resolver must know (see [`name::observe`]).
    #[serde(default)]
    pub known: Vec<String>,
    pub port: u16,
    pub timeout: Duration,
}

impl RoutePlan {
    pub async fn observe(self, view: Rc<NsView>) -> Result<RouteObservation, String> {
        let name = name::observe(&view, &self.host, &self.known).await.map_err(Attempt::into_reason)?;
        let port = self.port;
        let targets: Vec<SocketAddr> = name.routed().into_iter().map(|a| SocketAddr::new(a, port)).collect();
        let outcomes = join_all(targets.iter().map(|a| tcp_connect_expecting_answer(*a, self.timeout))).await;
        Ok(RouteObservation { name, port, connects: targets.into_iter().zip(outcomes).collect() })
    }
}

impl Probe for RouteCheck {
    fn run<'a>(&'a self, ctx: &'a RunContext) -> BoxFuture<'a, Attempt> {
        Box::pin(async move {
            let (deployment, provider) = ctx.deployment(&self.provider);
            let topology = deployment.topology();
            let client = match client_target(&topology, &ctx.scenario, &self.client) {
                Ok(t) => t,
                Err(attempt) => return attempt,
            };
            let providers = topology.running(&provider.service).to_vec();
            let mut listening = match deployment.listeners_of(&providers).await {
                Ok(l) => l,
                Err(attempt) => return attempt,
            };
            let plan = RoutePlan {
                known: client.dns_names(),
                host: provider.url.host_str().unwrap_or_default().to_string(),
                port: provider.url.port_or_known_default().unwrap_or(80),
                timeout: ctx.suite.limits.connect_timeout,
            };
            let from = format!("client {}", self.client);
            let observation = match deployment.observe(&client, &from, plan).await {
                Ok(Ok(o)) => o,
                Ok(Err(reason)) => return Attempt::not_ready(reason, vec![]),
                Err(attempt) => return attempt,
            };
            // A connect with no answer: how the listeners stand now, after it (their accept
            // queues say whether the silence was the provider's own).
            if observation.connects.iter().any(|(_, r)| matches!(r, Err(ConnectError::NoAnswer { .. }))) {
                match deployment.listeners_of(&providers).await {
                    Ok(after) => listening = after,
                    Err(attempt) => return attempt,
                }
            }
            let roles = name::roles(&observation.name, &providers, Some(&client), &topology);
            if name::judge(&observation.name, &roles, &from).is_err()
                && let Some(why) = deployment.unsettled(&providers).await
            {
                return Attempt::not_ready(why, observation.name.evidence());
            }
            let mut attempt = judge(&observation, &roles, &listening, &from);
            if only_refusals(&attempt) {
                attempt = not_yet_if_unsettled(attempt, deployment.unsettled(&providers).await);
            }
            attempt.lead_with(deployment.probed_by(&client, &from));
            attempt
        })
    }
}

/// The verdict rests on refused connects alone ("listens but cannot connect").
fn only_refusals(attempt: &Attempt) -> bool {
    matches!(attempt, Attempt::Fail { findings, .. }
        if findings.iter().all(|f| f.kind == FindingKind::ProviderNotAccepting))
}

/// Pure: the listeners were read before the connect. While a replica stopped, restarted
/// or has just started (`unsettled` says which), a refused connect is a process that is
/// gone or not up yet, not a provider that listens and turns clients away: not judged
/// yet. Once every replica is the process discovery saw and has run a while, it fails.
fn not_yet_if_unsettled(attempt: Attempt, unsettled: Option<String>) -> Attempt {
    match (only_refusals(&attempt), attempt, unsettled) {
        (true, Attempt::Fail { evidence, .. }, Some(why)) => Attempt::not_ready(why, evidence),
        (_, attempt, _) => attempt,
    }
}

/// Pure: every answer is the provider's (see [`name::judge`]), and every provider address
/// answered accepts TCP. A refused connect is "still starting" while the provider is not
/// yet seen listening on the port; once it listens, a refused connect is a failure. A
/// connect with no answer at a listener whose accept queue is full is not judged: the
/// kernel drops every SYN there, whoever sends it (a paused or hung provider).
pub fn judge(
    o: &RouteObservation,
    roles: &[(std::net::IpAddr, name::Role)],
    listening: &BTreeMap<String, Vec<Listener>>,
    from: &str,
) -> Attempt {
    let mut evidence = o.name.evidence();
    let owned = match name::judge(&o.name, roles, from) {
        Ok(owned) => owned,
        Err(findings) => return Attempt::failed(findings, evidence),
    };
    let mut findings = Vec::new();
    let mut starting = Vec::new();
    // A client's connect loop walks the answer: a replica reached at one of its addresses
    // (IPv6, when it listens there only) is reached, whatever another address refused.
    let reached: Vec<(String, SocketAddr)> = owned
        .iter()
        .filter(|(addr, _, _)| o.connects.iter().any(|(a, r)| *a == SocketAddr::new(*addr, o.port) && r.is_ok()))
        .map(|(addr, container, _)| (container.clone(), SocketAddr::new(*addr, o.port)))
        .collect();
    for (addr, container, network) in owned {
        let target = SocketAddr::new(addr, o.port);
        let listens = match listening.get(&container) {
            Some(ls) => ls.iter().any(|l| l.addr.port() == o.port && l.accepts_on(addr)),
            // A virtual IP: it leads to whichever replica listens.
            None => listening.values().flatten().any(|l| l.addr.port() == o.port && !l.is_loopback()),
        };
        match o.connects.iter().find(|(a, _)| *a == target).map(|(_, r)| r) {
            Some(Ok(())) => evidence.push(format!("{target} ({container} on {network}) accepted TCP")),
            Some(Err(e)) if let Some((_, other)) = reached.iter().find(|(c, _)| *c == container) => evidence.push(
                format!("{target} ({container} on {network}): {e}; the client's connect loop goes on to {other}, which accepted"),
            ),
            Some(Err(e)) if let Some(why) = silenced_by_full_queue(e, listening, &container, o.port) => {
                evidence.push(format!("{target} ({container} on {network}): {e}"));
                starting.push(why);
            }
            Some(Err(e)) if listens => {
                let line = format!("{target} ({container} on {network}): {e}");
                evidence.push(line.clone());
                findings.push(
                    Finding::new(
                        FindingKind::ProviderNotAccepting,
                        "{container} listens on port {port} but {from} cannot connect to {addr} on {network}: {error}",
                    )
                    .fact("addr", target)
                    .fact("container", &container)
                    .fact("port", o.port)
                    .fact("from", from)
                    .fact("network", &network)
                    .fact("error", e)
                    .proven_by(line),
                );
            }
            Some(Err(e)) => {
                starting.push(format!("{target} ({container}): {e}; it does not listen on port {} yet", o.port))
            }
            None => starting.push(format!("{target} ({container}) was not tried")),
        }
    }
    if !findings.is_empty() {
        return Attempt::failed(findings, evidence);
    }
    if !starting.is_empty() {
        return Attempt::not_ready(
            format!("`{}` resolves to the provider but it is not accepting yet: {}", o.name.host, starting.join("; ")),
            evidence,
        );
    }
    Attempt::Pass { evidence }
}

/// The family, registered once (`checks::FAMILIES`).
pub const SPEC: Spec = Spec { family: Family::Route, plan: planned, explain };

fn planned(scenario: &Scenario, _: &Suite) -> Vec<Arc<dyn Check>> {
    plan(scenario)
}

/// What a check of this family proves, and where it looks from (`cordon explain`).
fn explain(_: &CheckName) -> Option<(&'static str, &'static str)> {
    Some((
        "the provider's name resolves, as the client's libc resolves it (hosts file, then DNS with its search list), only to addresses of provider containers on networks the client shares — never to the wildcard answer or another container — and every such address accepts TCP on the endpoint port",
        "the client container's own network namespace",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dns::{AnswerSource, NameAnswer, WildcardSet};
    use name::Role;

    const NO_ANSWER: ConnectError = ConnectError::NoAnswer { within_ms: 1000 };

    fn obs(connects: Vec<(&str, Connected)>) -> RouteObservation {
        RouteObservation {
            name: NameSeen {
                unknown: false,
                host: "native".into(),
                wildcard: WildcardSet::default(),
                answer: NameAnswer {
                    source: AnswerSource::Dns,
                    addrs: connects.iter().map(|(a, _)| a.parse::<SocketAddr>().unwrap().ip()).collect(),
                },
            },
            port: 8000,
            connects: connects.into_iter().map(|(a, r)| (a.parse().unwrap(), r)).collect(),
        }
    }

    fn owned(o: &RouteObservation) -> Vec<(std::net::IpAddr, Role)> {
        o.name
            .answer
            .addrs
            .iter()
            .enumerate()
            .map(|(i, a)| (*a, Role::Provider { container: format!("native_{i}"), network: "net".into() }))
            .collect()
    }

    fn listening(containers: &[&str]) -> BTreeMap<String, Vec<Listener>> {
        containers.iter().map(|c| (c.to_string(), vec![Listener::at("0.0.0.0:8000".parse().unwrap())])).collect()
    }

    /// A refused connect from a process that stayed is a failure; from one that stopped,
    /// restarted or just started, it waits; a name that leads elsewhere is never excused.
    #[rstest::rstest]
    #[case::settled(FindingKind::ProviderNotAccepting, None, "fail")]
    #[case::restarted(FindingKind::ProviderNotAccepting, Some("native_1 stopped or restarted"), "not ready")]
    #[case::foreign_while_restarting(FindingKind::ForeignAddress, Some("native_1 stopped or restarted"), "fail")]
    fn a_refused_connect_waits_only_while_a_replica_is_unsettled(
        #[case] kind: FindingKind,
        #[case] unsettled: Option<&str>,
        #[case] want: &str,
    ) {
        let failed = Attempt::failed(vec![Finding::new(kind, "x")], vec!["seen".into()]);
        let got = match not_yet_if_unsettled(failed, unsettled.map(str::to_string)) {
            Attempt::Fail { .. } => "fail",
            Attempt::NotReady { reason, evidence } => {
                assert_eq!((reason.as_str(), evidence.as_slice()), (unsettled.unwrap(), &["seen".to_string()][..]));
                "not ready"
            }
            other => panic!("{other:?}"),
        };
        assert_eq!(got, want);
    }

    #[test]
    fn every_replica_answered_must_accept() {
        let o = obs(vec![("10.0.1.5:8000", Ok(())), ("10.0.1.6:8000", Ok(()))]);
        assert!(judge(&o, &owned(&o), &listening(&["native_0", "native_1"]), "c").is_pass());
        let o = obs(vec![("10.0.1.5:8000", Ok(())), ("10.0.1.6:8000", Err(NO_ANSWER))]);
        match judge(&o, &owned(&o), &listening(&["native_0", "native_1"]), "c") {
            Attempt::Fail { findings, .. } => assert_eq!(findings[0].kind, FindingKind::ProviderNotAccepting),
            other => panic!("{other:?}"),
        }
    }

    /// A dual-stack replica listening on IPv6 only: its IPv4 answer refuses, the client's
    /// connect loop goes on to its IPv6 answer. A replica none of whose answers accepts
    /// still fails.
    #[test]
    fn a_replica_reached_at_one_of_its_addresses_is_reached() {
        let o = obs(vec![("10.0.1.5:8000", Err(ConnectError::Refused)), ("[fd00:1::5]:8000", Ok(()))]);
        let roles: Vec<(std::net::IpAddr, Role)> = o
            .name
            .answer
            .addrs
            .iter()
            .map(|a| (*a, Role::Provider { container: "native_0".into(), network: "net".into() }))
            .collect();
        let six = BTreeMap::from([("native_0".to_string(), vec![Listener::at("[::]:8000".parse().unwrap())])]);
        let attempt = judge(&o, &roles, &six, "c");
        assert!(attempt.is_pass(), "{attempt:?}");
        assert!(attempt.evidence().iter().any(|l| l.contains("goes on to [fd00:1::5]:8000, which accepted")));
        let o =
            obs(vec![("10.0.1.5:8000", Err(ConnectError::Refused)), ("[fd00:1::5]:8000", Err(ConnectError::Refused))]);
        assert!(matches!(judge(&o, &roles, &six, "c"), Attempt::Fail { .. }));
    }

    /// A paused or hung provider: once its accept queue is full the kernel drops every
    /// SYN, so a connect with no answer says nothing of the client's path and is not
    /// judged. The same silence at a listener with room, or a reset, is the provider's.
    #[rstest::rstest]
    #[case::queue_full_no_answer(Err(NO_ANSWER), 129, "not ready")]
    #[case::queue_with_room_no_answer(Err(NO_ANSWER), 12, "fail")]
    #[case::queue_full_refused(Err(ConnectError::Refused), 129, "fail")]
    #[case::queue_full_connected(Ok(()), 129, "pass")]
    fn a_connect_with_no_answer_at_a_full_accept_queue_is_not_judged(
        #[case] outcome: Connected,
        #[case] waiting: u32,
        #[case] want: &str,
    ) {
        let o = obs(vec![("10.0.1.5:8000", outcome)]);
        let queue = Some(crate::netns::listener::AcceptQueue { waiting, backlog: 128 });
        let l =
            BTreeMap::from([("native_0".to_string(), vec![Listener { addr: "0.0.0.0:8000".parse().unwrap(), queue }])]);
        let got = match judge(&o, &owned(&o), &l, "c") {
            Attempt::Pass { .. } => "pass",
            Attempt::Fail { findings, .. } => {
                assert_eq!(findings[0].kind, FindingKind::ProviderNotAccepting);
                "fail"
            }
            Attempt::NotReady { reason, .. } => {
                assert!(reason.contains("accept queue is full (129 waiting, backlog 128)"), "{reason}");
                "not ready"
            }
            other => panic!("{other:?}"),
        };
        assert_eq!(got, want);
    }

    #[test]
    fn a_refused_connect_before_the_provider_listens_is_not_ready() {
        let o = obs(vec![("10.0.1.5:8000", Err(ConnectError::Refused))]);
        assert!(matches!(judge(&o, &owned(&o), &listening(&[]), "c"), Attempt::NotReady { .. }));
    }
}
