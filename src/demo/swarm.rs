//! `cordon demo --swarm`: a single-node swarm (initialized only if the engine is in none,
//! and left only if the demo initialized it), the reference stack deployed with
//! `docker stack deploy` (docker/swarm/deploy.sh), suites/swarm.yaml run against it, and
//! everything removed again. [`SwarmHost`] is shared with tests/swarm_stack.rs.

use std::path::Path;
use std::process::Command;

use nix::sys::signal::{SigHandler, Signal, signal};

use super::{DemoArgs, status, step};
use crate::exit;

pub const STACK: &str = "cordon-demo";
/// The demo stack's networks: 10.172.10.0/24 … 10.172.16.0/24.
pub const SUBNET: &str = "10.172";
pub const BLOCK: &str = "1";
const DEPLOY: &str = "docker/swarm/deploy.sh";
/// Where a swarm this code initializes puts `docker_gwbridge` and the ingress network.
pub const GWBRIDGE_SUBNET: &str = "10.178.0.0/24";
pub const ADDRESS_POOL: &str = "10.179.0.0/16";

/// The engine's swarm as found, and what was changed to run stacks on it; undone on drop.
pub struct SwarmHost {
    initialized: bool,
    created_gwbridge: bool,
    /// DOCKER-USER rules keeping the stacks' subnets on this machine.
    rules: Vec<Vec<String>>,
}

impl SwarmHost {
    /// Makes this engine a swarm manager if it is in no swarm (advertising 127.0.0.1),
    /// and keeps packets to `subnets` (e.g. `10.171.0.0/16`) from leaving through the
    /// uplink: a task's packet to an overlay address it is not on leaves through
    /// docker_gwbridge and the default route otherwise.
    pub fn prepare(subnets: &[&str]) -> Result<SwarmHost, String> {
        let state = output(Command::new("docker").args(["info", "--format", "{{.Swarm.LocalNodeState}}"]))?;
        let mut host = SwarmHost { initialized: false, created_gwbridge: false, rules: vec![] };
        if state.trim() == "inactive" {
            let exists = Command::new("docker")
                .args(["network", "inspect", "docker_gwbridge"])
                .output()
                .is_ok_and(|o| o.status.success());
            if !exists {
                // Before init, so the bridge takes a subnet chosen here, not the engine's next pool.
                output(Command::new("docker").args([
                    "network",
                    "create",
                    "--driver",
                    "bridge",
                    "--subnet",
                    GWBRIDGE_SUBNET,
                    "--opt",
                    "com.docker.network.bridge.name=docker_gwbridge",
                    "--opt",
                    "com.docker.network.bridge.enable_icc=false",
                    "--opt",
                    "com.docker.network.bridge.enable_ip_masquerade=true",
                    "--label",
                    "cordon-test=1",
                    "docker_gwbridge",
                ]))?;
                host.created_gwbridge = true;
            }
            output(Command::new("docker").args([
                "swarm",
                "init",
                "--advertise-addr",
                "127.0.0.1",
                "--default-addr-pool",
                ADDRESS_POOL,
                "--default-addr-pool-mask-length",
                "24",
            ]))?;
            host.initialized = true;
        } else if state.trim() != "active" {
            return Err(format!("the engine's swarm state is {:?}: cordon will not touch it", state.trim()));
        }
        if let Some(uplink) = uplink() {
            for subnet in subnets {
                let rule: Vec<String> = [
                    "DOCKER-USER",
                    "-d",
                    subnet,
                    "-o",
                    &uplink,
                    "-j",
                    "REJECT",
                    "-m",
                    "comment",
                    "--comment",
                    "cordon-swarm",
                ]
                .iter()
                .map(|s| s.to_string())
                .collect();
                // -w: the engine holds the xtables lock while it rewires a stack's networks.
                let mut insert = vec!["-w".to_string(), "-I".to_string()];
                insert.extend(rule.iter().cloned());
                output(Command::new("iptables").args(&insert))?;
                host.rules.push(rule);
            }
        }
        Ok(host)
    }

    pub fn initialized(&self) -> bool {
        self.initialized
    }
}

impl Drop for SwarmHost {
    fn drop(&mut self) {
        for rule in &self.rules {
            remove_rule(rule);
        }
        if self.initialized {
            let _ = Command::new("docker").args(["swarm", "leave", "--force"]).output();
        }
        if self.created_gwbridge {
            remove_gwbridge();
        }
    }
}

/// Removes the `docker_gwbridge` this code created. The engine lets go of it a moment
/// after leaving; Docker 20.10 sometimes never does: it keeps counting endpoints of tasks
/// it already removed ("has active endpoints" with no container attached), and only a
/// restart of dockerd clears the count. That is said, not hidden.
fn remove_gwbridge() {
    let mut last = String::new();
    for _ in 0..30 {
        match Command::new("docker").args(["network", "rm", "docker_gwbridge"]).output() {
            Ok(out) if out.status.success() => return,
            Ok(out) => last = String::from_utf8_lossy(&out.stderr).trim().to_string(),
            Err(e) => last = e.to_string(),
        }
        std::thread::sleep(std::time::Duration::from_secs(1));
    }
    let attached = Command::new("docker")
        .args(["network", "inspect", "--format", "{{len .Containers}}", "docker_gwbridge"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    let why = if attached == "0" {
        "no container is attached: the engine kept stale endpoint counts from the swarm it left (a Docker 20.10 \
         bug); it goes with the next restart of dockerd, or `docker network rm docker_gwbridge` then"
    } else {
        "containers are still attached to it"
    };
    eprintln!("warning: could not remove the docker_gwbridge network created for the swarm ({last}); {why}");
}

/// Deletes `rule` from its chain, waiting for the xtables lock, until iptables says the
/// chain holds no such rule (a run killed before its drop may have left a copy); retries
/// any other failure, and says so if the rule stays.
fn remove_rule(rule: &[String]) {
    let mut delete = vec!["-w".to_string(), "-D".to_string()];
    delete.extend(rule.iter().cloned());
    let mut last = String::new();
    for _ in 0..20 {
        match Command::new("iptables").args(&delete).output() {
            Ok(out) if out.status.success() => continue,
            Ok(out) => {
                last = String::from_utf8_lossy(&out.stderr).trim().to_string();
                if ["does a matching rule exist", "Bad rule", "No chain/target/match"].iter().any(|s| last.contains(s))
                {
                    return;
                }
            }
            Err(e) => last = e.to_string(),
        }
        std::thread::sleep(std::time::Duration::from_millis(500));
    }
    eprintln!("warning: could not remove the iptables rule `{}` ({last}): remove it by hand", rule.join(" "));
}

/// The interface of the default route.
fn uplink() -> Option<String> {
    let routes = std::fs::read_to_string("/proc/net/route").ok()?;
    routes.lines().skip(1).find_map(|l| {
        let cols: Vec<&str> = l.split_whitespace().collect();
        (cols.get(1) == Some(&"00000000")).then(|| cols[0].to_string())
    })
}

fn output(cmd: &mut Command) -> Result<String, String> {
    let out = cmd.output().map_err(|e| format!("cannot run {:?}: {e}", cmd.get_program()))?;
    if !out.status.success() {
        return Err(format!("{:?} failed: {}", cmd, String::from_utf8_lossy(&out.stderr).trim()));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

pub fn run(args: DemoArgs) -> i32 {
    if !Path::new(DEPLOY).exists() {
        eprintln!("error: {DEPLOY} not found: run `cargo run -- demo --swarm` from the repository root");
        return exit::USAGE;
    }
    let tokens: Vec<(String, String)> = ["NATIVE_TOKEN", "LEGACY_TOKEN", "MODERN_TOKEN", "GITEA_TOKEN", "WIKI_TOKEN"]
        .iter()
        .map(|name| (name.to_string(), format!("demo-{}", hex::encode(rand::random::<[u8; 16]>()))))
        .collect();
    let mut env = tokens.clone();
    env.push(("CORDON_SUBNET".into(), SUBNET.into()));
    env.push(("CORDON_BLOCK".into(), BLOCK.into()));
    // The image docker/build-images.sh builds (FIXTURE_TAG), which the stack then runs.
    env.push((
        "CORDON_FIXTURE_IMAGE".into(),
        std::env::var("FIXTURE_TAG").unwrap_or_else(|_| "cordon-fixture:dev".into()),
    ));
    step("building the fixture images (docker/build-images.sh)");
    if !status(Command::new("bash").arg("docker/build-images.sh")) {
        eprintln!("error: building the images failed (see above)");
        return exit::INFRASTRUCTURE;
    }
    step("preparing a swarm (docker swarm init --advertise-addr 127.0.0.1 unless the engine is in one)");
    let host = match SwarmHost::prepare(&[&format!("{SUBNET}.0.0/16")]) {
        Ok(h) => h,
        Err(e) => {
            eprintln!("error: {e}");
            return exit::INFRASTRUCTURE;
        }
    };
    step(&format!("deploying docker/swarm/stack.yaml as stack `{STACK}` on {SUBNET}.{BLOCK}0.0/24 …"));
    let deploy = |cmd: &str| {
        Command::new("bash")
            .args([DEPLOY, cmd, STACK])
            .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .status()
            .is_ok_and(|s| s.success())
    };
    if !deploy("up") {
        eprintln!("error: docker stack deploy failed (see above)");
        deploy("down");
        return exit::INFRASTRUCTURE;
    }
    step("running suites/swarm.yaml against scenarios/reference.yaml");
    let started = std::time::Instant::now();
    let exe = std::env::current_exe().expect("path of the running cordon binary");
    let child = Command::new(exe)
        .args(["swarm", "--stack", STACK, "--scenario", "scenarios/reference.yaml", "--suite", "suites/swarm.yaml"])
        .args(&args.extra)
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .spawn();
    // Ctrl-C stops the suite (the child), not the demo: the stack must still come down.
    // SAFETY: no other thread of this process installs signal handlers.
    let previous = unsafe { signal(Signal::SIGINT, SigHandler::SigIgn) };
    let code = child
        .and_then(|mut c| c.wait())
        .map(|s| s.code().unwrap_or(exit::INFRASTRUCTURE))
        .unwrap_or(exit::INFRASTRUCTURE);
    step(&format!("suite finished in {:.1}s with exit code {code}", started.elapsed().as_secs_f64()));
    if args.keep {
        step(&format!(
            "keeping the stack; remove it with: bash {DEPLOY} down {STACK} (and `docker swarm leave --force` if the demo initialized the swarm)"
        ));
        std::mem::forget(host);
    } else {
        step("removing the stack");
        deploy("down");
        drop(host);
    }
    if let Ok(handler) = previous {
        // SAFETY: as above; restores the disposition found before.
        let _ = unsafe { signal(Signal::SIGINT, handler) };
    }
    code
}
