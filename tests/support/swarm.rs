//! Swarm stacks for the end-to-end tests: the reference stack deployed with
//! docker/swarm/deploy.sh under a unique name and subnet block, removed on every path;
//! cordon's static build for the carrier image; a second Docker engine in its own network
//! namespace, joined to the swarm as a worker.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::stack::{fixture_image, images, random_token, repo};

/// All swarm stacks of the tests live in 10.171.0.0/16, one /20-ish block each.
pub const SUBNET: &str = "10.171";

pub struct Deployed {
    pub stack: String,
    pub env: Vec<(String, String)>,
}

impl Deployed {
    /// Deploys the reference stack (plus overrides) as `cordon-sw-<name>` in block `block`.
    pub fn up(name: &str, block: u8, overrides: &[PathBuf]) -> Deployed {
        Self::up_with(name, block, overrides, &[])
    }

    /// [`Deployed::up`] with more environment for deploy.sh (e.g. `CORDON_DNS_ENGINE`).
    pub fn up_with(name: &str, block: u8, overrides: &[PathBuf], extra: &[(&str, &str)]) -> Deployed {
        images();
        let mut env = vec![
            ("CORDON_SUBNET".to_string(), SUBNET.to_string()),
            ("CORDON_BLOCK".to_string(), block.to_string()),
            ("CORDON_FIXTURE_IMAGE".to_string(), fixture_image()),
            super::stack::fixture_digest_env(),
            ("CORDON_FIXTURE_REBUILT_IMAGE".to_string(), super::stack::rebuilt_image()),
            ("NATIVE_TOKEN".to_string(), random_token()),
            ("LEGACY_TOKEN".to_string(), random_token()),
            ("MODERN_TOKEN".to_string(), random_token()),
            ("GITEA_TOKEN".to_string(), random_token()),
            ("WIKI_TOKEN".to_string(), random_token()),
            ("NATIVE_TOKEN_OLD".to_string(), random_token()),
            ("NATIVE_N8N_TOKEN".to_string(), random_token()),
        ];
        env.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        let deployed = Deployed { stack: format!("cordon-sw-{name}"), env };
        // A run killed before its Drop left this stack behind: start clean.
        let _ = deployed.deploy("down", &[]);
        let out = deployed.deploy("up", overrides);
        assert!(out.status.success(), "deploying {} failed:\n{}", deployed.stack, String::from_utf8_lossy(&out.stderr));
        deployed.converged(Duration::from_secs(180));
        deployed
    }

    /// Waits (at most `limit`) until every service of the stack runs all its replicas:
    /// cordon's deadline is for its checks, and a busy engine (several stacks deploying
    /// at once on two cores) can take longer than that to start a stack. Past the limit
    /// the run goes on, and cordon says what had not converged.
    fn converged(&self, limit: Duration) {
        let started = Instant::now();
        let label = format!("label=com.docker.stack.namespace={}", self.stack);
        while started.elapsed() < limit {
            let out = Command::new("docker")
                .args(["service", "ls", "--filter", &label, "--format", "{{.Replicas}}"])
                .output()
                .expect("docker");
            let text = String::from_utf8_lossy(&out.stdout);
            let all_running = out.status.success()
                && !text.trim().is_empty()
                && text.lines().all(|l| {
                    let counts = l.split_whitespace().next().unwrap_or_default();
                    counts.split_once('/').is_some_and(|(running, wanted)| running == wanted)
                });
            if all_running {
                return;
            }
            std::thread::sleep(Duration::from_secs(1));
        }
        eprintln!("{}: not every replica runs after {:.0}s; cordon runs anyway", self.stack, limit.as_secs_f64());
    }

    fn deploy(&self, cmd: &str, overrides: &[PathBuf]) -> std::process::Output {
        Command::new("bash")
            .arg(repo().join("docker/swarm/deploy.sh"))
            .args([cmd, &self.stack])
            .args(overrides)
            .envs(self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .output()
            .expect("bash")
    }

    /// Runs `cordon swarm` against this stack; exit code, stdout, stderr, JSON report, wall time.
    pub fn cordon(&self, scenario: &Path, suite: &Path, results: &Path, env: &[(&str, &str)]) -> Run {
        let started = Instant::now();
        let out = Command::new(env!("CARGO_BIN_EXE_cordon"))
            .args(["swarm", "--stack", &self.stack, "--scenario"])
            .arg(scenario)
            .arg("--suite")
            .arg(suite)
            .arg("--results")
            .arg(results)
            .envs(self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .envs(env.iter().copied())
            .output()
            .unwrap();
        let report = std::fs::read_to_string(results.join("report.json"))
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or(Value::Null);
        Run {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
            report,
            wall: started.elapsed(),
        }
    }
}

impl Drop for Deployed {
    fn drop(&mut self) {
        let out = self.deploy("down", &[]);
        if !out.status.success() {
            eprintln!("removing stack {} left something behind:\n{}", self.stack, String::from_utf8_lossy(&out.stderr));
        }
    }
}

pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
    pub report: Value,
    pub wall: Duration,
}

impl Run {
    /// (name, verdict, reason, evidence joined) of every check.
    pub fn results(&self) -> Vec<(String, String, String, String)> {
        self.report["report"]["results"]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .iter()
            .map(|r| {
                let evidence: Vec<&str> =
                    r["evidence"].as_array().map(|a| a.iter().filter_map(Value::as_str).collect()).unwrap_or_default();
                (
                    r["name"].as_str().unwrap_or("").to_string(),
                    r["verdict"].as_str().unwrap_or("").to_string(),
                    r["reason"].as_str().unwrap_or("").to_string(),
                    evidence.join("\n"),
                )
            })
            .collect()
    }
}

/// The static cordon the carriers run and the image test packs, unoptimised
/// (docker/static-binary.sh): what it does is tested, not how fast, and a release build
/// from clean costs the machine 270 s of both cores in the middle of the other tests.
pub const STATIC_PROFILE: &str = "dev";

/// cordon built static (the carrier image and cordon's own image are built from it), once
/// per test binary, by the script the image build uses: where cargo says it put it.
pub fn static_cordon() -> PathBuf {
    static BUILT: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let built = BUILT.get_or_init(|| {
        let out = Command::new("bash")
            .arg(repo().join("docker/build-cordon-image.sh"))
            .arg("--print-binary")
            .env("CORDON_STATIC_PROFILE", STATIC_PROFILE)
            .output()
            .map_err(|e| e.to_string())?;
        if !out.status.success() {
            return Err(String::from_utf8_lossy(&out.stderr).into_owned());
        }
        let path = String::from_utf8_lossy(&out.stdout).trim().to_string();
        if path.is_empty() { Err("the script printed no path".into()) } else { Ok(PathBuf::from(path)) }
    });
    built.clone().unwrap_or_else(|e| panic!("building the static cordon failed:\n{e}"))
}

/// A suite file like suites/swarm.yaml with `engines:` set, in `dir`.
pub fn suite_with_engines(dir: &Path, engines: &[(&str, &str)]) -> PathBuf {
    let base = std::fs::read_to_string(repo().join("suites/swarm.yaml")).unwrap();
    let map: Vec<String> = engines.iter().map(|(n, u)| format!("{n:?}: {u:?}")).collect();
    let text = base.replace("engines: {}", &format!("engines: {{{}}}", map.join(", ")));
    assert_ne!(text, base, "suites/swarm.yaml has no `engines: {{}}` line to replace");
    let path = dir.join("swarm-engines.yaml");
    std::fs::write(&path, text).unwrap();
    path
}

/// What of the tests' is still on the machine: carriers, stacks' services, networks and
/// secrets, the worker's namespace, iptables rules.
pub fn leftovers() -> Vec<String> {
    let lines = |args: &[&str]| -> Vec<String> {
        let out = Command::new(args[0])
            .args(&args[1..])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default();
        out.lines().map(str::to_string).filter(|l| !l.trim().is_empty()).collect()
    };
    let mut out = Vec::new();
    out.extend(lines(&["docker", "ps", "-a", "--filter", "label=cordon.carrier", "--format", "carrier {{.Names}}"]));
    out.extend(
        lines(&["docker", "service", "ls", "--format", "service {{.Name}}"])
            .into_iter()
            .filter(|l| l.contains("cordon-sw-")),
    );
    out.extend(
        lines(&["docker", "network", "ls", "--format", "network {{.Name}}"])
            .into_iter()
            .filter(|l| l.contains("cordon-sw-")),
    );
    out.extend(
        lines(&["docker", "secret", "ls", "--format", "secret {{.Name}}"])
            .into_iter()
            .filter(|l| l.contains("cordon-sw-")),
    );
    out.extend(
        lines(&["docker", "volume", "ls", "--format", "volume {{.Name}}"])
            .into_iter()
            .filter(|l| l.contains("cordon-sw-")),
    );
    out.extend(
        lines(&["ip", "netns", "list"]).into_iter().filter(|l| l.contains(WORKER_NS)).map(|l| format!("netns {l}")),
    );
    out.extend(lines(&["iptables", "-S", "DOCKER-USER"]).into_iter().filter(|l| l.contains("cordon-swarm")));
    out
}

pub const WORKER_NS: &str = "cordon-swarm-worker";
pub const WORKER_HOSTNAME: &str = "cordon-worker";
pub const WORKER_SOCKET: &str = "/run/cordon-swarm-worker.sock";
const WORKER_ROOT: &str = "/var/lib/cordon-swarm-worker";
const WORKER_EXEC: &str = "/run/cordon-swarm-worker";

/// A second Docker engine in its own network namespace (10.170.0.2, bridge 10.170.1.0/24,
/// pools in 10.170.32.0/19), with its own data root, exec root, socket, containerd and
/// hostname, joined to this engine's swarm as a worker and labelled `cordon.node=worker`.
/// Everything is undone on drop.
pub struct Worker {
    dockerd: std::process::Child,
    node_id: String,
}

impl Worker {
    pub fn start(join_token: &str) -> Result<Worker, String> {
        Worker::cleanup();
        let sh = |script: &str| -> Result<String, String> {
            let out = Command::new("bash").args(["-c", script]).output().map_err(|e| e.to_string())?;
            if out.status.success() {
                Ok(String::from_utf8_lossy(&out.stdout).into_owned())
            } else {
                Err(format!("{script}: {}", String::from_utf8_lossy(&out.stderr)))
            }
        };
        sh(&format!(
            "set -e; ip netns add {WORKER_NS}; ip link add cw-host type veth peer name cw-node; \
             ip link set cw-node netns {WORKER_NS}; ip addr add 10.170.0.1/24 dev cw-host; ip link set cw-host up; \
             ip netns exec {WORKER_NS} ip addr add 10.170.0.2/24 dev cw-node; \
             ip netns exec {WORKER_NS} ip link set cw-node up; ip netns exec {WORKER_NS} ip link set lo up; \
             mkdir -p {WORKER_ROOT} {WORKER_EXEC}"
        ))?;
        // The manager advertises 127.0.0.1: in the worker's namespace that is its own
        // loopback, so its port 2377 is carried to the manager's (10.170.0.1).
        forward_in_worker(2377)?;
        let log = std::fs::File::create(format!("{WORKER_EXEC}.log")).map_err(|e| e.to_string())?;
        // nsenter, not `ip netns exec`: that remounts /sys, and dockerd needs the cgroups
        // under it. No default route in the namespace: the engine reaches the manager and
        // nothing else (its registry lookups fail at once instead of leaving the machine).
        let dockerd = Command::new("nsenter")
            .arg(format!("--net=/run/netns/{WORKER_NS}"))
            .args(["unshare", "--uts", "sh", "-c"])
            .arg(format!(
                "hostname {WORKER_HOSTNAME} && exec dockerd --data-root {WORKER_ROOT} --exec-root {WORKER_EXEC} \
                 -H unix://{WORKER_SOCKET} --pidfile {WORKER_EXEC}.pid --bip 10.170.1.1/24 \
                 --default-address-pool base=10.170.32.0/19,size=24 --containerd-namespace cordon-worker \
                 --containerd-plugins-namespace cordon-worker-plugins"
            ))
            .stdout(log.try_clone().map_err(|e| e.to_string())?)
            .stderr(log)
            .spawn()
            .map_err(|e| e.to_string())?;
        let mut worker = Worker { dockerd, node_id: String::new() };
        let host = format!("unix://{WORKER_SOCKET}");
        let ready = (0..60).any(|_| {
            std::thread::sleep(Duration::from_secs(1));
            Command::new("docker").args(["-H", &host, "info"]).output().is_ok_and(|o| o.status.success())
        });
        if !ready {
            return Err(format!("the second engine did not start (see {WORKER_EXEC}.log)"));
        }
        sh(&format!(
            "docker -H {host} swarm join --token {join_token} --advertise-addr 10.170.0.2 --listen-addr 10.170.0.2:2377 10.170.0.1:2377"
        ))?;
        worker.node_id = sh(&format!("docker -H {host} info --format '{{{{.Swarm.NodeID}}}}'"))?.trim().to_string();
        sh(&format!("docker node update --label-add cordon.node=worker {}", worker.node_id))?;
        sh(&format!("docker save {} | docker -H {host} load", fixture_image()))?;
        Ok(worker)
    }

    pub fn host(&self) -> String {
        format!("unix://{WORKER_SOCKET}")
    }

    /// Removes whatever an earlier run left: the engine, its namespace and veth, its state.
    pub fn cleanup() {
        let script = format!(
            "if [ -f {WORKER_EXEC}.pid ]; then p=$(cat {WORKER_EXEC}.pid); kill $p 2>/dev/null; \
               for _ in $(seq 1 20); do kill -0 $p 2>/dev/null || break; sleep 1; done; fi; \
             for n in $(docker node ls --filter name={WORKER_HOSTNAME} -q 2>/dev/null); do docker node rm --force $n; done; \
             ip netns pids {WORKER_NS} 2>/dev/null | xargs -r kill -9; ip netns del {WORKER_NS} 2>/dev/null; \
             ip link del cw-host 2>/dev/null; \
             grep -o '{WORKER_EXEC}[^ ]*' /proc/mounts | sort -r | xargs -r -n1 umount -l 2>/dev/null; \
             grep -o '{WORKER_ROOT}[^ ]*' /proc/mounts | sort -r | xargs -r -n1 umount -l 2>/dev/null; \
             rm -rf {WORKER_ROOT} {WORKER_EXEC} {WORKER_EXEC}.pid {WORKER_EXEC}.log {WORKER_SOCKET}; true"
        );
        let _ = Command::new("bash").args(["-c", &script]).output();
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        let host = self.host();
        let _ = Command::new("docker").args(["-H", &host, "swarm", "leave", "--force"]).output();
        let _ = Command::new("docker").args(["node", "rm", "--force", &self.node_id]).output();
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(self.dockerd.id() as i32),
            nix::sys::signal::Signal::SIGTERM,
        );
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if matches!(self.dockerd.try_wait(), Ok(Some(_))) {
                break;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        let _ = self.dockerd.kill();
        let _ = self.dockerd.wait();
        Worker::cleanup();
    }
}

/// Listens on 127.0.0.1:`port` inside the worker's namespace and carries every connection
/// to 10.170.0.1:`port` (the manager). The thread lives as long as the test process.
fn forward_in_worker(port: u16) -> Result<(), String> {
    let (tx, rx) = std::sync::mpsc::channel::<Result<(), String>>();
    std::thread::spawn(move || {
        let entered = std::fs::File::open(format!("/run/netns/{WORKER_NS}"))
            .map_err(|e| e.to_string())
            .and_then(|ns| nix::sched::setns(ns, nix::sched::CloneFlags::CLONE_NEWNET).map_err(|e| e.to_string()));
        let listener = match entered.and_then(|_| TcpListener::bind(("127.0.0.1", port)).map_err(|e| e.to_string())) {
            Ok(l) => l,
            Err(e) => {
                let _ = tx.send(Err(e));
                return;
            }
        };
        let _ = tx.send(Ok(()));
        for inbound in listener.incoming().flatten() {
            // Connections opened on this thread open in the worker's namespace.
            let Ok(outbound) = TcpStream::connect(("10.170.0.1", port)) else { continue };
            pipe(inbound.try_clone().unwrap(), outbound.try_clone().unwrap());
            pipe(outbound, inbound);
        }
    });
    rx.recv().map_err(|e| e.to_string())?
}

fn pipe(mut from: TcpStream, mut to: TcpStream) {
    std::thread::spawn(move || {
        let mut buf = [0u8; 16 * 1024];
        while let Ok(n) = from.read(&mut buf) {
            if n == 0 || to.write_all(&buf[..n]).is_err() {
                break;
            }
        }
        let _ = to.shutdown(std::net::Shutdown::Both);
    });
}
