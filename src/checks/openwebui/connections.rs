//! `openwebui::connections`, pure: the admin view against the declared state. The one
//! judgement of Open WebUI's connections — `restart_convergence` runs it too, on the view
//! after the restart.
//!
//! A connection is judged by what Open WebUI does with it, not by its fields alone: the
//! URL it connects to (an MCP connection ignores `path`), and every credential it sends
//! (the key's Authorization, or a custom `authorization` header that replaces it, and any
//! other header that carries a credential). An unmanaged connection fails when it reaches a
//! provider of the scenario (by URL, or by where its host resolves from Open WebUI), or
//! when it sends one of the scenario's credentials anywhere else.

use std::collections::BTreeSet;

use super::judge::{Desired, WantedConnection};
use crate::model::{Finding, FindingKind};
use crate::openwebui::observe::{AdminView, AuthorizationFrom, ConnectionSeen, Destination, HeaderSeen, KeySeen};

/// `openwebui::connections`: the admin view equals the declared state.
pub fn judge_connections(view: &AdminView, desired: &Desired) -> Vec<Finding> {
    let mut findings = Vec::new();
    let drift = |msg: String| Finding::text(FindingKind::ConnectionDrift, msg);
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
        if let Some(why) = c.id.as_ref().and_then(|id| desired.forbidden.get(id)) {
            let id = c.id.as_deref().unwrap_or_default();
            findings.push(
                drift(format!("a connection `{id}` exists for provider `{id}`, which {why}: none may"))
                    .fact("provider", id),
            );
            continue;
        }
        let destinations = view.destinations.get(&index).map(Vec::as_slice).unwrap_or_default();
        findings.extend(judge_unmanaged(c, destinations, desired));
    }
    findings
}

/// A connection the scenario does not declare: harmless unless it reaches a provider of
/// the scenario or sends one of its credentials.
fn judge_unmanaged(c: &ConnectionSeen, destinations: &[Destination], desired: &Desired) -> Vec<Finding> {
    let id = c.id.as_deref().unwrap_or("<no id>");
    let url = c.target_url();
    let by_url = desired
        .provider_urls
        .iter()
        .find(|(_, u)| **u == url || c.url.trim_end_matches('/') == u.as_str())
        .map(|(provider, _)| (provider.clone(), format!("at {url}"), None));
    // Another spelling of the same place (an alias, an address, a trailing dot) is told by
    // where the name leads, not by the text.
    let by_address = || {
        destinations.iter().find_map(|d| {
            let provider = desired.provider_services.get(d.service.as_deref()?)?;
            let how = format!(
                "at {url}, which resolves from Open WebUI to {} (`{}` on `{}`)",
                d.addr, d.container, d.network
            );
            Some((provider.clone(), how, Some(d)))
        })
    };
    let carried = credentials_sent(c);
    let sending = |list: &[(String, String)]| {
        let parts: Vec<String> = list.iter().map(|(how, id)| format!("{how} `{id}`")).collect();
        parts.join(" and ")
    };
    if let Some((provider, how, destination)) = by_url.or_else(by_address) {
        let mut message = format!("unmanaged connection `{id}` reaches provider `{provider}` {how}");
        if !carried.is_empty() {
            message.push_str(&format!(", sending {}", sending(&carried)));
        }
        let mut f =
            Finding::text(FindingKind::UnmanagedConnection, message).fact("provider", &provider).fact("connection", id);
        if let Some(d) = destination {
            f = f.fact("host", host_of(&url)).fact("addr", d.addr);
        }
        return vec![f];
    }
    if carried.is_empty() {
        return vec![];
    }
    let owners: Vec<String> = carried
        .iter()
        .map(|(_, credential)| desired.credential_owners.get(credential).cloned().unwrap_or_else(|| "someone".into()))
        .collect();
    let mut f = Finding::text(
        FindingKind::UnmanagedConnection,
        format!(
            "unmanaged connection `{id}` sends {} ({}) to {url}, which is no provider of the scenario",
            sending(&carried),
            owners.join("; ")
        ),
    )
    .fact("connection", id)
    .fact("host", host_of(&url));
    for (header, credential) in carried_facts(c) {
        f = f.fact("credential", credential).fact("header", header);
    }
    vec![f]
}

/// (how, credential id) of every scenario credential the connection sends.
fn credentials_sent(c: &ConnectionSeen) -> Vec<(String, String)> {
    carried_facts(c)
        .into_iter()
        .map(|(header, id)| {
            let how = match header.as_str() {
                "key" => "the key of credential".to_string(),
                "URL userinfo" => "in its URL's userinfo credential".to_string(),
                h if h.starts_with("URL query") => format!("in its {h} credential"),
                h => format!("in header `{h}` credential"),
            };
            (how, id)
        })
        .collect()
}

/// (header name or "key", credential id) for every credential Open WebUI sends.
fn carried_facts(c: &ConnectionSeen) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for sent in c.sent_authorization() {
        match sent {
            AuthorizationFrom::Key(KeySeen::Credential(id)) => out.push(("key".to_string(), id)),
            AuthorizationFrom::Header(HeaderSeen { name, value: KeySeen::Credential(id), .. }) => out.push((name, id)),
            AuthorizationFrom::UrlUserinfo(HeaderSeen { value: KeySeen::Credential(id), .. }) => {
                out.push(("URL userinfo".to_string(), id))
            }
            _ => {}
        }
    }
    for h in c.headers.iter().filter(|h| !h.overrides_key()) {
        if let KeySeen::Credential(id) = &h.value {
            out.push((h.name.clone(), id.clone()));
        }
    }
    for q in &c.url_query {
        if let KeySeen::Credential(id) = &q.value {
            out.push((format!("URL query `{}`", q.name), id.clone()));
        }
    }
    out
}

fn host_of(url: &str) -> String {
    url::Url::parse(url).ok().and_then(|u| u.host_str().map(str::to_string)).unwrap_or_else(|| url.to_string())
}

fn judge_one(c: &ConnectionSeen, want: &WantedConnection, view: &AdminView, desired: &Desired) -> Vec<Finding> {
    let p = &want.provider;
    let drift = |m: String| {
        Finding::text(FindingKind::ConnectionDrift, format!("connection `{p}`: {m}"))
            .fact("provider", p)
            .fact("connection", p)
    };
    let mut findings = Vec::new();
    if !c.is_mcp() {
        findings.push(drift(format!("type `{}` instead of mcp", c.kind)));
    }
    if c.target_url() != want.url {
        findings.push(drift(format!("URL {} instead of {}", c.target_url(), want.url)));
    }
    findings.extend(
        judge_credentials(c, want, desired)
            .into_iter()
            .map(|(m, facts)| facts.into_iter().fold(drift(m), |f, (k, v)| f.fact(k, v))),
    );
    if !c.enabled {
        findings.push(drift("it is disabled".into()));
    }
    let named: Vec<&str> = view.groups.iter().filter(|g| g.name == want.group).map(|g| g.id.as_str()).collect();
    match named.as_slice() {
        [] => findings.push(drift(format!("group `{}` does not exist in Open WebUI", want.group))),
        [id] => {
            let exact = c.grants.len() == 1
                && c.grants[0].principal_type == "group"
                && c.grants[0].principal_id == *id
                && c.grants[0].permission == "read";
            if !exact {
                let grants: Vec<String> = c.grants.iter().map(|g| g.describe(&view.groups)).collect();
                findings.push(drift(format!(
                    "it is granted to [{}] instead of exactly group `{}` (read)",
                    grants.join(", "),
                    want.group
                )));
            }
        }
        many => {
            findings.push(drift(format!("{} groups are named `{}`: the grant is ambiguous", many.len(), want.group)))
        }
    }
    findings
}

type Problem = (String, Vec<(&'static str, String)>);

/// What the provider receives must be exactly the pair's credential as a bearer: the
/// Authorization Open WebUI sends (from the key, or a custom header that replaces it), the
/// key field itself (another pair's secret has no place there even when unsent), and no
/// other header carrying a credential.
fn judge_credentials(c: &ConnectionSeen, want: &WantedConnection, desired: &Desired) -> Vec<Problem> {
    let seen = Held { c, declared: want.credential.as_deref(), desired };
    let mut problems: Vec<Problem> = seen.auth_type().into_iter().collect();
    problems.extend(seen.overriding_headers());
    problems.extend(seen.key());
    problems.extend(seen.in_the_url());
    problems.extend(seen.other_headers());
    problems
}

/// One connection's credentials, against the one declared for its pair.
struct Held<'a> {
    c: &'a ConnectionSeen,
    declared: Option<&'a str>,
    desired: &'a Desired,
}

impl Held<'_> {
    /// Whose a credential is, for the sentence.
    fn owner(&self, id: &str) -> String {
        self.desired.credential_owners.get(id).cloned().unwrap_or_else(|| "someone else".into())
    }

    /// Custom headers that replace the key's Authorization.
    fn overriding(&self) -> Vec<HeaderSeen> {
        self.c
            .sent_authorization()
            .into_iter()
            .filter_map(|s| match s {
                AuthorizationFrom::Header(h) => Some(h),
                _ => None,
            })
            .collect()
    }

    /// The declared bearer through a custom header is what the provider must get: then
    /// `auth_type: none` is no drift either.
    fn bearer_by_header(&self) -> bool {
        !self.overriding().is_empty()
    }

    fn describe(&self, value: &KeySeen) -> String {
        match value {
            KeySeen::Credential(held) => format!("credential `{held}` ({})", self.owner(held)),
            other => other.describe(),
        }
    }

    fn auth_type(&self) -> Option<Problem> {
        let auth_type = self.c.auth_type.as_str();
        if auth_type == "bearer" || (auth_type == "none" && self.bearer_by_header()) {
            return None;
        }
        let why = match auth_type {
            "none" => " (Open WebUI sends no bearer)",
            "session" | "system_oauth" | "oauth_2.1" | "oauth_2.1_static" => {
                " (Open WebUI sends each user's own token, not the pair's credential)"
            }
            _ => "",
        };
        Some((format!("auth_type `{auth_type}` instead of bearer{why}"), vec![]))
    }

    /// A custom header that replaces the key must send exactly the declared bearer.
    fn overriding_headers(&self) -> Vec<Problem> {
        let mut problems = Vec::new();
        for h in self.overriding() {
            let ok = h.scheme.as_deref().is_some_and(|s| s.eq_ignore_ascii_case("bearer"))
                && matches!((&h.value, self.declared), (KeySeen::Credential(held), Some(d)) if held == d);
            if ok {
                continue;
            }
            let sends = match &h.value {
                KeySeen::Credential(held) => format!("credential `{held}` ({})", self.owner(held)),
                KeySeen::None => "an empty Authorization".to_string(),
                KeySeen::Unknown => "a value that is none of the scenario's credentials".to_string(),
            };
            let scheme = h.scheme.as_deref().map(|s| format!(" as {s}")).unwrap_or_default();
            let instead = self.declared.map_or(String::new(), |d| format!(" instead of credential `{d}`"));
            problems.push((
                format!("its custom header `{}` replaces the key: Open WebUI sends {sends}{scheme}{instead}", h.name),
                facts_of(("header", h.name.clone()), &h.value),
            ));
        }
        problems
    }

    /// The key field holds the declared credential (another pair's secret has no place
    /// there even when it is not sent).
    fn key(&self) -> Option<Problem> {
        let (c, declared, by_header) = (self.c, self.declared, self.bearer_by_header());
        let unsent = if by_header {
            let names: Vec<String> = self.overriding().iter().map(|h| format!("`{}`", h.name)).collect();
            format!(" (not sent: custom header {} replaces it)", names.join(", "))
        } else if c.auth_type != "bearer" {
            format!(" (not sent with auth_type `{}`)", c.auth_type)
        } else {
            String::new()
        };
        match (&c.key, declared) {
            (KeySeen::Credential(held), Some(d)) if held == d => None,
            (KeySeen::None, _) if by_header || c.auth_type != "bearer" => None,
            (KeySeen::Credential(held), _) => Some((
                format!(
                    "it holds the key of credential `{held}` ({}), not the one declared for this pair{unsent}",
                    self.owner(held)
                ),
                vec![("credential", held.clone())],
            )),
            (_, _) if by_header => None,
            (other, Some(d)) => Some((format!("it holds {} instead of credential `{d}`", other.describe()), vec![])),
            (other, None) => Some((
                format!("it holds {}, and the scenario gives the client no credential for it", other.describe()),
                vec![],
            )),
        }
    }

    /// Userinfo (sent as Basic in place of the key) and query parameters: a credential in
    /// the URL is in every log that URL reaches.
    fn in_the_url(&self) -> Vec<Problem> {
        let mut problems = Vec::new();
        if let Some(u) = &self.c.url_userinfo {
            problems.push((
                format!(
                    "its URL carries userinfo, which Open WebUI's HTTP client sends as Basic in place of the key: {}",
                    self.describe(&u.value)
                ),
                facts_of(("header", "URL userinfo".to_string()), &u.value),
            ));
        }
        for q in &self.c.url_query {
            problems.push((
                format!(
                    "its URL carries {} in the query parameter `{}` (credentials go in headers only)",
                    self.describe(&q.value),
                    q.name
                ),
                facts_of(("header", format!("URL query `{}`", q.name)), &q.value),
            ));
        }
        problems
    }

    /// No other header carries a credential but the declared one.
    fn other_headers(&self) -> Vec<Problem> {
        let mut problems = Vec::new();
        for h in self.c.headers.iter().filter(|h| !h.overrides_key() && h.bears_credential()) {
            let message = match &h.value {
                KeySeen::Credential(held) if Some(held.as_str()) == self.declared => continue,
                KeySeen::None => continue,
                KeySeen::Credential(held) => {
                    format!("its custom header `{}` sends credential `{held}` ({})", h.name, self.owner(held))
                }
                KeySeen::Unknown => format!(
                    "its custom header `{}` sends a value that is none of the scenario's credentials: a credential the scenario does not declare",
                    h.name
                ),
            };
            problems.push((message, facts_of(("header", h.name.clone()), &h.value)));
        }
        problems
    }
}

/// Where a credential was seen, and which one when it is one of the scenario's.
fn facts_of(place: (&'static str, String), value: &KeySeen) -> Vec<(&'static str, String)> {
    let mut facts = vec![place];
    if let KeySeen::Credential(held) = value {
        facts.push(("credential", held.clone()));
    }
    facts
}
