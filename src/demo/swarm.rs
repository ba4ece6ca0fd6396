//! `cordon demo --swarm`: a single-node swarm (initialized only if the engine is in none,
//! and left only if the demo initialized it), the reference stack deployed with
//! `docker stack deploy` (docker/swarm/deploy.sh), suites/swarm.yaml run against it, and
//! everything removed again. [`SwarmHost`] is shared with tests/swarm_stack.rs.
//!
//! As quiet as the compose demo: image builds and `docker stack` output go to
//! results/demo.log (`--verbose` shows them), the console gets one line per stage with its
//! time, the suite's dots and failures, and the reach matrix.

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use super::{DemoArgs, LOG, Stages, step};
use crate::exit::Ending;

pub const STACK: &str = "cordon-demo";
/// The demo stack's networks: 10.172.10.0/24 … 10.172.16.0/24.
pub const SUBNET: &str = "10.172";
pub const BLOCK: &str = "1";
const DEPLOY: &str = "docker/swarm/deploy.sh";
/// Where suites/swarm.yaml writes its JSON report.
/// Where a swarm this code initializes puts `docker_gwbridge` and the ingress network.
pub const GWBRIDGE_SUBNET: &str = "10.178.0.0/24";
pub const ADDRESS_POOL: &str = "10.179.0.0/16";

/// The label of a `docker_gwbridge` cordon made (here, or in `.ci/run`, which holds one
/// swarm for the whole test run so that no test leaves it while other stacks run: a
/// Docker 20.10 engine that leaves a swarm strips the endpoints of bridge networks made
/// while it was a manager).
pub const GWBRIDGE_LABEL: &str = "cordon-test=1";

/// The engine's swarm as found, and what was changed to run stacks on it; undone on drop.
pub struct SwarmHost {
    initialized: bool,
    /// A swarm cordon made (this code or the CI run), which a test may join a worker to.
    ours: bool,
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
        let mut host = SwarmHost { initialized: false, ours: false, created_gwbridge: false, rules: vec![] };
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
                    GWBRIDGE_LABEL,
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
            host.ours = true;
        } else if state.trim() == "active" {
            let (key, value) = GWBRIDGE_LABEL.split_once('=').expect("a key=value label");
            let format = format!("{{{{index .Labels \"{key}\"}}}}");
            host.ours =
                output(Command::new("docker").args(["network", "inspect", "--format", &format, "docker_gwbridge"]))
                    .is_ok_and(|v| v.trim() == value);
        } else {
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

    /// The commands that undo what a kept demo leaves, in order: the stack, then what
    /// this host set up for it (the swarm it initialized, its DOCKER-USER rules, the
    /// gateway bridge it made), each only when it was this host's doing.
    pub fn undo_lines(&self, deploy: &str, stack: &str) -> String {
        let mut lines = vec![format!("bash {deploy} down {stack}")];
        if self.initialized {
            lines.push("docker swarm leave --force".into());
        }
        for rule in &self.rules {
            lines.push(format!("iptables -w -D {}", rule.join(" ")));
        }
        if self.created_gwbridge {
            lines.push("docker network rm docker_gwbridge".into());
        }
        lines.iter().map(|l| format!("      {l}")).collect::<Vec<_>>().join("\n")
    }

    /// This code or cordon's CI made the swarm: a test may join a worker engine to it.
    pub fn ours(&self) -> bool {
        self.ours
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

pub fn run(args: DemoArgs) -> Ending {
    if !Path::new(DEPLOY).exists() {
        eprintln!("error: {DEPLOY} not found: run `cargo run -- demo --swarm` from the repository root");
        return Ending::Usage;
    }
    let tokens: Vec<(String, String)> = super::TOKEN_VARS
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
    let mut stages = Stages::open(args.verbose);
    if !args.verbose {
        step(&format!("output of image builds and docker stack goes to {LOG} (--verbose shows it here)"));
    }
    if !stages.run(Command::new("bash").arg("docker/build-images.sh"), "images ready", "building the images failed") {
        return Ending::Infrastructure;
    }
    match super::pin_fixture_image(&mut env) {
        Ok(line) => step(&line),
        Err(e) => {
            eprintln!("error: {e}");
            return Ending::Infrastructure;
        }
    }
    let started = Instant::now();
    let host = match SwarmHost::prepare(&[&format!("{SUBNET}.0.0/16")]) {
        Ok(h) => h,
        Err(e) => {
            eprintln!("error: {e}");
            return Ending::Infrastructure;
        }
    };
    let which = if host.initialized() {
        "a single-node swarm initialized for the demo (advertising 127.0.0.1; left again at the end)"
    } else {
        "the engine's own swarm (left as found)"
    };
    step(&format!("swarm ready: {which} {:.1} s", started.elapsed().as_secs_f64()));
    let deploy = |cmd: &str| {
        let mut c = Command::new("bash");
        c.args([DEPLOY, cmd, STACK]).envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        c
    };
    if !stages.run(&mut deploy("up"), "stack deployed", "docker stack deploy failed") {
        stages.run(&mut deploy("down"), "stack removed", "removing the stack failed");
        return Ending::Infrastructure;
    }
    step(&format!(
        "reference stack `{STACK}` on {SUBNET}.{BLOCK}0.0/24 … {SUBNET}.{BLOCK}7.0/24; running suites/swarm.yaml"
    ));
    let suite_started = Instant::now();
    let suite = ["swarm", "--stack", STACK, "--scenario", "scenarios/reference.yaml", "--suite", "suites/swarm.yaml"];
    let code = super::child::run_suite(&mut stages, &suite, &args.extra, &env);
    step(&format!(
        "suite finished in {:.1} s with exit code {}; reports in results/swarm/ (report.html has the reach matrix)",
        suite_started.elapsed().as_secs_f64(),
        code.exit_code()
    ));
    if args.keep {
        step(&format!("keeping the stack; undo what the demo set up with:\n{}", host.undo_lines(DEPLOY, STACK)));
        std::mem::forget(host);
    } else {
        stages.run(&mut deploy("down"), "stack removed", "removing the stack failed");
        let initialized = host.initialized();
        let left = Instant::now();
        drop(host);
        if initialized {
            step(&format!("swarm left {:.1} s", left.elapsed().as_secs_f64()));
        }
    }
    code
}

#[cfg(test)]
mod tests {
    use super::SwarmHost;

    /// A kept demo says how to undo all it set up, and only what it set up: a swarm it
    /// found is not left, a rule it made is deleted by its own words.
    #[test]
    fn a_kept_demo_names_every_undo_it_owes() {
        let rule: Vec<String> = "DOCKER-USER -d 10.172.0.0/16 -o eth0 -j REJECT -m comment --comment cordon-swarm"
            .split(' ')
            .map(String::from)
            .collect();
        let mut host = SwarmHost { initialized: true, ours: true, created_gwbridge: false, rules: vec![rule] };
        let lines = host.undo_lines("docker/swarm/deploy.sh", "cordon-demo");
        assert_eq!(
            lines,
            "      bash docker/swarm/deploy.sh down cordon-demo\n      docker swarm leave --force\n      iptables -w -D DOCKER-USER -d 10.172.0.0/16 -o eth0 -j REJECT -m comment --comment cordon-swarm"
        );
        host.initialized = false;
        host.rules.clear();
        assert_eq!(host.undo_lines("d.sh", "s"), "      bash d.sh down s");
        // Dropping the host would undo for real: this one only describes.
        std::mem::forget(host);
    }
}
