//! Pure judges of the `openwebui` family: observations in, findings out. No I/O; the
//! tests feed them tables of observations.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::config::{Expectation, Scenario};
use crate::model::{Finding, FindingKind};
use crate::openwebui::observe::{AdminView, ChatSeen, ConnectionSeen, KeySeen, SpecsSeen, UserView};

/// One connection the scenario wants Open WebUI to hold.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WantedConnection {
    pub provider: String,
    pub url: String,
    /// The credential id the client holds for this provider (the key it must carry).
    pub credential: Option<String>,
    pub group: String,
}

/// The declared state of one Open WebUI, derived from the scenario.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Desired {
    pub connections: Vec<WantedConnection>,
    /// Providers of the scenario Open WebUI must hold no connection for, and why.
    pub forbidden: BTreeMap<String, String>,
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
                desired.forbidden.insert(p.id.clone(), "is disabled".into());
            } else if !admitted {
                desired.forbidden.insert(p.id.clone(), format!("does not admit `{client}`"));
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

    pub fn group_of(&self, provider: &str) -> Option<&str> {
        self.connections.iter().find(|c| c.provider == provider).map(|c| c.group.as_str())
    }
}

fn normalize(url: &str) -> String {
    url.trim_end_matches('/').to_string()
}

pub(crate) fn full_url(c: &ConnectionSeen) -> String {
    let path = c.path.trim_matches('/');
    if path.is_empty() { normalize(&c.url) } else { format!("{}/{path}", normalize(&c.url)) }
}

/// `openwebui::connections`: the admin view equals the declared state.
pub fn judge_connections(view: &AdminView, desired: &Desired) -> Vec<Finding> {
    let mut findings = Vec::new();
    let drift = |msg: String| Finding::new(FindingKind::ConnectionDrift, msg);
    for want in &desired.connections {
        let held: Vec<&ConnectionSeen> =
            view.connections.iter().filter(|c| c.id.as_deref() == Some(want.provider.as_str())).collect();
        match held.as_slice() {
            [] => findings.push(
                drift(format!("no connection for provider `{}` (declared at {})", want.provider, want.url))
                    .fact("provider", &want.provider),
            ),
            [one] => findings.extend(judge_one(one, want, view, desired)),
            many => findings.push(
                drift(format!("{} connections carry the id `{}`: exactly one is declared", many.len(), want.provider))
                    .fact("provider", &want.provider),
            ),
        }
    }
    let managed: BTreeSet<&str> = desired.connections.iter().map(|w| w.provider.as_str()).collect();
    for (index, c) in
        view.connections.iter().enumerate().filter(|(_, c)| !c.id.as_deref().is_some_and(|id| managed.contains(id)))
    {
        let id = c.id.as_deref().unwrap_or("<no id>");
        if let Some(why) = c.id.as_ref().and_then(|id| desired.forbidden.get(id)) {
            findings.push(
                drift(format!("a connection `{id}` exists for provider `{id}`, which {why}: none may"))
                    .fact("provider", id),
            );
            continue;
        }
        let url = full_url(c);
        let by_url = desired
            .provider_urls
            .iter()
            .find(|(_, u)| **u == url || normalize(&c.url) == **u)
            .map(|(provider, _)| (provider.clone(), format!("at {url}")));
        // Another spelling of the same place (an alias, an address, a trailing dot) is
        // told by where the name leads, not by the text.
        let by_address = || {
            view.destinations.get(&index).into_iter().flatten().find_map(|d| {
                let provider = desired.provider_services.get(d.service.as_deref()?)?;
                let how = format!(
                    "at {url}, which resolves from Open WebUI to {} (`{}` on `{}`)",
                    d.addr, d.container, d.network
                );
                Some((provider.clone(), how))
            })
        };
        if let Some((provider, how)) = by_url.or_else(by_address) {
            findings.push(
                Finding::new(
                    FindingKind::UnmanagedConnection,
                    format!("unmanaged connection `{id}` reaches provider `{provider}` {how}"),
                )
                .fact("provider", &provider)
                .fact("connection", id),
            );
        }
    }
    findings
}

fn judge_one(c: &ConnectionSeen, want: &WantedConnection, view: &AdminView, desired: &Desired) -> Vec<Finding> {
    let p = &want.provider;
    let mut problems = Vec::new();
    if c.kind != "mcp" {
        problems.push(format!("type `{}` instead of mcp", c.kind));
    }
    if full_url(c) != want.url {
        problems.push(format!("URL {} instead of {}", full_url(c), want.url));
    }
    if c.auth_type != "bearer" {
        problems.push(format!("auth_type `{}` instead of bearer", c.auth_type));
    }
    match (&c.key, &want.credential) {
        (KeySeen::Credential(held), Some(declared)) if held == declared => {}
        (KeySeen::Credential(held), _) => {
            let owner = desired.credential_owners.get(held).cloned().unwrap_or_else(|| "someone else".into());
            problems
                .push(format!("it holds the key of credential `{held}` ({owner}), not the one declared for this pair"));
        }
        (other, Some(declared)) => {
            problems.push(format!("it holds {} instead of credential `{declared}`", other.describe()))
        }
        (other, None) => problems
            .push(format!("it holds {}, and the scenario gives the client no credential for it", other.describe())),
    }
    if !c.enabled {
        problems.push("it is disabled".into());
    }
    let named: Vec<&str> = view.groups.iter().filter(|g| g.name == want.group).map(|g| g.id.as_str()).collect();
    match named.as_slice() {
        [] => problems.push(format!("group `{}` does not exist in Open WebUI", want.group)),
        [id] => {
            let exact = c.grants.len() == 1
                && c.grants[0].principal_type == "group"
                && c.grants[0].principal_id == *id
                && c.grants[0].permission == "read";
            if !exact {
                let grants: Vec<String> = c.grants.iter().map(|g| g.describe(&view.groups)).collect();
                problems.push(format!(
                    "it is granted to [{}] instead of exactly group `{}` (read)",
                    grants.join(", "),
                    want.group
                ));
            }
        }
        many => problems.push(format!("{} groups are named `{}`: the grant is ambiguous", many.len(), want.group)),
    }
    problems
        .into_iter()
        .map(|m| Finding::new(FindingKind::ConnectionDrift, format!("connection `{p}`: {m}")).fact("provider", p))
        .collect()
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
                    format!(
                        "Open WebUI's MCP client sees tools of `{provider}` other than the allowlist: extra [{}], missing [{}]",
                        extra.join(", "),
                        missing.join(", ")
                    ),
                )
                .fact("provider", provider),
            ]
        }
        (404, _) => vec![
            Finding::new(
                FindingKind::SessionFailed,
                format!("Open WebUI has no connection `{provider}` it can use (specs answered 404: {})", seen.detail),
            )
            .fact("provider", provider),
        ],
        (status, _) => vec![
            Finding::new(
                FindingKind::SessionFailed,
                format!(
                    "Open WebUI's MCP client could not reach `{provider}`: specs answered {status}: {}",
                    seen.detail
                ),
            )
            .fact("provider", provider)
            .fact("status", status),
        ],
    }
}

/// One user's view against the servers its groups should grant.
pub fn judge_view(view: &UserView, expected: &BTreeSet<String>, when: &str) -> Vec<Finding> {
    let visible = view.visible();
    let mut findings = Vec::new();
    for id in expected {
        let listed = view.listed.contains(id);
        let specs = view.specs.get(id).copied();
        if !listed || specs == Some(404) {
            let how = match (listed, specs) {
                (false, Some(404)) => "not listed, /specs 404".to_string(),
                (false, s) => format!("not listed (/specs {})", s.map_or("not asked".into(), |s| s.to_string())),
                (true, _) => "listed, but /specs 404".to_string(),
            };
            findings.push(
                Finding::new(FindingKind::AccessDrift, format!("{when}{}: `{id}` is not usable ({how})", view.user))
                    .fact("server", id),
            );
        }
    }
    for id in visible.difference(expected) {
        let how = match (view.listed.contains(id), view.specs.get(id)) {
            (true, Some(s)) => format!("listed, /specs {s}"),
            (true, None) => "listed".to_string(),
            (false, Some(s)) => format!("/specs {s}"),
            (false, None) => "seen".to_string(),
        };
        findings.push(
            Finding::new(
                FindingKind::AccessDrift,
                format!("{when}{}: `{id}` is usable ({how}) though no group of the user grants it", view.user),
            )
            .fact("server", id),
        );
    }
    findings
}

/// `openwebui::tool_call::<provider>`: the model got the tool's result back and it meets
/// the read's expectation.
pub fn judge_tool_call(provider: &str, seen: &ChatSeen, expect: &Expectation) -> Vec<Finding> {
    let fail = |msg: String| vec![Finding::new(FindingKind::ToolCallFailed, msg).fact("provider", provider)];
    let Some(reply) = &seen.reply else {
        let why = seen.error.clone().unwrap_or_else(|| "no reply was saved".into());
        return fail(format!("no reply to a chat asking for `{}` after {} ms: {why}", seen.tool, seen.waited_ms));
    };
    if reply.contains("was not offered") {
        return fail(format!("Open WebUI did not offer `{}` to the model: {reply}", seen.tool));
    }
    let Some(result) = reply.split_once(TOOL_RESULT).map(|(_, r)| r.trim()) else {
        return fail(format!("the model never got the result of `{}` back: its reply was {reply:?}", seen.tool));
    };
    let met = match expect {
        Expectation::TextContains(text) => result.contains(text.as_str()),
        Expectation::JsonSubset(subset) => json_values_in(result).iter().any(|v| contains_subset(v, subset)),
    };
    if met {
        vec![]
    } else {
        fail(format!("the result of `{}` that came back does not meet the read's expectation: {result:?}", seen.tool))
    }
}

/// What the scripted model prefixes the echoed tool result with.
pub const TOOL_RESULT: &str = "cordon-model: tool result:";

/// Every JSON value in `text`: the whole, each line, and any embedded `{...}` object
/// (Open WebUI may wrap a tool's output).
fn json_values_in(text: &str) -> Vec<serde_json::Value> {
    let mut out = Vec::new();
    let mut push = |s: &str| {
        if let Ok(v) = serde_json::from_str::<serde_json::Value>(s.trim()) {
            if let Some(inner) = v.as_str().and_then(|s| serde_json::from_str(s).ok()) {
                out.push(inner);
            }
            if let Some(items) = v.as_array() {
                for item in items {
                    if let Some(inner) =
                        item.get("text").and_then(|t| t.as_str()).and_then(|t| serde_json::from_str(t).ok())
                    {
                        out.push(inner);
                    }
                }
            }
            out.push(v);
        }
    };
    push(text);
    for line in text.lines() {
        push(line);
    }
    if let (Some(a), Some(b)) = (text.find('{'), text.rfind('}'))
        && a < b
    {
        push(&text[a..=b]);
    }
    out
}

fn contains_subset(value: &serde_json::Value, subset: &serde_json::Value) -> bool {
    use serde_json::Value;
    match (value, subset) {
        (Value::Object(v), Value::Object(s)) => {
            s.iter().all(|(k, sv)| v.get(k).is_some_and(|vv| contains_subset(vv, sv)))
        }
        (v, s) => v == s,
    }
}
