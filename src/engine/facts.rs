//! What cordon reads from the engine, as plain data. Nothing here talks to Docker; the
//! conversions from the engine's answers are pure functions so they can be tested
//! without a daemon.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::str::FromStr;

use serde::Serialize;

/// A running (or stopped) container the engine resolved for a scenario entity.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Target {
    pub id: String,
    /// The container name without Docker's leading `/`.
    pub name: String,
    /// `com.docker.compose.service` (compose) or `com.docker.swarm.service.name` (swarm).
    pub service: String,
    /// `com.docker.compose.project` (compose) or `com.docker.stack.namespace` (swarm).
    pub project: String,
    /// The container's init process as this host sees it; 0 when it is not running, or
    /// when it runs on another node (that engine's pid means nothing here).
    pub pid: u32,
    /// The same process as its own node's host sees it (the engine's `State.Pid` there):
    /// what a carrier on that node enters. Equal to `pid` for a container of this node.
    pub node_pid: u32,
    pub running: bool,
    /// One per network the container is attached to, sorted by network name. For a
    /// container that shares another's namespace (`network_mode: container:<id>` or
    /// `service:<name>`), discovery fills in that container's attachments.
    pub attachments: Vec<Attachment>,
    /// The inode of `/proc/<pid>/ns/net` when the container was inspected: a probe enters
    /// this namespace or none (see [`crate::netns::pool`]).
    pub netns_inode: Option<u64>,
    /// `HostConfig.NetworkMode` is `container:<id>`: the id whose namespace it shares.
    pub netns_of: Option<String>,
    /// Ports the engine publishes on the host for this container.
    pub published: Vec<PublishedPort>,
    /// The swarm node the container runs on; `None` for a local engine.
    pub node: Option<String>,
}

impl Target {
    pub fn attachment(&self, network: &str) -> Option<&Attachment> {
        self.attachments.iter().find(|a| a.network == network || a.network_id == network)
    }

    /// Names the engine's DNS answers for this container (its name, then every alias):
    /// a resolver that answers none of them is not working, whatever it says of others.
    pub fn dns_names(&self) -> Vec<String> {
        let mut out = vec![self.name.clone()];
        for alias in self.attachments.iter().flat_map(|a| &a.aliases) {
            if !out.contains(alias) {
                out.push(alias.clone());
            }
        }
        out
    }

    /// Every address the engine reports for this container, on any network.
    pub fn addresses(&self) -> Vec<IpAddr> {
        let mut out = Vec::new();
        for a in &self.attachments {
            out.extend(a.ipv4.map(IpAddr::V4));
            out.extend(a.ipv6.map(IpAddr::V6));
        }
        out
    }
}

/// One network endpoint of a container.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Attachment {
    /// The network's name (the key of `NetworkSettings.Networks`).
    pub network: String,
    pub network_id: String,
    pub ipv4: Option<Ipv4Addr>,
    pub ipv6: Option<Ipv6Addr>,
    /// `Aliases` as the engine reports them. API 1.41 has no `DNSNames`; on 20.10 the
    /// aliases hold the compose service name and the short container id, the names the
    /// embedded DNS answers for on this network (besides the container name).
    pub aliases: Vec<String>,
}

/// An IPv4 or IPv6 CIDR block.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct Subnet {
    pub addr: IpAddr,
    pub prefix: u8,
}

impl Subnet {
    /// `prefix` is clamped to the family's width.
    pub fn new(addr: IpAddr, prefix: u8) -> Self {
        let max = if addr.is_ipv4() { 32 } else { 128 };
        Self { addr, prefix: prefix.min(max) }
    }

    /// True when `ip` is of the same family and its first `prefix` bits equal the
    /// subnet's. Host bits set in `addr` (e.g. `10.0.0.5/24`) are ignored.
    pub fn contains(&self, ip: IpAddr) -> bool {
        match (self.addr, ip) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => {
                let mask = if self.prefix == 0 { 0 } else { u32::MAX << (32 - u32::from(self.prefix)) };
                u32::from(net) & mask == u32::from(ip) & mask
            }
            (IpAddr::V6(net), IpAddr::V6(ip)) => {
                let mask = if self.prefix == 0 { 0 } else { u128::MAX << (128 - u32::from(self.prefix)) };
                u128::from(net) & mask == u128::from(ip) & mask
            }
            _ => false,
        }
    }
}

impl fmt::Display for Subnet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.addr, self.prefix)
    }
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("not a CIDR block: {0:?} (expected e.g. 10.233.1.0/24)")]
pub struct SubnetParseError(pub String);

impl FromStr for Subnet {
    type Err = SubnetParseError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = || SubnetParseError(s.to_string());
        let (addr, prefix) = s.trim().split_once('/').ok_or_else(err)?;
        let addr: IpAddr = addr.parse().map_err(|_| err())?;
        let prefix: u8 = prefix.parse().map_err(|_| err())?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        if prefix > max {
            return Err(err());
        }
        Ok(Self { addr, prefix })
    }
}

/// What `network inspect` says about one network.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct NetworkFacts {
    pub name: String,
    pub id: String,
    pub driver: String,
    /// `swarm` or `local`.
    pub scope: String,
    pub internal: bool,
    /// IPv4 and IPv6 subnets from the network's IPAM config, in engine order.
    pub subnets: Vec<Subnet>,
    /// The gateways of those subnets (the host's address on a bridge network).
    pub gateways: Vec<IpAddr>,
    /// Every container the engine attached to this network, project or not.
    pub endpoints: Vec<NetworkEndpoint>,
}

/// One container's endpoint on a network, as `network inspect` lists it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct NetworkEndpoint {
    pub container_id: String,
    pub name: String,
    pub ipv4: Option<Ipv4Addr>,
    pub ipv6: Option<Ipv6Addr>,
}

impl NetworkFacts {
    pub fn contains(&self, ip: IpAddr) -> bool {
        self.subnets.iter().any(|s| s.contains(ip))
    }
}

/// A mount or bind of a container.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct MountFact {
    /// `bind`, `volume`, `tmpfs`, `npipe`, ... as the engine reports it.
    pub kind: String,
    /// Host path for a bind, volume name or path for a volume; empty for tmpfs.
    pub source: String,
    pub destination: String,
    pub read_only: bool,
}

/// A container port published on the host.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct PublishedPort {
    /// e.g. `8080/tcp`.
    pub container_port: String,
    /// Empty when the engine did not say (binds every address).
    pub host_ip: String,
    pub host_port: String,
}

/// Security-relevant configuration of a container. Pure data: judging it is the
/// hardening check's job.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct HardeningFacts {
    /// `Config.User` as configured; empty means the image default, which for most
    /// images is root.
    pub user: String,
    pub read_only_rootfs: bool,
    pub cap_drop: Vec<String>,
    pub cap_add: Vec<String>,
    /// `HostConfig.SecurityOpt` verbatim.
    pub security_opt: Vec<String>,
    /// `no-new-privileges` or `no-new-privileges:true` (or `=true`) is in `SecurityOpt`.
    pub no_new_privileges: bool,
    pub privileged: bool,
    /// `HostConfig.NetworkMode`: `bridge`, `host`, `none`, `container:<id>`, a network name.
    pub network_mode: String,
    /// `HostConfig.PidMode`: empty (own namespace), `host`, `container:<id>`.
    pub pid_mode: String,
    pub mounts: Vec<MountFact>,
    /// Bytes; `None` when unlimited (0).
    pub memory_limit: Option<i64>,
    pub cpu: CpuLimit,
    /// `None` when unlimited (0 or -1).
    pub pids_limit: Option<i64>,
    pub published_ports: Vec<PublishedPort>,
    /// The image it runs.
    pub image: RunningImage,
}

/// The image a container runs, as its engine knows it.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct RunningImage {
    /// `Config.Image`: the reference the container was created from (a tag can have moved
    /// since).
    pub reference: String,
    /// `Image`: the id of the image it runs, `sha256:` and the digest of the image's
    /// configuration (of its manifest, on an engine that stores images in containerd).
    pub id: String,
    /// The image's `RepoDigests` (`name@sha256:…`): the manifest digests registries serve
    /// it under. Empty for an image built on this host and never pushed or pulled, or one
    /// removed from the engine while the container runs.
    pub repo_digests: Vec<String>,
    /// On an engine that stores images in containerd: the digest of the platform's own
    /// manifest the container was created from (`ImageManifestDescriptor`), and of the
    /// image's index (`Descriptor`): a pin may name either.
    pub manifests: Vec<String>,
    /// Why the image could not be inspected (its repository digests are then unknown).
    pub inspect_error: Option<String>,
}

impl RunningImage {
    /// Every digest that names this image: its id, its repository digests, its manifests'
    /// (hex).
    pub fn digests(&self) -> Vec<String> {
        let id = self.id.strip_prefix("sha256:").map(str::to_string);
        let repo = self.repo_digests.iter().filter_map(|d| d.rsplit_once("@sha256:").map(|(_, h)| h.to_string()));
        let manifests = self.manifests.iter().filter_map(|d| d.strip_prefix("sha256:").map(str::to_string));
        id.into_iter().chain(repo).chain(manifests).map(|h| h.to_ascii_lowercase()).collect()
    }
}

/// A CPU limit as the engine stores it: compose `cpus:` sets `NanoCpus`,
/// `cpu_quota`/`cpu_period` set the CFS pair.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct CpuLimit {
    pub nano_cpus: Option<i64>,
    pub cpu_quota: Option<i64>,
    pub cpu_period: Option<i64>,
}

impl CpuLimit {
    /// The limit in CPUs, if any is set (`NanoCpus` first, else quota / period with the
    /// kernel's default period of 100 ms).
    pub fn cpus(&self) -> Option<f64> {
        if let Some(n) = self.nano_cpus.filter(|n| *n > 0) {
            return Some(n as f64 / 1e9);
        }
        let quota = self.cpu_quota.filter(|q| *q > 0)?;
        let period = self.cpu_period.filter(|p| *p > 0).unwrap_or(100_000);
        Some(quota as f64 / period as f64)
    }

    pub fn is_set(&self) -> bool {
        self.cpus().is_some()
    }
}

impl HardeningFacts {
    /// The mounts whose source is a bind from the host.
    pub fn binds(&self) -> impl Iterator<Item = &MountFact> {
        self.mounts.iter().filter(|m| m.kind == "bind")
    }
}

/// `no-new-privileges` in any of the spellings Docker accepts.
pub(crate) fn has_no_new_privileges(security_opt: &[String]) -> bool {
    security_opt.iter().any(|o| {
        let o = o.trim();
        o == "no-new-privileges"
            || o.strip_prefix("no-new-privileges")
                .and_then(|rest| rest.strip_prefix(':').or_else(|| rest.strip_prefix('=')))
                .is_some_and(|v| v.eq_ignore_ascii_case("true"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(text: &str) -> Subnet {
        text.parse().unwrap()
    }

    #[test]
    fn subnet_contains_v4() {
        let net = s("10.233.7.0/24");
        assert!(net.contains("10.233.7.0".parse().unwrap()));
        assert!(net.contains("10.233.7.255".parse().unwrap()));
        assert!(!net.contains("10.233.8.1".parse().unwrap()));
        assert!(!net.contains("::1".parse().unwrap()));
        assert!(s("10.233.7.9/24").contains("10.233.7.200".parse().unwrap()), "host bits are ignored");
        assert!(s("0.0.0.0/0").contains("192.0.2.1".parse().unwrap()));
        assert!(s("10.0.0.1/32").contains("10.0.0.1".parse().unwrap()));
        assert!(!s("10.0.0.1/32").contains("10.0.0.2".parse().unwrap()));
        assert!(s("172.16.0.0/12").contains("172.31.255.1".parse().unwrap()));
        assert!(!s("172.16.0.0/12").contains("172.32.0.1".parse().unwrap()));
    }

    #[test]
    fn subnet_contains_v6() {
        let net = s("fd00:cafe::/64");
        assert!(net.contains("fd00:cafe::42".parse().unwrap()));
        assert!(!net.contains("fd00:cafe:0:1::42".parse().unwrap()));
        assert!(!net.contains("10.0.0.1".parse().unwrap()));
        assert!(s("::/0").contains("2001:db8::1".parse().unwrap()));
        assert!(s("fd00::1/128").contains("fd00::1".parse().unwrap()));
    }

    #[test]
    fn subnet_parse_rejects_garbage() {
        assert!("10.0.0.0".parse::<Subnet>().is_err());
        assert!("10.0.0.0/33".parse::<Subnet>().is_err());
        assert!("nope/8".parse::<Subnet>().is_err());
        assert_eq!(s(" 10.0.0.0/8 ").to_string(), "10.0.0.0/8");
    }

    #[test]
    fn no_new_privileges_spellings() {
        let v = |x: &[&str]| has_no_new_privileges(&x.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        assert!(v(&["no-new-privileges"]));
        assert!(v(&["no-new-privileges:true"]));
        assert!(v(&["seccomp=unconfined", "no-new-privileges=true"]));
        assert!(!v(&["no-new-privileges:false"]));
        assert!(!v(&[]));
    }

    #[test]
    fn cpu_limit() {
        assert_eq!(CpuLimit { nano_cpus: Some(500_000_000), ..Default::default() }.cpus(), Some(0.5));
        assert_eq!(
            CpuLimit { cpu_quota: Some(50_000), cpu_period: Some(100_000), ..Default::default() }.cpus(),
            Some(0.5)
        );
        assert_eq!(CpuLimit { cpu_quota: Some(25_000), ..Default::default() }.cpus(), Some(0.25));
        assert_eq!(CpuLimit { nano_cpus: Some(0), cpu_quota: Some(0), cpu_period: Some(0) }.cpus(), None);
    }
}
