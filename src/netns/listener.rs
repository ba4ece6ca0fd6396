//! A listening TCP socket, as `/proc/<pid>/net/tcp*` or a sock_diag dump report it, and
//! whether a connection to an address would land on it.

use std::net::{IpAddr, SocketAddr};

/// One TCP socket in LISTEN state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize)]
pub struct Listener {
    pub addr: SocketAddr,
}

impl Listener {
    /// Bound to loopback only: nothing outside the namespace can reach it.
    pub fn is_loopback(&self) -> bool {
        self.addr.ip().is_loopback()
    }

    /// Would a connection to `ip` on this port land on this socket?
    pub fn accepts_on(&self, ip: IpAddr) -> bool {
        if self.is_loopback() {
            return false;
        }
        match (self.addr.ip(), ip) {
            // A `::` socket takes IPv4 too unless v6only; assume it does (the default).
            (IpAddr::V6(a), _) if a.is_unspecified() => true,
            (IpAddr::V4(a), IpAddr::V4(_)) if a.is_unspecified() => true,
            (bound, ip) => bound == ip,
        }
    }
}

impl std::fmt::Display for Listener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.addr)
    }
}
