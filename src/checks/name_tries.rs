//! Sessions through the name, as a client behind swarm's load balancing has them: every
//! request resolves the provider's name again and opens a new connection, so one session's
//! requests land on whichever replica the name (DNS round robin) or the VIP sends them to.
//! A stateful provider with several replicas and no affinity loses its sessions this way;
//! the judge names the replica that did not know the session.

use std::net::{IpAddr, SocketAddr};

use serde::{Deserialize, Serialize};

use super::session::{ErrorSeen, SessionCheckPlan};
use crate::mcp::{EraChoice, McpClient};
use crate::model::{Finding, FindingKind};
use crate::netns::NsView;

/// One session through the name: each request, where it landed and how it went.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NameTry {
    pub steps: Vec<TryStep>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TryStep {
    pub step: String,
    /// The replica (or the VIP) the request went to.
    pub landed: String,
    pub outcome: Result<(), ErrorSeen>,
}

/// Opens a session through the name, lists tools and calls the read tool, resolving the
/// name before every request. Runs in the client's namespace. Request `i` of try `k` goes
/// to answer `(k + i) mod n`: the rotation DNS round robin gives a client's successive
/// lookups, made deterministic, so with two replicas every session's second request
/// lands on the replica that did not open it.
pub async fn through_the_name(view: &NsView, plan: &SessionCheckPlan, try_number: usize) -> NameTry {
    let mut steps = Vec::new();
    let land = |addr: IpAddr| {
        plan.replicas
            .iter()
            .chain(&plan.vips)
            .find(|(a, _)| *a == addr)
            .map(|(_, l)| l.clone())
            .unwrap_or_else(|| addr.to_string())
    };
    let is_vip = |addr: &IpAddr| plan.vips.iter().any(|(a, _)| a == addr);
    let resolve = |request: usize| async move {
        let answer = view.resolve(&plan.host).await.map_err(|e| e.to_string())?;
        // The engine's DNS shuffles a dnsrr answer: sorted, the rotation is the same on
        // every run.
        let mut addrs = answer.addrs;
        addrs.sort();
        addrs.dedup();
        if addrs.is_empty() {
            return Err(format!("`{}` resolved to nothing", plan.host));
        }
        // The credential goes to replicas (and the service's own VIPs) only.
        if let Some(stray) = addrs.iter().find(|addr| !is_vip(addr) && !plan.replicas.iter().any(|(a, _)| a == *addr)) {
            return Err(format!(
                "`{}` answered {stray}, which is no replica: the credential is not sent there",
                plan.host
            ));
        }
        // Until the name answers every replica the client shares a network with, some
        // replica is never landed on: the rotation would prove nothing (not ready).
        // (A VIP stands for every task: the engine does the rotation.)
        if !addrs.iter().any(is_vip) && addrs.len() < plan.replicas.len() {
            return Err(format!(
                "`{}` answered {} of the {} replicas the client shares a network with: the engine's DNS has not caught up",
                plan.host,
                addrs.len(),
                plan.replicas.len()
            ));
        }
        Ok(addrs[(try_number + request) % addrs.len()])
    };
    let client_at = |addr: IpAddr| {
        McpClient::new(
            plan.endpoint.pinned_to(SocketAddr::new(addr, plan.port)),
            Some(plan.secret.clone()),
            plan.limits.clone(),
        )
    };
    let failed = |step: &str, landed: String, text: String| TryStep {
        step: step.into(),
        landed,
        outcome: Err(ErrorSeen { text, not_ready: true }),
    };
    let first = match resolve(0).await {
        Ok(a) => a,
        Err(e) => return NameTry { steps: vec![failed("resolving", "-".into(), e)] },
    };
    let opener = match client_at(first) {
        Ok(c) => c,
        Err(e) => return NameTry { steps: vec![failed("initialize", land(first), e.to_string())] },
    };
    let session = match opener.connect_era(EraChoice::Auto).await {
        Ok(s) => s,
        Err(e) => {
            steps.push(TryStep { step: "initialize".into(), landed: land(first), outcome: Err((&e).into()) });
            return NameTry { steps };
        }
    };
    steps.push(TryStep { step: "initialize".into(), landed: land(first), outcome: Ok(()) });
    let mut requests: Vec<&str> = vec!["tools/list"];
    if plan.read.is_some() {
        requests.push("tools/call");
    }
    for (i, step) in requests.into_iter().enumerate() {
        let addr = match resolve(i + 1).await {
            Ok(a) => a,
            Err(e) => {
                steps.push(failed(step, "-".into(), e));
                break;
            }
        };
        let client = match client_at(addr) {
            Ok(c) => c,
            Err(e) => {
                steps.push(failed(step, land(addr), e.to_string()));
                break;
            }
        };
        let outcome = match (step, &plan.read) {
            ("tools/call", Some(read)) => {
                client.call_tool(&session, &read.tool, read.arguments.clone()).await.map(drop)
            }
            _ => client.list_tools(&session).await.map(drop),
        };
        let failed_here = outcome.is_err();
        steps.push(TryStep { step: step.into(), landed: land(addr), outcome: outcome.map_err(|e| (&e).into()) });
        if failed_here {
            break;
        }
    }
    opener.close(session).await;
    NameTry { steps }
}

/// Pure: a request of a session that fails where the session was opened elsewhere is a
/// failure naming the replica that did not know it; errors of the "not ready" kind wait.
/// Returns findings, evidence lines and not-ready reasons.
pub fn judge_name_tries(tries: &[NameTry]) -> (Vec<Finding>, Vec<String>, Vec<String>) {
    let mut findings = Vec::new();
    let mut evidence = Vec::new();
    let mut waiting = Vec::new();
    for (i, t) in tries.iter().enumerate() {
        let path: Vec<String> = t
            .steps
            .iter()
            .map(|s| match &s.outcome {
                Ok(()) => format!("{} at {} ok", s.step, s.landed),
                Err(e) => format!("{} at {} failed: {}", s.step, s.landed, e.text),
            })
            .collect();
        evidence.push(format!("session {} through the name: {}", i + 1, path.join(" → ")));
        let opened = t.steps.first().filter(|s| s.step == "initialize" && s.outcome.is_ok()).map(|s| s.landed.clone());
        for s in &t.steps {
            let Err(e) = &s.outcome else { continue };
            if e.not_ready {
                waiting.push(format!("session {} through the name: {} at {}: {}", i + 1, s.step, s.landed, e.text));
                continue;
            }
            let message = match &opened {
                Some(at) if *at != s.landed => format!(
                    "the session opened at {at} was not known to {}: {} failed: {} (requests through the name land on any replica; the provider keeps sessions per replica and has no affinity)",
                    s.landed, s.step, e.text
                ),
                _ => format!("a session through the name failed at {}: {} failed: {}", s.landed, s.step, e.text),
            };
            findings.push(Finding::new(FindingKind::SessionFailed, message).fact("replica", &s.landed));
        }
    }
    findings.sort_by(|a, b| a.message.cmp(&b.message));
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
            outcome: outcome.map_err(|(t, n)| ErrorSeen { text: t.into(), not_ready: n }),
        }
    }

    #[test]
    fn a_session_unknown_to_another_replica_fails_naming_it() {
        let good = NameTry { steps: vec![step("initialize", "a", Ok(())), step("tools/list", "a", Ok(()))] };
        let lost = NameTry {
            steps: vec![
                step("initialize", "a", Ok(())),
                step("tools/list", "b", Err(("HTTP 404: Session not found", false))),
            ],
        };
        let (f, e, w) = judge_name_tries(&[good.clone(), lost.clone(), lost]);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].kind, FindingKind::SessionFailed);
        assert_eq!(f[0].facts["replica"], "b");
        assert!(f[0].message.contains("opened at a was not known to b"), "{}", f[0].message);
        assert_eq!(e.len(), 3);
        assert!(w.is_empty());
        let (f, _, _) = judge_name_tries(&[good]);
        assert!(f.is_empty());
    }

    #[test]
    fn a_provider_still_starting_waits() {
        let starting = NameTry { steps: vec![step("initialize", "a", Err(("connection refused", true)))] };
        let (f, _, w) = judge_name_tries(&[starting]);
        assert!(f.is_empty());
        assert_eq!(w.len(), 1);
    }
}
