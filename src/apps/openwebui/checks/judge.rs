//! Pure judges of the `openwebui` family: observations in, findings out. No I/O; the
//! tests feed them tables of observations. The declared state ([`Desired`]) is here; the
//! connections' judgement is in `connections`.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::apps::openwebui::observe::{SpecsSeen, UserView};
use crate::config::Scenario;
use crate::model::{Finding, FindingKind};

/// One connection the scenario wants Open WebUI to hold.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WantedConnection {
    pub provider: String,
    pub url: String,
    /// The credential id the client holds for this provider (the key it must carry).
    pub credential: Option<String>,
    pub group: String,
}

/// Why Open WebUI must hold no connection for a provider of the scenario.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Forbidden {
    /// The provider is disabled.
    Disabled,
    /// The provider does not admit this client.
    NotAdmitted { client: String },
}

/// The declared state of one Open WebUI, derived from the scenario.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Desired {
    pub connections: Vec<WantedConnection>,
    /// Providers of the scenario Open WebUI must hold no connection for, and why.
    pub forbidden: BTreeMap<String, Forbidden>,
    /// Every provider of the scenario by URL, to tell whether a stray connection reaches one.
    pub provider_urls: BTreeMap<String, String>,
    /// Every provider of the scenario by its service, to tell whose container a stray
    /// connection's address is.
    #[serde(default)]
    pub provider_services: BTreeMap<String, String>,
    /// Every credential id that belongs to a (client, provider) pair or a provider, for
    /// naming whose key a connection holds.
    pub credential_owners: BTreeMap<String, String>,
}

impl Desired {
    pub fn of(scenario: &Scenario, client: &str) -> Desired {
        let mut desired = Desired::default();
        let Some(c) = scenario.clients.iter().find(|c| c.id == client) else { return desired };
        let groups = c.openwebui.as_ref().map(|o| o.groups.clone()).unwrap_or_default();
        for p in &scenario.providers {
            desired.provider_urls.insert(p.id.clone(), normalize(p.url.as_str()));
            desired.provider_services.insert(p.service.clone(), p.id.clone());
            desired.credential_owners.entry(p.credential.clone()).or_insert_with(|| format!("provider `{}`", p.id));
            let admitted = p.allowed_consumers.iter().any(|a| a == client);
            if p.disabled {
                desired.forbidden.insert(p.id.clone(), Forbidden::Disabled);
            } else if !admitted {
                desired.forbidden.insert(p.id.clone(), Forbidden::NotAdmitted { client: client.to_string() });
            } else if let Some(group) = groups.get(&p.id) {
                desired.connections.push(WantedConnection {
                    provider: p.id.clone(),
                    url: normalize(p.url.as_str()),
                    credential: c.credentials.get(&p.id).cloned(),
                    group: group.clone(),
                });
            }
        }
        for other in &scenario.clients {
            for (provider, credential) in &other.credentials {
                desired.credential_owners.insert(credential.clone(), format!("the pair {}->{provider}", other.id));
            }
        }
        desired
    }

    /// The providers whose connections the scenario declares (their ids are the
    /// connections' ids).
    pub fn managed(&self) -> Vec<String> {
        self.connections.iter().map(|c| c.provider.clone()).collect()
    }

    #[cfg(test)]
    pub fn group_of(&self, provider: &str) -> Option<&str> {
        self.connections.iter().find(|c| c.provider == provider).map(|c| c.group.as_str())
    }
}

fn normalize(url: &str) -> String {
    url.trim_end_matches('/').to_string()
}

/// `openwebui::reach::<provider>`: Open WebUI's own MCP client lists exactly the allowlist.
pub fn judge_reach(provider: &str, seen: &SpecsSeen, allowlist: &[String]) -> Vec<Finding> {
    match (seen.status, &seen.tools) {
        (200, Some(tools)) => {
            let served: BTreeSet<&str> = tools.iter().map(String::as_str).collect();
            let wanted: BTreeSet<&str> = allowlist.iter().map(String::as_str).collect();
            if served == wanted {
                return vec![];
            }
            let extra: Vec<&str> = served.difference(&wanted).copied().collect();
            let missing: Vec<&str> = wanted.difference(&served).copied().collect();
            vec![
                Finding::new(
                    FindingKind::ToolsMismatch,
                    "Open WebUI's MCP client sees tools of `{provider}` other than the allowlist: extra [{extra}], missing [{missing}]",
                )
                .fact("provider", provider)
                .fact("extra", extra.join(", "))
                .fact("missing", missing.join(", ")),
            ]
        }
        (404, _) => vec![
            Finding::new(
                FindingKind::SessionFailed,
                "Open WebUI has no connection `{provider}` it can use (specs answered 404: {detail})",
            )
            .fact("provider", provider)
            .fact("detail", &seen.detail),
        ],
        (status, _) => vec![
            Finding::new(
                FindingKind::SessionFailed,
                "Open WebUI's MCP client could not reach `{provider}`: specs answered {status}: {detail}",
            )
            .fact("provider", provider)
            .fact("status", status)
            .fact("detail", &seen.detail),
        ],
    }
}

/// One user's view against the servers its groups should grant. `when` opens each
/// sentence: "" or a template such as "after the restart: " (the caller adds the facts it
/// names).
pub fn judge_view(view: &UserView, expected: &BTreeSet<String>, when: &'static str) -> Vec<Finding> {
    let visible = view.visible();
    let access = |template: &'static str, id: &str| {
        Finding::new(FindingKind::AccessDrift, template).prefixed(when).fact("user", &view.user).fact("server", id)
    };
    let mut findings = Vec::new();
    for id in expected {
        let listed = view.listed.contains(id);
        let specs = view.specs.get(id).copied();
        if !listed || specs == Some(404) {
            let f = match (listed, specs) {
                (false, Some(404)) => access("{user}: `{server}` is not usable (not listed, /specs 404)", id),
                (false, Some(s)) => {
                    access("{user}: `{server}` is not usable (not listed (/specs {status}))", id).fact("status", s)
                }
                (false, None) => access("{user}: `{server}` is not usable (not listed (/specs not asked))", id),
                (true, _) => access("{user}: `{server}` is not usable (listed, but /specs 404)", id),
            };
            findings.push(f.fact("access", "missing"));
        }
    }
    for id in visible.difference(expected) {
        let f = match (view.listed.contains(id), view.specs.get(id)) {
            (true, Some(s)) => access(
                "{user}: `{server}` is usable (listed, /specs {status}) though no group of the user grants it",
                id,
            )
            .fact("status", s),
            (true, None) => access("{user}: `{server}` is usable (listed) though no group of the user grants it", id),
            (false, Some(s)) => {
                access("{user}: `{server}` is usable (/specs {status}) though no group of the user grants it", id)
                    .fact("status", s)
            }
            (false, None) => access("{user}: `{server}` is usable (seen) though no group of the user grants it", id),
        };
        findings.push(f.fact("access", "kept"));
    }
    findings
}
