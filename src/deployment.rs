//! The deployment under test while a run lasts: the engine's view (a [`Topology`]
//! snapshot, re-read when a container restarted), and the namespace workers probes run
//! in. Checks ask it for targets and run observation jobs through it.

use std::future::Future;
use std::rc::Rc;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use crate::config::{Mode, Scenario};
use crate::engine::carrier::carriers;
use crate::engine::{Engine, Target};
use crate::model::Attempt;
use crate::netns::listener::Listener;
use crate::netns::listening::ListenerMemo;
use crate::netns::plan::{self, Plan, ProcFacts, ProcPlan};
use crate::netns::{NetnsError, NsPool, NsView, Place};
use crate::topology::swarm::{NodeEngines, engine_for};
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
    /// Swarm: the engines of nodes probed through carriers (the suite's `engines:`).
    engines: NodeEngines,
}

/// Where the probes for one target run.
enum Carrier {
    /// `setns` into the container's namespace, on this node.
    Here,
    /// A carrier container through that node's engine.
    There { engine: Engine, node: String },
    /// On a node no engine of the suite serves.
    Nowhere { node: String },
}

/// How long one carrier may take for one plan.
const CARRIER_LIMIT: Duration = Duration::from_secs(300);

/// How long a container runs before a name's answer about it counts (the engine's DNS
/// registers it as it starts).
const SETTLING: Duration = Duration::from_secs(2);

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
            engines: NodeEngines::new(),
        }
    }

    /// A swarm stack: `engines` serve the nodes probed through carriers.
    pub fn swarm(stack: &str, engine: Engine, engines: NodeEngines, scenario: Scenario, topology: Topology) -> Self {
        let mut d = Self::new(Mode::Swarm, stack, Some(engine), scenario, topology);
        d.engines = engines;
        d
    }

    /// The engine the deployment was discovered through (the swarm's manager).
    pub fn engine(&self) -> Option<&Engine> {
        self.engine.as_ref()
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
            Mode::Swarm => Topology::discover_swarm(engine, &self.engines, &self.project, &self.scenario).await,
            Mode::Host => return,
        };
        if let Ok(t) = fresh {
            *self.topology.write().expect("topology lock") = Arc::new(t)
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
        if !matches!(self.carrier(target), Carrier::Here) {
            return Ok(self.proc_facts(target).await?.listeners);
        }
        let read = self.listening.listeners(target.pid, target.netns_inode).await;
        self.read_proc(target, |_| read).await
    }

    /// The listeners of each of `targets`, by name, read from its own namespace: whether a
    /// refused connect means "still starting" or "turned away".
    pub async fn listeners_of(
        &self,
        targets: &[Target],
    ) -> Result<std::collections::BTreeMap<String, Vec<Listener>>, Attempt> {
        let reads = futures_util::future::join_all(targets.iter().map(|t| self.listeners(t))).await;
        targets.iter().zip(reads).map(|(t, read)| Ok((t.name.clone(), read?))).collect()
    }

    /// The engine that runs `target`: this node's, or the one the suite names for its
    /// node; `Err` says why there is none.
    pub fn engine_of(&self, target: &Target) -> Result<Engine, String> {
        match (self.carrier(target), &self.engine) {
            (Carrier::There { engine, .. }, _) => Ok(engine),
            (Carrier::Here, Some(engine)) => Ok(engine.clone()),
            (Carrier::Here, None) => Err("cordon runs without an engine (host mode)".into()),
            (Carrier::Nowhere { node }, _) => {
                Err(format!("{} runs on node {node}, and the suite's `engines:` names no engine for it", target.name))
            }
        }
    }

    /// The engine that serves `node` (swarm): this one for its own node, else the one the
    /// suite's `engines:` names for it.
    pub fn engine_of_node(&self, node: &str) -> Result<Engine, String> {
        let topology = self.topology();
        let view = topology.swarm.as_ref().ok_or("not a swarm deployment")?;
        match engine_for(&self.engines, &view.facts, node) {
            Some(engine) => Ok(engine.clone()),
            None if node == view.facts.local_node => self.engine.clone().ok_or_else(|| "no engine".into()),
            None => Err(format!(
                "its container is on node {}, and the suite's `engines:` names no engine for it",
                view.node_name(node)
            )),
        }
    }

    fn carrier(&self, target: &Target) -> Carrier {
        let (Mode::Swarm, Some(node)) = (self.mode, &target.node) else { return Carrier::Here };
        let topology = self.topology();
        let Some(view) = &topology.swarm else { return Carrier::Here };
        match engine_for(&self.engines, &view.facts, node) {
            // A node the suite names is probed through its engine, this one too.
            Some(engine) => Carrier::There { engine: engine.clone(), node: view.node_name(node) },
            None if *node == view.facts.local_node => Carrier::Here,
            None => Carrier::Nowhere { node: view.node_name(node) },
        }
    }

    /// Starts the carrier of every node that has a target to probe, in the background, so
    /// the carriers' start overlaps with the probes that run here.
    fn warm_carriers(&self) {
        let topology = self.topology();
        let mut nodes: Vec<(String, Engine)> = Vec::new();
        for target in topology.services.values().flatten() {
            if let Carrier::There { engine, node } = self.carrier(target)
                && !nodes.iter().any(|(n, _)| *n == node)
            {
                nodes.push((node, engine));
            }
        }
        for (node, engine) in nodes {
            tokio::spawn(async move { carriers().warm(&engine, &node).await });
        }
    }

    /// How probes for `target` run, for evidence: "probed from client webui (…) by setns
    /// on this node" or "… by a carrier on node worker-1".
    pub fn probed_by(&self, target: &Target, label: &str) -> String {
        let how = match self.carrier(target) {
            Carrier::Here => "setns on this node".to_string(),
            Carrier::There { node, .. } => format!("a carrier on node {node}"),
            Carrier::Nowhere { node } => format!("nothing: node {node} has no engine in the suite"),
        };
        format!("probed from {label} ({}) by {how}", target.name)
    }

    /// Runs one observation plan in `target`'s namespace: through the namespace worker
    /// on this node, or shipped to a carrier on the target's node.
    pub async fn observe<P: Plan>(&self, target: &Target, label: &str, plan: P) -> Result<P::Observation, Attempt> {
        match self.carrier(target) {
            Carrier::Here => {
                let seen = self.run_in(target, label, move |view| plan.observe(view)).await?;
                // What was seen from a namespace that went away during the plan (the
                // container restarted) is partly the dying namespace's: asked again.
                if !Self::still_there(target) {
                    self.refresh().await;
                    return Err(Attempt::not_ready(
                        format!("{} restarted while cordon observed from it", target.name),
                        vec![],
                    ));
                }
                Ok(seen)
            }
            Carrier::There { engine, node } => {
                let kind = P::KIND;
                let plan = plan::encode_value(&plan).map_err(|e| Attempt::not_ready(e, vec![]))?;
                let who = format!("{label} ({})", target.name);
                let out = match carriers().run(&engine, &node, target, &who, plan, CARRIER_LIMIT).await {
                    Ok(out) => out,
                    Err(e) => {
                        self.refresh().await;
                        return Err(Attempt::not_ready(format!("cannot probe from {who} on node {node}: {e}"), vec![]));
                    }
                };
                plan::decode_value::<P>(out).map_err(|e| {
                    Attempt::not_ready(
                        format!("the carrier on node {node} answered the {kind} plan with no observation: {e}"),
                        vec![],
                    )
                })
            }
            Carrier::Nowhere { node } => Err(Attempt::not_ready(
                format!("{} runs on node {node}, and the suite's `engines:` names no engine for it", target.name),
                vec![],
            )),
        }
    }

    /// Listeners, default gateways and effective uid of a container, from its own `/proc`.
    pub async fn proc_facts(&self, target: &Target) -> Result<ProcFacts, Attempt> {
        match self.carrier(target) {
            Carrier::Here => self.read_proc(target, |pid| ProcPlan { pid }.read()).await,
            // The node's carrier sees the node's host pids.
            _ => self
                .observe(target, &format!("container {}", target.name), ProcPlan { pid: target.node_pid })
                .await?
                .map_err(|e| Attempt::not_ready(format!("cannot read the sockets of {}: {e}", target.name), vec![])),
        }
    }

    /// Why a name that led nowhere, or elsewhere, may say nothing yet about `providers`:
    /// one of them stopped, restarted or started moments ago (the engine's DNS drops a
    /// container while it is down and knows it again only once it runs). Re-reads the
    /// engine then. `None` when each is the process discovery saw and has run for a while:
    /// the name's answer is the deployment's. Containers on other nodes are not looked at.
    pub async fn unsettled(&self, providers: &[Target]) -> Option<String> {
        let mut why = Vec::new();
        for target in providers.iter().filter(|t| matches!(self.carrier(t), Carrier::Here)) {
            let same = target.netns_inode.is_none_or(|ino| {
                use std::os::unix::fs::MetadataExt;
                std::fs::metadata(format!("/proc/{}/ns/net", target.pid)).map(|m| m.ino()).ok() == Some(ino)
            });
            match (same, crate::netns::procfs::process_age(target.pid)) {
                (true, Some(age)) if age >= SETTLING => {}
                (true, Some(age)) => why.push(format!("{} started {:.1}s ago", target.name, age.as_secs_f64())),
                _ => why.push(format!("{} stopped or restarted", target.name)),
            }
        }
        if why.is_empty() {
            return None;
        }
        self.refresh().await;
        Some(format!("{}: the name's answer is not judged until the provider runs", why.join(", ")))
    }

    /// The container's process still runs in the network namespace cordon found it in (a
    /// restart gives it a new one; a reused pid would answer for a stranger).
    fn still_there(target: &Target) -> bool {
        let same = target.netns_inode.is_none_or(|ino| {
            use std::os::unix::fs::MetadataExt;
            std::fs::metadata(format!("/proc/{}/ns/net", target.pid)).map(|m| m.ino()).ok() == Some(ino)
        });
        same && std::path::Path::new(&format!("/proc/{}", target.pid)).exists()
    }

    /// Reads `/proc/<pid>/...` of a container, making sure the pid still names it after
    /// the read (a reused pid would answer for a stranger).
    pub async fn read_proc<T>(
        &self,
        target: &Target,
        read: impl FnOnce(u32) -> Result<T, String>,
    ) -> Result<T, Attempt> {
        let out = read(target.pid);
        match (out, Self::still_there(target)) {
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

/// Why discovery stopped: an engine or namespace problem (exit 3), or a scenario that
/// names what the deployment does not have (exit 2).
pub enum DiscoveryError {
    Infrastructure(String),
    Scenario(String),
}

/// One discovery for compose and swarm: connects to the engine (`DOCKER_HOST` or the
/// local socket; in swarm, also to every engine the suite's `engines:` names) within the
/// suite's connect timeout, reads the project or stack, waiting while it converges until
/// the run's deadline (counted from `started`, the run clock's start), and proves a
/// namespace can be entered, so an unprivileged run stops at once with what to do.
pub async fn discover(
    mode: Mode,
    project: &str,
    scenario: &Scenario,
    suite: &crate::config::Suite,
    started: Instant,
) -> Result<Deployment, DiscoveryError> {
    let infra = DiscoveryError::Infrastructure;
    // The engine's first answer is a connect and two exchanges (version, ping): a busy
    // engine that answers in a second and a half is slow, not unreachable.
    let timeout = (suite.limits.connect_timeout + suite.limits.read_timeout).min(suite.deadline);
    let engine = Engine::connect_within(timeout).await.map_err(|e| infra(e.to_string()))?;
    let mut nodes = NodeEngines::new();
    if mode == Mode::Swarm {
        for (node, url) in &suite.engines {
            let other = Engine::connect_to_within(url, timeout)
                .await
                .map_err(|e| infra(format!("the engine of node {node}: {e}")))?;
            nodes.insert(node.clone(), other);
        }
    }
    let (deadline, retry) = (suite.deadline, suite.retry_interval);
    let mut notes = crate::waiting::WaitNotes::new();
    // Right after a deploy some containers or tasks may not be running yet: wait for them
    // as for any other not-ready answer, up to the run's deadline.
    let topology = loop {
        let found = match mode {
            Mode::Swarm => Topology::discover_swarm(&engine, &nodes, project, scenario).await,
            _ => Topology::discover(&engine, project, scenario).await,
        };
        match found {
            Ok(t) => break t,
            Err(TopologyError::Missing { missing, .. }) if started.elapsed() + retry < deadline => {
                let what = format!("{} not running yet", missing.join(", "));
                if let Some(line) = notes.line(&what, started.elapsed(), deadline) {
                    eprintln!("{line}");
                }
                tokio::time::sleep(retry.max(Duration::from_secs(1))).await;
            }
            Err(e @ TopologyError::Mismatch { .. }) => return Err(DiscoveryError::Scenario(e.to_string())),
            Err(e) => return Err(infra(e.to_string())),
        }
    };
    if let Some(target) = topology.services.values().flatten().find(|t| t.pid != 0) {
        crate::netns::run_in_netns_async(target.pid, |_| async {}).await.map_err(|e| infra(e.to_string()))?;
    }
    Ok(match mode {
        Mode::Swarm => {
            let deployment = Deployment::swarm(project, engine, nodes, scenario.clone(), topology);
            deployment.warm_carriers();
            deployment
        }
        _ => Deployment::new(mode, project, Some(engine), scenario.clone(), topology),
    })
}
