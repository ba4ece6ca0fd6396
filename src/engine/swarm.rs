//! A swarm stack as the manager sees it: services by the stack namespace label (endpoint
//! mode, virtual IPs per network, published ports and how they are published), their
//! tasks (only those desired *and* running count), the nodes the tasks run on, and the
//! `docker_gwbridge` network (the one place that shows each task's gwbridge endpoint).
//!
//! A task's container is inspected through the engine of its node: this engine for
//! tasks on this node, the suite's `engines:` entry for a task elsewhere.

use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;

use bollard::models::{
    EndpointPortConfigPublishModeEnum, EndpointSpecModeEnum, Service, ServiceUpdateStatusStateEnum, Task, TaskState,
};
use bollard::query_parameters::{ListNodesOptions, ListServicesOptionsBuilder, ListTasksOptionsBuilder};
use serde::Serialize;

use super::{Engine, EngineError, NetworkFacts};

pub const STACK_NAMESPACE_LABEL: &str = "com.docker.stack.namespace";
pub const GWBRIDGE: &str = "docker_gwbridge";

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EndpointMode {
    Vip,
    Dnsrr,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PublishMode {
    /// Through the routing mesh: every node's addresses, the `ingress` network behind.
    Ingress,
    /// On the node the task runs on only.
    Host,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ServicePort {
    pub target: u16,
    pub published: u16,
    pub protocol: String,
    pub mode: PublishMode,
}

/// One service of the stack.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SwarmService {
    pub id: String,
    /// `<stack>_<name>`, as swarm names it.
    pub full_name: String,
    /// The stack file's name for it (what a scenario names).
    pub name: String,
    pub endpoint_mode: EndpointMode,
    /// (network id, address) of every virtual IP (vip mode).
    pub vips: Vec<(String, IpAddr)>,
    pub ports: Vec<ServicePort>,
    /// Desired replicas (`None` for global services).
    pub replicas: Option<u64>,
    /// An update (or rollback) is in flight: tasks come and go.
    pub updating: bool,
}

/// One task that is desired running and running.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RunningTask {
    pub id: String,
    pub service: String,
    pub slot: Option<i64>,
    pub node_id: String,
    pub container_id: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct NodeFacts {
    pub id: String,
    pub hostname: String,
    pub addr: String,
}

/// Everything discovery reads from the manager.
#[derive(Clone, Debug, Serialize)]
pub struct StackFacts {
    pub stack: String,
    /// This engine's node id.
    pub local_node: String,
    pub services: Vec<SwarmService>,
    pub tasks: Vec<RunningTask>,
    /// Tasks that ran and no longer run (failed, shut down, replaced) and still have a
    /// container on their node: what the task history keeps of a service's past.
    pub old_tasks: Vec<RunningTask>,
    /// Tasks that exist but are not (yet) running, per service: a converging stack.
    pub pending: BTreeMap<String, usize>,
    pub nodes: BTreeMap<String, NodeFacts>,
}

impl StackFacts {
    /// Services that are not settled: an update in flight, or fewer running tasks than
    /// desired. Their checks are not ready yet.
    pub fn converging(&self) -> Vec<String> {
        self.services
            .iter()
            .filter(|s| {
                let running = self.tasks.iter().filter(|t| t.service == s.name).count() as u64;
                s.updating || s.replicas.is_some_and(|r| r != running)
            })
            .map(|s| s.name.clone())
            .collect()
    }
}

impl Engine {
    /// The manager's view of a stack. [`EngineError::NotFound`] when no service carries
    /// the namespace label; an engine that is no manager is an API error saying so.
    pub async fn stack(&self, stack: &str) -> Result<StackFacts, EngineError> {
        let info = self.docker().info().await.map_err(|e| EngineError::api("reading engine info", e))?;
        let swarm = info.swarm.unwrap_or_default();
        if swarm.control_available != Some(true) {
            return Err(EngineError::Api {
                action: format!("reading swarm stack {stack:?}"),
                detail: "this engine is not a swarm manager: run cordon swarm against a manager (DOCKER_HOST)".into(),
            });
        }
        let local_node = swarm.node_id.unwrap_or_default();
        let mut filters = HashMap::new();
        filters.insert("label".to_string(), vec![format!("{STACK_NAMESPACE_LABEL}={stack}")]);
        let listed = self
            .docker()
            .list_services(Some(ListServicesOptionsBuilder::new().filters(&filters).build()))
            .await
            .map_err(|e| EngineError::api(format!("listing services of stack {stack:?}"), e))?;
        if listed.is_empty() {
            return Err(EngineError::NotFound {
                kind: "swarm stack",
                name: stack.to_string(),
                detail: format!(
                    "no service carries the label {STACK_NAMESPACE_LABEL}={stack}; is the stack deployed (docker stack ls), and is --stack its name?"
                ),
            });
        }
        let services: Vec<SwarmService> = listed.iter().map(|s| service(s, stack)).collect();
        let mut tasks = Vec::new();
        let mut old_tasks = Vec::new();
        let mut pending = BTreeMap::new();
        for s in &services {
            let mut filters = HashMap::new();
            filters.insert("service".to_string(), vec![s.id.clone()]);
            let listed = self
                .docker()
                .list_tasks(Some(ListTasksOptionsBuilder::new().filters(&filters).build()))
                .await
                .map_err(|e| EngineError::api(format!("listing tasks of service {}", s.full_name), e))?;
            for t in &listed {
                match running_task(t, &s.name) {
                    Some(task) => tasks.push(task),
                    None if t.desired_state == Some(TaskState::RUNNING) => {
                        *pending.entry(s.name.clone()).or_default() += 1
                    }
                    None => old_tasks.extend(old_task(t, &s.name)),
                }
            }
        }
        tasks.sort_by(|a, b| (&a.service, a.slot, &a.id).cmp(&(&b.service, b.slot, &b.id)));
        let nodes = self
            .docker()
            .list_nodes(None::<ListNodesOptions>)
            .await
            .map_err(|e| EngineError::api("listing swarm nodes", e))?
            .into_iter()
            .filter_map(|n| {
                let id = n.id?;
                let hostname = n.description.and_then(|d| d.hostname).unwrap_or_default();
                let addr = n.status.and_then(|s| s.addr).unwrap_or_default();
                Some((id.clone(), NodeFacts { id, hostname, addr }))
            })
            .collect();
        Ok(StackFacts { stack: stack.to_string(), local_node, services, tasks, old_tasks, pending, nodes })
    }

    /// `docker_gwbridge` of this engine, if it has one.
    pub async fn gwbridge(&self) -> Result<Option<NetworkFacts>, EngineError> {
        match self.network(GWBRIDGE).await {
            Ok(f) => Ok(Some(f)),
            Err(EngineError::NotFound { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }
}

/// Pure: a service's facts from the engine's answer.
pub fn service(s: &Service, stack: &str) -> SwarmService {
    let spec = s.spec.clone().unwrap_or_default();
    let full_name = spec.name.clone().unwrap_or_default();
    let name = full_name.strip_prefix(&format!("{stack}_")).unwrap_or(&full_name).to_string();
    let endpoint = s.endpoint.clone().unwrap_or_default();
    let mode = endpoint.spec.as_ref().and_then(|e| e.mode).or(spec.endpoint_spec.as_ref().and_then(|e| e.mode));
    let endpoint_mode = if mode == Some(EndpointSpecModeEnum::DNSRR) { EndpointMode::Dnsrr } else { EndpointMode::Vip };
    let vips = endpoint
        .virtual_ips
        .unwrap_or_default()
        .into_iter()
        .filter_map(|v| {
            let addr = v.addr?.split('/').next()?.parse().ok()?;
            Some((v.network_id.unwrap_or_default(), addr))
        })
        .collect();
    let ports = endpoint
        .ports
        .unwrap_or_default()
        .into_iter()
        .filter_map(|p| {
            Some(ServicePort {
                target: u16::try_from(p.target_port?).ok()?,
                published: u16::try_from(p.published_port?).ok()?,
                protocol: p.protocol.map(|p| p.to_string()).unwrap_or_else(|| "tcp".into()),
                mode: if p.publish_mode == Some(EndpointPortConfigPublishModeEnum::HOST) {
                    PublishMode::Host
                } else {
                    PublishMode::Ingress
                },
            })
        })
        .collect();
    let replicas = spec
        .mode
        .as_ref()
        .and_then(|m| m.replicated.as_ref())
        .and_then(|r| r.replicas)
        .and_then(|r| u64::try_from(r).ok());
    let updating = s.update_status.as_ref().and_then(|u| u.state).is_some_and(|st| {
        matches!(st, ServiceUpdateStatusStateEnum::UPDATING | ServiceUpdateStatusStateEnum::ROLLBACK_STARTED)
    });
    SwarmService {
        id: s.id.clone().unwrap_or_default(),
        full_name,
        name,
        endpoint_mode,
        vips,
        ports,
        replicas,
        updating,
    }
}

/// Pure: the task if it is desired running and running, with a container.
pub fn running_task(t: &Task, service: &str) -> Option<RunningTask> {
    let running = t.desired_state == Some(TaskState::RUNNING) && state(t) == Some(TaskState::RUNNING);
    running.then(|| with_container(t, service)).flatten()
}

/// A task that no longer runs but still has a container (its log, on its node).
pub fn old_task(t: &Task, service: &str) -> Option<RunningTask> {
    (state(t) != Some(TaskState::RUNNING)).then(|| with_container(t, service)).flatten()
}

fn state(t: &Task) -> Option<TaskState> {
    t.status.as_ref()?.state
}

/// The task and its container, if it has one.
fn with_container(t: &Task, service: &str) -> Option<RunningTask> {
    Some(RunningTask {
        id: t.id.clone()?,
        service: service.to_string(),
        slot: t.slot,
        node_id: t.node_id.clone()?,
        container_id: t.status.as_ref()?.container_status.as_ref()?.container_id.clone().filter(|c| !c.is_empty())?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use bollard::models::{ContainerStatus, ServiceSpec, TaskStatus};

    fn service_json(mode: &str, update: Option<&str>) -> Service {
        let mut v = serde_json::json!({
            "ID": "s1",
            "Spec": {"Name": "demo_native", "Mode": {"Replicated": {"Replicas": 2}}},
            "Endpoint": {
                "Spec": {"Mode": mode},
                "Ports": [{"Protocol": "tcp", "TargetPort": 8000, "PublishedPort": 18201, "PublishMode": "host"},
                          {"Protocol": "tcp", "TargetPort": 8080, "PublishedPort": 18202, "PublishMode": "ingress"}],
                "VirtualIPs": [{"NetworkID": "n1", "Addr": "10.171.1.2/24"}]
            }
        });
        if let Some(u) = update {
            v["UpdateStatus"] = serde_json::json!({"State": u});
        }
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn a_service_reads_its_endpoint() {
        let s = service(&service_json("vip", None), "demo");
        assert_eq!(s.name, "native");
        assert_eq!(s.endpoint_mode, EndpointMode::Vip);
        assert_eq!(s.vips, vec![("n1".to_string(), "10.171.1.2".parse().unwrap())]);
        assert_eq!(
            s.ports[0],
            ServicePort { target: 8000, published: 18201, protocol: "tcp".into(), mode: PublishMode::Host }
        );
        assert_eq!(s.ports[1].mode, PublishMode::Ingress);
        assert_eq!(s.replicas, Some(2));
        assert!(!s.updating);
        assert_eq!(service(&service_json("dnsrr", Some("updating")), "demo").endpoint_mode, EndpointMode::Dnsrr);
        assert!(service(&service_json("dnsrr", Some("updating")), "demo").updating);
        assert!(!service(&service_json("dnsrr", Some("completed")), "demo").updating);
        let _ = ServiceSpec::default();
    }

    fn task(desired: TaskState, state: TaskState) -> Task {
        Task {
            id: Some("t1".into()),
            node_id: Some("node".into()),
            desired_state: Some(desired),
            status: Some(TaskStatus {
                state: Some(state),
                container_status: Some(ContainerStatus { container_id: Some("c1".into()), ..Default::default() }),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn only_tasks_desired_and_running_count() {
        assert!(running_task(&task(TaskState::RUNNING, TaskState::RUNNING), "s").is_some());
        assert!(running_task(&task(TaskState::SHUTDOWN, TaskState::RUNNING), "s").is_none(), "being replaced");
        assert!(running_task(&task(TaskState::RUNNING, TaskState::STARTING), "s").is_none(), "starting");
    }

    #[test]
    fn a_task_that_ran_and_kept_its_container_is_an_old_task() {
        assert!(old_task(&task(TaskState::SHUTDOWN, TaskState::FAILED), "s").is_some(), "failed");
        assert!(old_task(&task(TaskState::SHUTDOWN, TaskState::SHUTDOWN), "s").is_some(), "replaced");
        assert!(old_task(&task(TaskState::RUNNING, TaskState::RUNNING), "s").is_none(), "it runs");
        let mut never = task(TaskState::SHUTDOWN, TaskState::REJECTED);
        never.status.as_mut().unwrap().container_status = None;
        assert!(old_task(&never, "s").is_none(), "no container, no log");
    }

    #[test]
    fn a_stack_short_of_its_replicas_converges() {
        let s = service(&service_json("dnsrr", None), "demo");
        let t = RunningTask {
            id: "t".into(),
            service: "native".into(),
            slot: Some(1),
            node_id: "n".into(),
            container_id: "c".into(),
        };
        let mut facts = StackFacts {
            stack: "demo".into(),
            local_node: "n".into(),
            services: vec![s],
            tasks: vec![t.clone()],
            old_tasks: vec![],
            pending: BTreeMap::new(),
            nodes: BTreeMap::new(),
        };
        assert_eq!(facts.converging(), vec!["native".to_string()]);
        facts.tasks.push(RunningTask { id: "t2".into(), ..t });
        assert!(facts.converging().is_empty());
    }
}
