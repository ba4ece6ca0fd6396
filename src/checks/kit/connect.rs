//! Connecting by address: one bounded TCP connect, and why a failed connect may prove
//! nothing yet (an IPv6 address on the way still in duplicate address detection, or a
//! listener whose accept queue is full).

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::engine::Target;
use crate::netns::listener::Listener;

/// How one TCP connect went: opened, or why not.
pub type Connected = Result<(), ConnectError>;

/// Why a TCP connect did not open. The kinds are told apart because they prove different
/// things: a reset comes from the peer's kernel (the address is reachable, the port is
/// closed); no answer is a dropped SYN (a firewall, a path that does not exist, or a
/// listener whose accept queue is full).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ConnectError {
    Refused,
    NoAnswer { within_ms: u64 },
    Other(String),
}

impl std::fmt::Display for ConnectError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConnectError::Refused => {
                write!(f, "refused (a TCP reset: the address is reachable at IP level, nothing listens on the port)")
            }
            ConnectError::NoAnswer { within_ms } => write!(f, "no answer within {:.1}s", *within_ms as f64 / 1000.0),
            ConnectError::Other(e) => write!(f, "{e}"),
        }
    }
}

/// Ok when a TCP connection opens within `timeout`; the error says how it failed.
pub async fn tcp_connect(addr: SocketAddr, timeout: Duration) -> Connected {
    match tokio::time::timeout(timeout, tokio::net::TcpStream::connect(addr)).await {
        Ok(Ok(_stream)) => Ok(()),
        Ok(Err(e)) if e.kind() == std::io::ErrorKind::ConnectionRefused => Err(ConnectError::Refused),
        Ok(Err(e)) => Err(ConnectError::Other(e.to_string())),
        Err(_) => Err(ConnectError::NoAnswer { within_ms: timeout.as_millis() as u64 }),
    }
}

/// [`tcp_connect`] where an answer is expected (an admitted route): a connect with no
/// answer is tried once more before it stands. A busy host drops a SYN now and then (a
/// listener's queue full for a moment); a path that drops packets drops the second too.
pub async fn tcp_connect_expecting_answer(addr: SocketAddr, timeout: Duration) -> Connected {
    match tcp_connect(addr, timeout).await {
        Err(ConnectError::NoAnswer { .. }) => tcp_connect(addr, timeout).await,
        answered => answered,
    }
}

/// A connect with no answer at `port` of `container` whose listener's accept queue is
/// full: the silence is the provider's, not the path's (see [`full_accept_queue`]).
/// `None` when the silence stands.
pub(crate) fn silenced_by_full_queue(
    error: &ConnectError,
    listening: &BTreeMap<String, Vec<Listener>>,
    container: &str,
    port: u16,
) -> Option<String> {
    match error {
        ConnectError::NoAnswer { .. } => full_accept_queue(listening, container, port),
        _ => None,
    }
}

/// Why `container`'s listener on `port` takes no connections, if its accept queue is full:
/// the kernel drops every SYN to a full queue, from wherever it comes (the process is
/// paused, hung or overloaded), so a connect with no answer there proves nothing.
pub(crate) fn full_accept_queue(
    listening: &BTreeMap<String, Vec<Listener>>,
    container: &str,
    port: u16,
) -> Option<String> {
    let full = listening.get(container)?.iter().find(|l| l.addr.port() == port && l.queue_is_full())?;
    let queue = full.queue?;
    Some(format!(
        "{container} listens on {} but takes no connections: its accept queue is full ({} waiting, backlog {}), \
         so the kernel drops every new SYN (the process is paused, hung or overloaded) and a connect with no answer \
         proves nothing",
        full.addr, queue.waiting, queue.backlog
    ))
}

pub fn join_addrs(addrs: &[IpAddr]) -> String {
    addrs.iter().map(IpAddr::to_string).collect::<Vec<_>>().join(", ")
}

/// IPv6 addresses still in duplicate address detection on the way between containers:
/// the host's (a new network's bridge holds its gateway address tentative for a second
/// or two after `up`) and the containers' own, on a /64 of `addrs` or of a container's
/// own IPv6 address. Read from `/proc/1` (the host: cordon runs there, or in its image
/// with `--pid host`) and from each local container's `/proc/<pid>`; what cannot be read
/// (a task on another node) counts as settled.
pub(crate) fn ipv6_settling<'a>(
    containers: impl IntoIterator<Item = &'a Target>,
    addrs: impl IntoIterator<Item = IpAddr>,
) -> Vec<String> {
    let prefix = |a: std::net::Ipv6Addr| u128::from(a) >> 64;
    let mut prefixes: std::collections::BTreeSet<u128> =
        addrs.into_iter().filter_map(|a| if let IpAddr::V6(v6) = a { Some(prefix(v6)) } else { None }).collect();
    let mut places = vec![(1, "the host".to_string())];
    for t in containers {
        prefixes.extend(t.attachments.iter().filter_map(|a| a.ipv6).map(prefix));
        if t.pid != 0 {
            places.push((t.pid, t.name.clone()));
        }
    }
    if prefixes.is_empty() {
        return vec![];
    }
    let mut out = Vec::new();
    for (pid, place) in places {
        for (addr, interface) in crate::netns::procfs::tentative_ipv6(pid).unwrap_or_default() {
            if prefixes.contains(&prefix(addr)) {
                out.push(format!("{addr} on {interface} ({place})"));
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

/// Why a closed IPv6 door is not judged yet (see [`ipv6_settling`]).
pub(crate) fn settling_reason(settling: &[String]) -> String {
    format!(
        "IPv6 duplicate address detection still running for {}: a failed IPv6 connect proves nothing yet",
        settling.join(", ")
    )
}
