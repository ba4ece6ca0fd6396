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
            Err(McpError::Http { status: status @ (401 | 403), www_authenticate, .. }) => {
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

/// The variable whose value this service's container holds in its environment and this
/// process holds too: the credential the container itself was given. Only such a value
/// is sent to it; a credential meant for another service never is.
pub fn credential_var_of(
    service: &str,
    env: &[(String, String)],
    own: impl Fn(&str) -> Option<String>,
) -> Option<String> {
    let default = default_var(service);
    let mut shared: Vec<&str> = env
        .iter()
        .filter(|(name, value)| {
            (*name == default || looks_like_credential(name))
                && !value.is_empty()
                && own(name).as_deref() == Some(value)
        })
        .map(|(n, _)| n.as_str())
        .collect();
    shared.sort_by_key(|name| (*name != default, *name));
    shared.first().map(|s| s.to_string())
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

    #[test]
    fn the_credential_is_the_one_the_container_holds_and_this_process_holds_too() {
        let own = |name: &str| match name {
            "GITEA_TOKEN" => Some("s3cret".to_string()),
            "NATIVE_TOKEN" => Some("other".to_string()),
            "PATH" => Some("/bin".to_string()),
            _ => None,
        };
        // The container holds GITEA_TOKEN with the same value: that is its credential.
        let held = env(&[("PATH", "/usr/bin"), ("GITEA_TOKEN", "s3cret")]);
        assert_eq!(credential_var_of("gitea-mcp", &held, own).as_deref(), Some("GITEA_TOKEN"));
        // Same name, another value: another deployment's token is never sent.
        let other = env(&[("NATIVE_TOKEN", "not-the-same")]);
        assert_eq!(credential_var_of("native", &other, own), None);
        // A shared variable that names no credential is never sent as one.
        let path_only = env(&[("PATH", "/bin")]);
        assert_eq!(credential_var_of("x", &path_only, own), None);
        // Empty values prove nothing.
        assert_eq!(credential_var_of("x", &env(&[("EMPTY", "")]), |_| Some(String::new())), None);
    }

    #[test]
    fn the_default_variable_is_the_service_name_in_capitals() {
        assert_eq!(default_var("gitea-mcp"), "GITEA_MCP_TOKEN");
        assert_eq!(default_var("native"), "NATIVE_TOKEN");
    }
}
