//! Doors: an address and port of a container (its own, a port the engine publishes, a
//! swarm VIP) that a vantage knocks on, what answered, and what an open door means: a
//! client's lateral reach (`reach::`) or a sidecar's egress (`sidecar::<p>::egress`).
//! A port is judged only once its container is seen listening on it; a connect that
//! succeeds is repeated, and one the engine let through once and never again is
//! transient.

use std::collections::{BTreeMap, BTreeSet};
use std::net::{IpAddr, SocketAddr};
use std::rc::Rc;
use std::time::Duration;

use futures_util::future::join_all;
use serde::{Deserialize, Serialize};

use super::connect::{ConnectError, Connected, silenced_by_full_queue, tcp_connect};
use crate::engine::Target;
use crate::model::{Attempt, Finding, FindingKind, Outcome};
use crate::netns::NsView;
use crate::netns::listener::Listener;
use crate::topology::Topology;

mod answer;
#[cfg(test)]
pub use answer::answer_of;
use answer::answered_by_container;
pub(crate) use answer::references;
pub use answer::{Answer, AskWho, who_answers};

/// How a door is reached.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Via {
    /// The container's own address.
    Direct,
    /// A port the engine publishes on the host, through a gateway of the client.
    Published { container_port: String },
    /// A swarm service's virtual IP on one network (vip endpoint mode).
    Vip,
}

impl Door {
    /// `finding` with this door put before it, in the one set of words a door is shown
    /// with (here and in evidence), and the door's facts: `addr`, `container`, `network`,
    /// and `container_port` for a published port.
    pub fn before(&self, finding: Finding) -> Finding {
        let finding = match &self.via {
            Via::Direct => finding.prefixed("{addr} ({container} on network {network})"),
            Via::Published { container_port } => finding
                .prefixed(
                    "{addr} (the host port published for {container} {container_port}, through gateway {network})",
                )
                .fact("container_port", container_port),
            Via::Vip => finding.prefixed("{addr} (the virtual IP of service {container} on network {network})"),
        };
        finding.fact("addr", self.addr).fact("container", &self.container).fact("network", &self.network)
    }

    /// The port the container itself listens on behind this door.
    pub fn container_port(&self) -> u16 {
        match &self.via {
            Via::Published { container_port } => {
                container_port.split('/').next().and_then(|p| p.parse().ok()).unwrap_or(self.addr.port())
            }
            Via::Direct | Via::Vip => self.addr.port(),
        }
    }
}

/// One address and port to try, and whose it is.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Door {
    pub addr: SocketAddr,
    pub container: String,
    pub network: String,
    pub via: Via,
}

impl std::fmt::Display for Door {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&crate::model::phrase(|f| self.before(f)))
    }
}

/// One door tried: the first connect, and the repeats of a success.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Knock {
    pub door: Door,
    pub first: Connected,
    pub repeats: Vec<Connected>,
    /// What answered an HTTP request on the opened connection (swarm: who answers).
    #[serde(default)]
    pub answer: Option<Answer>,
}

/// What the plan knows before anything is tried.
#[derive(Clone, Debug, Default)]
pub struct Surface {
    pub doors: Vec<Door>,
    /// Declared ports nobody is seen listening on yet: (container, port).
    pub not_listening: Vec<(String, u16)>,
    /// Loopback-only listeners, for evidence.
    pub loopback_only: Vec<String>,
    /// Swarm: a connect proves nothing (a packet to an overlay the client is not on may
    /// leave the node and be answered upstream); a door counts only when it answers as
    /// the container behind it answers from its own namespace: (container, port) → answer.
    pub references: Option<BTreeMap<(String, u16), Answer>>,
    /// IPv6 addresses on the way still in duplicate address detection (see
    /// [`super::connect::ipv6_settling`]): until they settle, a failed IPv6 connect proves nothing.
    pub settling: Vec<String>,
    /// The listeners behind the doors, read again after a connect got no answer: at a
    /// listener whose accept queue is full that silence proves nothing (see
    /// [`super::connect::silenced_by_full_queue`]).
    pub listening_after: BTreeMap<String, Vec<Listener>>,
}

/// Every door of `targets`: each address on each network × every port a container
/// listens on there or declares; and every published host port through each gateway.
pub fn surface(
    topology: &Topology,
    targets: &[Target],
    listening: &BTreeMap<String, Vec<Listener>>,
    declared: &[u16],
    gateways: &[IpAddr],
) -> Surface {
    let mut s = Surface::default();
    for t in targets {
        let ls = listening.get(&t.name).cloned().unwrap_or_default();
        for l in ls.iter().filter(|l| l.is_loopback()) {
            s.loopback_only.push(format!("{} listens on {l} (loopback only)", t.name));
        }
        for port in declared {
            if !ls.iter().any(|l| l.addr.port() == *port && !l.is_loopback()) {
                s.not_listening.push((t.name.clone(), *port));
            }
        }
        for att in &t.attachments {
            let network = topology.network_key(&att.network).to_string();
            for addr in att.ipv4.map(IpAddr::V4).into_iter().chain(att.ipv6.map(IpAddr::V6)) {
                let mut ports: BTreeSet<u16> =
                    ls.iter().filter(|l| l.accepts_on(addr)).map(|l| l.addr.port()).collect();
                ports.extend(declared);
                for port in ports {
                    s.doors.push(Door {
                        addr: SocketAddr::new(addr, port),
                        container: t.name.clone(),
                        network: network.clone(),
                        via: Via::Direct,
                    });
                }
            }
        }
        for p in t.published.iter().filter(|p| p.container_port.ends_with("/tcp")) {
            let Ok(host_port) = p.host_port.parse::<u16>() else { continue };
            let mut via: Vec<IpAddr> = Vec::new();
            match p.host_ip.parse::<IpAddr>() {
                Ok(ip) if ip.is_loopback() => continue,
                Ok(ip) if !ip.is_unspecified() => via.push(ip),
                _ => via.extend(gateways),
            }
            for gw in via {
                s.doors.push(Door {
                    addr: SocketAddr::new(gw, host_port),
                    container: t.name.clone(),
                    network: gw.to_string(),
                    via: Via::Published { container_port: p.container_port.clone() },
                });
            }
        }
    }
    s.doors.sort_by(|a, b| (a.addr, &a.container).cmp(&(b.addr, &b.container)));
    s.doors.dedup();
    s
}

/// What the client does: knock on every door; in swarm also ask who answers.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct KnockPlan {
    pub doors: Vec<Door>,
    pub timeout: Duration,
    /// Send one HTTP request on every connection that opened, and record the answer.
    pub ask: Option<AskWho>,
}

impl KnockPlan {
    pub async fn observe(self, _view: Rc<NsView>) -> Vec<Knock> {
        knock_all(self.doors, self.timeout, self.ask).await
    }
}

/// Connects to every door at once; repeats each success three times over two seconds.
/// While the engine rewrites its isolation rules (any network created or removed), new
/// connects cross networks; on a loaded engine such a window lasted long enough for three
/// connects within 0.4 s to cross (seen in CI), so the repeats spread out: an open path
/// stays open, a window closes.
pub async fn knock_all(doors: Vec<Door>, timeout: Duration, ask: Option<AskWho>) -> Vec<Knock> {
    join_all(doors.into_iter().map(|door| {
        let ask = ask.clone();
        async move {
            let first = tcp_connect(door.addr, timeout).await;
            let mut repeats = Vec::new();
            let mut answer = None;
            if first.is_ok() {
                for pause in [100u64, 400, 1500] {
                    tokio::time::sleep(Duration::from_millis(pause)).await;
                    repeats.push(tcp_connect(door.addr, timeout).await);
                }
                if let Some(ask) = &ask {
                    answer = Some(who_answers(door.addr, ask, timeout).await);
                }
            }
            Knock { door, first, repeats, answer }
        }
    }))
    .await
}

/// The listeners of `targets` read again when a knock got no answer (`None` when none
/// did): whether a full accept queue, not the path, kept it silent.
pub(crate) async fn listeners_after_silence(
    deployment: &crate::deployment::Deployment,
    targets: &[Target],
    knocks: &[Knock],
) -> Option<Result<BTreeMap<String, Vec<Listener>>, Attempt>> {
    let silent = |k: &Knock| matches!(k.first, Err(ConnectError::NoAnswer { .. }));
    let behind: Vec<Target> =
        targets.iter().filter(|t| knocks.iter().any(|k| silent(k) && k.door.container == t.name)).cloned().collect();
    if behind.is_empty() {
        return None;
    }
    Some(deployment.listeners_of(&behind).await)
}

/// Every virtual IP of the service on every network, on every port a door of the
/// service has.
pub fn vip_doors(vips: &[(IpAddr, String)], service: &str, doors: &[Door]) -> Vec<Door> {
    let ports: BTreeSet<u16> = doors.iter().filter(|d| d.via == Via::Direct).map(|d| d.addr.port()).collect();
    let mut out = Vec::new();
    for (addr, network) in vips {
        for port in &ports {
            out.push(Door {
                addr: SocketAddr::new(*addr, *port),
                container: service.to_string(),
                network: network.clone(),
                via: Via::Vip,
            });
        }
    }
    out
}

/// What it means that a door opened: a client's lateral reach, or a sidecar's egress.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Crossing {
    Lateral,
    Egress,
}

impl Crossing {
    /// The kind of a door that opened, and how it crossed (the sentence after the door).
    fn finding(self, via: &Via) -> (FindingKind, &'static str) {
        match (self, via) {
            (Crossing::Lateral, Via::Direct) => (FindingKind::LateralReach, ": lateral reach through a shared network"),
            (Crossing::Lateral, Via::Vip) => {
                (FindingKind::LateralReach, ": lateral reach through the service's virtual IP")
            }
            (Crossing::Lateral, Via::Published { .. }) => {
                (FindingKind::PublishedPortReach, ": reach through a port published on the host")
            }
            (Crossing::Egress, Via::Direct) => (FindingKind::Egress, ": egress through a shared network"),
            (Crossing::Egress, Via::Vip) => (FindingKind::Egress, ": egress through the service's virtual IP"),
            (Crossing::Egress, Via::Published { .. }) => {
                (FindingKind::Egress, ": reach through a port published on the host")
            }
        }
    }
}

/// Pure: a reproducible connect to any door fails; a declared port nobody listens on yet
/// is not ready; a success that did not repeat is transient. With references (swarm),
/// a connect counts only when its answer is the container's own.
pub fn judge(surface: &Surface, knocks: &[Knock], who: &str, what: &str, crossing: Crossing) -> Outcome {
    let lead = |f: Finding| f.prefixed("{from} opened TCP to {target} at ").fact("from", who).fact("target", what);
    judge_led(surface, knocks, what, crossing, lead)
}

/// [`judge`], with each finding's opening (who opened TCP to what, up to the door: a
/// template ending in `" at "`, put before it with [`Finding::prefixed`]) given by `lead`.
pub fn judge_led(
    surface: &Surface,
    knocks: &[Knock],
    what: &str,
    crossing: Crossing,
    lead: impl Fn(Finding) -> Finding,
) -> Outcome {
    let mut transient = Vec::new();
    let attempt = judge_knocks(surface, knocks, what, crossing, &lead, &mut transient);
    Outcome { attempt, transient }
}

fn judge_knocks(
    surface: &Surface,
    knocks: &[Knock],
    what: &str,
    crossing: Crossing,
    lead: &dyn Fn(Finding) -> Finding,
    transient: &mut Vec<String>,
) -> Attempt {
    let mut evidence: Vec<String> = surface.loopback_only.clone();
    let mut findings = Vec::new();
    let mut unknown = Vec::new();
    let mut silenced = Vec::new();
    for k in knocks {
        match &k.first {
            Err(e) => {
                evidence.push(format!("{}: {e}", k.door));
                let (container, port) = (&k.door.container, k.door.container_port());
                silenced.extend(silenced_by_full_queue(e, &surface.listening_after, container, port));
            }
            Ok(()) if k.repeats.iter().all(Result::is_ok) => {
                let connected =
                    format!("{}: connected ({} of {} repeats too)", k.door, k.repeats.len(), k.repeats.len());
                evidence.push(connected.clone());
                let mut proof = vec![connected];
                if let Some(refs) = &surface.references {
                    match answered_by_container(refs, k) {
                        Some(Ok(line)) => {
                            evidence.push(line.clone());
                            proof.push(line);
                        }
                        Some(Err(line)) => {
                            evidence.push(line);
                            continue;
                        }
                        None => {
                            unknown.push(format!(
                                "{}: connected, but {} gave no answer of its own to compare with",
                                k.door, k.door.container
                            ));
                            continue;
                        }
                    }
                }
                let (kind, how) = crossing.finding(&k.door.via);
                findings.push(lead(k.door.before(Finding::new(kind, how))).proven_by_all(proof));
            }
            Ok(()) => transient.push(format!(
                "{} connected once but not again ({}): the engine let it through for a moment",
                k.door,
                k.repeats
                    .iter()
                    .map(|r| r.as_ref().err().map_or_else(|| "connected".into(), ToString::to_string))
                    .collect::<Vec<_>>()
                    .join("; ")
            )),
        }
    }
    if !findings.is_empty() {
        return Attempt::failed(findings, evidence);
    }
    if !silenced.is_empty() {
        silenced.dedup();
        return Attempt::not_ready(silenced.join("; "), evidence);
    }
    if !surface.settling.is_empty() && knocks.iter().any(|k| k.door.addr.is_ipv6() && k.first.is_err()) {
        return Attempt::not_ready(super::connect::settling_reason(&surface.settling), evidence);
    }
    if !surface.not_listening.is_empty() {
        let waiting: Vec<String> = surface.not_listening.iter().map(|(c, p)| format!("{c} on port {p}")).collect();
        return Attempt::not_ready(
            format!("not listening yet, so a refused connect proves nothing: {}", waiting.join(", ")),
            evidence,
        );
    }
    if !unknown.is_empty() {
        return Attempt::not_ready(unknown.join("; "), evidence);
    }
    if surface.doors.is_empty() {
        return Attempt::not_ready(format!("{what} has no address and port to probe"), evidence);
    }
    Attempt::Pass { evidence }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{Attachment, PublishedPort};

    fn target(name: &str, ip: &str, published: Vec<PublishedPort>) -> Target {
        Target {
            id: name.into(),
            name: name.into(),
            service: "native".into(),
            project: "p".into(),
            pid: 1,
            node_pid: 1,
            running: true,
            attachments: vec![Attachment {
                network: "p_net-native".into(),
                network_id: "n".into(),
                ipv4: Some(ip.parse().unwrap()),
                ipv6: None,
                aliases: vec![],
            }],
            netns_inode: None,
            netns_of: None,
            published,
            node: None,
        }
    }

    fn listens(pairs: &[(&str, &[&str])]) -> BTreeMap<String, Vec<Listener>> {
        pairs
            .iter()
            .map(|(c, ls)| (c.to_string(), ls.iter().map(|l| Listener::at(l.parse().unwrap())).collect()))
            .collect()
    }

    fn topo() -> Topology {
        Topology { project: "p".into(), ..Default::default() }
    }

    #[test]
    fn every_listener_every_replica_and_every_published_port_is_a_door() {
        let published = vec![PublishedPort {
            container_port: "8000/tcp".into(),
            host_ip: "0.0.0.0".into(),
            host_port: "18000".into(),
        }];
        let targets = [target("native_1", "10.0.1.5", published), target("native_2", "10.0.1.6", vec![])];
        let l = listens(&[
            ("native_1", &["0.0.0.0:8000", "0.0.0.0:9090", "127.0.0.1:6060"]),
            ("native_2", &["0.0.0.0:8000"]),
        ]);
        let gw: Vec<IpAddr> = vec!["10.0.0.1".parse().unwrap()];
        let s = surface(&topo(), &targets, &l, &[8000], &gw);
        let doors: Vec<String> = s.doors.iter().map(|d| d.addr.to_string()).collect();
        assert_eq!(doors, ["10.0.0.1:18000", "10.0.1.5:8000", "10.0.1.5:9090", "10.0.1.6:8000"]);
        assert!(s.not_listening.is_empty());
        assert_eq!(s.loopback_only.len(), 1);
    }

    #[test]
    fn a_declared_port_nobody_listens_on_is_not_ready() {
        let targets = [target("native_1", "10.0.1.5", vec![])];
        let s = surface(&topo(), &targets, &listens(&[("native_1", &[])]), &[8000], &[]);
        let knocks =
            vec![Knock { door: s.doors[0].clone(), first: Err(ConnectError::Refused), repeats: vec![], answer: None }];
        assert!(matches!(judge(&s, &knocks, "c", "`native`", Crossing::Lateral).attempt, Attempt::NotReady { .. }));
    }

    #[rstest::rstest]
    #[case::ipv6_closed_while_settling("[fd00:1::2]:8000", Err(NO_ANSWER), true, "not ready")]
    #[case::ipv6_closed_once_settled("[fd00:1::2]:8000", Err(NO_ANSWER), false, "pass")]
    #[case::ipv6_open_while_settling("[fd00:1::2]:8000", Ok(()), true, "fail")]
    #[case::ipv4_closed_while_settling("10.0.1.2:8000", Err(NO_ANSWER), true, "pass")]
    fn a_closed_ipv6_door_proves_nothing_while_an_address_on_the_way_is_tentative(
        #[case] addr: &str,
        #[case] first: Connected,
        #[case] settling: bool,
        #[case] want: &str,
    ) {
        let repeats = if first.is_ok() { vec![Ok(()), Ok(())] } else { vec![] };
        let k = knock(addr, Via::Direct, first, repeats);
        let s = Surface {
            doors: vec![k.door.clone()],
            settling: if settling { vec!["fd00:1::1 on br-1 (the host)".into()] } else { vec![] },
            ..Default::default()
        };
        let got = match judge(&s, &[k], "c", "`native`", Crossing::Lateral).attempt {
            Attempt::NotReady { reason, .. } => {
                assert!(reason.contains("fd00:1::1 on br-1 (the host)"), "{reason}");
                "not ready"
            }
            Attempt::Pass { .. } => "pass",
            Attempt::Fail { .. } => "fail",
            other => panic!("{other:?}"),
        };
        assert_eq!(got, want);
    }

    const NO_ANSWER: ConnectError = ConnectError::NoAnswer { within_ms: 1000 };

    /// A paused or hung provider: its full accept queue drops every SYN, so a door with no
    /// answer there proves no isolation; a reset, or a queue with room, still does; and a
    /// door that opened elsewhere fails whatever else waits.
    #[rstest::rstest]
    #[case::silent_at_a_full_queue(Err(NO_ANSWER), 129, false, "not ready")]
    #[case::silent_at_a_queue_with_room(Err(NO_ANSWER), 3, false, "pass")]
    #[case::reset_at_a_full_queue(Err(ConnectError::Refused), 129, false, "pass")]
    #[case::another_door_opened(Err(NO_ANSWER), 129, true, "fail")]
    fn a_silent_door_at_a_full_accept_queue_proves_nothing(
        #[case] first: Connected,
        #[case] waiting: u32,
        #[case] another_opened: bool,
        #[case] want: &str,
    ) {
        let mut knocks = vec![knock("10.0.6.4:8000", Via::Direct, first, vec![])];
        if another_opened {
            let mut open = knock("10.0.6.5:8000", Via::Direct, Ok(()), vec![Ok(()), Ok(())]);
            open.door.container = "native_3".into();
            knocks.push(open);
        }
        let queue = Some(crate::netns::listener::AcceptQueue { waiting, backlog: 128 });
        let s = Surface {
            doors: knocks.iter().map(|k| k.door.clone()).collect(),
            listening_after: BTreeMap::from([(
                "native_2".to_string(),
                vec![Listener { addr: "0.0.0.0:8000".parse().unwrap(), queue }],
            )]),
            ..Default::default()
        };
        let got = match judge(&s, &knocks, "c", "`native`", Crossing::Lateral).attempt {
            Attempt::NotReady { reason, .. } => {
                assert!(reason.contains("native_2 listens on 0.0.0.0:8000 but takes no connections"), "{reason}");
                "not ready"
            }
            Attempt::Pass { .. } => "pass",
            Attempt::Fail { .. } => "fail",
            other => panic!("{other:?}"),
        };
        assert_eq!(got, want);
    }

    fn knock(addr: &str, via: Via, first: Connected, repeats: Vec<Connected>) -> Knock {
        Knock {
            door: Door { addr: addr.parse().unwrap(), container: "native_2".into(), network: "postgres".into(), via },
            first,
            repeats,
            answer: None,
        }
    }

    #[test]
    fn a_reproducible_connect_fails_and_a_flicker_is_transient() {
        let s = Surface { doors: vec![knock("10.0.6.4:8000", Via::Direct, Ok(()), vec![]).door], ..Default::default() };
        let leak = knock("10.0.6.4:8000", Via::Direct, Ok(()), vec![Ok(()), Ok(())]);
        match judge(&s, &[leak], "c", "`legacy`", Crossing::Lateral).attempt {
            Attempt::Fail { findings, .. } => {
                assert_eq!(findings[0].kind, FindingKind::LateralReach);
                assert_eq!(findings[0].facts["addr"], "10.0.6.4:8000");
            }
            other => panic!("{other:?}"),
        }
        let flicker = knock("10.0.6.4:8000", Via::Direct, Ok(()), vec![Err(NO_ANSWER), Err(NO_ANSWER)]);
        let Outcome { attempt, transient } = judge(&s, &[flicker], "c", "`legacy`", Crossing::Lateral);
        assert!(attempt.is_pass(), "{attempt:?}");
        assert_eq!(transient.len(), 1, "{transient:?}");
        assert!(
            transient[0].contains("connected once but not again (no answer within 1.0s; no answer within 1.0s)"),
            "{transient:?}"
        );
        let published =
            knock("10.0.0.1:18000", Via::Published { container_port: "8000/tcp".into() }, Ok(()), vec![Ok(()), Ok(())]);
        let Attempt::Fail { findings, .. } =
            judge(&s, std::slice::from_ref(&published), "c", "`legacy`", Crossing::Lateral).attempt
        else {
            panic!()
        };
        assert_eq!(findings[0].kind, FindingKind::PublishedPortReach);
        let Attempt::Fail { findings, .. } = judge(&s, &[published], "c", "`legacy`", Crossing::Egress).attempt else {
            panic!()
        };
        assert_eq!(findings[0].kind, FindingKind::Egress);
        assert!(
            findings[0].sentence().ends_with(": reach through a port published on the host"),
            "{}",
            findings[0].sentence()
        );
    }
}
