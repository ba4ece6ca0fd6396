//! A swarm stack as a [`Topology`]: each running task's container becomes a [`Target`]
//! of its service (named as in the stack file), inspected through the engine of the node
//! it runs on; services keep their virtual IPs and published ports; each node's
//! `docker_gwbridge` is kept apart, since its subnet is the node's own.

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

use super::{Topology, TopologyError};
use crate::config::Scenario;
use crate::engine::swarm::{GWBRIDGE, PublishMode, RunningTask, StackFacts};
use crate::engine::{Engine, EngineError, NetworkFacts, PublishedPort, Target};

/// What swarm adds to a topology.
#[derive(Debug, Clone)]
pub struct SwarmView {
    pub facts: StackFacts,
    /// node id → that node's `docker_gwbridge`.
    pub gwbridges: BTreeMap<String, NetworkFacts>,
}

impl SwarmView {
    pub fn node_name(&self, node_id: &str) -> String {
        self.facts
            .nodes
            .get(node_id)
            .map(|n| n.hostname.clone())
            .filter(|h| !h.is_empty())
            .unwrap_or_else(|| node_id.to_string())
    }
}

/// The engines of other nodes, keyed by node id or hostname (the suite's `engines:`).
pub type NodeEngines = BTreeMap<String, Engine>;

/// The engine that serves `node_id`, by id or hostname.
pub fn engine_for<'a>(engines: &'a NodeEngines, facts: &StackFacts, node_id: &str) -> Option<&'a Engine> {
    engines.get(node_id).or_else(|| facts.nodes.get(node_id).and_then(|n| engines.get(&n.hostname)))
}

impl Topology {
    /// Reads a swarm stack through a manager (`engine`), inspecting tasks on other nodes
    /// through `engines`.
    pub async fn discover_swarm(
        engine: &Engine,
        engines: &NodeEngines,
        stack: &str,
        scenario: &Scenario,
    ) -> Result<Topology, TopologyError> {
        let facts = engine.stack(stack).await?;
        let converging = facts.converging();
        if !converging.is_empty() {
            return Err(TopologyError::Missing {
                project: stack.to_string(),
                missing: converging
                    .iter()
                    .map(|s| format!("service `{s}` (converging: not every replica runs yet)"))
                    .collect(),
            });
        }
        let mut targets = Vec::new();
        for task in &facts.tasks {
            targets.push(task_target(engine, engines, &facts, task).await?);
        }
        let remote: Vec<Target> =
            targets.iter().filter(|t| t.node.as_ref() != Some(&facts.local_node)).cloned().collect();
        let known: BTreeSet<String> = facts.services.iter().map(|s| s.name.clone()).collect();
        let mut topology = Topology::assemble_known(engine, stack, scenario, targets, known).await?;
        // Sidecars on other nodes: their hardening through their own engine.
        for provider in scenario.providers.iter().filter(|p| p.sidecar_networks.is_some()) {
            for t in remote.iter().filter(|t| t.service == provider.service) {
                let node = t.node.clone().unwrap_or_default();
                if let Some(other) = engine_for(engines, &facts, &node) {
                    topology.hardening.insert(t.id.clone(), other.hardening(&t.id).await?);
                }
            }
        }
        topology.add_routing_mesh_ports(&facts);
        let gwbridges = gwbridges(engine, engines, &facts).await?;
        if let Some(local) = gwbridges.get(&facts.local_node) {
            topology.networks.insert(GWBRIDGE.to_string(), local.clone());
        }
        topology.swarm = Some(SwarmView { facts, gwbridges });
        Ok(topology)
    }

    /// A port published through the routing mesh is published for every task of its
    /// service: the hardening view of each says so.
    fn add_routing_mesh_ports(&mut self, facts: &StackFacts) {
        for (id, hardening) in self.hardening.iter_mut() {
            let service = self.services.values().flatten().find(|t| &t.id == id).map(|t| t.service.clone());
            if let Some(s) = facts.services.iter().find(|s| Some(&s.name) == service.as_ref()) {
                for p in s.ports.iter().filter(|p| p.mode == PublishMode::Ingress) {
                    hardening.published_ports.push(PublishedPort {
                        container_port: format!("{}/{} (routing mesh)", p.target, p.protocol),
                        host_ip: "*".into(),
                        host_port: p.published.to_string(),
                    });
                }
            }
        }
    }

    /// Every virtual IP of a service, with the scenario's name of its network.
    pub fn vips_of(&self, service: &str) -> Vec<(IpAddr, String)> {
        self.vip_networks_of(service).into_iter().map(|(a, n)| (a, self.network_key(&n).to_string())).collect()
    }

    /// Every virtual IP of a service, with the engine's name of its network.
    pub fn vip_networks_of(&self, service: &str) -> Vec<(IpAddr, String)> {
        let Some(view) = &self.swarm else { return vec![] };
        let Some(s) = view.facts.services.iter().find(|s| s.name == service) else { return vec![] };
        s.vips
            .iter()
            .map(|(net_id, addr)| {
                let name = self
                    .networks
                    .values()
                    .find(|n| &n.id == net_id)
                    .map(|n| n.name.clone())
                    .unwrap_or_else(|| net_id.clone());
                (*addr, name)
            })
            .collect()
    }

    /// The `docker_gwbridge` of the node `target` runs on (swarm only).
    pub fn gwbridge_of(&self, target: &Target) -> Option<&NetworkFacts> {
        let view = self.swarm.as_ref()?;
        let node = target.node.as_deref().unwrap_or(&view.facts.local_node);
        view.gwbridges.get(node)
    }
}

/// One running task as a target of its service: inspected through this node's engine, or
/// through the engine the suite names for its node (that engine's pid means nothing here,
/// so only `node_pid` keeps it); a task on a node no engine serves is known by its id.
async fn task_target(
    engine: &Engine,
    engines: &NodeEngines,
    facts: &StackFacts,
    task: &RunningTask,
) -> Result<Target, TopologyError> {
    let stack = &facts.stack;
    let local = task.node_id == facts.local_node;
    let inspected = match (local, engine_for(engines, facts, &task.node_id)) {
        (true, _) => engine.target(&task.container_id).await,
        (false, Some(other)) => other.target(&task.container_id).await.map(|mut t| {
            t.pid = 0;
            t.netns_inode = None;
            t
        }),
        (false, None) => Ok(Target {
            id: task.container_id.clone(),
            name: format!("{}_{}.{}", stack, task.service, task.slot.unwrap_or(0)),
            service: task.service.clone(),
            project: stack.to_string(),
            pid: 0,
            node_pid: 0,
            running: true,
            attachments: vec![],
            netns_inode: None,
            netns_of: None,
            published: vec![],
            node: None,
        }),
    };
    let mut target = match inspected {
        Ok(t) => t,
        // Replaced between list and inspect: the next discovery finds its successor.
        Err(EngineError::NotFound { .. }) => {
            return Err(TopologyError::Missing {
                project: stack.to_string(),
                missing: vec![format!("service `{}` (task {} is being replaced)", task.service, task.id)],
            });
        }
        Err(e) => return Err(e.into()),
    };
    target.service = task.service.clone();
    target.project = stack.to_string();
    target.node = Some(task.node_id.clone());
    if let Some(service) = facts.services.iter().find(|s| s.name == task.service) {
        target.published.extend(service.ports.iter().filter(|p| p.mode == PublishMode::Ingress).map(|p| {
            PublishedPort {
                container_port: format!("{}/{}", p.target, p.protocol),
                host_ip: String::new(),
                host_port: p.published.to_string(),
            }
        }));
    }
    Ok(target)
}

/// Each node's `docker_gwbridge`, by node id: this node's, and every node's an engine of
/// the suite serves.
async fn gwbridges(
    engine: &Engine,
    engines: &NodeEngines,
    facts: &StackFacts,
) -> Result<BTreeMap<String, NetworkFacts>, TopologyError> {
    let mut out = BTreeMap::new();
    if let Some(g) = engine.gwbridge().await? {
        out.insert(facts.local_node.clone(), g);
    }
    for node in facts.nodes.keys().filter(|n| **n != facts.local_node) {
        if let Some(other) = engine_for(engines, facts, node)
            && let Some(g) = other.gwbridge().await?
        {
            out.insert(node.clone(), g);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::swarm::NodeFacts;

    #[tokio::test]
    async fn a_node_is_served_by_its_engine_named_by_id_or_hostname() {
        let engine = |url: &str| {
            Engine::from_docker(bollard::Docker::connect_with_http(url, 1, bollard::API_DEFAULT_VERSION).unwrap())
        };
        let mut facts = StackFacts {
            stack: "s".into(),
            local_node: "n1".into(),
            services: vec![],
            tasks: vec![],
            old_tasks: vec![],
            pending: BTreeMap::new(),
            nodes: BTreeMap::new(),
        };
        for (id, host) in [("n1", "manager"), ("n2", "worker-1"), ("n3", "worker-2")] {
            facts.nodes.insert(id.into(), NodeFacts { id: id.into(), hostname: host.into(), addr: String::new() });
        }
        let engines = NodeEngines::from([
            ("worker-1".to_string(), engine("http://127.0.0.1:1")),
            ("n3".to_string(), engine("http://127.0.0.1:2")),
        ]);
        assert!(engine_for(&engines, &facts, "n2").is_some(), "by hostname");
        assert!(engine_for(&engines, &facts, "n3").is_some(), "by id");
        assert!(engine_for(&engines, &facts, "n1").is_none(), "this node: setns");
    }
}
