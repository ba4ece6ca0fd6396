//! `sidecar::<provider>::interfaces` and `::hardening`: an adapter sidecar holds its
//! provider's credential, so it sits on its declared networks only and runs locked down.

pub mod egress;
pub mod image;

use std::collections::BTreeSet;
use std::net::IpAddr;
use std::sync::Arc;

use std::rc::Rc;

use futures_util::future::BoxFuture;
use serde::{Deserialize, Serialize};

use crate::check::Spec;
use crate::check::{Check, Probe, RunContext, named};
use crate::config::Suite;
use crate::config::{Family, Mode, Scenario};
use crate::engine::{HardeningFacts, NetworkFacts, Target};
use crate::model::{Attempt, CheckName, Finding, FindingKind};
use crate::netns::{self, NsView};
use crate::topology::Topology;

pub fn plan(scenario: &Scenario) -> Vec<Arc<dyn Check>> {
    let mut checks: Vec<Arc<dyn Check>> = Vec::new();
    for provider in scenario.providers.iter().filter(|p| p.sidecar_networks.is_some() && !p.disabled) {
        let name = |aspect: &str| CheckName::of_provider(Family::Sidecar, &provider.id, Some(aspect));
        checks.push(named(name("interfaces"), InterfacesCheck { provider: provider.id.clone() }));
        checks.push(named(name("hardening"), HardeningCheck { provider: provider.id.clone() }));
    }
    checks
}

struct InterfacesCheck {
    provider: String,
}

/// What the sidecar's namespace holds: its interfaces, as the kernel lists them.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct InterfacesPlan;

impl InterfacesPlan {
    pub async fn observe(self, _view: Rc<NsView>) -> Result<Vec<netns::Interface>, String> {
        netns::interfaces().map_err(|e| e.to_string())
    }
}

impl Probe for InterfacesCheck {
    fn run<'a>(&'a self, ctx: &'a RunContext) -> BoxFuture<'a, Attempt> {
        Box::pin(async move {
            let (deployment, provider) = ctx.deployment(&self.provider);
            let declared = provider.sidecar_networks.clone().unwrap_or_default();
            let topology = deployment.topology();
            let targets = match running_replicas(&topology, &provider.service) {
                Ok(t) => t,
                Err(attempt) => return attempt,
            };
            let allow_gwbridge = ctx.suite.mode == Mode::Swarm;
            let mut findings = Vec::new();
            let mut evidence = Vec::new();
            for target in &targets {
                let from = format!("sidecar {}", provider.service);
                evidence.push(deployment.probed_by(target, &from));
                let kernel = deployment.observe(target, &from, InterfacesPlan).await;
                let lines: Vec<String> = match kernel {
                    Ok(Ok(list)) => list.iter().map(|i| i.to_string()).collect(),
                    Ok(Err(e)) => return Attempt::not_ready(e, evidence),
                    Err(attempt) => return attempt,
                };
                let (f, e) = judge_interfaces(&topology, target, &declared, &lines, allow_gwbridge);
                let prefix = if targets.len() > 1 { format!("{}: ", target.name) } else { String::new() };
                evidence.extend(e.into_iter().map(|l| format!("{prefix}{l}")));
                findings.extend(f.into_iter().map(|f| {
                    let f = f.fact("container", &target.name);
                    if targets.len() > 1 { f.prefixed("{container}: ") } else { f }
                }));
            }
            Attempt::from_findings(findings, evidence)
        })
    }
}

/// The sidecar's running replicas; not ready while it has none.
pub(crate) fn running_replicas(topology: &Topology, service: &str) -> Result<Vec<crate::engine::Target>, Attempt> {
    let targets = topology.running(service).to_vec();
    if targets.is_empty() {
        return Err(Attempt::not_ready(format!("sidecar service `{service}` has no running container"), vec![]));
    }
    Ok(targets)
}

/// Compares the kernel's interface list (lines `name addr/prefix`) with the engine's
/// attachments and the declared networks. Returns findings and evidence.
pub fn judge_interfaces(
    topology: &Topology,
    target: &Target,
    declared: &[String],
    kernel_lines: &[String],
    allow_gwbridge: bool,
) -> (Vec<Finding>, Vec<String>) {
    let mut evidence = vec![format!("declared networks: [{}]", declared.join(", "))];
    evidence.push(format!("kernel view: {}", kernel_lines.join(", ")));
    let engine_view: Vec<String> = target
        .attachments
        .iter()
        .map(|a| format!("{} {}", topology.network_key(&a.network), a.ipv4.map(|i| i.to_string()).unwrap_or_default()))
        .collect();
    evidence.push(format!("engine view: {}", engine_view.join(", ")));
    let kernel: Vec<(String, IpAddr)> = kernel_lines
        .iter()
        .filter_map(|l| {
            let (name, cidr) = l.split_once(' ')?;
            let addr: IpAddr = cidr.split('/').next()?.parse().ok()?;
            Some((name.to_string(), addr))
        })
        .filter(|(_, a)| !a.is_loopback() && !is_link_local(a))
        .collect();
    let declared_facts: Vec<(&String, Option<&NetworkFacts>)> =
        declared.iter().map(|key| (key, topology.declared_network(key))).collect();
    let gwbridge = topology.gwbridge_of(target).or(topology.networks.get(GWBRIDGE)).filter(|_| allow_gwbridge);
    if let Some(g) = gwbridge {
        let listed = g.endpoints.iter().find(|e| e.container_id == target.id).and_then(|e| e.ipv4);
        evidence.push(match listed {
            Some(a) => format!("{GWBRIDGE} ({}) lists this task's endpoint at {a}", join_subnets(g)),
            None => format!("{GWBRIDGE} ({}) lists no endpoint of this task", join_subnets(g)),
        });
    }
    let mut problems: Vec<Finding> = Vec::new();
    // Swarm's plumbing: one interface on docker_gwbridge per task, allowed once, named.
    let on_gwbridge: Vec<&(String, IpAddr)> =
        kernel.iter().filter(|(_, a)| gwbridge.is_some_and(|g| g.contains(*a))).collect();
    for (ifname, addr) in &on_gwbridge {
        evidence
            .push(format!("{ifname} {addr} is on {GWBRIDGE}: swarm's platform plumbing, allowed once in swarm mode"));
    }
    if on_gwbridge.len() > 1 {
        let list: Vec<String> = on_gwbridge.iter().map(|(i, a)| format!("{i} {a}")).collect();
        problems.push(
            Finding::new(
                FindingKind::AddressOutsideDeclared,
                "{interfaces} interfaces on {network} ({interface_addrs}): swarm gives a task one",
            )
            .fact("network", GWBRIDGE)
            .fact("interfaces", on_gwbridge.len())
            .fact("interface_addrs", list.join(", ")),
        );
    }
    problems.extend(addresses_outside(topology, &kernel, &declared_facts, gwbridge));
    problems.extend(declared_without_interface(topology, &kernel, &declared_facts));
    problems.extend(views_disagree(target, &kernel, gwbridge));
    problems.extend(undeclared_attachments(topology, target, declared, allow_gwbridge));
    problems.sort_by_key(|f| f.sentence());
    problems.dedup();
    (problems, evidence)
}

/// Every kernel address in no declared network (nor on swarm's plumbing), naming the network it is on.
fn addresses_outside(
    topology: &Topology,
    kernel: &[(String, IpAddr)],
    declared_facts: &[(&String, Option<&NetworkFacts>)],
    gwbridge: Option<&NetworkFacts>,
) -> Vec<Finding> {
    let mut out = Vec::new();
    for (ifname, addr) in kernel {
        let home = declared_facts.iter().find(|(_, f)| f.is_some_and(|f| f.contains(*addr)));
        if home.is_none() && !gwbridge.is_some_and(|g| g.contains(*addr)) {
            let f = Finding::new(
                FindingKind::AddressOutsideDeclared,
                "{interface} {addr} lies in no declared network's subnet",
            )
            .fact("interface", ifname)
            .fact("addr", addr);
            let on = topology.networks.values().find(|n| n.contains(*addr));
            out.push(match on.map(|n| n.name.as_str()) {
                None => f,
                Some(INGRESS) => f
                    .suffixed(" (it is on network {network}: a port published through the routing mesh)")
                    .fact("network", INGRESS),
                Some(GWBRIDGE) => {
                    f.suffixed(" (it is on network {network}, allowed in swarm mode only)").fact("network", GWBRIDGE)
                }
                Some(name) => f.suffixed(" (it is on network {network})").fact("network", topology.network_key(name)),
            });
        }
    }
    out
}

/// Every declared network that does not exist or has no interface in the sidecar.
fn declared_without_interface(
    topology: &Topology,
    kernel: &[(String, IpAddr)],
    declared_facts: &[(&String, Option<&NetworkFacts>)],
) -> Vec<Finding> {
    let mut out = Vec::new();
    for (key, facts) in declared_facts {
        match facts {
            None => out.push(
                Finding::new(
                    FindingKind::MissingDeclaredNetwork,
                    "declared network `{network}` does not exist in project {project}",
                )
                .fact("network", key)
                .fact("project", &topology.project),
            ),
            Some(f) if !kernel.iter().any(|(_, a)| f.contains(*a)) => out.push(
                Finding::new(
                    FindingKind::MissingDeclaredNetwork,
                    "declared network `{network}` has no interface in the sidecar",
                )
                .fact("network", key),
            ),
            Some(_) => {}
        }
    }
    out
}

/// Every address one of the kernel and the engine has and the other does not.
fn views_disagree(target: &Target, kernel: &[(String, IpAddr)], gwbridge: Option<&NetworkFacts>) -> Vec<Finding> {
    let mut out = Vec::new();
    let kernel_addrs: BTreeSet<IpAddr> = kernel.iter().map(|(_, a)| *a).collect();
    let engine_addrs: BTreeSet<IpAddr> = target.addresses().into_iter().collect();
    for missing in engine_addrs.difference(&kernel_addrs) {
        out.push(
            Finding::new(FindingKind::ViewsDisagree, "the engine reports {addr} but the kernel has no such address")
                .fact("addr", missing)
                .fact("seen_by", "engine"),
        );
    }
    for extra in kernel_addrs.difference(&engine_addrs) {
        if !gwbridge.is_some_and(|g| g.contains(*extra)) {
            out.push(
                Finding::new(
                    FindingKind::ViewsDisagree,
                    "the kernel has {addr} but the engine reports no attachment with it",
                )
                .fact("addr", extra)
                .fact("seen_by", "kernel"),
            );
        }
    }
    out
}

/// Every network the engine attached the sidecar to that it does not declare.
fn undeclared_attachments(
    topology: &Topology,
    target: &Target,
    declared: &[String],
    allow_gwbridge: bool,
) -> Vec<Finding> {
    let mut out = Vec::new();
    for att in &target.attachments {
        let key = topology.network_key(&att.network);
        let platform_plumbing = allow_gwbridge && att.network == GWBRIDGE;
        if !platform_plumbing && !declared.iter().any(|d| d == key) {
            out.push(
                Finding::new(FindingKind::UndeclaredNetwork, "attached to undeclared network `{network}`")
                    .fact("network", key),
            );
        }
    }
    out
}

fn join_subnets(n: &NetworkFacts) -> String {
    n.subnets.iter().map(|s| s.to_string()).collect::<Vec<_>>().join(", ")
}

/// The bridge swarm attaches every task on a non-internal overlay to.
pub const GWBRIDGE: &str = "docker_gwbridge";
/// The routing mesh's network: a task on it publishes a port through the mesh.
pub const INGRESS: &str = "ingress";

fn is_link_local(addr: &IpAddr) -> bool {
    match addr {
        IpAddr::V4(a) => a.is_link_local(),
        IpAddr::V6(a) => (a.segments()[0] & 0xffc0) == 0xfe80,
    }
}

struct HardeningCheck {
    provider: String,
}

impl Probe for HardeningCheck {
    fn run<'a>(&'a self, ctx: &'a RunContext) -> BoxFuture<'a, Attempt> {
        Box::pin(async move {
            let (deployment, provider) = ctx.deployment(&self.provider);
            let topology = deployment.topology();
            let targets = match running_replicas(&topology, &provider.service) {
                Ok(t) => t,
                Err(attempt) => return attempt,
            };
            let mut findings = Vec::new();
            let mut evidence = Vec::new();
            for target in &targets {
                let Some(facts) = topology.hardening.get(&target.id) else {
                    return Attempt::not_ready(format!("no hardening facts for {}", target.name), vec![]);
                };
                evidence.push(format!("{}: {}", target.name, serde_json::to_string(facts).unwrap_or_default()));
                let mut here = hardening_findings(facts);
                if deployment.mode == Mode::Swarm {
                    let why = " (a swarm service cannot set it: docker stack deploy ignores security_opt and the service API has no such field)";
                    here = here
                        .into_iter()
                        .map(|(rule, f)| if rule == "no_new_privileges" { (rule, f.suffixed(why)) } else { (rule, f) })
                        .collect();
                }
                // The configured user can name root without saying "root" ("00", a name
                // the image maps to uid 0): the kernel's answer settles it.
                match deployment.proc_facts(target).await.ok().and_then(|f| f.uid) {
                    Some(0) if !here.iter().any(|(rule, _)| *rule == "root") => {
                        here.push(("root", hardening("runs as root (its process has effective uid 0)")));
                    }
                    Some(uid) => evidence.push(format!("{}: process effective uid {uid}", target.name)),
                    None => evidence
                        .push(format!("{}: effective uid unreadable from /proc/{}/status", target.name, target.pid)),
                }
                findings.extend(
                    here.into_iter().map(|(rule, f)| {
                        f.prefixed("{container}: ").fact("container", &target.name).fact("rule", rule)
                    }),
                );
            }
            Attempt::from_findings(findings, evidence)
        })
    }
}

/// A bind that hands the engine (or the host's runtime state) to the container: the
/// socket itself, any directory above it, any other socket, or `/run` and `/var/run`.
fn is_engine_bind(source: &str, destination: &str) -> bool {
    let socket = "/var/run/docker.sock";
    let exposes = |p: &str| {
        let p = p.trim_end_matches('/');
        p.is_empty()
            || socket.starts_with(&format!("{p}/"))
            || p.ends_with(".sock")
            || ["/run", "/var/run"].iter().any(|r| p == *r || p.starts_with(&format!("{r}/")))
    };
    exposes(source) || exposes(destination)
}

fn hardening(template: &'static str) -> Finding {
    Finding::new(FindingKind::Hardening, template)
}

/// Each rule the sidecar breaks: its stable code (the `rule` fact a baseline can name)
/// and what was seen (a finding the caller adds the container to).
pub fn hardening_findings(f: &HardeningFacts) -> Vec<(&'static str, Finding)> {
    let mut out = Vec::new();
    let user = f.user.trim();
    let name = user.split(':').next().unwrap_or_default();
    if name.is_empty() || name == "root" || name.parse::<u32>() == Ok(0) {
        out.push(("root", hardening("runs as root (user {user})").fact("user", format!("{:?}", f.user))));
    }
    if !f.read_only_rootfs {
        out.push(("writable_rootfs", hardening("root filesystem is writable (read_only is not set)")));
    }
    if !f.cap_drop.iter().any(|c| c.eq_ignore_ascii_case("ALL") || c.eq_ignore_ascii_case("CAP_ALL")) {
        out.push((
            "capabilities_kept",
            hardening("capabilities are not all dropped (cap_drop: [{cap_drop}])")
                .fact("cap_drop", f.cap_drop.join(", ")),
        ));
    }
    if !f.cap_add.is_empty() {
        out.push((
            "capabilities_added",
            hardening("capabilities added: {cap_add}").fact("cap_add", f.cap_add.join(", ")),
        ));
    }
    if !f.no_new_privileges {
        out.push(("no_new_privileges", hardening("no-new-privileges is not set")));
    }
    if f.privileged {
        out.push(("privileged", hardening("runs privileged")));
    }
    if f.network_mode == "host" {
        out.push(("host_network", hardening("uses the host network namespace")));
    }
    if f.pid_mode == "host" {
        out.push(("host_pid", hardening("uses the host pid namespace")));
    }
    for m in f.binds() {
        if is_engine_bind(&m.source, &m.destination) {
            out.push((
                "engine_bind",
                hardening("mounts {source} at {destination} (docker socket or /var/run)")
                    .fact("source", &m.source)
                    .fact("destination", &m.destination),
            ));
        }
    }
    if f.memory_limit.is_none() {
        out.push(("memory_limit", hardening("no memory limit")));
    }
    if !f.cpu.is_set() {
        out.push(("cpu_limit", hardening("no CPU limit")));
    }
    if f.pids_limit.is_none() {
        out.push(("pids_limit", hardening("no PID limit")));
    }
    if !f.published_ports.is_empty() {
        let ports: Vec<String> =
            f.published_ports.iter().map(|p| format!("{} → {}:{}", p.container_port, p.host_ip, p.host_port)).collect();
        out.push((
            "published_ports",
            hardening("publishes ports on the host: {ports}").fact("ports", ports.join(", ")),
        ));
    }
    out
}

/// The family, registered once (`checks::FAMILIES`).
pub const SPEC: Spec = Spec { family: Family::Sidecar, plan: planned, explain };

fn planned(scenario: &Scenario, _: &Suite) -> Vec<Arc<dyn Check>> {
    let mut checks = plan(scenario);
    checks.extend(image::plan(scenario));
    checks.extend(egress::plan(scenario));
    checks
}

/// What a check of this family proves, and where it looks from (`cordon explain`); `None`
/// for one it does not plan.
fn explain(name: &CheckName) -> Option<(&'static str, &'static str)> {
    Some(match name.aspect.first().map(String::as_str) {
        Some("egress") => (
            "from each sidecar replica, no TCP connect succeeds to any other container of the deployment on any port it listens on, nor to a port published on the host; only its app (which must answer) and its DNS servers may",
            "each sidecar replica's own namespace",
        ),
        Some("interfaces") => (
            "every replica of the adapter sidecar sits on its declared networks only (docker_gwbridge allowed once in swarm), and the kernel's and the engine's views agree",
            "each sidecar replica's own namespace and the engine",
        ),
        Some("image") => (
            "every replica runs the image the platform pins by digest: the engine's image id or one of the image's repository digests is the pin (a tag alone proves nothing)",
            "the engine's inspect of each replica and of the image it runs",
        ),
        Some("hardening") => (
            "every replica runs non-root, read-only, with all capabilities dropped, no-new-privileges, not privileged, no host namespaces, no engine socket, with memory/CPU/PID limits and no published ports",
            "the engine's inspect of each replica, and its process's uid from /proc",
        ),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{CpuLimit, MountFact};

    fn locked_down() -> HardeningFacts {
        HardeningFacts {
            user: "65534:65534".into(),
            read_only_rootfs: true,
            cap_drop: vec!["ALL".into()],
            cap_add: vec![],
            security_opt: vec!["no-new-privileges:true".into()],
            no_new_privileges: true,
            privileged: false,
            network_mode: "cordon_net".into(),
            pid_mode: String::new(),
            mounts: vec![],
            memory_limit: Some(64 << 20),
            cpu: CpuLimit { nano_cpus: Some(500_000_000), cpu_quota: None, cpu_period: None },
            pids_limit: Some(64),
            published_ports: vec![],
            image: Default::default(),
        }
    }

    fn bind(source: &str, destination: &str) -> MountFact {
        MountFact { kind: "bind".into(), source: source.into(), destination: destination.into(), read_only: true }
    }

    #[test]
    fn a_locked_down_sidecar_has_no_findings() {
        assert!(hardening_findings(&locked_down()).is_empty());
        let mut f = locked_down();
        f.mounts.push(bind("/srv/adapter/config.json", "/config.json"));
        assert!(hardening_findings(&f).is_empty(), "an ordinary read-only bind is fine");
    }

    #[test]
    fn root_in_every_spelling_is_found() {
        for user in ["", "root", "0", "00", "0:0", "root:root"] {
            let mut f = locked_down();
            f.user = user.into();
            assert!(hardening_findings(&f).iter().any(|(_, x)| x.sentence().contains("runs as root")), "user {user:?}");
        }
    }

    #[test]
    fn engine_binds_are_found_wherever_they_land() {
        for (source, destination) in [
            ("/var/run/docker.sock", "/var/run/docker.sock"),
            ("/var/run/docker.sock", "/tmp/d.sock"),
            ("/", "/host"),
            ("/var", "/mnt/var"),
            ("/run/containerd/containerd.sock", "/c.sock"),
            ("/srv/x", "/var/run/x"),
        ] {
            let mut f = locked_down();
            f.mounts.push(bind(source, destination));
            assert!(
                hardening_findings(&f).iter().any(|(_, x)| x.sentence().contains("docker socket")),
                "{source} -> {destination}"
            );
        }
    }

    #[test]
    fn every_missing_limit_and_privilege_is_named() {
        let mut f = locked_down();
        f.cap_drop.clear();
        f.cap_add.push("NET_ADMIN".into());
        f.no_new_privileges = false;
        f.privileged = true;
        f.network_mode = "host".into();
        f.pid_mode = "host".into();
        f.memory_limit = None;
        f.cpu = CpuLimit::default();
        f.pids_limit = None;
        let findings = hardening_findings(&f).into_iter().map(|(_, x)| x.sentence()).collect::<Vec<_>>().join("; ");
        for expected in [
            "not all dropped",
            "added: NET_ADMIN",
            "no-new-privileges",
            "privileged",
            "host network",
            "host pid",
            "memory",
            "CPU",
            "PID limit",
        ] {
            assert!(findings.contains(expected), "{expected} missing from {findings}");
        }
    }
}
