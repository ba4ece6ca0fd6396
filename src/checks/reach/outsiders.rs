//! Containers outside the deployment on a non-admitted client's networks (a leftover
//! replica, a debugging shell with a relay, another stack's copy): the client must not
//! reach the provider through them either. Each of their listeners is asked, from the
//! client's namespace, with the provider's credential and without it; one that honours the
//! credential, turns the bare request away and refuses a made-up bearer serves the
//! provider (or relays to it) to a client the provider does not admit. One that takes any
//! bearer, or none, honours nothing of the provider's in particular: it is listed in the
//! evidence, not judged here.

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::rc::Rc;

use serde::{Deserialize, Serialize};

use crate::checks::kit::door::{Door, Via};
use crate::checks::kit::presented::{Presented, credential_at, honoured, open_without};
use crate::config::Provider;
use crate::deployment::Deployment;
use crate::engine::Target;
use crate::mcp::Limits;
use crate::model::{Attempt, Finding, FindingKind};
use crate::netns::NsView;
use crate::netns::listener::Listener;
use crate::secret::Secret;
use crate::topology::Topology;

/// What the client does: present the provider's credential at every outsider's listener.
#[derive(Clone, Serialize, Deserialize)]
pub struct OutsiderPlan {
    pub doors: Vec<Door>,
    #[serde(with = "crate::checks::kit::wire::provider")]
    pub provider: Provider,
    #[serde(with = "crate::checks::kit::wire::secret")]
    pub secret: Secret,
    /// A bearer nobody holds: what a listener does with it tells "takes this credential"
    /// from "takes any".
    #[serde(with = "crate::checks::kit::wire::secret")]
    pub decoy: Secret,
    pub limits: Limits,
}

/// One listener asked with the provider's credential (and without any), and with the decoy.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OutsiderSeen {
    pub presented: Presented,
    pub decoy: Presented,
}

impl OutsiderPlan {
    pub async fn observe(self, _view: Rc<NsView>) -> Vec<OutsiderSeen> {
        let (real, decoy) = futures_util::join!(
            credential_at(self.doors.clone(), &self.provider, self.secret, &self.limits),
            credential_at(self.doors, &self.provider, self.decoy, &self.limits)
        );
        real.into_iter().zip(decoy).map(|(presented, decoy)| OutsiderSeen { presented, decoy }).collect()
    }
}

/// Containers outside the deployment that share a network with `client`.
pub fn sharing_a_network(topology: &Topology, client: &Target) -> Vec<Target> {
    let networks: Vec<&str> = client.attachments.iter().map(|a| a.network.as_str()).collect();
    topology
        .outsiders
        .values()
        .filter(|t| t.attachments.iter().any(|a| networks.contains(&a.network.as_str())))
        .cloned()
        .collect()
}

/// Who owns a container that is not the deployment's, in the words evidence uses.
pub fn owner(t: &Target) -> String {
    if t.project.is_empty() {
        "of no compose project or stack".into()
    } else {
        format!("of project or stack `{}`", t.project)
    }
}

/// Pure: every listener of each outsider at its addresses on the client's networks, and
/// the provider's own port there (a listener cordon could not read still gets that one).
pub fn doors(
    topology: &Topology,
    client: &Target,
    outsiders: &[Target],
    listening: &BTreeMap<String, Vec<Listener>>,
    provider_port: u16,
) -> Vec<Door> {
    let networks: Vec<&str> = client.attachments.iter().map(|a| a.network.as_str()).collect();
    let mut out = Vec::new();
    for t in outsiders {
        for att in t.attachments.iter().filter(|a| networks.contains(&a.network.as_str())) {
            for addr in att.ipv4.map(IpAddr::V4).into_iter().chain(att.ipv6.map(IpAddr::V6)) {
                let mut ports: Vec<u16> = listening
                    .get(&t.name)
                    .into_iter()
                    .flatten()
                    .filter(|l| l.accepts_on(addr))
                    .map(|l| l.addr.port())
                    .collect();
                ports.push(provider_port);
                ports.sort();
                ports.dedup();
                for port in ports {
                    out.push(Door {
                        addr: SocketAddr::new(addr, port),
                        container: t.name.clone(),
                        network: topology.network_key(&att.network).to_string(),
                        via: Via::Direct,
                    });
                }
            }
        }
    }
    out
}

/// Pure: a finding for each outsider's listener that honoured the provider's credential,
/// turned the bare request away and refused the decoy; evidence for every listener asked.
pub fn judge(
    client: &str,
    provider: &str,
    seen: &[OutsiderSeen],
    owners: &BTreeMap<String, String>,
) -> (Vec<Finding>, Vec<String>) {
    let mut findings = Vec::new();
    let mut evidence = Vec::new();
    for OutsiderSeen { presented: p, decoy } in seen {
        let owner = owners.get(&p.door.container).cloned().unwrap_or_default();
        let at = format!("{} ({} on network {}, {owner})", p.door.addr, p.door.container, p.door.network);
        match honoured(p) {
            Some(_) if open_without(p) => evidence.push(format!(
                "client {client}: {at}: open to anyone (it grants the same without a credential): not `{provider}`'s to judge here"
            )),
            Some(_) if honoured(decoy).is_some() => evidence.push(format!(
                "client {client}: {at}: takes a made-up bearer as well: it honours any bearer, nothing of `{provider}`'s in particular (not judged here)"
            )),
            Some(h) => {
                let line = h.exchange.proof(&format!("client {client}: {at}: "));
                evidence.push(format!("client {client}: {at}: {}", h.exchange.summary()));
                findings.push(
                    Finding::new(
                        FindingKind::LateralReach,
                        "client {client} is not admitted to `{provider}` but reached, at {addr} ({container} on network {network}, {owner}), a listener outside the deployment that honours `{provider}`'s credential: it answered {entry} {status} with it and turned the same request away without it and with a made-up bearer",
                    )
                    .fact("client", client)
                    .fact("provider", provider)
                    .fact("addr", p.door.addr)
                    .fact("container", &p.door.container)
                    .fact("network", &p.door.network)
                    .fact("owner", &owner)
                    .fact("entry", &h.exchange.ask)
                    .fact("status", h.exchange.status)
                    .proven_by(line),
                );
            }
            None => evidence.push(format!("client {client}: {at}: does not honour `{provider}`'s credential")),
        }
    }
    (findings, evidence)
}

/// Tries every outsider on the client's networks from the client's namespace.
pub async fn look(
    deployment: &Deployment,
    (client_id, client): (&str, &Target),
    from: &str,
    provider: &Provider,
    secret: Secret,
    limits: Limits,
) -> Result<(Vec<Finding>, Vec<String>), Attempt> {
    let topology = deployment.topology();
    let outsiders = sharing_a_network(&topology, client);
    if outsiders.is_empty() {
        return Ok((vec![], vec![]));
    }
    let listening = deployment.listeners_of(&outsiders).await.unwrap_or_default();
    let port = provider.url.port_or_known_default().unwrap_or(80);
    let doors = doors(&topology, client, &outsiders, &listening, port);
    let owners: BTreeMap<String, String> = outsiders.iter().map(|t| (t.name.clone(), owner(t))).collect();
    let decoy = crate::secret::random_token(40);
    // Nobody holds it, so nothing needs it redacted: a throwaway index makes the handle.
    let decoy = crate::secret::Redactor::new().register("outsider-decoy-bearer", decoy);
    let plan = OutsiderPlan { doors, provider: provider.clone(), secret, decoy, limits };
    let presented = deployment.observe(client, from, plan).await?;
    Ok(judge(client_id, &provider.id, &presented, &owners))
}

/// `attempt` with what the outsiders showed: their findings fail it.
pub fn merged(attempt: Attempt, findings: Vec<Finding>, more: Vec<String>) -> Attempt {
    match attempt {
        Attempt::Pass { mut evidence } => {
            evidence.extend(more);
            Attempt::from_findings(findings, evidence)
        }
        Attempt::Fail { findings: mut all, mut evidence } => {
            all.extend(findings);
            evidence.extend(more);
            Attempt::Fail { findings: all, evidence }
        }
        Attempt::NotReady { reason, mut evidence } if findings.is_empty() => {
            evidence.extend(more);
            Attempt::NotReady { reason, evidence }
        }
        Attempt::NotReady { mut evidence, .. } => {
            evidence.extend(more);
            Attempt::Fail { findings, evidence }
        }
        skip @ Attempt::Skip { .. } => skip,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::kit::sessions::Try;
    use crate::mcp::{Ask, EntryPoint, Exchange};

    fn exchange(status: u16, result: bool) -> Exchange {
        crate::checks::kit::testing::exchange_for_tests(
            Ask::new(EntryPoint::Initialize),
            "http://native:8000/mcp",
            status,
            result,
        )
    }

    fn seen(with: (u16, bool), without: (u16, bool), decoy: (u16, bool)) -> OutsiderSeen {
        OutsiderSeen { presented: presented(with, without), decoy: presented(decoy, without) }
    }

    fn presented(with: (u16, bool), without: (u16, bool)) -> Presented {
        let t = |(status, result): (u16, bool)| Try {
            ask: Ask::new(EntryPoint::Initialize),
            outcome: Ok(exchange(status, result)),
        };
        Presented {
            door: Door {
                addr: "10.0.6.5:8000".parse().unwrap(),
                container: "p_native_leftover".into(),
                network: "postgres".into(),
                via: Via::Direct,
            },
            with: vec![t(with)],
            without: vec![t(without)],
        }
    }

    fn owners() -> BTreeMap<String, String> {
        BTreeMap::from([("p_native_leftover".to_string(), "of no compose project or stack".to_string())])
    }

    #[test]
    fn an_outsider_that_honours_the_credential_and_refuses_without_it_is_a_way_in() {
        let (findings, _) = judge("n8n", "native", &[seen((200, true), (401, false), (401, false))], &owners());
        assert_eq!(findings.len(), 1);
        assert_eq!(findings[0].kind, FindingKind::LateralReach);
        assert_eq!(findings[0].facts.get("addr").map(String::as_str), Some("10.0.6.5:8000"));
        assert!(findings[0].sentence().starts_with(
            "client n8n is not admitted to `native` but reached, at 10.0.6.5:8000 (p_native_leftover on network postgres, of no compose project or stack), a listener outside the deployment that honours `native`'s credential"
        ), "{}", findings[0].sentence());
    }

    #[test]
    fn an_outsider_that_refuses_it_or_is_open_to_anyone_is_no_way_in_to_this_provider() {
        for (with, without, decoy, says) in [
            ((401, false), (401, false), (401, false), "does not honour `native`'s credential"),
            ((200, false), (200, false), (200, false), "does not honour"),
            ((200, true), (200, true), (200, true), "open to anyone"),
            ((200, true), (401, false), (200, true), "takes a made-up bearer as well"),
        ] {
            let (findings, evidence) = judge("n8n", "native", &[seen(with, without, decoy)], &owners());
            assert!(findings.is_empty(), "{findings:?}");
            assert!(evidence[0].contains(says), "{evidence:?}");
        }
    }

    #[test]
    fn merged_findings_fail_a_pass_and_a_wait() {
        let f = || vec![Finding::new(FindingKind::LateralReach, "x")];
        assert!(matches!(merged(Attempt::Pass { evidence: vec![] }, f(), vec![]), Attempt::Fail { .. }));
        assert!(matches!(merged(Attempt::not_ready("busy", vec![]), f(), vec![]), Attempt::Fail { .. }));
        assert!(matches!(merged(Attempt::not_ready("busy", vec![]), vec![], vec![]), Attempt::NotReady { .. }));
        assert!(matches!(merged(Attempt::Pass { evidence: vec![] }, vec![], vec!["e".into()]), Attempt::Pass { .. }));
    }
}
