//! What the engine says the deployment is: the scenario's services resolved to running
//! containers, the networks they sit on (subnets, gateways, every endpoint), and the
//! sidecars' security settings. Checks read a snapshot of it; a container that restarted
//! mid-run makes the deployment take a fresh one (see [`crate::deployment`]).

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

use crate::config::Scenario;
use crate::engine::{Engine, EngineError, HardeningFacts, NetworkFacts, Target};

#[derive(Debug, Clone, Default)]
pub struct Topology {
    pub project: String,
    /// service → its running containers (every replica), sorted by name.
    pub services: BTreeMap<String, Vec<Target>>,
    /// engine network name → facts, for every network a target is attached to and every
    /// network the scenario names.
    pub networks: BTreeMap<String, NetworkFacts>,
    /// Running containers outside the project attached to those networks, by id.
    pub outsiders: BTreeMap<String, Target>,
    /// The project's containers that are not running (a one-shot init or migration that
    /// exited, a crashed one, one created and never started): nothing is probed in them,
    /// but their logs are read.
    pub stopped: Vec<Target>,
    /// container id → facts, for sidecar containers.
    pub hardening: BTreeMap<String, HardeningFacts>,
    /// Swarm mode: the stack's services, nodes and gwbridges.
    pub swarm: Option<swarm::SwarmView>,
}

pub mod swarm;
#[cfg(test)]
pub use swarm::SwarmView;

/// Whose address an address is, on which network.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Owner {
    pub container: String,
    /// The compose service, for a container of the project.
    pub service: Option<String>,
    /// The scenario's name for the network (compose key), or the engine's.
    pub network: String,
}

#[derive(Debug, thiserror::Error)]
pub enum TopologyError {
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// Some services exist but have no running container yet: worth waiting for.
    #[error(
        "project `{project}` has no running container for {}; deploy the stack (or pass the right --project) and run again",
        missing.join(", ")
    )]
    Missing { project: String, missing: Vec<String> },
    /// The scenario names what the deployment has never had: waiting will not help.
    #[error("the scenario does not match project `{project}`: {}", problems.join("; "))]
    Mismatch { project: String, problems: Vec<String> },
}

impl Topology {
    /// Reads a compose project.
    pub async fn discover(engine: &Engine, project: &str, scenario: &Scenario) -> Result<Topology, TopologyError> {
        let all = engine.compose_targets(project).await?;
        Self::assemble(engine, project, scenario, all).await
    }

    /// Builds the topology from a project's containers (any mode that can list them).
    pub async fn assemble(
        engine: &Engine,
        project: &str,
        scenario: &Scenario,
        all: Vec<Target>,
    ) -> Result<Topology, TopologyError> {
        Self::assemble_known(engine, project, scenario, all, BTreeSet::new()).await
    }

    /// [`Topology::assemble`], with services known to exist beyond those with a container
    /// (a swarm service scaled to 0).
    pub async fn assemble_known(
        engine: &Engine,
        project: &str,
        scenario: &Scenario,
        all: Vec<Target>,
        known: BTreeSet<String>,
    ) -> Result<Topology, TopologyError> {
        let mut known_services: BTreeSet<String> = all.iter().map(|t| t.service.clone()).collect();
        known_services.extend(known);
        let mut services: BTreeMap<String, Vec<Target>> = BTreeMap::new();
        let (running, stopped): (Vec<Target>, Vec<Target>) = all.into_iter().partition(|t| t.running);
        for target in running {
            services.entry(target.service.clone()).or_default().push(target);
        }
        let mut missing = Vec::new();
        let mut never = Vec::new();
        for (role, service) in required_services(scenario) {
            if !known_services.contains(&service) {
                never.push(format!("{role} service `{service}`"));
            } else if !services.contains_key(&service) {
                missing.push(format!("{role} service `{service}`"));
            }
        }
        if !never.is_empty() {
            let known: Vec<&str> = known_services.iter().map(String::as_str).collect();
            return Err(TopologyError::Mismatch {
                project: project.to_string(),
                problems: vec![format!(
                    "no container of the project ever carried {} (services in the project: {})",
                    never.join(", "),
                    if known.is_empty() { "none".into() } else { known.join(", ") }
                )],
            });
        }
        if !missing.is_empty() {
            return Err(TopologyError::Missing { project: project.to_string(), missing });
        }
        let mut topology = Topology { project: project.to_string(), services, stopped, ..Default::default() };
        topology.share_namespaces(engine).await?;
        topology.read_networks(engine, scenario).await?;
        topology.check_declared_networks(scenario)?;
        for provider in scenario.providers.iter().filter(|p| p.sidecar_networks.is_some()) {
            // A task on another node is inspected through its own node's engine (swarm).
            for target in topology.services.get(&provider.service).into_iter().flatten().filter(|t| t.pid != 0) {
                topology.hardening.insert(target.id.clone(), engine.hardening(&target.id).await?);
            }
        }
        Ok(topology)
    }

    /// A container with `network_mode: container:<id>` (or compose's `service:<name>`)
    /// has no attachments of its own: it sits on the networks of the one it joined.
    async fn share_namespaces(&mut self, engine: &Engine) -> Result<(), EngineError> {
        let joined: Vec<(String, String)> =
            self.services.values().flatten().filter_map(|t| t.netns_of.clone().map(|of| (t.id.clone(), of))).collect();
        for (id, of) in joined {
            let host = match self.services.values().flatten().find(|t| t.id == of || t.id.starts_with(&of)) {
                Some(t) => t.clone(),
                None => engine.target(&of).await?,
            };
            for t in self.services.values_mut().flatten().filter(|t| t.id == id) {
                t.attachments = host.attachments.clone();
            }
        }
        Ok(())
    }

    async fn read_networks(&mut self, engine: &Engine, scenario: &Scenario) -> Result<(), EngineError> {
        let mut names: BTreeSet<String> =
            self.services.values().flatten().flat_map(|t| t.attachments.iter().map(|a| a.network.clone())).collect();
        for key in scenario_networks(scenario) {
            names.insert(compose_network_name(&self.project, &key));
            // An external network keeps its own name.
            names.insert(key);
        }
        let project_ids: BTreeSet<String> = self.services.values().flatten().map(|t| t.id.clone()).collect();
        for name in names {
            match engine.network(&name).await {
                Ok(facts) => {
                    for ep in &facts.endpoints {
                        if !project_ids.contains(&ep.container_id) && !self.outsiders.contains_key(&ep.container_id) {
                            match engine.target(&ep.container_id).await {
                                Ok(t) if t.running => {
                                    self.outsiders.insert(t.id.clone(), t);
                                }
                                Ok(_) | Err(EngineError::NotFound { .. }) => {}
                                Err(e) => return Err(e),
                            }
                        }
                    }
                    self.networks.insert(name, facts);
                }
                // A declared network that was never created is a finding (or a scenario
                // error, see below), not a reason to stop reading.
                Err(EngineError::NotFound { .. }) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// A provider's `networks:` naming no network of the deployment would make the
    /// disabled check look nowhere and pass: a scenario error, not a pass.
    fn check_declared_networks(&self, scenario: &Scenario) -> Result<(), TopologyError> {
        let mut problems = Vec::new();
        for provider in &scenario.providers {
            for key in &provider.networks {
                if self.declared_network(key).is_none() {
                    problems.push(format!(
                        "providers.{}.networks names `{key}`, which is no network of the deployment (networks: {})",
                        provider.id,
                        self.network_keys().join(", ")
                    ));
                }
            }
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(TopologyError::Mismatch { project: self.project.clone(), problems })
        }
    }

    pub fn network_keys(&self) -> Vec<String> {
        self.networks.keys().map(|n| self.network_key(n).to_string()).collect()
    }

    /// A network the scenario names by its compose key (or, if external, its own name).
    pub fn declared_network(&self, key: &str) -> Option<&NetworkFacts> {
        self.networks.get(&compose_network_name(&self.project, key)).or_else(|| self.networks.get(key))
    }

    pub fn running(&self, service: &str) -> &[Target] {
        self.services.get(service).map(Vec::as_slice).unwrap_or(&[])
    }

    /// Every running container the deployment knows of, project and outsiders.
    pub fn all_targets(&self) -> impl Iterator<Item = &Target> {
        self.services.values().flatten().chain(self.outsiders.values())
    }

    /// The scenario's name for an engine network: the compose key without the project prefix.
    pub fn network_key<'a>(&self, engine_name: &'a str) -> &'a str {
        engine_name.strip_prefix(&format!("{}_", self.project)).unwrap_or(engine_name)
    }

    /// Which network carries `addr`, by the engine's attachments.
    pub fn network_of(&self, target: &Target, addr: IpAddr) -> Option<String> {
        target
            .attachments
            .iter()
            .find(|a| a.ipv4.map(IpAddr::V4) == Some(addr) || a.ipv6.map(IpAddr::V6) == Some(addr))
            .map(|a| self.network_key(&a.network).to_string())
    }

    /// Whose address `addr` is: any running container the engine attached to any network
    /// the deployment touches.
    pub fn owner_of(&self, addr: IpAddr) -> Option<Owner> {
        for target in self.all_targets() {
            if let Some(network) = self.network_of(target, addr) {
                let service = self.services.contains_key(&target.service).then(|| target.service.clone());
                return Some(Owner { container: target.name.clone(), service, network });
            }
        }
        for facts in self.networks.values() {
            for ep in &facts.endpoints {
                if ep.ipv4.map(IpAddr::V4) == Some(addr) || ep.ipv6.map(IpAddr::V6) == Some(addr) {
                    let network = self.network_key(&facts.name).to_string();
                    return Some(Owner { container: ep.name.clone(), service: None, network });
                }
            }
        }
        None
    }

    /// The networks a container is on, by the scenario's names.
    pub fn network_keys_of(&self, target: &Target) -> Vec<String> {
        target.attachments.iter().map(|a| self.network_key(&a.network).to_string()).collect()
    }

    /// Every running container attached to the network `key`.
    pub fn on_network(&self, key: &str) -> Vec<&Target> {
        self.all_targets().filter(|t| t.attachments.iter().any(|a| self.network_key(&a.network) == key)).collect()
    }

    /// The gateway addresses of the networks a container sits on.
    pub fn gateways_of(&self, target: &Target) -> Vec<IpAddr> {
        let mut out: Vec<IpAddr> = target
            .attachments
            .iter()
            .filter_map(|a| self.networks.get(&a.network))
            .flat_map(|n| n.gateways.iter().copied())
            .collect();
        out.sort();
        out.dedup();
        out
    }
}

/// The services a scenario needs running, each with the role that needs it.
fn required_services(scenario: &Scenario) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for client in &scenario.clients {
        out.push((format!("client `{}`:", client.id), client.service.clone()));
    }
    for provider in scenario.providers.iter().filter(|p| !p.disabled) {
        out.push((format!("provider `{}`:", provider.id), provider.service.clone()));
        if let Some(app) = &provider.app {
            out.push((format!("provider `{}` app:", provider.id), app.service.clone()));
        }
    }
    out
}

/// Every network key the scenario names.
fn scenario_networks(scenario: &Scenario) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for provider in &scenario.providers {
        out.extend(provider.sidecar_networks.iter().flatten().cloned());
        out.extend(provider.networks.iter().cloned());
    }
    out
}

/// How docker-compose names a project's network.
pub fn compose_network_name(project: &str, key: &str) -> String {
    format!("{project}_{key}")
}
