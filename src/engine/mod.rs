//! Docker Engine access through bollard: resolve scenario entities to running
//! containers ([`Target`]), read network subnets ([`NetworkFacts`]) and security
//! configuration ([`HardeningFacts`]), and restart a container.
//!
//! Works against API 1.41 (Docker 20.10) and newer: the client negotiates the version
//! down at connect time, and nothing here relies on fields newer engines added (e.g.
//! `DNSNames`: aliases are read instead).
//!
//! Every failure is an [`EngineError`]; all of them are infrastructure errors (exit
//! code 3), never check failures.

pub mod carrier;
mod convert;
mod facts;
pub mod logs;
pub mod swarm;

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use bollard::Docker;
use bollard::query_parameters::{InspectNetworkOptions, ListContainersOptionsBuilder, RestartContainerOptionsBuilder};

use crate::config::credential::mask_userinfo;

pub use facts::{
    Attachment, CpuLimit, HardeningFacts, MountFact, NetworkEndpoint, NetworkFacts, PublishedPort, RunningImage,
    Subnet, SubnetParseError, Target,
};

pub const COMPOSE_PROJECT_LABEL: &str = "com.docker.compose.project";
pub const COMPOSE_SERVICE_LABEL: &str = "com.docker.compose.service";

const ACCESS_HINT: &str = "is dockerd running? cordon needs access to /var/run/docker.sock (run as root or in the docker group), or DOCKER_HOST pointing at a reachable engine";

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// No engine answered (socket missing, permission denied, connection refused, ping
    /// failed).
    #[error("cannot reach the Docker engine at {endpoint}: {detail}; {ACCESS_HINT}")]
    Unreachable { endpoint: String, detail: String },
    /// No container at all carries the project label.
    #[error(
        "no containers of compose project {project:?} (label {COMPOSE_PROJECT_LABEL}={project}); is the stack deployed, and is the project name right (compose's -p / directory name)?"
    )]
    NoProject { project: String },
    /// The project has containers, but none for this service.
    #[error("compose project {project:?} has no service {service:?} (services with containers: {})", known.join(", "))]
    NoService { project: String, service: String, known: Vec<String> },
    /// The service has containers, but none is running.
    #[error("service {service:?} of compose project {project:?} has no running container ({stopped} stopped)")]
    NotRunning { project: String, service: String, stopped: usize },
    /// A named container or network does not exist (HTTP 404).
    #[error("no such {kind} {name:?}: {detail}")]
    NotFound { kind: &'static str, name: String, detail: String },
    /// The engine answered, but not as expected.
    #[error("Docker engine error while {action}: {detail}")]
    Api { action: String, detail: String },
}

impl EngineError {
    fn api(action: impl Into<String>, err: bollard::errors::Error) -> Self {
        EngineError::Api { action: action.into(), detail: describe(&err) }
    }

    fn lookup(kind: &'static str, name: &str, action: &str, err: bollard::errors::Error) -> Self {
        match err {
            bollard::errors::Error::DockerResponseServerError { status_code: 404, message } => {
                EngineError::NotFound { kind, name: name.to_string(), detail: message }
            }
            other if is_transport(&other) => {
                EngineError::Unreachable { endpoint: endpoint_hint(), detail: describe(&other) }
            }
            other => EngineError::api(format!("{action} {name:?}"), other),
        }
    }
}

fn describe(err: &bollard::errors::Error) -> String {
    let text = match err {
        bollard::errors::Error::DockerResponseServerError { status_code, message } => {
            format!("HTTP {status_code}: {message}")
        }
        other => other.to_string(),
    };
    mask_host_in(&docker_host(), &text)
}

/// `text` with the userinfo of `host` (`tcp://user:pass@…`) masked wherever it appears.
fn mask_host_in(host: &str, text: &str) -> String {
    let masked = mask_userinfo(host);
    if masked == host {
        return text.to_string();
    }
    let mut out = text.replace(host, &masked);
    // The userinfo alone, as an error may quote the authority without the scheme.
    let authority = host.split_once("://").map_or(host, |(_, rest)| rest);
    if let Some((userinfo, _)) = authority.rsplit_once('@')
        && !userinfo.is_empty()
    {
        out = out.replace(userinfo, "***");
    }
    out
}

fn is_transport(err: &bollard::errors::Error) -> bool {
    use bollard::errors::Error as E;
    matches!(
        err,
        E::IOError { .. }
            | E::HyperLegacyError { .. }
            | E::SocketNotFoundError(_)
            | E::RequestTimeoutError
            | E::HyperResponseError { .. }
            | E::HttpClientError { .. }
    )
}

/// The engine address as configured: `DOCKER_HOST`, else the local socket.
fn docker_host() -> String {
    std::env::var("DOCKER_HOST").unwrap_or_else(|_| "unix:///var/run/docker.sock".to_string())
}

/// The engine address as printed: a password in `DOCKER_HOST` is masked.
fn endpoint_hint() -> String {
    mask_userinfo(&docker_host())
}

/// How long [`Engine::connect`] waits for the engine to answer when no suite says.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// A connected, version-negotiated engine client. Cheap to clone.
#[derive(Clone, Debug)]
pub struct Engine {
    docker: Docker,
}

impl Engine {
    /// Connects with the local defaults (`DOCKER_HOST`, else the unix socket),
    /// negotiates the API version down to the engine's, and pings it.
    pub async fn connect() -> Result<Engine, EngineError> {
        Self::connect_within(DEFAULT_CONNECT_TIMEOUT).await
    }

    /// [`Engine::connect`], giving up when the engine has not answered within `timeout`
    /// (an engine that accepts and never answers would otherwise hold the run 120 s).
    pub async fn connect_within(timeout: Duration) -> Result<Engine, EngineError> {
        Self::connect_to_within(&docker_host(), timeout).await
    }

    /// Like [`Engine::connect`], to an explicit `unix://`, `tcp://` or `http://` host.
    pub async fn connect_to(host: &str) -> Result<Engine, EngineError> {
        Self::connect_to_within(host, DEFAULT_CONNECT_TIMEOUT).await
    }

    /// [`Engine::connect_to`] within `timeout`.
    pub async fn connect_to_within(host: &str, timeout: Duration) -> Result<Engine, EngineError> {
        let unreachable = |detail: String| EngineError::Unreachable {
            endpoint: mask_userinfo(host),
            detail: mask_host_in(host, &detail),
        };
        let docker = Docker::connect_with_host(host).map_err(|e| unreachable(describe(&e)))?;
        let handshake = async {
            let docker = docker.negotiate_version().await?;
            docker.ping().await?;
            Ok::<_, bollard::errors::Error>(docker)
        };
        match tokio::time::timeout(timeout, handshake).await {
            Ok(Ok(docker)) => Ok(Engine { docker }),
            Ok(Err(e)) => Err(unreachable(describe(&e))),
            Err(_) => Err(unreachable(format!("no answer within {:.1}s", timeout.as_secs_f64()))),
        }
    }

    /// Wraps an existing bollard client (e.g. one connected to a remote engine).
    pub fn from_docker(docker: Docker) -> Self {
        Engine { docker }
    }

    /// The engine's API client; every call through it is counted (see [`crate::cost`]).
    pub fn docker(&self) -> &Docker {
        crate::cost::ENGINE_CALLS.add(1);
        &self.docker
    }

    /// The engine as reports name it: `Docker Engine 26.1.5 (API 1.45, linux/amd64)`; the
    /// negotiated API version alone when the engine does not say.
    pub async fn describe_version(&self) -> String {
        match self.docker().version().await {
            Ok(v) => format!(
                "Docker Engine {} (API {}, {}/{})",
                v.version.unwrap_or_else(|| "?".into()),
                v.api_version.unwrap_or_else(|| self.api_version()),
                v.os.unwrap_or_else(|| "?".into()),
                v.arch.unwrap_or_else(|| "?".into())
            ),
            Err(_) => format!("a Docker engine (API {})", self.api_version()),
        }
    }

    /// The negotiated API version, e.g. `1.41`.
    pub fn api_version(&self) -> String {
        self.docker.client_version().to_string()
    }

    /// Every container of a compose project, running or not, inspected: sorted by
    /// service, then container name. A stopped container has `running == false` and
    /// `pid == 0`; callers that probe filter on `running`.
    ///
    /// Errors with [`EngineError::NoProject`] when no container carries the label.
    pub async fn compose_targets(&self, project: &str) -> Result<Vec<Target>, EngineError> {
        let mut filters = HashMap::new();
        filters.insert("label", vec![format!("{COMPOSE_PROJECT_LABEL}={project}")]);
        let options = ListContainersOptionsBuilder::new().all(true).filters(&filters).build();
        let listed = self.docker().list_containers(Some(options)).await.map_err(|e| {
            if is_transport(&e) {
                EngineError::Unreachable { endpoint: endpoint_hint(), detail: describe(&e) }
            } else {
                EngineError::api(format!("listing containers of compose project {project:?}"), e)
            }
        })?;
        if listed.is_empty() {
            return Err(EngineError::NoProject { project: project.to_string() });
        }
        let mut targets = Vec::with_capacity(listed.len());
        for summary in listed {
            let Some(id) = summary.id else { continue };
            match self.target(&id).await {
                Ok(t) => targets.push(t),
                // Removed between list and inspect: it is not a target any more.
                Err(EngineError::NotFound { .. }) => continue,
                Err(e) => return Err(e),
            }
        }
        targets.sort_by(|a, b| (&a.service, &a.name).cmp(&(&b.service, &b.name)));
        Ok(targets)
    }

    /// [`Engine::compose_targets`] grouped by service.
    pub async fn compose_services(&self, project: &str) -> Result<BTreeMap<String, Vec<Target>>, EngineError> {
        let mut out: BTreeMap<String, Vec<Target>> = BTreeMap::new();
        for t in self.compose_targets(project).await? {
            out.entry(t.service.clone()).or_default().push(t);
        }
        Ok(out)
    }

    /// The running containers of one compose service; [`EngineError::NoService`] or
    /// [`EngineError::NotRunning`] when there are none.
    pub async fn service_targets(&self, project: &str, service: &str) -> Result<Vec<Target>, EngineError> {
        let services = self.compose_services(project).await?;
        select_running(project, service, &services)
    }

    /// Inspects one container (by id or name).
    pub async fn target(&self, container: &str) -> Result<Target, EngineError> {
        let inspect = self
            .docker()
            .inspect_container(container, None)
            .await
            .map_err(|e| EngineError::lookup("container", container, "inspecting container", e))?;
        let mut target = convert::target(&inspect);
        // Pinned now, compared before every setns: a pid reused later never matches.
        if target.running && target.pid > 0 {
            use std::os::unix::fs::MetadataExt;
            target.netns_inode = std::fs::metadata(format!("/proc/{}/ns/net", target.pid)).ok().map(|m| m.ino());
        }
        Ok(target)
    }

    /// Name, id, driver and subnets of a network (by name or id).
    pub async fn network(&self, name_or_id: &str) -> Result<NetworkFacts, EngineError> {
        let inspect = self
            .docker()
            .inspect_network(name_or_id, None::<InspectNetworkOptions>)
            .await
            .map_err(|e| EngineError::lookup("network", name_or_id, "inspecting network", e))?;
        convert::network(&inspect)
            .map_err(|detail| EngineError::Api { action: format!("reading network {name_or_id:?}"), detail })
    }

    /// Security-relevant configuration of a container (by id or name).
    pub async fn hardening(&self, container: &str) -> Result<HardeningFacts, EngineError> {
        let inspect = self
            .docker()
            .inspect_container(container, None)
            .await
            .map_err(|e| EngineError::lookup("container", container, "inspecting container", e))?;
        let mut facts = convert::hardening(&inspect);
        self.read_image(&mut facts.image).await;
        Ok(facts)
    }

    /// The image's `RepoDigests` and index descriptor. None when the image is gone
    /// (removed while a container still runs it: its id still names it); an engine that
    /// refuses to show it (a socket proxy that allows no image calls) is noted, never the
    /// end of discovery: only the image check needs it.
    async fn read_image(&self, image: &mut RunningImage) {
        if image.id.is_empty() {
            return;
        }
        match self.docker().inspect_image(&image.id).await {
            Ok(i) => {
                image.repo_digests = i.repo_digests.unwrap_or_default();
                image.manifests.extend(i.descriptor.and_then(|d| d.digest));
            }
            Err(bollard::errors::Error::DockerResponseServerError { status_code: 404, .. }) => {}
            Err(e) => {
                image.inspect_error = Some(EngineError::lookup("image", &image.id, "inspecting image", e).to_string())
            }
        }
    }

    /// Restarts a container, giving it `timeout` (whole seconds, rounded up) to stop
    /// before it is killed. Returns when the engine reports the restart done; readiness
    /// of the application is the caller's business.
    pub async fn restart(&self, container: &str, timeout: Duration) -> Result<(), EngineError> {
        let secs = timeout.as_secs() + u64::from(timeout.subsec_nanos() > 0);
        let options = RestartContainerOptionsBuilder::new().t(i32::try_from(secs).unwrap_or(i32::MAX)).build();
        self.docker()
            .restart_container(container, Some(options))
            .await
            .map_err(|e| EngineError::lookup("container", container, "restarting container", e))
    }
}

fn select_running(
    project: &str,
    service: &str,
    services: &BTreeMap<String, Vec<Target>>,
) -> Result<Vec<Target>, EngineError> {
    let Some(all) = services.get(service) else {
        return Err(EngineError::NoService {
            project: project.to_string(),
            service: service.to_string(),
            known: services.keys().cloned().collect(),
        });
    };
    let running: Vec<Target> = all.iter().filter(|t| t.running).cloned().collect();
    if running.is_empty() {
        return Err(EngineError::NotRunning {
            project: project.to_string(),
            service: service.to_string(),
            stopped: all.len(),
        });
    }
    Ok(running)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(service: &str, name: &str, running: bool) -> Target {
        Target {
            id: format!("id-{name}"),
            name: name.to_string(),
            service: service.to_string(),
            project: "demo".to_string(),
            pid: if running { 42 } else { 0 },
            node_pid: if running { 42 } else { 0 },
            running,
            attachments: vec![],
            netns_inode: None,
            netns_of: None,
            published: vec![],
            node: None,
        }
    }

    #[test]
    fn select_running_errors_are_typed() {
        let mut services = BTreeMap::new();
        services.insert("app".to_string(), vec![t("app", "demo-app-1", true), t("app", "demo-app-2", false)]);
        services.insert("db".to_string(), vec![t("db", "demo-db-1", false)]);
        let got = select_running("demo", "app", &services).unwrap();
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].name, "demo-app-1");
        match select_running("demo", "db", &services) {
            Err(EngineError::NotRunning { stopped: 1, .. }) => {}
            other => panic!("{other:?}"),
        }
        match select_running("demo", "nope", &services) {
            Err(e @ EngineError::NoService { .. }) => {
                assert!(e.to_string().contains("app, db"), "{e}");
            }
            other => panic!("{other:?}"),
        }
    }

    #[tokio::test]
    async fn missing_socket_is_unreachable() {
        let err = Engine::connect_to("unix:///nonexistent/cordon-test.sock").await.unwrap_err();
        assert!(matches!(err, EngineError::Unreachable { .. }), "{err:?}");
        assert!(err.to_string().contains("is dockerd running?"), "{err}");
        let err = Engine::connect_to("ftp://nowhere").await.unwrap_err();
        assert!(matches!(err, EngineError::Unreachable { .. }), "{err:?}");
    }

    #[tokio::test]
    async fn an_engine_that_never_answers_is_given_up_on() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        // Accepts, then holds the connection without a byte in answer.
        std::thread::spawn(move || {
            let connection = listener.accept();
            std::thread::sleep(Duration::from_secs(3));
            drop(connection);
        });
        let started = std::time::Instant::now();
        let host = format!("tcp://admin:hunter2-pw@127.0.0.1:{port}");
        let err = Engine::connect_to_within(&host, Duration::from_millis(500)).await.unwrap_err();
        assert!(started.elapsed() < Duration::from_secs(2), "{:?}", started.elapsed());
        let text = err.to_string();
        assert!(text.contains("no answer within 0.5s"), "{text}");
        assert!(text.contains(&format!("tcp://***@127.0.0.1:{port}")), "{text}");
        assert!(!text.contains("hunter2") && !text.contains("admin"), "{text}");
    }

    #[test]
    fn userinfo_is_masked_in_error_text() {
        let host = "tcp://u:secret-pw@10.1.2.3:2375";
        assert_eq!(
            mask_host_in(host, "error connecting to tcp://u:secret-pw@10.1.2.3:2375 (u:secret-pw@10.1.2.3)"),
            "error connecting to tcp://***@10.1.2.3:2375 (***@10.1.2.3)"
        );
        assert_eq!(mask_host_in("unix:///x.sock", "a b"), "a b");
    }

    #[test]
    fn unreachable_says_what_to_do() {
        let e =
            EngineError::Unreachable { endpoint: "unix:///var/run/docker.sock".into(), detail: "No such file".into() };
        let text = e.to_string();
        assert!(text.contains("is dockerd running?"), "{text}");
        assert!(text.contains("docker group"), "{text}");
    }
}
