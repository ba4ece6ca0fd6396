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

use super::judge::{Desired, Forbidden, WantedConnection};
use crate::apps::openwebui::observe::{AdminView, AuthorizationFrom, ConnectionSeen, Destination, HeaderSeen, KeySeen};
use crate::model::{Finding, FindingKind};

/// `openwebui::connections`: the admin view equals the declared state.
pub fn judge_connections(view: &AdminView, desired: &Desired) -> Vec<Finding> {
    let mut findings = Vec::new();
    let drift = |template: &'static str| Finding::new(FindingKind::ConnectionDrift, template);
    for want in &desired.connections {
        let held: Vec<&ConnectionSeen> =
            view.connections.iter().filter(|c| c.id.as_deref() == Some(want.provider.as_str())).collect();
        match held.as_slice() {
            [] => findings.push(
                drift("no connection for provider `{provider}` (declared at {url})")
                    .fact("provider", &want.provider)
                    .fact("url", &want.url),
            ),
            [one] => findings.extend(judge_one(one, want, view, desired)),
            many => findings.push(
                drift("{count} connections carry the id `{provider}`: exactly one is declared")
                    .fact("provider", &want.provider)
                    .fact("count", many.len()),
            ),
        }
    }
    let managed: BTreeSet<&str> = desired.connections.iter().map(|w| w.provider.as_str()).collect();
    for (index, c) in
        view.connections.iter().enumerate().filter(|(_, c)| !c.id.as_deref().is_some_and(|id| managed.contains(id)))
    {
        if let Some(why) = c.id.as_ref().and_then(|id| desired.forbidden.get(id)) {
            let id = c.id.as_deref().unwrap_or_default();
            let found = match why {
                Forbidden::Disabled => {
                    drift("a connection `{provider}` exists for provider `{provider}`, which is disabled: none may")
                }
                Forbidden::NotAdmitted { client } => drift(
                    "a connection `{provider}` exists for provider `{provider}`, which does not admit `{client}`: none may",
                )
                .fact("client", client),
            };
            findings.push(found.fact("provider", id));
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
        .map(|(provider, _)| (provider.clone(), None));
    // Another spelling of the same place (an alias, an address, a trailing dot) is told by
    // where the name leads, not by the text.
    let by_address = || {
        destinations.iter().find_map(|d| {
            let provider = desired.provider_services.get(d.service.as_deref()?)?;
            Some((provider.clone(), Some(d)))
        })
    };
    let carried = credentials_sent(c);
    let sending = |list: &[(String, String)]| {
        let parts: Vec<String> = list.iter().map(|(how, id)| format!("{how} `{id}`")).collect();
        parts.join(" and ")
    };
    if let Some((provider, destination)) = by_url.or_else(by_address) {
        let mut f = Finding::new(
            FindingKind::UnmanagedConnection,
            "unmanaged connection `{connection}` reaches provider `{provider}` at {url}",
        )
        .fact("provider", &provider)
        .fact("connection", id)
        .fact("url", &url);
        if let Some(d) = destination {
            f = f
                .suffixed(", which resolves from Open WebUI to {addr} (`{container}` on `{network}`)")
                .fact("host", host_of(&url))
                .fact("addr", d.addr)
                .fact("container", &d.container)
                .fact("network", &d.network);
        }
        if !carried.is_empty() {
            f = f.suffixed(", sending {credentials}").fact("credentials", sending(&carried));
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
    let mut f = Finding::new(
        FindingKind::UnmanagedConnection,
        "unmanaged connection `{connection}` sends {credentials} ({owners}) to {url}, which is no provider of the scenario",
    )
    .fact("connection", id)
    .fact("host", host_of(&url))
    .fact("credentials", sending(&carried))
    .fact("owners", owners.join("; "))
    .fact("url", &url);
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
    let at = |f: Finding| f.prefixed("connection `{connection}`: ").fact("provider", p).fact("connection", p);
    let drift = |template: &'static str| at(Finding::new(FindingKind::ConnectionDrift, template));
    let mut findings = Vec::new();
    if !c.is_mcp() {
        findings.push(drift("type `{type}` instead of mcp").fact("type", &c.kind));
    }
    if c.target_url() != want.url {
        findings.push(
            drift("URL {url} instead of {declared_url}").fact("url", c.target_url()).fact("declared_url", &want.url),
        );
    }
    findings.extend(judge_credentials(c, want, desired).into_iter().map(at));
    if !c.enabled {
        findings.push(drift("it is disabled"));
    }
    let named: Vec<&str> = view.groups.iter().filter(|g| g.name == want.group).map(|g| g.id.as_str()).collect();
    match named.as_slice() {
        [] => findings.push(drift("group `{group}` does not exist in Open WebUI").fact("group", &want.group)),
        [id] => {
            let exact = c.grants.len() == 1
                && c.grants[0].principal_type == "group"
                && c.grants[0].principal_id == *id
                && c.grants[0].permission == "read";
            if !exact {
                let grants: Vec<String> = c.grants.iter().map(|g| g.describe(&view.groups)).collect();
                findings.push(
                    drift("it is granted to [{grants}] instead of exactly group `{group}` (read)")
                        .fact("grants", grants.join(", "))
                        .fact("group", &want.group),
                );
            }
        }
        many => findings.push(
            drift("{count} groups are named `{group}`: the grant is ambiguous")
                .fact("count", many.len())
                .fact("group", &want.group),
        ),
    }
    findings
}

/// What the provider receives must be exactly the pair's credential as a bearer: the
/// Authorization Open WebUI sends (from the key, or a custom header that replaces it), the
/// key field itself (another pair's secret has no place there even when unsent), and no
/// other header carrying a credential.
fn judge_credentials(c: &ConnectionSeen, want: &WantedConnection, desired: &Desired) -> Vec<Finding> {
    let seen = Held { c, declared: want.credential.as_deref(), desired };
    let mut problems: Vec<Finding> = seen.auth_type().into_iter().collect();
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

/// A problem with a connection's credentials: the rest of a sentence that `judge_one`
/// opens with the connection's name.
fn problem(template: &'static str) -> Finding {
    Finding::new(FindingKind::ConnectionDrift, template)
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

    /// A problem with what a key, header or URL part holds: the first sentence when it is a
    /// credential of the scenario (and whose it is), the second when it is empty, the third
    /// for any other value.
    fn holding(&self, value: &KeySeen, template: [&'static str; 3]) -> Finding {
        let [credential, none, unknown] = template;
        match value {
            KeySeen::Credential(held) => problem(credential).fact("credential", held).fact("owner", self.owner(held)),
            KeySeen::None => problem(none),
            KeySeen::Unknown => problem(unknown),
        }
    }

    fn auth_type(&self) -> Option<Finding> {
        let auth_type = self.c.auth_type.as_str();
        if auth_type == "bearer" || (auth_type == "none" && self.bearer_by_header()) {
            return None;
        }
        let f = match auth_type {
            "none" => problem("auth_type `{auth_type}` instead of bearer (Open WebUI sends no bearer)"),
            "session" | "system_oauth" | "oauth_2.1" | "oauth_2.1_static" => problem(
                "auth_type `{auth_type}` instead of bearer (Open WebUI sends each user's own token, not the pair's credential)",
            ),
            _ => problem("auth_type `{auth_type}` instead of bearer"),
        };
        Some(f.fact("auth_type", auth_type))
    }

    /// A custom header that replaces the key must send exactly the declared bearer.
    fn overriding_headers(&self) -> Vec<Finding> {
        let mut problems = Vec::new();
        for h in self.overriding() {
            let ok = h.scheme.as_deref().is_some_and(|s| s.eq_ignore_ascii_case("bearer"))
                && matches!((&h.value, self.declared), (KeySeen::Credential(held), Some(d)) if held == d);
            if ok {
                continue;
            }
            let mut f = self
                .holding(
                    &h.value,
                    [
                        "its custom header `{header}` replaces the key: Open WebUI sends credential `{credential}` ({owner})",
                        "its custom header `{header}` replaces the key: Open WebUI sends an empty Authorization",
                        "its custom header `{header}` replaces the key: Open WebUI sends a value that is none of the scenario's credentials",
                    ],
                )
                .fact("header", &h.name);
            if let Some(s) = &h.scheme {
                f = f.suffixed(" as {scheme}").fact("scheme", s);
            }
            if let Some(d) = self.declared {
                f = f.suffixed(" instead of credential `{declared}`").fact("declared", d);
            }
            problems.push(f);
        }
        problems
    }

    /// The key field holds the declared credential (another pair's secret has no place
    /// there even when it is not sent).
    fn key(&self) -> Option<Finding> {
        let (c, declared, by_header) = (self.c, self.declared, self.bearer_by_header());
        let unsent = |f: Finding| {
            if by_header {
                let names: Vec<String> = self.overriding().iter().map(|h| format!("`{}`", h.name)).collect();
                f.suffixed(" (not sent: custom header {headers} replaces it)").fact("headers", names.join(", "))
            } else if c.auth_type != "bearer" {
                f.suffixed(" (not sent with auth_type `{auth_type}`)").fact("auth_type", &c.auth_type)
            } else {
                f
            }
        };
        match (&c.key, declared) {
            (KeySeen::Credential(held), Some(d)) if held == d => None,
            (KeySeen::None, _) if by_header || c.auth_type != "bearer" => None,
            (KeySeen::Credential(held), _) => Some(unsent(
                problem("it holds the key of credential `{credential}` ({owner}), not the one declared for this pair")
                    .fact("credential", held)
                    .fact("owner", self.owner(held)),
            )),
            (_, _) if by_header => None,
            (KeySeen::None, Some(d)) => {
                Some(problem("it holds no key instead of credential `{declared}`").fact("declared", d))
            }
            (_, Some(d)) => Some(
                problem("it holds a key that is none of the scenario's credentials instead of credential `{declared}`")
                    .fact("declared", d),
            ),
            (KeySeen::None, None) => {
                Some(problem("it holds no key, and the scenario gives the client no credential for it"))
            }
            (_, None) => Some(problem(
                "it holds a key that is none of the scenario's credentials, and the scenario gives the client no credential for it",
            )),
        }
    }

    /// Userinfo (sent as Basic in place of the key) and query parameters: a credential in
    /// the URL is in every log that URL reaches.
    fn in_the_url(&self) -> Vec<Finding> {
        let mut problems = Vec::new();
        if let Some(u) = &self.c.url_userinfo {
            problems.push(self.holding(
                &u.value,
                [
                    "its URL carries userinfo, which Open WebUI's HTTP client sends as Basic in place of the key: credential `{credential}` ({owner})",
                    "its URL carries userinfo, which Open WebUI's HTTP client sends as Basic in place of the key: no key",
                    "its URL carries userinfo, which Open WebUI's HTTP client sends as Basic in place of the key: a key that is none of the scenario's credentials",
                ],
            )
            .fact("header", "URL userinfo"));
        }
        for q in &self.c.url_query {
            problems.push(
                self.holding(
                    &q.value,
                    [
                        "its URL carries credential `{credential}` ({owner}) in the query parameter `{parameter}` (credentials go in headers only)",
                        "its URL carries no key in the query parameter `{parameter}` (credentials go in headers only)",
                        "its URL carries a key that is none of the scenario's credentials in the query parameter `{parameter}` (credentials go in headers only)",
                    ],
                )
                .fact("header", format!("URL query `{}`", q.name))
                .fact("parameter", &q.name),
            );
        }
        problems
    }

    /// No other header carries a credential but the declared one.
    fn other_headers(&self) -> Vec<Finding> {
        let mut problems = Vec::new();
        for h in self.c.headers.iter().filter(|h| !h.overrides_key() && h.bears_credential()) {
            let f = match &h.value {
                KeySeen::Credential(held) if Some(held.as_str()) == self.declared => continue,
                KeySeen::None => continue,
                KeySeen::Credential(held) => {
                    problem("its custom header `{header}` sends credential `{credential}` ({owner})")
                        .fact("credential", held)
                        .fact("owner", self.owner(held))
                }
                KeySeen::Unknown => problem(
                    "its custom header `{header}` sends a value that is none of the scenario's credentials: a credential the scenario does not declare",
                ),
            };
            problems.push(f.fact("header", &h.name));
        }
        problems
    }
}
