//! What the engine says the deployment is: the scenario's services resolved to running
//! containers, their networks with subnets, and the sidecars' security settings. Read
//! once before the checks run; the checks only read it.

use std::collections::BTreeMap;
use std::net::IpAddr;

use crate::config::{Provider, Scenario};
use crate::engine::{Engine, EngineError, HardeningFacts, NetworkFacts, Target};

#[derive(Debug, Clone)]
pub struct Topology {
    pub project: String,
    /// compose service → its running containers.
    pub services: BTreeMap<String, Vec<Target>>,
    /// engine network name → facts, for every network a target is attached to and every
    /// network a sidecar declares.
    pub networks: BTreeMap<String, NetworkFacts>,
    /// container id → facts, for sidecar containers.
    pub hardening: BTreeMap<String, HardeningFacts>,
}

#[derive(Debug, thiserror::Error)]
pub enum TopologyError {
    #[error(transparent)]
    Engine(#[from] EngineError),
    #[error(
        "compose project `{project}` has no running container for {}; deploy the stack (or pass the right --project) and run again",
        missing.join(", ")
    )]
    Missing { project: String, missing: Vec<String> },
}

impl Topology {
    pub async fn discover(engine: &Engine, project: &str, scenario: &Scenario) -> Result<Topology, TopologyError> {
        let mut services: BTreeMap<String, Vec<Target>> = BTreeMap::new();
        for target in engine.compose_targets(project).await?.into_iter().filter(|t| t.running) {
            services.entry(target.service.clone()).or_default().push(target);
        }
        let mut missing = Vec::new();
        let mut need = |role: &str, service: &str| {
            if !services.contains_key(service) {
                missing.push(format!("{role} service `{service}`"));
            }
        };
        for client in &scenario.clients {
            need(&format!("client `{}`:", client.id), &client.service);
        }
        for provider in scenario.providers.iter().filter(|p| !p.disabled) {
            need(&format!("provider `{}`:", provider.id), &provider.service);
            if let Some(app) = &provider.app {
                need(&format!("provider `{}` app:", provider.id), &app.service);
            }
        }
        if !missing.is_empty() {
            return Err(TopologyError::Missing { project: project.to_string(), missing });
        }
        let mut network_names: Vec<String> =
            services.values().flatten().flat_map(|t| t.attachments.iter().map(|a| a.network.clone())).collect();
        for provider in &scenario.providers {
            for key in provider.sidecar_networks.iter().flatten() {
                network_names.push(compose_network_name(project, key));
                // An external network keeps its own name.
                network_names.push(key.clone());
            }
        }
        network_names.sort();
        network_names.dedup();
        let mut networks = BTreeMap::new();
        for name in network_names {
            match engine.network(&name).await {
                Ok(facts) => {
                    networks.insert(name, facts);
                }
                // A declared network that was never created is a finding for the sidecar
                // check, not a reason to stop.
                Err(EngineError::NotFound { .. }) => {}
                Err(e) => return Err(e.into()),
            }
        }
        let mut hardening = BTreeMap::new();
        for provider in scenario.providers.iter().filter(|p| p.sidecar_networks.is_some()) {
            for target in services.get(&provider.service).into_iter().flatten() {
                hardening.insert(target.id.clone(), engine.hardening(&target.id).await?);
            }
        }
        Ok(Topology { project: project.to_string(), services, networks, hardening })
    }

    /// A network the scenario names by its compose key (or, if external, its own name).
    pub fn declared_network(&self, key: &str) -> Option<&NetworkFacts> {
        self.networks.get(&compose_network_name(&self.project, key)).or_else(|| self.networks.get(key))
    }

    pub fn running(&self, service: &str) -> &[Target] {
        self.services.get(service).map(Vec::as_slice).unwrap_or(&[])
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

    /// The containers that answer for a provider: its endpoint service, plus the app
    /// behind a sidecar. Each with the ports a non-admitted client must not reach.
    pub fn provider_surfaces(&self, provider: &Provider) -> Vec<(&Target, Vec<u16>)> {
        let mut endpoint_ports = vec![provider.url.port_or_known_default().unwrap_or(80)];
        endpoint_ports.extend(provider.app_ports.iter().copied());
        endpoint_ports.dedup();
        let mut out: Vec<(&Target, Vec<u16>)> =
            self.running(&provider.service).iter().map(|t| (t, endpoint_ports.clone())).collect();
        if let Some(app) = &provider.app {
            out.extend(self.running(&app.service).iter().map(|t| (t, app.ports.clone())));
        }
        out
    }
}

/// How docker-compose names a project's network.
pub fn compose_network_name(project: &str, key: &str) -> String {
    format!("{project}_{key}")
}
