//! Pure conversions from bollard's inspect models to cordon's facts.

use std::collections::{BTreeSet, HashMap};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use bollard::models::{ContainerInspectResponse, NetworkInspect, PortBinding};

use super::facts::{
    Attachment, CpuLimit, HardeningFacts, MountFact, NetworkEndpoint, NetworkFacts, PublishedPort, RunningImage,
    Subnet, Target, has_no_new_privileges,
};
use super::{COMPOSE_PROJECT_LABEL, COMPOSE_SERVICE_LABEL};

const STACK_NAMESPACE_LABEL: &str = "com.docker.stack.namespace";
const SWARM_SERVICE_LABEL: &str = "com.docker.swarm.service.name";

pub(super) fn target(c: &ContainerInspectResponse) -> Target {
    let empty = HashMap::new();
    let labels = c.config.as_ref().and_then(|cfg| cfg.labels.as_ref()).unwrap_or(&empty);
    let label = |keys: &[&str]| keys.iter().find_map(|k| labels.get(*k)).cloned().unwrap_or_default();
    let state = c.state.as_ref();
    let running = state.and_then(|s| s.running).unwrap_or(false);
    let pid = if running { state.and_then(|s| s.pid).and_then(|p| u32::try_from(p).ok()).unwrap_or(0) } else { 0 };
    let mut attachments: Vec<Attachment> = c
        .network_settings
        .as_ref()
        .and_then(|n| n.networks.as_ref())
        .map(|nets| {
            nets.iter()
                .map(|(name, ep)| Attachment {
                    network: name.clone(),
                    network_id: ep.network_id.clone().unwrap_or_default(),
                    ipv4: ep.ip_address.as_deref().and_then(|s| s.parse::<Ipv4Addr>().ok()),
                    ipv6: ep.global_ipv6_address.as_deref().and_then(|s| s.parse::<Ipv6Addr>().ok()),
                    aliases: ep.aliases.clone().unwrap_or_default(),
                })
                .collect()
        })
        .unwrap_or_default();
    attachments.sort_by(|a, b| a.network.cmp(&b.network));
    let network_mode = c.host_config.as_ref().and_then(|h| h.network_mode.clone()).unwrap_or_default();
    Target {
        id: c.id.clone().unwrap_or_default(),
        name: c.name.as_deref().unwrap_or_default().trim_start_matches('/').to_string(),
        service: label(&[COMPOSE_SERVICE_LABEL, SWARM_SERVICE_LABEL]),
        project: label(&[COMPOSE_PROJECT_LABEL, STACK_NAMESPACE_LABEL]),
        pid,
        node_pid: pid,
        running,
        attachments,
        netns_inode: None,
        netns_of: network_mode.strip_prefix("container:").map(str::to_string),
        published: published_ports(c),
        node: None,
    }
}

/// Every host port the engine publishes for the container: the live map where the
/// container runs, the configured bindings where it does not (yet).
pub(super) fn published_ports(c: &ContainerInspectResponse) -> Vec<PublishedPort> {
    let mut ports: BTreeSet<PublishedPort> = BTreeSet::new();
    let mut add_ports = |map: &HashMap<String, Option<Vec<PortBinding>>>| {
        for (port, bindings) in map {
            for b in bindings.iter().flatten() {
                ports.insert(PublishedPort {
                    container_port: port.clone(),
                    host_ip: b.host_ip.clone().unwrap_or_default(),
                    host_port: b.host_port.clone().unwrap_or_default(),
                });
            }
        }
    };
    if let Some(map) = c.network_settings.as_ref().and_then(|n| n.ports.as_ref()) {
        add_ports(map);
    }
    if let Some(map) = c.host_config.as_ref().and_then(|h| h.port_bindings.as_ref()) {
        add_ports(map);
    }
    // The live map names the chosen host port where the configured one left it empty.
    let live: BTreeSet<String> =
        ports.iter().filter(|p| !p.host_port.is_empty()).map(|p| p.container_port.clone()).collect();
    ports.into_iter().filter(|p| !p.host_port.is_empty() || !live.contains(&p.container_port)).collect()
}

pub(super) fn network(n: &NetworkInspect) -> Result<NetworkFacts, String> {
    let mut subnets = Vec::new();
    let mut gateways = Vec::new();
    for cfg in n.ipam.as_ref().and_then(|i| i.config.as_ref()).into_iter().flatten() {
        if let Some(text) = cfg.subnet.as_deref().filter(|s| !s.is_empty()) {
            subnets.push(text.parse::<Subnet>().map_err(|e| e.to_string())?);
        }
        if let Some(gw) = cfg.gateway.as_deref().and_then(|g| g.split('/').next()?.parse::<IpAddr>().ok()) {
            gateways.push(gw);
        }
    }
    let strip = |a: &Option<String>| a.as_deref().and_then(|t| t.split('/').next().map(str::to_string));
    let mut endpoints: Vec<NetworkEndpoint> = n
        .containers
        .iter()
        .flatten()
        .map(|(id, c)| NetworkEndpoint {
            container_id: id.clone(),
            name: c.name.clone().unwrap_or_default(),
            ipv4: strip(&c.ipv4_address).and_then(|t| t.parse().ok()),
            ipv6: strip(&c.ipv6_address).and_then(|t| t.parse().ok()),
        })
        .collect();
    endpoints.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(NetworkFacts {
        name: n.name.clone().unwrap_or_default(),
        id: n.id.clone().unwrap_or_default(),
        driver: n.driver.clone().unwrap_or_default(),
        scope: n.scope.clone().unwrap_or_default(),
        internal: n.internal.unwrap_or(false),
        subnets,
        gateways,
        endpoints,
    })
}

pub(super) fn hardening(c: &ContainerInspectResponse) -> HardeningFacts {
    let host = c.host_config.clone().unwrap_or_default();
    let security_opt = host.security_opt.clone().unwrap_or_default();

    let mut mounts: Vec<MountFact> = c
        .mounts
        .iter()
        .flatten()
        .map(|m| MountFact {
            kind: m.typ.clone().unwrap_or_default(),
            source: m.source.clone().or_else(|| m.name.clone()).unwrap_or_default(),
            destination: m.destination.clone().unwrap_or_default(),
            read_only: !m.rw.unwrap_or(true),
        })
        .collect();
    // `Binds` of a container that is not running may not be in `Mounts` yet.
    for bind in host.binds.iter().flatten() {
        if let Some(m) = parse_bind(bind)
            && !mounts.iter().any(|x| x.destination == m.destination)
        {
            mounts.push(m);
        }
    }
    // `--tmpfs` / compose `tmpfs:` mounts are not listed in `Mounts` on 20.10.
    for dest in host.tmpfs.iter().flat_map(|t| t.keys()) {
        if !mounts.iter().any(|x| &x.destination == dest) {
            mounts.push(MountFact {
                kind: "tmpfs".into(),
                source: String::new(),
                destination: dest.clone(),
                read_only: false,
            });
        }
    }

    let published_ports = published_ports(c);

    HardeningFacts {
        user: c.config.as_ref().and_then(|cfg| cfg.user.clone()).unwrap_or_default(),
        read_only_rootfs: host.readonly_rootfs.unwrap_or(false),
        cap_drop: host.cap_drop.clone().unwrap_or_default(),
        cap_add: host.cap_add.clone().unwrap_or_default(),
        no_new_privileges: has_no_new_privileges(&security_opt),
        security_opt,
        privileged: host.privileged.unwrap_or(false),
        network_mode: host.network_mode.clone().unwrap_or_default(),
        pid_mode: host.pid_mode.clone().unwrap_or_default(),
        mounts,
        memory_limit: host.memory.filter(|m| *m > 0),
        cpu: CpuLimit {
            nano_cpus: host.nano_cpus.filter(|n| *n > 0),
            cpu_quota: host.cpu_quota.filter(|q| *q > 0),
            cpu_period: host.cpu_period.filter(|p| *p > 0),
        },
        pids_limit: host.pids_limit.filter(|p| *p > 0),
        published_ports,
        // Its repository digests are the image's, read by the caller.
        image: RunningImage {
            reference: c.config.as_ref().and_then(|cfg| cfg.image.clone()).unwrap_or_default(),
            id: c.image.clone().unwrap_or_default(),
            repo_digests: Vec::new(),
            manifests: c.image_manifest_descriptor.iter().filter_map(|d| d.digest.clone()).collect(),
            inspect_error: None,
        },
    }
}

/// `src:dst[:opts]` from `HostConfig.Binds`.
fn parse_bind(text: &str) -> Option<MountFact> {
    let mut parts = text.splitn(3, ':');
    let source = parts.next()?.to_string();
    let destination = parts.next()?.to_string();
    let opts = parts.next().unwrap_or("");
    let kind = if source.starts_with('/') { "bind" } else { "volume" };
    Some(MountFact { kind: kind.into(), source, destination, read_only: opts.split(',').any(|o| o == "ro") })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inspect(json: serde_json::Value) -> ContainerInspectResponse {
        serde_json::from_value(json).unwrap()
    }

    /// Trimmed from a real Docker 20.10 (API 1.41) inspect of a compose container.
    fn sample() -> ContainerInspectResponse {
        inspect(serde_json::json!({
            "Id": "abc123",
            "Name": "/demo_provider_1",
            "State": {"Status": "running", "Running": true, "Pid": 4242},
            "Config": {
                "User": "10001:10001",
                "Labels": {"com.docker.compose.project": "demo", "com.docker.compose.service": "provider"},
                "ExposedPorts": {"8080/tcp": {}}
            },
            "HostConfig": {
                "ReadonlyRootfs": true, "CapDrop": ["ALL"], "CapAdd": null,
                "SecurityOpt": ["no-new-privileges:true"], "Privileged": false,
                "NetworkMode": "demo_internal", "PidMode": "",
                "Binds": ["/var/run/docker.sock:/var/run/docker.sock:ro"],
                "Tmpfs": {"/tmp": "size=1m"},
                "Memory": 134217728, "NanoCpus": 500000000, "CpuQuota": 0, "CpuPeriod": 0,
                "PidsLimit": 64,
                "PortBindings": {"8080/tcp": [{"HostIp": "", "HostPort": ""}]}
            },
            "Mounts": [{"Type": "volume", "Name": "data", "Source": "/var/lib/docker/volumes/data/_data",
                         "Destination": "/data", "RW": true}],
            "NetworkSettings": {
                "Ports": {"8080/tcp": [{"HostIp": "0.0.0.0", "HostPort": "49153"}], "9090/tcp": null},
                "Networks": {
                    "demo_internal": {"NetworkID": "n1", "IPAddress": "10.233.9.2", "GlobalIPv6Address": "",
                                      "Aliases": ["provider", "abc123"]},
                    "demo_edge": {"NetworkID": "n2", "IPAddress": "10.233.10.5", "GlobalIPv6Address": "fd00::5",
                                  "Aliases": null}
                }
            }
        }))
    }

    #[test]
    fn target_from_inspect() {
        let t = target(&sample());
        assert_eq!(t.name, "demo_provider_1");
        assert_eq!((t.project.as_str(), t.service.as_str()), ("demo", "provider"));
        assert_eq!(t.pid, 4242);
        assert!(t.running);
        assert_eq!(t.attachments.len(), 2);
        assert_eq!(t.attachments[0].network, "demo_edge");
        assert_eq!(t.attachments[0].ipv6, Some("fd00::5".parse().unwrap()));
        assert_eq!(t.attachments[1].ipv4, Some("10.233.9.2".parse().unwrap()));
        assert_eq!(t.attachments[1].ipv6, None);
        assert_eq!(t.attachments[1].aliases, vec!["provider", "abc123"]);
    }

    #[test]
    fn stopped_target_has_no_pid() {
        let t = target(&inspect(serde_json::json!({
            "Id": "x", "Name": "/x", "State": {"Running": false, "Pid": 0}
        })));
        assert!(!t.running);
        assert_eq!(t.pid, 0);
        assert!(t.attachments.is_empty());
    }

    #[test]
    fn hardening_from_inspect() {
        let h = hardening(&sample());
        assert_eq!(h.user, "10001:10001");
        assert!(h.read_only_rootfs && h.no_new_privileges && !h.privileged);
        assert_eq!(h.cap_drop, vec!["ALL"]);
        assert!(h.cap_add.is_empty());
        assert_eq!(h.memory_limit, Some(134217728));
        assert_eq!(h.cpu.cpus(), Some(0.5));
        assert_eq!(h.pids_limit, Some(64));
        assert_eq!(h.network_mode, "demo_internal");
        let binds: Vec<_> = h.binds().collect();
        assert_eq!(binds.len(), 1);
        assert_eq!(binds[0].source, "/var/run/docker.sock");
        assert!(binds[0].read_only);
        assert!(h.mounts.iter().any(|m| m.kind == "tmpfs" && m.destination == "/tmp"));
        assert!(h.mounts.iter().any(|m| m.kind == "volume" && m.destination == "/data"));
        assert_eq!(
            h.published_ports,
            vec![PublishedPort {
                container_port: "8080/tcp".into(),
                host_ip: "0.0.0.0".into(),
                host_port: "49153".into()
            }]
        );
    }

    #[test]
    fn network_subnets() {
        let n: NetworkInspect = serde_json::from_value(serde_json::json!({
            "Name": "demo_internal", "Id": "n1", "Driver": "bridge", "Scope": "local", "Internal": false,
            "IPAM": {"Driver": "default", "Config": [{"Subnet": "10.233.9.0/24", "Gateway": "10.233.9.1"},
                                                     {"Subnet": "fd00:9::/64"}]}
        }))
        .unwrap();
        let f = network(&n).unwrap();
        assert_eq!(f.subnets.len(), 2);
        assert_eq!(f.gateways, vec!["10.233.9.1".parse::<IpAddr>().unwrap()]);
        assert!(f.contains("10.233.9.77".parse().unwrap()));
        assert!(f.contains("fd00:9::1".parse().unwrap()));
        assert!(!f.contains("10.233.10.1".parse().unwrap()));
    }
}
