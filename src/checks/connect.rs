//! Connecting by address: one bounded TCP connect, and why a failed IPv6 connect may
//! prove nothing yet (an address on the way still in duplicate address detection).

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use crate::engine::Target;

/// Ok when a TCP connection opens within `timeout`; the error says how it failed.
pub async fn tcp_connect(addr: SocketAddr, timeout: Duration) -> Result<(), String> {
    match tokio::time::timeout(timeout, tokio::net::TcpStream::connect(addr)).await {
        Ok(Ok(_stream)) => Ok(()),
        // A reset comes from the peer: the address is reachable, only the port is closed.
        Ok(Err(e)) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
            Err("refused (a TCP reset: the address is reachable at IP level, nothing listens on the port)".into())
        }
        Ok(Err(e)) => Err(format!("{e}")),
        Err(_) => Err(format!("no answer within {:.1}s", timeout.as_secs_f64())),
    }
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
