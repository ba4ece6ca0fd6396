//! The deployment under test while a run lasts: the engine's view (a [`Topology`]
//! snapshot, re-read when a container restarted), and the namespace workers probes run
//! in. Checks ask it for targets and run observation jobs through it.

use std::future::Future;
use std::rc::Rc;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use crate::config::{Mode, Scenario};
use crate::engine::{Engine, Target};
use crate::model::Attempt;
use crate::netns::listening::ListenerMemo;
use crate::netns::procfs::Listener;
use crate::netns::{NetnsError, NsPool, NsView, Place};
use crate::topology::{Topology, TopologyError};

pub struct Deployment {
    pub mode: Mode,
    pub project: String,
    engine: Option<Engine>,
    scenario: Scenario,
    topology: RwLock<Arc<Topology>>,
    last_refresh: tokio::sync::Mutex<Instant>,
    pub pool: Arc<NsPool>,
    listening: ListenerMemo,
}

/// Re-reading the engine at most this often, however many checks ask.
const REFRESH_EVERY: Duration = Duration::from_millis(500);

impl Deployment {
    pub fn new(mode: Mode, project: &str, engine: Option<Engine>, scenario: Scenario, topology: Topology) -> Self {
        Deployment {
            mode,
            project: project.to_string(),
            engine,
            scenario,
            topology: RwLock::new(Arc::new(topology)),
            last_refresh: tokio::sync::Mutex::new(Instant::now()),
            pool: Arc::new(NsPool::new()),
            listening: ListenerMemo::new(),
        }
    }

    /// The current snapshot of the engine's view.
    pub fn topology(&self) -> Arc<Topology> {
        self.topology.read().expect("topology lock").clone()
    }

    /// Reads the deployment again (a container restarted or was recreated). Errors keep
    /// the old view: the checks that need the missing container say so themselves.
    pub async fn refresh(&self) {
        let Some(engine) = &self.engine else { return };
        let mut last = self.last_refresh.lock().await;
        if last.elapsed() < REFRESH_EVERY {
            return;
        }
        let fresh = match self.mode {
            Mode::Compose => Topology::discover(engine, &self.project, &self.scenario).await,
            Mode::Host | Mode::Swarm => return,
        };
        match fresh {
            Ok(t) => *self.topology.write().expect("topology lock") = Arc::new(t),
            Err(TopologyError::Missing { .. }) | Err(_) => {}
        }
        *last = Instant::now();
    }

    /// Where probes for `target` run.
    pub fn place(target: &Target, label: &str) -> Place {
        Place::Container {
            id: target.id.clone(),
            pid: target.pid,
            netns_inode: target.netns_inode,
            label: format!("{label} ({})", target.name),
        }
    }

    /// Runs `job` inside `target`'s network namespace. A container that is gone (stopped,
    /// restarted) makes the deployment re-read the engine and the attempt "not ready", so
    /// the next attempt finds the new container.
    pub async fn run_in<F, Fut, T>(&self, target: &Target, label: &str, job: F) -> Result<T, Attempt>
    where
        F: FnOnce(Rc<NsView>) -> Fut + Send + 'static,
        Fut: Future<Output = T> + 'static,
        T: Send + 'static,
    {
        let place = Self::place(target, label);
        match self.pool.run(&place, job).await {
            Ok(out) => Ok(out),
            Err(e @ (NetnsError::Gone { .. } | NetnsError::Mismatch { .. } | NetnsError::NoSuchProcess { .. })) => {
                self.refresh().await;
                Err(Attempt::not_ready(format!("cannot probe from {}: {e}", place.label()), vec![]))
            }
            Err(e) => Err(Attempt::not_ready(format!("cannot probe from {}: {e}", place.label()), vec![])),
        }
    }

    /// The listening sockets of `target`, one read shared by every check asking at once.
    pub async fn listeners(&self, target: &Target) -> Result<Vec<Listener>, Attempt> {
        let read = self.listening.listeners(target.pid, target.netns_inode).await;
        self.read_proc(target, |_| read).await
    }

    /// Reads `/proc/<pid>/...` of a container, making sure the pid still names it after
    /// the read (a reused pid would answer for a stranger).
    pub async fn read_proc<T>(
        &self,
        target: &Target,
        read: impl FnOnce(u32) -> Result<T, String>,
    ) -> Result<T, Attempt> {
        let out = read(target.pid);
        let same = target.netns_inode.is_none_or(|ino| {
            use std::os::unix::fs::MetadataExt;
            std::fs::metadata(format!("/proc/{}/ns/net", target.pid)).map(|m| m.ino()).ok() == Some(ino)
        });
        let alive = std::path::Path::new(&format!("/proc/{}", target.pid)).exists();
        match (out, same && alive) {
            (Ok(v), true) => Ok(v),
            (_, false) => {
                self.refresh().await;
                Err(Attempt::not_ready(format!("{} restarted while cordon read its sockets", target.name), vec![]))
            }
            (Err(e), true) => {
                // The process may have gone between the read and the checks above.
                self.refresh().await;
                Err(Attempt::not_ready(format!("cannot read the sockets of {}: {e}", target.name), vec![]))
            }
        }
    }
}
