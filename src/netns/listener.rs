//! A listening TCP socket, as `/proc/<pid>/net/tcp*` or a sock_diag dump report it, and
//! whether a connection to an address would land on it.

use std::net::{IpAddr, SocketAddr};

/// One TCP socket in LISTEN state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize)]
pub struct Listener {
    pub addr: SocketAddr,
    /// Its accept queue when it was read (sock_diag reports it; `/proc/net/tcp` does not
    /// give the backlog, so a listener read from there has none).
    #[serde(default)]
    pub queue: Option<AcceptQueue>,
}

/// Connections the kernel completed that the process has not accepted yet, and how many
/// it may hold (the `listen(2)` backlog, capped by `net.core.somaxconn`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize)]
pub struct AcceptQueue {
    pub waiting: u32,
    pub backlog: u32,
}

impl Listener {
    /// A listener at `addr`, its accept queue unknown.
    pub fn at(addr: SocketAddr) -> Self {
        Listener { addr, queue: None }
    }

    /// The kernel's own test (`sk_acceptq_is_full`): while it holds, every new SYN is
    /// dropped and a client's connect gets no answer, wherever it comes from.
    pub fn queue_is_full(&self) -> bool {
        self.queue.is_some_and(|q| q.waiting > q.backlog)
    }

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
