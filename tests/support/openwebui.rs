//! The Open WebUI reference stack (docker/openwebui/) for end-to-end tests: a real Open
//! WebUI 0.12.4 from PyPI (tests/openwebui/setup.sh), deployed with
//! docker/openwebui/deploy.sh under a unique compose project and subnet, with random
//! secrets, re-deployed per variant, and torn down on every path.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::stack::{fixture_image, images, random_token, repo};

/// Every secret of the stack, by the variable the stack reads it from.
pub const SECRETS: [&str; 10] = [
    "NATIVE_TOKEN",
    "FILES_TOKEN",
    "WIKI_TOKEN",
    "MODEL_KEY",
    "OIDC_CLIENT_SECRET",
    "IDP_CONTROL_TOKEN",
    "OWUI_SECRET_KEY",
    "OWUI_ADMIN_PASSWORD",
    // The Keycloak-shaped identity provider's admin (docker/openwebui/broken/keycloak-shaped).
    "KC_ADMIN_PASSWORD",
    // Not a secret of the stack, but nothing may print it either.
    "NATIVE_ROTATED_TOKEN",
];

pub fn owui_dir() -> PathBuf {
    std::env::var_os("CORDON_OWUI_DIR").map(PathBuf::from).unwrap_or_else(|| repo().join(".owui"))
}

/// The Open WebUI rootfs image, tagged like the fixture image (so checkouts do not
/// overwrite each other's).
pub fn owui_image() -> String {
    let fixture = fixture_image();
    let tag = fixture.rsplit_once(':').map_or("dev", |(_, t)| t);
    format!("cordon-openwebui:{tag}")
}

fn run(what: &str, cmd: &mut Command) -> Duration {
    let started = Instant::now();
    eprintln!("openwebui stack: {what}");
    let status = cmd.stdin(Stdio::null()).status().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(status.success(), "{what} failed ({status})");
    started.elapsed()
}

pub struct OwuiStack {
    pub project: String,
    pub env: Vec<(String, String)>,
    /// Wall time of the first deploy (boot, groups, recreate).
    pub deployed_in: Duration,
    admin_token: std::cell::OnceCell<String>,
}

impl OwuiStack {
    /// Installs Open WebUI if needed (progress on stderr), builds the images, deploys the
    /// reference stack on `<subnet>.0.0/16`.
    pub fn up(name: &str, subnet: &str) -> OwuiStack {
        run(
            "tests/openwebui/setup.sh (installs Open WebUI 0.12.4 on the first run)",
            Command::new("bash").arg(repo().join("tests/openwebui/setup.sh")),
        );
        images();
        run(
            "docker/openwebui/build-image.sh",
            Command::new("bash").arg(repo().join("docker/openwebui/build-image.sh")).env("OWUI_IMAGE", owui_image()),
        );
        let mut env = vec![
            ("CORDON_SUBNET".to_string(), subnet.to_string()),
            ("CORDON_FIXTURE_IMAGE".to_string(), fixture_image()),
            ("CORDON_OWUI_IMAGE".to_string(), owui_image()),
            ("CORDON_OWUI_DIR".to_string(), owui_dir().display().to_string()),
        ];
        for var in SECRETS.iter().filter(|v| **v != "NATIVE_ROTATED_TOKEN") {
            env.push((var.to_string(), random_token()));
        }
        let project = format!("cordon-owui-{name}-{}", std::process::id());
        remove_leftovers(&format!("cordon-owui-{name}-"));
        let mut stack = OwuiStack { project, env, deployed_in: Duration::ZERO, admin_token: Default::default() };
        stack.deployed_in = stack.deploy(None);
        stack
    }

    fn script(&self, verb: &str, variant: Option<&Path>) -> Command {
        let mut cmd = Command::new("bash");
        cmd.arg(repo().join("docker/openwebui/deploy.sh")).arg(verb).arg(&self.project);
        if let Some(v) = variant {
            cmd.arg(v);
        }
        cmd.envs(self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        cmd
    }

    /// Deploys the reference stack, or a variant directory over it; returns the wall time.
    pub fn deploy(&self, variant: Option<&Path>) -> Duration {
        let what = match variant {
            Some(v) => format!("deploying {} as {}", v.display(), self.project),
            None => format!("deploying the reference stack as {}", self.project),
        };
        run(&what, &mut self.script("up", variant))
    }

    /// Runs `cordon run` with `suite`; returns exit code, stdout, stderr and the JSON report.
    pub fn cordon(&self, suite: &Path, scenario: &Path, results: &Path) -> (i32, String, String, Value) {
        let args = [
            "run".to_string(),
            "--project".into(),
            self.project.clone(),
            "--suite".into(),
            suite.display().to_string(),
            "--scenario".into(),
            scenario.display().to_string(),
            "--results".into(),
            results.display().to_string(),
        ];
        super::stack::run_cordon(&args, self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())), results)
    }

    fn webui_container(&self) -> String {
        let out = Command::new("docker")
            .args(["ps", "-q", "--filter"])
            .arg(format!("label=com.docker.compose.project={}", self.project))
            .args(["--filter", "label=com.docker.compose.service=openwebui"])
            .output()
            .expect("docker ps");
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// Users and groups in Open WebUI whose name carries cordon's ephemeral prefix.
    pub fn ephemeral_leftovers(&self) -> Vec<String> {
        const LIST: &str = r#"
import json, os, urllib.request
def call(path, token=None, body=None):
    req = urllib.request.Request("http://127.0.0.1:8080" + path, data=None if body is None else json.dumps(body).encode(), method="GET" if body is None else "POST")
    req.add_header("Content-Type", "application/json")
    if token: req.add_header("Authorization", "Bearer " + token)
    return json.loads(urllib.request.urlopen(req, timeout=30).read())
token = os.environ.get("TOKEN")
if not token:
    token = call("/api/v1/auths/signin", body={"email": "admin@cordon.test", "password": os.environ["PW"]})["token"]
    print("token", token)
for u in call("/api/v1/users/all", token)["users"]:
    if u["email"].startswith("cordon-eph-"): print("user", u["email"])
for g in call("/api/v1/groups/", token):
    if g["name"].startswith("cordon-eph-"): print("group", g["name"])
for c in call("/api/v1/configs/tool_servers", token)["TOOL_SERVER_CONNECTIONS"]:
    if ((c.get("info") or {}).get("id") or "").startswith("cordon-eph-"): print("connection", c["info"]["id"])
"#;
        let venv = owui_dir().join("venv/bin/python");
        let password = self.env.iter().find(|(k, _)| k == "OWUI_ADMIN_PASSWORD").map(|(_, v)| v.clone()).unwrap();
        // One sign-in per stack: Open WebUI allows 15 per address in 3 minutes.
        let token = self.admin_token.get().cloned().unwrap_or_default();
        let out = Command::new("docker")
            .args(["exec", "-e"])
            .arg(format!("PW={password}"))
            .arg("-e")
            .arg(format!("TOKEN={token}"))
            .arg(self.webui_container())
            .arg(venv)
            .args(["-c", LIST])
            .output()
            .expect("docker exec");
        assert!(out.status.success(), "listing leftovers failed: {}", String::from_utf8_lossy(&out.stderr));
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let mut left = Vec::new();
        for line in stdout.lines() {
            match line.strip_prefix("token ") {
                Some(t) => {
                    let _ = self.admin_token.set(t.to_string());
                }
                None => left.push(line.to_string()),
            }
        }
        left
    }

    /// Values of every secret the stack was deployed with.
    pub fn secret_values(&self) -> Vec<(&str, &str)> {
        let mut out: Vec<(&str, &str)> = self
            .env
            .iter()
            .filter(|(k, _)| SECRETS.contains(&k.as_str()))
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        out.push(("NATIVE_ROTATED_TOKEN", "rotated-key-open-webui-does-not-hold"));
        out
    }

    /// What the engine still holds for this project: containers, networks, volumes.
    pub fn engine_leftovers(project: &str) -> Vec<String> {
        let label = format!("label=com.docker.compose.project={project}");
        let mut out = Vec::new();
        for (kind, args) in [
            ("container", vec!["ps", "-aq", "--filter", &label]),
            ("network", vec!["network", "ls", "-q", "--filter", &label]),
            ("volume", vec!["volume", "ls", "-q", "--filter", &label]),
        ] {
            let listed = Command::new("docker").args(&args).output().expect("docker");
            out.extend(String::from_utf8_lossy(&listed.stdout).lines().map(|l| format!("{kind} {l}")));
        }
        out
    }
}

impl Drop for OwuiStack {
    fn drop(&mut self) {
        let _ = self.script("down", None).stdout(Stdio::null()).stderr(Stdio::null()).status();
        // Docker 20.10 may keep a stale endpoint for a moment: retry what is left.
        for _ in 0..10 {
            if OwuiStack::engine_leftovers(&self.project).is_empty() {
                return;
            }
            std::thread::sleep(Duration::from_secs(1));
            let _ = self.script("down", None).stdout(Stdio::null()).stderr(Stdio::null()).status();
        }
    }
}

/// Containers, networks and volumes an earlier (killed) run of this test left behind.
pub fn remove_leftovers(prefix: &str) {
    let listed = Command::new("docker").args(["ps", "-a", "--format", "{{.Names}}"]).output();
    for name in listed.map(|o| String::from_utf8_lossy(&o.stdout).into_owned()).unwrap_or_default().lines() {
        if name.starts_with(prefix) {
            eprintln!("removing container {name}, left behind by an earlier run");
            let _ = Command::new("docker").args(["rm", "-f", "-v", name]).output();
        }
    }
    for kind in ["network", "volume"] {
        let listed = Command::new("docker").args([kind, "ls", "--format", "{{.Name}}"]).output();
        let names: Vec<String> = listed
            .map(|o| {
                String::from_utf8_lossy(&o.stdout).lines().filter(|n| n.starts_with(prefix)).map(String::from).collect()
            })
            .unwrap_or_default();
        for name in names {
            eprintln!("removing {kind} {name}, left behind by an earlier run");
            let _ = Command::new("docker").args([kind, "rm", &name]).output();
        }
    }
}
