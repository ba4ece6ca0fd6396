//! One long-lived worker per network namespace a run probes from.
//!
//! A namespace is entered once per run, not once per check: the first job for a
//! container starts a worker thread that pins the container's init process with a pidfd,
//! checks that its network namespace is the one discovery saw (so a reused pid can never
//! put a probe in a stranger's namespace), reads its resolver files, calls
//! `setns(pidfd, CLONE_NEWNET)` and runs a current-thread runtime with a `LocalSet`.
//! Every later job for that container is a task on that runtime, so hundreds of connects
//! from one client wait at once instead of queueing for threads. The resolver and the
//! wildcard set W live in the worker's [`NsView`] and are learned once.
//!
//! Before each job the worker asks the pidfd whether the process is still alive; a
//! container that stopped or restarted makes the job fail with [`NetnsError::Gone`], the
//! slot is dropped, and the caller re-resolves the target.

use std::collections::HashMap;
use std::future::Future;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};
use std::rc::Rc;
use std::sync::{Arc, Mutex};

use futures_util::future::LocalBoxFuture;
use nix::sched::{CloneFlags, setns};
use tokio::sync::{OnceCell, mpsc, oneshot};

use super::NetnsError;
use super::procfs::{self, ResolverFiles};
use crate::dns::{ClientResolver, DnsError, NameAnswer, WildcardSet};

/// Where a probe runs: cordon's own namespace, or a container's.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Place {
    Host,
    Container {
        id: String,
        pid: u32,
        /// The inode of `/proc/<pid>/ns/net` when discovery inspected the container.
        netns_inode: Option<u64>,
        label: String,
    },
}

impl Place {
    pub fn label(&self) -> String {
        match self {
            Place::Host => "cordon's own network namespace".into(),
            Place::Container { label, .. } => label.clone(),
        }
    }
}

/// What every job in one namespace shares: the files that decide name resolution, the
/// resolver built from them, and the wildcard set once learned.
pub struct NsView {
    pub place: Place,
    pub files: ResolverFiles,
    resolver: std::cell::OnceCell<Result<ClientResolver, DnsError>>,
    wildcard: OnceCell<WildcardSet>,
    /// The namespace's own addresses and its libc's address policy, read once.
    order: std::cell::OnceCell<(Vec<(std::net::IpAddr, u8)>, crate::dns::Policy)>,
    /// Recent answers by name (see [`NsView::resolve`]).
    answers: std::cell::RefCell<HashMap<String, AnswerSlot>>,
}

/// How old a shared answer may be: less than a retry interval, so a check retried
/// because a name did not resolve yet asks the resolver again.
pub const ANSWER_MAX_AGE: std::time::Duration = std::time::Duration::from_millis(250);

/// The last answer for one name and when its lookup began; locked while one is in flight.
type AnswerSlot = Rc<tokio::sync::Mutex<Option<(std::time::Instant, Result<NameAnswer, DnsError>)>>>;

impl NsView {
    fn new(place: Place, files: ResolverFiles) -> Self {
        Self {
            place,
            files,
            resolver: std::cell::OnceCell::new(),
            wildcard: OnceCell::new(),
            order: std::cell::OnceCell::new(),
            answers: std::cell::RefCell::new(HashMap::new()),
        }
    }

    pub fn label(&self) -> String {
        self.place.label()
    }

    /// hickory, configured from this namespace's resolv.conf (built on first use, on this
    /// thread, so its sockets open in this namespace).
    pub fn resolver(&self) -> Result<&ClientResolver, DnsError> {
        self.resolver
            .get_or_init(|| ClientResolver::from_resolv_conf(&self.files.resolv_conf))
            .as_ref()
            .map_err(Clone::clone)
    }

    /// The wildcard set W, learned once per namespace and run. An incomplete set (a probe
    /// timed out) is not kept: the next caller learns again — unless every unknown name
    /// timed out while one of `known` (names this namespace's resolver must know, e.g.
    /// its own container's) answers: then unknown names resolve to nothing (an
    /// `internal: true` network's DNS forwards them nowhere) and W is empty.
    pub async fn wildcard(&self, known: &[String]) -> Result<&WildcardSet, String> {
        self.wildcard
            .get_or_try_init(|| async {
                let resolver = self.resolver().map_err(|e| e.to_string())?;
                let mut set = resolver.learn_wildcard().await;
                if set.is_complete() {
                    return Ok(set);
                }
                let errors: Vec<String> = set.errors.iter().map(|(n, e)| format!("{n}: {e}")).collect();
                if set.all_timed_out() {
                    for name in known {
                        if let Ok(addrs) = resolver.lookup(name).await
                            && !addrs.is_empty()
                        {
                            set.unknown_names_time_out = Some(name.clone());
                            return Ok(set);
                        }
                    }
                }
                Err(format!("could not learn the wildcard set: {}", errors.join("; ")))
            })
            .await
    }

    /// Resolves `name` the way this namespace's libc would: the hosts file first (unless
    /// nsswitch.conf puts DNS before it), then DNS through the search list.
    ///
    /// Checks that ask for the same name at about the same time (the route and session
    /// checks of one pair) share one lookup: concurrent askers wait for the one in
    /// flight, later ones reuse it for [`ANSWER_MAX_AGE`]. At thousands of pairs the
    /// engine's embedded DNS answering every check twice was a good part of the run.
    pub async fn resolve(&self, name: &str) -> Result<NameAnswer, DnsError> {
        let asked = std::time::Instant::now();
        let slot = self.answers.borrow_mut().entry(name.to_string()).or_default().clone();
        let mut slot = slot.lock().await;
        if let Some((looked_at, answer)) = slot.as_ref()
            && asked.saturating_duration_since(*looked_at) < ANSWER_MAX_AGE
        {
            return answer.clone();
        }
        let looked_at = std::time::Instant::now();
        let answer = self.resolve_now(name).await;
        *slot = Some((looked_at, answer.clone()));
        answer
    }

    async fn resolve_now(&self, name: &str) -> Result<NameAnswer, DnsError> {
        let mut answer =
            crate::dns::resolve_like_libc(self.resolver()?, &self.files.hosts, self.files.nsswitch.as_deref(), name)
                .await?;
        answer.addrs = self.in_libc_order(&answer.addrs);
        Ok(answer)
    }

    /// `addrs` in the order this namespace's libc would hand them out (RFC 6724 with its
    /// gai.conf, from the namespace's own addresses): what a client connects to first,
    /// then what its connect loop falls back to.
    pub fn in_libc_order(&self, addrs: &[std::net::IpAddr]) -> Vec<std::net::IpAddr> {
        let (sources, policy) = self.order.get_or_init(|| {
            let sources = super::interfaces().unwrap_or_default().into_iter().map(|i| (i.addr, i.prefix)).collect();
            (sources, crate::dns::Policy::new(self.files.libc, self.files.gai_conf.as_deref()))
        });
        crate::dns::sort_like_libc(addrs, sources, policy)
    }
}

type Job = Box<dyn FnOnce(Result<Rc<NsView>, NetnsError>) -> LocalBoxFuture<'static, ()> + Send>;

struct Worker {
    jobs: mpsc::UnboundedSender<Job>,
}

/// The run's namespace workers, keyed by place. Dropping the pool ends them all.
#[derive(Default)]
pub struct NsPool {
    slots: Mutex<HashMap<Place, Arc<OnceCell<Worker>>>>,
}

impl NsPool {
    pub fn new() -> Self {
        Self::default()
    }

    /// Runs `job` in the namespace of `place` and returns its output. The job's future
    /// need not be `Send`: it runs on that namespace's own thread. If the caller stops
    /// waiting, the job is dropped at its next await.
    pub async fn run<F, Fut, T>(&self, place: &Place, job: F) -> Result<T, NetnsError>
    where
        F: FnOnce(Rc<NsView>) -> Fut + Send + 'static,
        Fut: Future<Output = T> + 'static,
        T: Send + 'static,
    {
        let slot = self.slots.lock().expect("pool lock").entry(place.clone()).or_default().clone();
        let worker = slot.get_or_try_init(|| start_worker(place.clone())).await?;
        let (tx, rx) = oneshot::channel::<Result<T, NetnsError>>();
        let boxed: Job = Box::new(move |view| {
            Box::pin(async move {
                let mut tx = tx;
                match view {
                    Err(e) => {
                        let _ = tx.send(Err(e));
                    }
                    Ok(view) => {
                        tokio::select! {
                            out = job(view) => { let _ = tx.send(Ok(out)); }
                            _ = tx.closed() => {}
                        }
                    }
                }
            })
        });
        if worker.jobs.send(boxed).is_err() {
            self.forget(place);
            return Err(NetnsError::Gone { label: place.label() });
        }
        let out = rx.await.unwrap_or_else(|_| {
            Err(NetnsError::Panicked {
                pid: 0,
                message: format!("the probe in {} ended without a result", place.label()),
            })
        });
        if matches!(out, Err(NetnsError::Gone { .. })) {
            self.forget(place);
        }
        out
    }

    fn forget(&self, place: &Place) {
        self.slots.lock().expect("pool lock").remove(place);
    }

    /// How many namespaces have a worker (for tests and summaries).
    pub fn workers(&self) -> usize {
        self.slots.lock().expect("pool lock").values().filter(|s| s.initialized()).count()
    }
}

/// A pidfd for `pid` (Linux 5.3+): it keeps naming this process even if the pid number
/// is reused after the process exits.
fn pidfd_open(pid: u32) -> std::io::Result<OwnedFd> {
    // SAFETY: plain syscall with integer arguments; a non-negative result is a new fd.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: the kernel just gave us this descriptor.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

/// A pidfd becomes readable when its process exits.
fn has_exited(pidfd: &OwnedFd) -> bool {
    let mut fds = [libc::pollfd { fd: pidfd.as_raw_fd(), events: libc::POLLIN, revents: 0 }];
    // SAFETY: one valid pollfd, zero timeout.
    let n = unsafe { libc::poll(fds.as_mut_ptr(), 1, 0) };
    n > 0 && fds[0].revents & libc::POLLIN != 0
}

fn netns_inode(pid: u32) -> std::io::Result<u64> {
    use std::os::unix::fs::MetadataExt;
    Ok(std::fs::metadata(format!("/proc/{pid}/ns/net"))?.ino())
}

/// Enters the namespace of `place` (pinned, verified) and prepares its view.
fn enter(place: &Place) -> Result<(Option<OwnedFd>, ResolverFiles), NetnsError> {
    let Place::Container { pid, netns_inode: expected, label, .. } = place else {
        let files = procfs::resolver_files(std::process::id())
            .map_err(|e| NetnsError::ResolvConf { pid: std::process::id(), detail: e.to_string() })?;
        return Ok((None, files));
    };
    let pid = *pid;
    crate::cost::NAMESPACES_ENTERED.add(1);
    let gone = || NetnsError::Gone { label: label.clone() };
    if pid == 0 {
        return Err(gone());
    }
    let pidfd = pidfd_open(pid).map_err(|e| match e.raw_os_error() {
        Some(libc::ESRCH) => gone(),
        Some(libc::EPERM) => NetnsError::PermissionDenied { pid, detail: format!("pidfd_open: {e}") },
        _ => NetnsError::Setns { pid, detail: format!("pidfd_open: {e}") },
    })?;
    if let Some(expected) = expected {
        match netns_inode(pid) {
            Ok(seen) if seen == *expected => {}
            Ok(seen) => {
                return Err(NetnsError::Mismatch { pid, label: label.clone(), expected: *expected, seen });
            }
            Err(_) => return Err(gone()),
        }
    }
    let files = procfs::resolver_files(pid).map_err(|e| NetnsError::ResolvConf { pid, detail: e.to_string() })?;
    // The files were read by pid number: make sure it was still our process.
    if has_exited(&pidfd) {
        return Err(gone());
    }
    setns(pidfd.as_fd(), CloneFlags::CLONE_NEWNET).map_err(|errno| match errno {
        nix::errno::Errno::EPERM => NetnsError::PermissionDenied { pid, detail: format!("setns: {errno}") },
        nix::errno::Errno::ESRCH => gone(),
        other => NetnsError::Setns { pid, detail: other.to_string() },
    })?;
    Ok((Some(pidfd), files))
}

async fn start_worker(place: Place) -> Result<Worker, NetnsError> {
    let (ready_tx, ready_rx) = oneshot::channel::<Result<(), NetnsError>>();
    let (jobs, mut queue) = mpsc::unbounded_channel::<Job>();
    let name = match &place {
        Place::Host => "cordon-ns-host".to_string(),
        Place::Container { pid, .. } => format!("cordon-ns-{pid}"),
    };
    std::thread::Builder::new()
        .name(name)
        .spawn(move || {
            let (pidfd, files) = match enter(&place) {
                Ok(entered) => entered,
                Err(e) => {
                    let _ = ready_tx.send(Err(e));
                    return;
                }
            };
            let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
                Ok(rt) => rt,
                Err(e) => {
                    let _ = ready_tx.send(Err(NetnsError::Runtime(e.to_string())));
                    return;
                }
            };
            let view = Rc::new(NsView::new(place.clone(), files));
            let _ = ready_tx.send(Ok(()));
            let local = tokio::task::LocalSet::new();
            local.block_on(&runtime, async move {
                while let Some(job) = queue.recv().await {
                    let view = match &pidfd {
                        Some(fd) if has_exited(fd) => Err(NetnsError::Gone { label: place.label() }),
                        _ => Ok(view.clone()),
                    };
                    tokio::task::spawn_local(job(view));
                }
            });
            // The pool is gone: whatever still runs belongs to a finished run.
            runtime.shutdown_background();
        })
        .map_err(|e| NetnsError::Runtime(format!("spawning a namespace thread: {e}")))?;
    ready_rx.await.unwrap_or_else(|_| Err(NetnsError::Runtime("the namespace thread ended while starting".into())))?;
    Ok(Worker { jobs })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn host_jobs_share_one_worker_and_run_concurrently() {
        let pool = NsPool::new();
        let started = std::time::Instant::now();
        let jobs = (0..50).map(|i| {
            pool.run(&Place::Host, move |view| async move {
                tokio::time::sleep(std::time::Duration::from_millis(200)).await;
                (i, view.label())
            })
        });
        let out = futures_util::future::join_all(jobs).await;
        assert!(started.elapsed() < std::time::Duration::from_secs(2), "jobs queued instead of overlapping");
        assert_eq!(out.len(), 50);
        assert!(out.iter().all(|r| r.as_ref().unwrap().1 == "cordon's own network namespace"));
        assert_eq!(pool.workers(), 1);
    }

    #[tokio::test]
    async fn a_dropped_caller_drops_its_job() {
        let pool = NsPool::new();
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let slow = pool.run(&Place::Host, move |_| async move {
            tokio::time::sleep(std::time::Duration::from_secs(30)).await;
            let _ = done_tx.send(());
        });
        assert!(tokio::time::timeout(std::time::Duration::from_millis(100), slow).await.is_err());
        // The next job still runs promptly on the same worker.
        assert_eq!(pool.run(&Place::Host, |_| async { 7 }).await.unwrap(), 7);
        assert!(done_rx.try_recv().is_err());
    }

    #[tokio::test]
    async fn a_process_that_is_gone_is_reported_as_gone() {
        let mut child = std::process::Command::new("sleep").arg("30").spawn().unwrap();
        let pid = child.id();
        let place =
            Place::Container { id: "c".into(), pid, netns_inode: Some(netns_inode(pid).unwrap()), label: "x".into() };
        child.kill().unwrap();
        child.wait().unwrap();
        let err = NsPool::new().run(&place, |_| async {}).await.unwrap_err();
        assert!(matches!(err, NetnsError::Gone { .. }), "{err:?}");
    }

    #[tokio::test]
    async fn a_namespace_other_than_the_one_discovered_is_refused() {
        let place =
            Place::Container { id: "c".into(), pid: std::process::id(), netns_inode: Some(1), label: "x".into() };
        let err = NsPool::new().run(&place, |_| async {}).await.unwrap_err();
        assert!(matches!(err, NetnsError::Mismatch { expected: 1, .. }), "{err:?}");
    }
}
