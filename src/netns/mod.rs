//! Run probe code inside a container's network namespace.
//!
//! [`run_in_netns`] starts a dedicated OS thread that reads the container's resolv.conf
//! through `/proc/<pid>/root/etc/resolv.conf`, joins the container's network namespace
//! with `setns(CLONE_NEWNET)` (which moves only the calling thread), builds a tokio
//! current-thread runtime there and runs the job on it. Every socket the job opens —
//! the DNS resolver's, reqwest's, a `TcpStream` — is created in the container's netns.
//! Threads the runtime spawns (its blocking pool, e.g. for `getaddrinfo`) are cloned
//! from that thread and inherit the namespace. The thread ends with the job: it is never
//! handed back to a pool, so no other code ever runs in a foreign namespace by accident.
//!
//! Needs root (`CAP_SYS_ADMIN` for `setns`, `CAP_SYS_PTRACE` to open another user's
//! `/proc/<pid>/ns/net`) on the engine's host. Where that is not possible, the design's
//! second carrier (a throwaway container with `network_mode: container:<id>`) runs the
//! same probe code.

use std::fs::File;
use std::future::Future;
use std::io;
use std::net::IpAddr;
use std::panic::AssertUnwindSafe;
use std::time::Duration;

use nix::sched::{CloneFlags, setns};

pub mod listener;
pub mod listening;
pub mod plan;
pub mod pool;
pub mod procfs;
mod sockdiag;

pub use pool::{NsPool, NsView, Place};

/// What the job learns about the namespace it runs in.
#[derive(Clone, Debug)]
pub struct NetnsContext {
    /// The container's `/etc/resolv.conf`, read before entering (through
    /// `/proc/<pid>/root`), so the job resolves names the way the container does.
    pub resolv_conf: String,
    /// The process whose network namespace the job runs in.
    pub pid: u32,
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum NetnsError {
    #[error(
        "no process {pid}: the container is not running (or restarted since it was inspected); re-resolve the target"
    )]
    NoSuchProcess { pid: u32 },
    #[error(
        "cannot enter the network namespace of pid {pid}: {detail}; cordon must run as root on the engine's host \
         (CAP_SYS_ADMIN and CAP_SYS_PTRACE), otherwise run the probe in a container with network_mode: container:<id>"
    )]
    PermissionDenied { pid: u32, detail: String },
    #[error("cannot read the resolv.conf of pid {pid} (/proc/{pid}/root/etc/resolv.conf): {detail}")]
    ResolvConf { pid: u32, detail: String },
    #[error("setns(/proc/{pid}/ns/net, CLONE_NEWNET) failed: {detail}")]
    Setns { pid: u32, detail: String },
    #[error("cannot start the probe thread or its runtime: {0}")]
    Runtime(String),
    #[error("the probe in the network namespace of pid {pid} panicked: {message}")]
    Panicked { pid: u32, message: String },
    #[error("cannot list network interfaces: {0}")]
    Interfaces(String),
    /// The container stopped or restarted since discovery: re-resolve it.
    #[error("{label} is gone (its process exited or was replaced): the container stopped or restarted")]
    Gone { label: String },
    /// The pid now names another network namespace than discovery saw: a reused pid.
    #[error(
        "pid {pid} of {label} now lives in network namespace {seen}, not {expected} as discovered: refusing to probe a namespace that may belong to someone else"
    )]
    Mismatch { pid: u32, label: String, expected: u64, seen: u64 },
}

/// How long the runtime's leftover blocking work (e.g. a `getaddrinfo` call) may hold
/// the thread after the job finished.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// Runs `job` to completion inside the network namespace of `pid`, on a fresh thread
/// with its own current-thread runtime, and returns its output. Blocks the calling
/// thread (do not call it from async code: use [`run_in_netns_async`]).
pub fn run_in_netns<F, Fut, T>(pid: u32, job: F) -> Result<T, NetnsError>
where
    F: FnOnce(NetnsContext) -> Fut + Send + 'static,
    Fut: Future<Output = T>,
    T: Send + 'static,
{
    let handle = std::thread::Builder::new()
        .name(format!("cordon-netns-{pid}"))
        .spawn(move || enter_and_run(pid, job))
        .map_err(|e| NetnsError::Runtime(format!("spawning the probe thread: {e}")))?;
    match handle.join() {
        Ok(result) => result,
        Err(payload) => Err(NetnsError::Panicked { pid, message: panic_message(payload.as_ref()) }),
    }
}

/// [`run_in_netns`] for async callers: the namespace thread is spawned at once and its
/// result arrives through a oneshot channel, so many namespaces can be probed
/// concurrently from one runtime (bound the concurrency with a semaphore). Dropping the
/// returned future does not stop the thread; the job runs to its end (its own timeouts
/// bound it) and its output is discarded.
pub fn run_in_netns_async<F, Fut, T>(pid: u32, job: F) -> impl Future<Output = Result<T, NetnsError>> + Send + 'static
where
    F: FnOnce(NetnsContext) -> Fut + Send + 'static,
    Fut: Future<Output = T>,
    T: Send + 'static,
{
    let (tx, rx) = tokio::sync::oneshot::channel();
    let spawned = std::thread::Builder::new()
        .name(format!("cordon-netns-{pid}"))
        .spawn(move || {
            let _ = tx.send(enter_and_run(pid, job));
        })
        .map(drop)
        .map_err(|e| NetnsError::Runtime(format!("spawning the probe thread: {e}")));
    async move {
        spawned?;
        rx.await.unwrap_or_else(|_| {
            Err(NetnsError::Panicked { pid, message: "the probe thread ended without a result".to_string() })
        })
    }
}

/// The body of a namespace thread. Runs on that thread only.
fn enter_and_run<F, Fut, T>(pid: u32, job: F) -> Result<T, NetnsError>
where
    F: FnOnce(NetnsContext) -> Fut,
    Fut: Future<Output = T>,
{
    if pid == 0 {
        return Err(NetnsError::NoSuchProcess { pid });
    }
    let resolv_conf = std::fs::read_to_string(format!("/proc/{pid}/root/etc/resolv.conf"))
        .map_err(|e| classify(pid, &e).unwrap_or_else(|| NetnsError::ResolvConf { pid, detail: e.to_string() }))?;
    let ns = File::open(format!("/proc/{pid}/ns/net")).map_err(|e| {
        classify(pid, &e)
            .unwrap_or_else(|| NetnsError::PermissionDenied { pid, detail: format!("opening /proc/{pid}/ns/net: {e}") })
    })?;
    setns(&ns, CloneFlags::CLONE_NEWNET).map_err(|errno| match errno {
        nix::errno::Errno::EPERM => NetnsError::PermissionDenied { pid, detail: format!("setns: {errno}") },
        other => NetnsError::Setns { pid, detail: other.to_string() },
    })?;
    drop(ns);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .thread_name(format!("cordon-netns-{pid}-blocking"))
        .build()
        .map_err(|e| NetnsError::Runtime(format!("building the runtime in the netns of pid {pid}: {e}")))?;
    let ctx = NetnsContext { resolv_conf, pid };
    let out = std::panic::catch_unwind(AssertUnwindSafe(|| runtime.block_on(job(ctx))));
    runtime.shutdown_timeout(SHUTDOWN_GRACE);
    out.map_err(|payload| NetnsError::Panicked { pid, message: panic_message(payload.as_ref()) })
}

/// Maps "no such process" and "permission denied" on `/proc/<pid>/...`.
fn classify(pid: u32, err: &io::Error) -> Option<NetnsError> {
    match err.kind() {
        io::ErrorKind::NotFound if !std::path::Path::new(&format!("/proc/{pid}")).exists() => {
            Some(NetnsError::NoSuchProcess { pid })
        }
        io::ErrorKind::PermissionDenied => Some(NetnsError::PermissionDenied { pid, detail: err.to_string() }),
        _ => None,
    }
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "(non-string panic payload)".to_string()
    }
}

/// One IP address on one interface, as the kernel reports it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize)]
pub struct Interface {
    pub name: String,
    pub addr: IpAddr,
    pub prefix: u8,
}

impl Interface {
    pub fn is_loopback(&self) -> bool {
        self.addr.is_loopback()
    }

    /// IPv6 `fe80::/10` (the kernel adds one to every IPv6-enabled link; it belongs to no
    /// Docker network). IPv4 link-local `169.254/16` counts too.
    pub fn is_link_local(&self) -> bool {
        match self.addr {
            IpAddr::V4(a) => a.is_link_local(),
            IpAddr::V6(a) => (a.segments()[0] & 0xffc0) == 0xfe80,
        }
    }
}

impl std::fmt::Display for Interface {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}/{}", self.name, self.addr, self.prefix)
    }
}

/// The IPv4 and IPv6 addresses of every interface in the *calling thread's* network
/// namespace (`getifaddrs`, which asks the kernel over a netlink socket opened by this
/// thread): the "kernel view". Sorted by interface name, then address.
pub fn interfaces() -> Result<Vec<Interface>, NetnsError> {
    let mut out = Vec::new();
    for ifa in nix::ifaddrs::getifaddrs().map_err(|e| NetnsError::Interfaces(e.to_string()))? {
        let Some(address) = ifa.address else { continue };
        let (addr, prefix) = if let Some(sin) = address.as_sockaddr_in() {
            let bits = ifa.netmask.as_ref().and_then(|m| m.as_sockaddr_in()).map(|m| u32::from(m.ip()).count_ones());
            (IpAddr::V4(sin.ip()), bits.unwrap_or(32))
        } else if let Some(sin6) = address.as_sockaddr_in6() {
            let bits = ifa.netmask.as_ref().and_then(|m| m.as_sockaddr_in6()).map(|m| u128::from(m.ip()).count_ones());
            (IpAddr::V6(sin6.ip()), bits.unwrap_or(128))
        } else {
            continue;
        };
        out.push(Interface { name: ifa.interface_name, addr, prefix: prefix as u8 });
    }
    out.sort();
    out.dedup();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_interfaces_include_loopback() {
        let ifs = interfaces().unwrap();
        assert!(
            ifs.iter().any(|i| i.name == "lo" && i.addr == IpAddr::from([127, 0, 0, 1]) && i.prefix == 8),
            "{ifs:?}"
        );
    }

    #[test]
    fn no_such_process_is_typed() {
        // Pids are bounded by pid_max (at most 2^22), so this one never exists.
        let err = run_in_netns(u32::MAX - 1, |_| async {}).unwrap_err();
        assert_eq!(err, NetnsError::NoSuchProcess { pid: u32::MAX - 1 });
    }

    #[test]
    fn own_namespace_runs_job_and_reports_panics() {
        // Entering even our own namespace needs CAP_SYS_ADMIN: nothing to test without it.
        let me = std::process::id();
        let got = match run_in_netns(me, |ctx| async move { (ctx.pid, interfaces().unwrap().len()) }) {
            Err(NetnsError::PermissionDenied { .. }) => return,
            other => other.unwrap(),
        };
        assert_eq!(got.0, me);
        assert!(got.1 >= 1);
        let err = run_in_netns(me, |_| async { panic!("boom") }).map(|_: ()| ()).unwrap_err();
        assert!(matches!(err, NetnsError::Panicked { ref message, .. } if message == "boom"), "{err:?}");
    }

    #[test]
    fn link_local() {
        let i = |a: &str| Interface { name: "eth0".into(), addr: a.parse().unwrap(), prefix: 64 };
        assert!(i("fe80::42:aff:fee9:102").is_link_local());
        assert!(!i("fd00::1").is_link_local());
        assert!(i("169.254.1.1").is_link_local());
        assert!(!i("10.233.1.2").is_link_local());
    }
}
