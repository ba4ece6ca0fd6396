//! What a provider's name resolves to from a client, and whose addresses those are.
//!
//! Observed in the client's namespace: the wildcard set W (learned first) and the
//! answer as the client's libc would give it (hosts file, then DNS). Judged against the
//! engine's view: every answer must be an address of a provider container on a network
//! the client shares. Shared by `route`, `session` and `disabled`.

use std::net::IpAddr;

use serde::{Deserialize, Serialize};

use super::connect::join_addrs;
use crate::dns::{AnswerSource, DnsError, NameAnswer, WildcardSet};
use crate::engine::Target;
use crate::model::{Attempt, Finding, FindingKind};
use crate::netns::NsView;
use crate::topology::Topology;

/// A name as one namespace resolves it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NameSeen {
    pub host: String,
    pub wildcard: WildcardSet,
    pub answer: NameAnswer,
    /// The lookup timed out where every unknown name times out: the name is unknown.
    #[serde(default)]
    pub unknown: bool,
}

impl NameSeen {
    /// Answers that are not in W.
    pub fn routed(&self) -> Vec<IpAddr> {
        self.answer.addrs.iter().copied().filter(|a| !self.wildcard.contains(a)).collect()
    }

    pub fn evidence(&self) -> Vec<String> {
        let addrs: Vec<String> = self.wildcard.addrs.iter().map(IpAddr::to_string).collect();
        let probes: Vec<String> =
            self.wildcard.probes.iter().map(|(n, a)| format!("{n} → [{}]", join_addrs(a))).collect();
        let learned = match &self.wildcard.unknown_names_time_out {
            Some(known) => format!(
                "wildcard set W = {{}} (every unknown name timed out — {} — while `{known}` answers: the resolver forwards unknown names nowhere, as on an `internal: true` network, so they resolve to nothing)",
                self.wildcard.errors.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>().join(", ")
            ),
            None => format!("wildcard set W = {{{}}} (learned from {})", addrs.join(", "), probes.join(", ")),
        };
        vec![learned, self.answered()]
    }

    /// What the name resolved to, as evidence shows it.
    pub fn answered(&self) -> String {
        let source = match self.answer.source {
            AnswerSource::HostsFile => " (from /etc/hosts)",
            AnswerSource::Literal => " (an address literal)",
            AnswerSource::Dns => "",
        };
        if self.unknown {
            format!("{} → [] (timed out, as every unknown name does here)", self.host)
        } else {
            format!("{} → [{}]{source}", self.host, join_addrs(&self.answer.addrs))
        }
    }
}

/// Learns W (once per namespace) and resolves `host` like the client's libc. Failures
/// to get any answer are "not ready", but for a timeout where every unknown name times
/// out: that is the answer an unknown name gets there. `known`: names the namespace's
/// resolver must know (its own container's), to tell such a resolver from a dead one.
pub async fn observe(view: &NsView, host: &str, known: &[String]) -> Result<NameSeen, Attempt> {
    let wildcard =
        view.wildcard(known).await.map_err(|e| Attempt::not_ready(format!("{}: {e}", view.label()), vec![]))?.clone();
    let (answer, unknown) = match view.resolve(host).await {
        Ok(answer) => (answer, false),
        Err(DnsError::Timeout { .. }) if wildcard.unknown_names_time_out.is_some() => {
            (NameAnswer { source: AnswerSource::Dns, addrs: vec![] }, true)
        }
        Err(e) => return Err(Attempt::not_ready(format!("{}: resolving {host}: {e}", view.label()), vec![])),
    };
    Ok(NameSeen { host: host.to_string(), wildcard, answer, unknown })
}

/// What one answered address is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Role {
    /// A provider container, on a network the client shares.
    Provider {
        container: String,
        network: String,
    },
    /// A provider container, but on a network the client is not on.
    ProviderElsewhere {
        container: String,
        network: String,
    },
    Wildcard,
    /// Another container the engine knows; `shared`: whether the client is on that network
    /// too (`None`: no client to ask).
    Other {
        container: String,
        network: String,
        shared: Option<bool>,
    },
    Unknown,
}

impl Role {
    fn describe(&self, addr: IpAddr) -> String {
        match self {
            Role::Provider { container, network } => format!("{addr} (provider {container} on {network})"),
            Role::ProviderElsewhere { container, network } => {
                format!(
                    "{addr}, which is provider container `{container}` on `{network}`, a network the client does not share"
                )
            }
            Role::Wildcard => format!("{addr} (in the wildcard set)"),
            Role::Other { container, network, shared } => {
                let whose = match shared {
                    Some(true) => " (a network the client shares)",
                    Some(false) => " (a network the client does not share)",
                    None => "",
                };
                format!("{addr}, which is `{container}` on `{network}`{whose}, not a container of the provider")
            }
            Role::Unknown => format!("{addr}, which is no container the engine knows"),
        }
    }
}

/// Classifies every answer by the engine's view. `client` is the container whose
/// networks count as shared (`None`: any network).
pub fn roles(
    seen: &NameSeen,
    providers: &[Target],
    client: Option<&Target>,
    topology: &Topology,
) -> Vec<(IpAddr, Role)> {
    let shares = |network: &str| client.is_none_or(|c| c.attachments.iter().any(|a| a.network == network));
    let shares_key = |key: &str| client.map(|c| c.attachments.iter().any(|a| topology.network_key(&a.network) == key));
    seen.answer
        .addrs
        .iter()
        .map(|addr| {
            let owned = providers
                .iter()
                .find_map(|t| {
                    t.attachments
                        .iter()
                        .find(|a| a.ipv4.map(IpAddr::V4) == Some(*addr) || a.ipv6.map(IpAddr::V6) == Some(*addr))
                        .map(|a| (t.name.clone(), a.network.clone()))
                })
                // Swarm (vip mode): the service's virtual IP on a network stands for every replica.
                .or_else(|| {
                    let service = &providers.first()?.service;
                    topology
                        .vip_networks_of(service)
                        .into_iter()
                        .find(|(a, _)| a == addr)
                        .map(|(_, n)| (format!("the VIP of service {service}"), n))
                });
            let role = match owned {
                Some((container, network)) if shares(&network) => {
                    Role::Provider { container, network: topology.network_key(&network).to_string() }
                }
                Some((container, network)) => {
                    Role::ProviderElsewhere { container, network: topology.network_key(&network).to_string() }
                }
                None if seen.wildcard.contains(addr) => Role::Wildcard,
                None => match topology.owner_of(*addr) {
                    Some(o) => {
                        Role::Other { shared: shares_key(&o.network), container: o.container, network: o.network }
                    }
                    None => Role::Unknown,
                },
            };
            (*addr, role)
        })
        .collect()
}

/// The provider's addresses among the answers, if every answer is one; otherwise the
/// findings that say what else the name leads to.
pub fn judge(
    seen: &NameSeen,
    roles: &[(IpAddr, Role)],
    from: &str,
) -> Result<Vec<(IpAddr, String, String)>, Vec<Finding>> {
    let host = &seen.host;
    let owned: Vec<(IpAddr, String, String)> = roles
        .iter()
        .filter_map(|(a, r)| match r {
            Role::Provider { container, network } => Some((*a, container.clone(), network.clone())),
            _ => None,
        })
        .collect();
    let stray: Vec<&(IpAddr, Role)> = roles.iter().filter(|(_, r)| !matches!(r, Role::Provider { .. })).collect();
    if stray.is_empty() && !owned.is_empty() {
        return Ok(owned);
    }
    let strays = stray.iter().map(|(a, r)| r.describe(*a)).collect::<Vec<_>>().join("; ");
    let finding = if seen.answer.addrs.is_empty() {
        Finding::new(FindingKind::NameDoesNotResolve, "`{host}` does not resolve from {from}")
    } else if seen.answer.source == AnswerSource::HostsFile {
        Finding::new(
            FindingKind::HostsFilePin,
            "`{host}` is pinned in the /etc/hosts of {from} to {strays}: its libc never asks DNS for it",
        )
        .fact("strays", &strays)
    } else if owned.is_empty() && stray.iter().all(|(_, r)| *r == Role::Wildcard) {
        Finding::new(
            FindingKind::OnlyWildcard,
            "`{host}` resolves from {from} only to wildcard address(es) [{addrs}]: the name answers through the wildcard DNS record, not through a route to the provider",
        )
        .fact("addrs", join_addrs(&seen.answer.addrs))
    } else if owned.is_empty() {
        Finding::new(FindingKind::ForeignAddress, "`{host}` resolves from {from} to {strays}").fact("strays", &strays)
    } else {
        let at: Vec<String> = owned.iter().map(|(a, c, n)| format!("{a} ({c} on {n})")).collect();
        Finding::new(
            FindingKind::AmbiguousName,
            "`{host}` resolves from {from} to the provider at [{providers}] but also to {strays}, where a client may land instead",
        )
        .fact("providers", at.join(", "))
        .fact("strays", &strays)
    };
    let mut finding = finding.fact("host", host).fact("from", from).proven_by(seen.answered());
    for (addr, _) in &stray {
        finding = finding.fact("addr", addr);
    }
    Err(vec![finding])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Attachment;
    use rstest::rstest;

    fn target(name: &str, network: &str, ip: &str) -> Target {
        let attachment = Attachment {
            network: network.into(),
            network_id: network.into(),
            ipv4: Some(ip.parse().unwrap()),
            ipv6: None,
            aliases: vec![],
        };
        Target {
            id: name.into(),
            name: name.into(),
            service: name.into(),
            attachments: vec![attachment],
            ..crate::checks::kit::testing::target_for_tests()
        }
    }

    fn seen(answers: &[&str], wildcard: &[&str], source: AnswerSource) -> NameSeen {
        NameSeen {
            unknown: false,
            host: "native".into(),
            wildcard: WildcardSet {
                addrs: wildcard.iter().map(|a| a.parse().unwrap()).collect(),
                ..Default::default()
            },
            answer: NameAnswer { source, addrs: answers.iter().map(|a| a.parse().unwrap()).collect() },
        }
    }

    fn topology() -> Topology {
        let mut t = Topology { project: "p".into(), ..Default::default() };
        t.services.insert("beta".into(), vec![target("beta", "p_net-beta", "10.0.9.5")]);
        t
    }

    #[rstest]
    #[case::owned(&["10.0.1.5"], &["10.0.0.99"], AnswerSource::Dns, None)]
    #[case::replicas(&["10.0.1.5", "10.0.1.6"], &[], AnswerSource::Dns, None)]
    #[case::nothing(&[], &[], AnswerSource::Dns, Some(FindingKind::NameDoesNotResolve))]
    #[case::wildcard(&["10.0.0.99"], &["10.0.0.99"], AnswerSource::Dns, Some(FindingKind::OnlyWildcard))]
    #[case::foreign_container(&["10.0.9.5"], &[], AnswerSource::Dns, Some(FindingKind::ForeignAddress))]
    #[case::unknown(&["192.0.2.7"], &[], AnswerSource::Dns, Some(FindingKind::ForeignAddress))]
    #[case::ambiguous(&["10.0.1.5", "10.0.0.99"], &["10.0.0.99"], AnswerSource::Dns, Some(FindingKind::AmbiguousName))]
    #[case::hosts_pin(&["10.0.9.5"], &[], AnswerSource::HostsFile, Some(FindingKind::HostsFilePin))]
    #[case::elsewhere(&["10.0.2.5"], &[], AnswerSource::Dns, Some(FindingKind::ForeignAddress))]
    fn every_answer_must_be_the_providers(
        #[case] answers: &[&str],
        #[case] wildcard: &[&str],
        #[case] source: AnswerSource,
        #[case] expected: Option<FindingKind>,
    ) {
        let providers = vec![
            target("p_native_1", "p_net-native", "10.0.1.5"),
            target("p_native_2", "p_net-native", "10.0.1.6"),
            target("p_native_3", "p_other", "10.0.2.5"),
        ];
        let client = target("client", "p_net-native", "10.0.1.100");
        let s = seen(answers, wildcard, source);
        let r = roles(&s, &providers, Some(&client), &topology());
        match (judge(&s, &r, "client c"), expected) {
            (Ok(owned), None) => assert_eq!(owned.len(), answers.len()),
            (Err(findings), Some(kind)) => assert_eq!(findings[0].kind, kind, "{findings:?}"),
            (other, expected) => panic!("expected {expected:?}, got {other:?}"),
        }
    }

    #[test]
    fn a_foreign_answer_names_the_container_and_its_network() {
        let s = seen(&["10.0.9.5"], &[], AnswerSource::Dns);
        let r = roles(&s, &[], None, &topology());
        let f = judge(&s, &r, "client c").unwrap_err();
        assert!(
            f[0].sentence().contains("10.0.9.5, which is `beta` on `net-beta`, not a container"),
            "{}",
            f[0].sentence()
        );
        let client = target("client", "p_net-native", "10.0.1.100");
        let r = roles(&s, &[], Some(&client), &topology());
        let f = judge(&s, &r, "client c").unwrap_err();
        assert!(f[0].sentence().contains("on `net-beta` (a network the client does not share)"), "{}", f[0].sentence());
        let client = target("client", "p_net-beta", "10.0.9.100");
        let r = roles(&s, &[], Some(&client), &topology());
        let f = judge(&s, &r, "client c").unwrap_err();
        assert!(f[0].sentence().contains("on `net-beta` (a network the client shares)"), "{}", f[0].sentence());
    }
}
