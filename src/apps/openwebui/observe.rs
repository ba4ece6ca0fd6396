//! What cordon saw through Open WebUI's API, as typed values a judge can be fed in tests.
//! Nothing here holds a secret: a connection's key is kept only as which scenario
//! credential (if any) it equals.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use super::headers::{AuthorizationFrom, HeaderSeen, KeySeen};
use super::headers::{custom_headers, sent_authorization, url_credentials};
use crate::secret::Secret;

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct GrantSeen {
    pub principal_type: String,
    pub principal_id: String,
    pub permission: String,
}

/// One entry of `TOOL_SERVER_CONNECTIONS` as the admin view shows it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConnectionSeen {
    /// `info.id`: Open WebUI names the server `server:<type>:<id>`.
    pub id: Option<String>,
    pub kind: String,
    pub url: String,
    /// Appended to the URL for OpenAPI servers; Open WebUI ignores it for MCP ones (its
    /// admin UI saves `openapi.json` there for every type).
    pub path: String,
    /// `bearer` when the entry has none (Open WebUI's default).
    pub auth_type: String,
    pub key: KeySeen,
    /// Custom headers Open WebUI sends as given (values kept only as which credential
    /// they carry).
    #[serde(default)]
    pub headers: Vec<HeaderSeen>,
    /// Why the entry's `headers` is not sent (it is not a JSON object), if it has one.
    #[serde(default)]
    pub headers_ignored: Option<String>,
    /// Userinfo in the URL (taken out of `url`): sent as `Authorization: Basic`.
    #[serde(default)]
    pub url_userinfo: Option<HeaderSeen>,
    /// Query parameters of the URL that carry a credential (their values are `…` in `url`).
    #[serde(default)]
    pub url_query: Vec<HeaderSeen>,
    pub enabled: bool,
    pub grants: Vec<GrantSeen>,
}

impl ConnectionSeen {
    /// Reads one entry; the key and header values are compared with `credentials` and dropped.
    pub fn from_json(v: &Value, credentials: &BTreeMap<String, Secret>) -> ConnectionSeen {
        let s = |v: Option<&Value>| v.and_then(Value::as_str).unwrap_or_default().to_string();
        let config = v.get("config");
        let grants = config
            .and_then(|c| c.get("access_grants"))
            .and_then(Value::as_array)
            .map(|grants| {
                grants
                    .iter()
                    .map(|g| GrantSeen {
                        principal_type: s(g.get("principal_type")),
                        principal_id: s(g.get("principal_id")),
                        permission: s(g.get("permission")),
                    })
                    .collect()
            })
            .unwrap_or_default();
        let (headers, headers_ignored) = custom_headers(v.get("headers"), credentials);
        let (url, url_userinfo, url_query) = url_credentials(&s(v.get("url")), credentials);
        ConnectionSeen {
            id: v.pointer("/info/id").and_then(Value::as_str).map(str::to_string),
            kind: s(v.get("type")),
            url,
            url_userinfo,
            url_query,
            path: s(v.get("path")),
            auth_type: v.get("auth_type").and_then(Value::as_str).unwrap_or("bearer").to_string(),
            key: KeySeen::of(v.get("key").and_then(Value::as_str).unwrap_or_default(), credentials),
            headers,
            headers_ignored,
            enabled: config.and_then(|c| c.get("enable")).and_then(Value::as_bool).unwrap_or(false),
            grants,
        }
    }

    /// The URL Open WebUI connects to: the URL as is for MCP, with `path` for OpenAPI.
    pub fn target_url(&self) -> String {
        let url = self.url.trim_end_matches('/');
        let path = self.path.trim_matches('/');
        if self.is_mcp() || path.is_empty() { url.to_string() } else { format!("{url}/{path}") }
    }

    pub fn is_mcp(&self) -> bool {
        self.kind == "mcp"
    }

    /// The Authorization headers Open WebUI sends this server.
    pub fn sent_authorization(&self) -> Vec<AuthorizationFrom> {
        sent_authorization(&self.auth_type, &self.key, &self.headers, self.url_userinfo.as_ref())
    }

    /// One line for evidence, with grants shown by group name where known.
    pub fn describe(&self, groups: &[GroupSeen]) -> String {
        let grants: Vec<String> = self.grants.iter().map(|g| g.describe(groups)).collect();
        let path = match (self.is_mcp(), self.path.trim_matches('/')) {
            (_, "") => String::new(),
            (true, p) => format!(" (path `{p}`, which Open WebUI ignores for MCP)"),
            (false, _) => String::new(),
        };
        let mut headers: Vec<String> = self.headers.iter().map(HeaderSeen::describe).collect();
        headers.extend(self.url_userinfo.iter().map(|u| format!("URL {}", u.describe())));
        headers.extend(self.url_query.iter().map(|q| format!("URL query {}", q.describe())));
        headers.extend(self.headers_ignored.clone());
        let headers = if headers.is_empty() { String::new() } else { format!(", headers [{}]", headers.join("; ")) };
        format!(
            "{} {} at {}{path} auth={} with {}{headers}, {}, grants [{}]",
            self.kind,
            self.id.as_deref().unwrap_or("<no id>"),
            self.target_url(),
            self.auth_type,
            self.key.describe(),
            if self.enabled { "enabled" } else { "disabled" },
            grants.join(", ")
        )
    }
}

impl GrantSeen {
    pub fn describe(&self, groups: &[GroupSeen]) -> String {
        match self.principal_type.as_str() {
            "group" => match groups.iter().find(|g| g.id == self.principal_id) {
                Some(g) => format!("group `{}` ({})", g.name, self.permission),
                None => format!("unknown group {} ({})", self.principal_id, self.permission),
            },
            "user" if self.principal_id == "*" => format!("every user ({})", self.permission),
            other => format!("{other} {} ({})", self.principal_id, self.permission),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupSeen {
    pub id: String,
    pub name: String,
}

/// The admin's view: every connection and every group.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AdminView {
    pub connections: Vec<ConnectionSeen>,
    pub groups: Vec<GroupSeen>,
    /// Where the URLs of connections the scenario does not manage lead, by index into
    /// `connections`: only the addresses some container of the deployment owns.
    #[serde(default)]
    pub destinations: BTreeMap<usize, Vec<Destination>>,
}

/// An address a connection's host resolves to from Open WebUI's namespace (as its libc
/// would), and whose container that address is.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Destination {
    pub addr: std::net::SocketAddr,
    pub container: String,
    pub service: Option<String>,
    pub network: String,
}

impl AdminView {
    pub fn evidence(&self) -> Vec<String> {
        let mut out: Vec<String> =
            self.connections.iter().map(|c| format!("connection: {}", c.describe(&self.groups))).collect();
        if self.connections.is_empty() {
            out.push("connection: none".into());
        }
        out
    }

    /// Every server id some connection carries.
    pub fn server_ids(&self) -> BTreeSet<String> {
        self.connections.iter().filter_map(|c| c.id.clone()).collect()
    }
}

/// What `/api/v1/tools/id/server:mcp:<id>/specs` answered.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SpecsSeen {
    pub status: u16,
    /// Tool names, on a 200.
    pub tools: Option<Vec<String>>,
    /// Open WebUI's `detail` (or the body's start) otherwise.
    pub detail: String,
}

/// One user's view of the MCP servers: what `/api/v1/tools/` lists, and what `/specs`
/// answers for every server id cordon knows of.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct UserView {
    /// Who, for evidence: the ephemeral user's label and its groups.
    pub user: String,
    /// Connection ids (`<id>` of `server:mcp:<id>`) listed.
    pub listed: BTreeSet<String>,
    /// connection id → status of its `/specs`.
    pub specs: BTreeMap<String, u16>,
}

impl UserView {
    /// A server the user can use: listed, or `/specs` anything but 404 (a 502 still means
    /// Open WebUI let the user try).
    pub fn visible(&self) -> BTreeSet<String> {
        let mut out = self.listed.clone();
        out.extend(self.specs.iter().filter(|(_, s)| **s != 404).map(|(id, _)| id.clone()));
        out
    }

    pub fn evidence(&self) -> String {
        let specs: Vec<String> = self.specs.iter().map(|(id, s)| format!("{id}: {s}")).collect();
        let listed: Vec<&str> = self.listed.iter().map(String::as_str).collect();
        format!("{}: /api/v1/tools/ lists [{}]; /specs {}", self.user, listed.join(", "), specs.join(", "))
    }
}
