//! Sessions through the name, as a client behind swarm's load balancing has them: every
//! request resolves the provider's name again and opens a new connection, so one session's
//! requests land on whichever replica the name (DNS round robin) or the VIP sends them to.
//! A stateful provider with several replicas and no affinity loses its sessions this way;
//! the judge names the replica that did not know the session.

use std::net::{IpAddr, SocketAddr};

use serde::{Deserialize, Serialize};

use super::sessions::ErrorSeen;
use crate::config::ReadSpec;
use crate::mcp::{Endpoint, Era, EraChoice, Limits, McpClient, McpError};
use crate::model::{Finding, FindingKind};
use crate::netns::NsView;
use crate::secret::Secret;

/// One session through the name: each request, where it landed and how it went.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NameTry {
    /// The era asked for: the server's first offer, or the handshake on purpose.
    #[serde(default = "auto")]
    pub era: EraChoice,
    pub steps: Vec<TryStep>,
    /// The handshake era was asked for and the server does not speak it (a 4xx to
    /// `initialize`): no session of that era exists to lose.
    #[serde(default)]
    pub unspoken: bool,
}

fn auto() -> EraChoice {
    EraChoice::Auto
}

/// Every era a session through the name is tried in: the one the server offers first,
/// and the initialize handshake (stateful sessions are lost between replicas without
/// affinity even when the stateless era looks healthy).
pub const ERAS: [EraChoice; 2] = [EraChoice::Auto, EraChoice::Handshake];

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TryStep {
    pub step: String,
    /// The replica (or the VIP) the request went to.
    pub landed: String,
    /// It went to one of the service's virtual IPs.
    #[serde(default)]
    pub vip: bool,
    pub outcome: Result<(), ErrorSeen>,
}

/// What a session through the name is given: the name, where it may lead (the replicas
/// the client shares a network with, the service's VIPs), and what to send there.
pub struct ThroughTheName<'a> {
    pub host: &'a str,
    pub replicas: &'a [(Vec<IpAddr>, String)],
    pub vips: &'a [(IpAddr, String)],
    pub endpoint: &'a Endpoint,
    pub port: u16,
    pub secret: &'a Secret,
    pub limits: &'a Limits,
    pub read: Option<&'a ReadSpec>,
}

/// Opens a session through the name, lists tools and calls the read tool, resolving the
/// name before every request. Runs in the client's namespace. Request `i` of try `k` goes
/// to answer `(k + i) mod n`: the rotation DNS round robin gives a client's successive
/// lookups, made deterministic, so with two replicas every session's second request
/// lands on the replica that did not open it.
pub async fn through_the_name(view: &NsView, plan: &ThroughTheName<'_>, era: EraChoice, try_number: usize) -> NameTry {
    let done = |steps: Vec<TryStep>| NameTry { era, steps, unspoken: false };
    let answer = match plan.resolve(view, try_number).await {
        Ok(a) => a,
        Err(e) => return done(vec![failed("resolving", "-".into(), e)]),
    };
    let first = answer[0];
    let opener = match plan.client_at(&answer) {
        Ok(c) => c,
        Err(e) => return done(vec![failed("opening a session", plan.land(first), e.to_string())]),
    };
    let session = match opener.connect_era(era).await {
        Ok(s) => s,
        Err(e) => {
            let unspoken = era == EraChoice::Handshake && handshake_unspoken(&e);
            let step = plan.step("initialize", &opener, first, Err((&e).into()));
            return NameTry { era, steps: vec![step], unspoken };
        }
    };
    // The first step is named for what was sent: a stateless session opens with
    // server/discover, a stateful one with initialize.
    let opened_with = if session.era == Era::Stateless2026 { "server/discover" } else { "initialize" };
    let mut steps = vec![plan.step(opened_with, &opener, first, Ok(()))];
    steps.extend(plan.follow_up(view, &session, try_number).await);
    opener.close(session).await;
    done(steps)
}

impl ThroughTheName<'_> {
    /// Which replica an address is one of.
    fn replica_of(&self, addr: &IpAddr) -> Option<usize> {
        self.replicas.iter().position(|(addrs, _)| addrs.contains(addr))
    }

    fn is_vip(&self, addr: &IpAddr) -> bool {
        self.vips.iter().any(|(a, _)| a == addr)
    }

    /// The replica (or the VIP) an address names, for evidence.
    fn land(&self, addr: IpAddr) -> String {
        self.replica_of(&addr)
            .map(|i| self.replicas[i].1.clone())
            .or_else(|| self.vips.iter().find(|(a, _)| *a == addr).map(|(_, l)| l.clone()))
            .unwrap_or_else(|| addr.to_string())
    }

    /// The name's answer for request `request` of try `try_number`: rotated to start at
    /// the address that request goes to; an error when it leads anywhere but a replica or
    /// a VIP of the service, or does not name every replica yet.
    async fn resolve(&self, view: &NsView, request: usize) -> Result<Vec<IpAddr>, String> {
        let answer = view.resolve(self.host).await.map_err(|e| e.to_string())?;
        // The engine's DNS shuffles a dnsrr answer: sorted, the rotation is the same on
        // every run.
        let mut addrs = answer.addrs;
        addrs.sort();
        addrs.dedup();
        if addrs.is_empty() {
            return Err(format!("`{}` resolved to nothing", self.host));
        }
        // The credential goes to replicas (and the service's own VIPs) only.
        if let Some(stray) = addrs.iter().find(|addr| !self.is_vip(addr) && self.replica_of(addr).is_none()) {
            return Err(format!(
                "`{}` answered {stray}, which is no replica: the credential is not sent there",
                self.host
            ));
        }
        // Until the name answers every replica the client shares a network with, some
        // replica is never landed on: the rotation would prove nothing (not ready).
        // (A VIP stands for every task: the engine does the rotation.)
        let covered: std::collections::BTreeSet<usize> = addrs.iter().filter_map(|a| self.replica_of(a)).collect();
        if !addrs.iter().any(|a| self.is_vip(a)) && covered.len() < self.replicas.len() {
            return Err(format!(
                "`{}` answered {} of the {} replicas the client shares a network with: the engine's DNS has not caught up",
                self.host,
                covered.len(),
                self.replicas.len()
            ));
        }
        // The answer as this lookup hands it out, rotated to start at the chosen address: a
        // client's connect loop falls back along it when that one does not accept.
        let n = addrs.len();
        addrs.rotate_left(request % n);
        Ok(addrs)
    }

    /// A client pinned to the answer, in its order.
    fn client_at(&self, addrs: &[IpAddr]) -> Result<McpClient, McpError> {
        let addrs: Vec<SocketAddr> = addrs.iter().map(|a| SocketAddr::new(*a, self.port)).collect();
        McpClient::new(self.endpoint.pinned_in_order(&addrs), Some(self.secret.clone()), self.limits.clone())
    }

    /// A step, landed where its connection really ended up.
    fn step(&self, step: &str, client: &McpClient, asked: IpAddr, outcome: Result<(), ErrorSeen>) -> TryStep {
        TryStep {
            step: step.into(),
            landed: self.land(client.peer().map_or(asked, |p| p.ip())),
            vip: self.replica_of(&asked).is_none() && self.is_vip(&asked),
            outcome,
        }
    }

    /// The session's later requests (`tools/list`, then the read), each through a fresh
    /// lookup and connection, until one fails.
    async fn follow_up(&self, view: &NsView, session: &crate::mcp::Session, try_number: usize) -> Vec<TryStep> {
        let mut requests: Vec<&str> = vec!["tools/list"];
        if self.read.is_some() {
            requests.push("tools/call");
        }
        let mut steps = Vec::new();
        for (i, step) in requests.into_iter().enumerate() {
            let answer = match self.resolve(view, try_number + i + 1).await {
                Ok(a) => a,
                Err(e) => {
                    steps.push(failed(step, "-".into(), e));
                    break;
                }
            };
            let addr = answer[0];
            let client = match self.client_at(&answer) {
                Ok(c) => c,
                Err(e) => {
                    steps.push(failed(step, self.land(addr), e.to_string()));
                    break;
                }
            };
            let outcome = match (step, &self.read) {
                ("tools/call", Some(read)) => {
                    client.call_tool(session, &read.tool, read.arguments.clone()).await.map(drop)
                }
                _ => client.list_tools(session).await.map(drop),
            };
            let failed_here = outcome.is_err();
            steps.push(self.step(step, &client, addr, outcome.map_err(|e| (&e).into())));
            if failed_here {
                break;
            }
        }
        steps
    }
}

/// A step that never reached the server (the name, the client): not ready.
fn failed(step: &str, landed: String, text: String) -> TryStep {
    TryStep { step: step.into(), landed, vip: false, outcome: Err(ErrorSeen { text, not_ready: true }) }
}

/// A server that answers `initialize` with a 4xx or a JSON-RPC error speaks no handshake
/// era; anything else (a timeout, a 5xx) is the server not being ready.
fn handshake_unspoken(e: &McpError) -> bool {
    match e {
        McpError::Http { status, .. } => (400..500).contains(status),
        McpError::JsonRpc { .. } => true,
        _ => false,
    }
}

/// Pure: a request of a session that fails where the session was opened elsewhere is a
/// failure naming the replica that did not know it; errors of the "not ready" kind wait.
/// Returns findings, evidence lines and not-ready reasons.
/// `replicas_serve`: a session at every replica's own address succeeded. Then a VIP that
/// never answers leads nowhere (no IPVS on the node, a broken load balancer): a client
/// using the name cannot get in, and waiting for it to start changes nothing.
pub fn judge_name_tries(tries: &[NameTry], replicas_serve: bool) -> (Vec<Finding>, Vec<String>, Vec<String>) {
    let mut findings = Vec::new();
    let mut evidence = Vec::new();
    let mut waiting = Vec::new();
    for (i, t) in tries.iter().enumerate() {
        let era = match t.era {
            EraChoice::Auto => "",
            EraChoice::Handshake => " (initialize handshake)",
        };
        if t.unspoken {
            evidence.push(format!(
                "session {} through the name{era}: the server speaks no initialize handshake ({})",
                i + 1,
                t.steps.first().and_then(|s| s.outcome.as_ref().err()).map_or("", |e| e.text.as_str())
            ));
            continue;
        }
        let path: Vec<String> = t
            .steps
            .iter()
            .map(|s| match &s.outcome {
                Ok(()) => format!("{} at {} ok", s.step, s.landed),
                Err(e) => format!("{} at {} failed: {}", s.step, s.landed, e.text),
            })
            .collect();
        evidence.push(format!("session {} through the name{era}: {}", i + 1, path.join(" → ")));
        let opened = t.steps.first().filter(|s| s.outcome.is_ok()).map(|s| s.landed.clone());
        for s in &t.steps {
            let Err(e) = &s.outcome else { continue };
            if e.not_ready && s.vip && replicas_serve {
                findings.push(
                    Finding::new(
                        FindingKind::SessionFailed,
                        "the name answers {replica}, which never answers ({error}), while every replica serves at its own address: the VIP leads nowhere (no IPVS on the node?)",
                    )
                    .fact("replica", &s.landed)
                    .fact("error", &e.text),
                );
                continue;
            }
            if e.not_ready {
                waiting.push(format!(
                    "session {} through the name{era}: {} at {}: {}",
                    i + 1,
                    s.step,
                    s.landed,
                    e.text
                ));
                continue;
            }
            let handshake = t.era == EraChoice::Handshake;
            let finding = match &opened {
                Some(at) if *at != s.landed => Finding::new(
                    FindingKind::SessionFailed,
                    if handshake {
                        "the session (initialize handshake) opened at {opened} was not known to {replica}: {step} failed: {error} (requests through the name land on any replica; the provider keeps sessions per replica and has no affinity)"
                    } else {
                        "the session opened at {opened} was not known to {replica}: {step} failed: {error} (requests through the name land on any replica; the provider keeps sessions per replica and has no affinity)"
                    },
                )
                .fact("opened", at),
                _ => Finding::new(
                    FindingKind::SessionFailed,
                    if handshake {
                        "a session (initialize handshake) through the name failed at {replica}: {step} failed: {error}"
                    } else {
                        "a session through the name failed at {replica}: {step} failed: {error}"
                    },
                ),
            };
            findings.push(finding.fact("replica", &s.landed).fact("step", &s.step).fact("error", &e.text));
        }
    }
    findings.sort_by_key(Finding::sentence);
    findings.dedup_by(|a, b| a.facts.get("replica") == b.facts.get("replica") && a.kind == b.kind);
    (findings, evidence, waiting)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(step: &str, landed: &str, outcome: Result<(), (&str, bool)>) -> TryStep {
        TryStep {
            step: step.into(),
            landed: landed.into(),
            vip: landed.starts_with("the VIP"),
            outcome: outcome.map_err(|(t, n)| ErrorSeen { text: t.into(), not_ready: n }),
        }
    }

    #[test]
    fn a_session_unknown_to_another_replica_fails_naming_it() {
        let good = NameTry {
            era: EraChoice::Auto,
            unspoken: false,
            steps: vec![step("initialize", "a", Ok(())), step("tools/list", "a", Ok(()))],
        };
        let lost = NameTry {
            era: EraChoice::Auto,
            unspoken: false,
            steps: vec![
                step("initialize", "a", Ok(())),
                step("tools/list", "b", Err(("HTTP 404: Session not found", false))),
            ],
        };
        let (f, e, w) = judge_name_tries(&[good.clone(), lost.clone(), lost], true);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].kind, FindingKind::SessionFailed);
        assert_eq!(f[0].facts["replica"], "b");
        assert!(f[0].sentence().contains("opened at a was not known to b"), "{}", f[0].sentence());
        assert_eq!(e.len(), 3);
        assert!(w.is_empty());
        let (f, _, _) = judge_name_tries(&[good], true);
        assert!(f.is_empty());
    }

    /// Stateless sessions survive the rotation; the handshake sessions of the same server
    /// do not, and fail naming the replica. A server with no handshake era is no finding.
    #[test]
    fn the_handshake_era_is_judged_apart() {
        let stateless = NameTry {
            era: EraChoice::Auto,
            unspoken: false,
            steps: vec![step("server/discover", "a", Ok(())), step("tools/list", "b", Ok(()))],
        };
        let lost = NameTry {
            era: EraChoice::Handshake,
            unspoken: false,
            steps: vec![
                step("initialize", "a", Ok(())),
                step("tools/list", "b", Err(("HTTP 404: Session not found", false))),
            ],
        };
        let (f, e, _) = judge_name_tries(&[stateless.clone(), lost], true);
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(
            f[0].sentence().contains("the session (initialize handshake) opened at a was not known to b"),
            "{}",
            f[0].sentence()
        );
        assert!(e[0].contains("server/discover at a ok"), "{e:?}");
        let unspoken = NameTry {
            era: EraChoice::Handshake,
            unspoken: true,
            steps: vec![step("initialize", "a", Err(("HTTP 400", false)))],
        };
        let (f, e, w) = judge_name_tries(&[stateless, unspoken], true);
        assert!(f.is_empty() && w.is_empty(), "{f:?} {w:?}");
        assert!(e[1].contains("speaks no initialize handshake"), "{e:?}");
    }

    /// A VIP that never answers while every replica serves directly: a failure at once,
    /// not a wait to the deadline. While a replica itself is not serving yet, it waits.
    #[test]
    fn a_dead_vip_fails_at_once_when_the_replicas_serve() {
        let dead = NameTry {
            era: EraChoice::Auto,
            unspoken: false,
            steps: vec![step("initialize", "the VIP of service native at 10.9.0.2 on net", Err(("timed out", true)))],
        };
        let (f, _, w) = judge_name_tries(std::slice::from_ref(&dead), true);
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(f[0].sentence().contains("the VIP leads nowhere"), "{}", f[0].sentence());
        assert!(w.is_empty());
        let (f, _, w) = judge_name_tries(&[dead], false);
        assert!(f.is_empty() && w.len() == 1);
    }

    #[test]
    fn a_provider_still_starting_waits() {
        let starting = NameTry {
            era: EraChoice::Auto,
            unspoken: false,
            steps: vec![step("initialize", "a", Err(("connection refused", true)))],
        };
        let (f, _, w) = judge_name_tries(&[starting], true);
        assert!(f.is_empty());
        assert_eq!(w.len(), 1);
    }
}
