//! What `cordon init` sees of a running deployment: which listeners speak MCP (asked from
//! the container's own namespace, at its own address), what each serves, and which other
//! containers open TCP to it today (asked from each one's namespace). Plain data; the
//! draft is written from it by [`super::draft`].

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::rc::Rc;
use std::time::Duration;

use futures_util::future::join_all;

use crate::checks::kit::connect::tcp_connect;
use crate::deployment::Deployment;
use crate::engine::Target;
use crate::mcp::{Endpoint, Limits, McpClient, McpError, Transport};
use crate::netns::NsView;
use crate::secret::Secret;

/// Where an MCP server may answer, tried in this order at each listening port.
pub const PATHS: [(Transport, &str); 2] = [(Transport::StreamableHttp, "/mcp"), (Transport::Sse, "/sse")];

#[derive(Debug, Clone, Default)]
pub struct Survey {
    pub project: String,
    pub swarm: bool,
    /// network key → (subnets, services on it).
    pub networks: BTreeMap<String, (Vec<String>, Vec<String>)>,
    pub endpoints: Vec<EndpointSeen>,
    /// Listeners that refused an anonymous handshake where no credential could be tried.
    pub unconfirmed: Vec<Unconfirmed>,
    /// Every container of the deployment that serves no MCP: what it reached.
    pub vantages: Vec<VantageSeen>,
    /// Listeners that could not be asked at all, and why.
    pub unprobed: Vec<String>,
}

/// An MCP server found at `service:port/path`.
#[derive(Debug, Clone, PartialEq)]
pub struct EndpointSeen {
    pub service: String,
    pub port: u16,
    pub path: String,
    pub transport: Transport,
    pub replicas: usize,
    /// The era the handshake settled on, as the client names it.
    pub era: String,
    pub auth: Auth,
    /// The variable holding the credential the session was opened with.
    pub credential_var: String,
    /// Tool names `tools/list` served, sorted; `Err` says why they could not be read.
    pub tools: Result<Vec<String>, String>,
}

impl EndpointSeen {
    pub fn url(&self) -> String {
        format!("http://{}:{}{}", self.service, self.port, self.path)
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Auth {
    /// A handshake without a bearer was refused with this status, one with the bearer
    /// from `credential_var` succeeded.
    Bearer { refused_status: u16 },
    /// A handshake without any bearer succeeded.
    Open,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Unconfirmed {
    pub service: String,
    pub port: u16,
    pub path: String,
    pub status: u16,
    pub www_authenticate: Option<String>,
    /// The variable cordon looked for (unset), or the one it tried.
    pub var: String,
    /// Why it stays unconfirmed: no credential, or the credential refused too.
    pub why: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct VantageSeen {
    pub service: String,
    /// The endpoint (by index into [`Survey::endpoints`]) and where it opened.
    pub reached: Vec<(usize, Reach)>,
    /// Set when the container's namespace could not be entered.
    pub unprobed: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Reach {
    pub addr: SocketAddr,
    pub network: String,
}

/// What one listener showed when asked from its own namespace.
#[derive(Debug)]
pub enum Identified {
    Mcp { transport: Transport, path: String, era: String, open: Option<u16>, tools: Result<Vec<String>, String> },
    Refused { path: String, status: u16, www_authenticate: Option<String>, after_bearer: Option<String> },
    NotMcp,
}

/// Asks `host:port` at `addr` (the container's own address) whether it speaks MCP: a
/// handshake without a bearer, then, where that is refused with 401 or 403 and a
/// credential is at hand, with it. Only a completed handshake counts; words never do.
pub async fn identify(
    host: String,
    (addr, port): (IpAddr, u16),
    extra_paths: Vec<String>,
    bearer: Option<Secret>,
    limits: Limits,
) -> Identified {
    let mut refused = None;
    let paths = extra_paths
        .iter()
        .map(|p| (Transport::StreamableHttp, p.as_str()))
        .chain(PATHS.iter().map(|(t, p)| (*t, *p)))
        .collect::<Vec<_>>();
    for (transport, path) in paths {
        let Ok(url) = url::Url::parse(&format!("http://{host}:{port}{path}")) else { return Identified::NotMcp };
        let endpoint = Endpoint::new(url, transport).pinned_to(SocketAddr::new(addr, port));
        match handshake(&endpoint, None, &limits).await {
            Ok((era, tools)) => {
                return Identified::Mcp { transport, path: path.into(), era, open: None, tools };
            }
            // Refused by status, or in MCP itself (a JSON-RPC error to the handshake, as
            // servers that refuse in-band do): either way a credential may open it.
            Err(e @ (McpError::Http { status: 401 | 403, .. } | McpError::JsonRpc { .. })) => {
                let (status, www_authenticate) = match e {
                    McpError::Http { status, www_authenticate, .. } => (status, www_authenticate),
                    _ => (200, None),
                };
                let Some(secret) = &bearer else {
                    refused.get_or_insert(Identified::Refused {
                        path: path.into(),
                        status,
                        www_authenticate,
                        after_bearer: None,
                    });
                    continue;
                };
                match handshake(&endpoint, Some(secret.clone()), &limits).await {
                    Ok((era, tools)) => {
                        return Identified::Mcp { transport, path: path.into(), era, open: Some(status), tools };
                    }
                    Err(e) => {
                        refused.get_or_insert(Identified::Refused {
                            path: path.into(),
                            status,
                            www_authenticate,
                            after_bearer: Some(e.to_string()),
                        });
                    }
                }
            }
            Err(_) => {}
        }
    }
    refused.unwrap_or(Identified::NotMcp)
}

async fn handshake(
    endpoint: &Endpoint,
    bearer: Option<Secret>,
    limits: &Limits,
) -> Result<(String, Result<Vec<String>, String>), McpError> {
    let client = McpClient::new(endpoint.clone(), bearer, limits.clone())?;
    let session = client.connect().await?;
    let era = match &session.era {
        crate::mcp::Era::Stateless2026 => "revision 2026-07-28 (server/discover, no session)".to_string(),
        crate::mcp::Era::Stateful { protocol_version } if session.session_id_present => {
            format!("initialize, protocol {protocol_version}, with a session")
        }
        crate::mcp::Era::Stateful { protocol_version } => {
            format!("initialize, protocol {protocol_version}, no session")
        }
        crate::mcp::Era::LegacySse => "HTTP+SSE endpoint event".to_string(),
    };
    let tools = client.list_tools(&session).await.map_err(|e| e.to_string()).map(|tools| {
        let mut names: Vec<String> = tools.into_iter().map(|t| t.name).collect();
        names.sort();
        names.dedup();
        names
    });
    client.close(session).await;
    Ok((era, tools))
}

/// One endpoint (by index into [`Survey::endpoints`]) as a client would aim at it: its
/// port at every address of every replica, with the network each address is on.
#[derive(Clone, Debug)]
pub struct Aim {
    pub endpoint: usize,
    pub port: u16,
    pub addrs: Vec<(IpAddr, String)>,
}

/// From one container's namespace: a TCP connect to every address of every replica of
/// each endpoint, at its port; the first that opens, per endpoint.
pub async fn reach_from(_view: Rc<NsView>, aims: Vec<Aim>, timeout: Duration) -> Vec<(usize, Reach)> {
    let tries = aims.into_iter().map(|Aim { endpoint: index, port, addrs }| async move {
        let attempts = addrs.into_iter().map(|(ip, network)| async move {
            let addr = SocketAddr::new(ip, port);
            tcp_connect(addr, timeout).await.ok().map(|()| Reach { addr, network })
        });
        join_all(attempts).await.into_iter().flatten().next().map(|reach| (index, reach))
    });
    join_all(tries).await.into_iter().flatten().collect()
}

/// Which variable holds `service`'s credential, if any may be sent to it: the one
/// `--credential` names for it; else a credential-like variable its own container holds
/// with the value this process holds too, unless another service's container holds the
/// same (a decoy, a client given the provider's token: whose it is cannot be told) or
/// `--credential` names it for another service; else `SERVICE_TOKEN`, unless named for
/// another. `held` is every service's environment; `own` reads this process's.
pub fn credential_var(
    service: &str,
    held: &BTreeMap<String, Vec<(String, String)>>,
    explicit: &[(String, String)],
    own: impl Fn(&str) -> Option<String>,
) -> Option<String> {
    if let Some((_, var)) = explicit.iter().find(|(s, _)| s == service) {
        return Some(var.clone());
    }
    let default = default_var(service);
    let claimed = |name: &str| explicit.iter().any(|(s, var)| s != service && var == name);
    let shared = |name: &str, value: &str| {
        held.iter().any(|(other, env)| other != service && env.iter().any(|(n, v)| n == name && v == value))
    };
    let mut mine: Vec<&str> = held
        .get(service)
        .into_iter()
        .flatten()
        .filter(|(name, value)| {
            (*name == default || looks_like_credential(name))
                && !value.is_empty()
                && own(name).as_deref() == Some(value.as_str())
                && !claimed(name)
                && (*name == default || !shared(name, value))
        })
        .map(|(n, _)| n.as_str())
        .collect();
    mine.sort_by_key(|name| (*name != default, *name));
    mine.dedup();
    match mine.as_slice() {
        [first, ..] if *first == default => Some(default),
        [only] => Some(only.to_string()),
        // Several candidates: which one is its credential is for `--credential` to say.
        [_, _, ..] => None,
        [] => (!claimed(&default)).then_some(default),
    }
}

/// `gitea-mcp` → `GITEA_MCP_TOKEN`.
pub fn default_var(service: &str) -> String {
    let stem: String =
        service.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_uppercase() } else { '_' }).collect();
    format!("{stem}_TOKEN")
}

fn looks_like_credential(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    ["TOKEN", "KEY", "SECRET", "BEARER", "PASSWORD"].iter().any(|w| upper.contains(w))
}

/// The addresses of `targets` other than loopback, with the network key each sits on.
pub fn addresses_of(deployment: &Deployment, targets: &[Target]) -> Vec<(IpAddr, String)> {
    let topology = deployment.topology();
    targets
        .iter()
        .flat_map(|t| {
            t.addresses()
                .into_iter()
                .filter(|a| !a.is_loopback())
                .map(|a| (a, topology.network_of(t, a).unwrap_or_else(|| "an unnamed network".into())))
                .collect::<Vec<_>>()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    fn held(services: &[(&str, &[(&str, &str)])]) -> BTreeMap<String, Vec<(String, String)>> {
        services.iter().map(|(s, pairs)| (s.to_string(), env(pairs))).collect()
    }

    #[test]
    fn a_credential_goes_only_to_the_service_it_belongs_to() {
        let own = |name: &str| match name {
            "GITEA_TOKEN" => Some("s3cret".to_string()),
            "NATIVE_TOKEN" => Some("n4tive".to_string()),
            "PATH" => Some("/bin".to_string()),
            _ => None,
        };
        let none: &[(String, String)] = &[];
        // The container holds GITEA_TOKEN with the value this shell holds: its credential.
        let h = held(&[("gitea-mcp", &[("PATH", "/bin"), ("GITEA_TOKEN", "s3cret")]), ("gitea", &[])]);
        assert_eq!(credential_var("gitea-mcp", &h, none, own).as_deref(), Some("GITEA_TOKEN"));
        // A decoy holding native's token beside native: native's by its name, never the decoy's.
        let h = held(&[("native", &[("NATIVE_TOKEN", "n4tive")]), ("native-decoy", &[("NATIVE_TOKEN", "n4tive")])]);
        assert_eq!(credential_var("native", &h, none, own).as_deref(), Some("NATIVE_TOKEN"));
        assert_eq!(credential_var("native-decoy", &h, none, own).as_deref(), Some("NATIVE_DECOY_TOKEN"));
        // A client given the provider's token: held twice, so neither is picked by value.
        let h = held(&[("gitea-mcp", &[("GITEA_TOKEN", "s3cret")]), ("webui", &[("GITEA_TOKEN", "s3cret")])]);
        assert_eq!(credential_var("gitea-mcp", &h, none, own).as_deref(), Some("GITEA_MCP_TOKEN"));
        assert_eq!(credential_var("webui", &h, none, own).as_deref(), Some("WEBUI_TOKEN"));
        // Named for another service by --credential: never sent here, not even by default name.
        let explicit = [("gitea-mcp".to_string(), "GITEA_TOKEN".to_string())];
        let h = held(&[("gitea", &[("GITEA_TOKEN", "s3cret")]), ("gitea-mcp", &[])]);
        assert_eq!(credential_var("gitea", &h, &explicit, own), None);
        assert_eq!(credential_var("gitea-mcp", &h, &explicit, own).as_deref(), Some("GITEA_TOKEN"));
        // Same name, another value: another deployment's token is never sent.
        let h = held(&[("x", &[("NATIVE_TOKEN", "not-the-same")])]);
        assert_eq!(credential_var("x", &h, none, own).as_deref(), Some("X_TOKEN"));
        // A shared variable that names no credential is never sent as one.
        let h = held(&[("x", &[("PATH", "/bin")])]);
        assert_eq!(credential_var("x", &h, none, own).as_deref(), Some("X_TOKEN"));
        // Two candidates: --credential must say which.
        let h = held(&[("x", &[("GITEA_TOKEN", "s3cret"), ("NATIVE_TOKEN", "n4tive")])]);
        assert_eq!(credential_var("x", &h, none, own), None);
    }

    #[test]
    fn the_default_variable_is_the_service_name_in_capitals() {
        assert_eq!(default_var("gitea-mcp"), "GITEA_MCP_TOKEN");
        assert_eq!(default_var("native"), "NATIVE_TOKEN");
    }
}
