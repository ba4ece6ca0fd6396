//! The reference stack (docker/reference/compose.yaml), brought up under a unique compose
//! project and subnet, with random tokens, and torn down on every path.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use serde_json::Value;

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The fixture image the stacks run: `FIXTURE_TAG` when set (so checkouts building
/// different fixtures side by side do not overwrite each other's image).
pub fn fixture_image() -> String {
    std::env::var("FIXTURE_TAG").unwrap_or_else(|_| "cordon-fixture:dev".into())
}

/// The fixture rebuilt with one label more (docker/build-images.sh): another id, the same code.
pub fn rebuilt_image() -> String {
    let tag = fixture_image();
    let (name, version) = tag.rsplit_once(':').unwrap_or((&tag, "latest"));
    format!("{name}-rebuilt:{version}")
}

/// The id of the fixture image the stacks run: the reference scenario pins gitea's
/// adapter image to it (`CORDON_FIXTURE_DIGEST`, as the demo exports it).
pub fn fixture_digest() -> String {
    images();
    cordon::demo::reference::image_id(&fixture_image()).expect("the fixture image was just built")
}

/// `CORDON_FIXTURE_DIGEST` and its value, for a run against a deployed reference stack.
pub fn fixture_digest_env() -> (String, String) {
    (cordon::demo::reference::FIXTURE_DIGEST_VAR.to_string(), fixture_digest())
}

/// A well-formed pin for runs that deploy nothing (no engine, `--list`): it names no image.
pub const STAND_IN_DIGEST: (&str, &str) =
    ("CORDON_FIXTURE_DIGEST", "sha256:5ca1ab1e5ca1ab1e5ca1ab1e5ca1ab1e5ca1ab1e5ca1ab1e5ca1ab1e5ca1ab1e");

/// Builds the fixture images once per test binary (the script is idempotent).
pub fn images() {
    static BUILT: OnceLock<Result<(), String>> = OnceLock::new();
    let built = BUILT.get_or_init(|| {
        let out =
            Command::new("bash").arg(repo().join("docker/build-images.sh")).output().map_err(|e| e.to_string())?;
        if out.status.success() {
            Ok(())
        } else {
            Err(format!("{}\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)))
        }
    });
    if let Err(e) = built {
        panic!("docker/build-images.sh failed (needs a running Docker engine):\n{e}");
    }
}

/// Checks the reference scenario plans but does not give the key they need: skipped on
/// the reference stack and on every variant whose scenario lacks it too, each for its
/// reason (a skip is never a pass). The rotation keys (`retired`, `revoked`) have no source
/// in the platform's metadata: the variants that prove those checks carry them.
pub const REFERENCE_SKIPS: &[(&str, &str)] = &[
    ("contract::legacy::arguments", "does not mark provider `legacy` `strict_arguments: true`"),
    ("contract::modern::arguments", "does not mark provider `modern` `strict_arguments: true`"),
    ("contract::native::arguments", "does not mark provider `native` `strict_arguments: true`"),
    ("contract::legacy::limits", "gives provider `legacy` no `limits`"),
    ("contract::modern::limits", "gives provider `modern` no `limits`"),
    ("contract::native::limits", "gives provider `native` no `limits`"),
    ("credentials::gitea::retired", "lists no `retired` credential for provider `gitea`"),
    ("credentials::native::retired", "lists no `retired` credential for provider `native`"),
    ("credentials::legacy::retired", "lists no `retired` credential for provider `legacy`"),
    ("credentials::modern::retired", "lists no `retired` credential for provider `modern`"),
    ("credentials::wiki::retired", "lists no `retired` credential for provider `wiki`"),
    ("credentials::gitea::revoked", "lists provider `gitea` under `revoked`"),
    ("credentials::native::revoked", "lists provider `native` under `revoked`"),
    ("credentials::wiki::revoked", "lists provider `wiki` under `revoked`"),
    ("credentials::legacy::revoked", "lists provider `legacy` under `revoked`"),
    ("credentials::modern::revoked", "lists provider `modern` under `revoked`"),
];

/// A verdict the reference itself has: passed, or skipped for the reason it skips there.
pub fn as_on_the_reference(check: &str, verdict: &str, reason: &str) -> bool {
    verdict == "passed"
        || (verdict == "skipped" && REFERENCE_SKIPS.iter().any(|(c, why)| *c == check && reason.contains(why)))
}

pub struct Stack {
    pub project: String,
    pub env: Vec<(String, String)>,
    /// `CORDON_SECRETS_DIR`: host files with some of the tokens, for variants that mount one.
    _secrets: tempfile::TempDir,
    files: Vec<PathBuf>,
    /// Containers started by hand (`docker run`) into this project: removed first on drop.
    extras: std::sync::Mutex<Vec<String>>,
    subnet: String,
}

/// Subnets of the stacks up in this test binary: two tests given the same subnet take turns.
static SUBNETS_IN_USE: (std::sync::Mutex<Vec<String>>, std::sync::Condvar) =
    (std::sync::Mutex::new(Vec::new()), std::sync::Condvar::new());

fn take_subnet(subnet: &str) {
    let (lock, freed) = &SUBNETS_IN_USE;
    let mut in_use = lock.lock().unwrap_or_else(|e| e.into_inner());
    while in_use.iter().any(|s| s == subnet) {
        in_use = freed.wait(in_use).unwrap_or_else(|e| e.into_inner());
    }
    in_use.push(subnet.to_string());
}

fn release_subnet(subnet: &str) {
    let (lock, freed) = &SUBNETS_IN_USE;
    lock.lock().unwrap_or_else(|e| e.into_inner()).retain(|s| s != subnet);
    freed.notify_all();
}

/// A container started by hand into a stack's project, with the compose labels of one of
/// its services (a replica compose did not create, as a leftover or a manual `docker run`
/// would be), its DNS alias on each network, and the reference stack's hardening.
#[derive(Clone, Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExtraReplica {
    /// Suffix of the container name: `<project>_<service>_<name>`.
    pub name: String,
    pub service: String,
    /// Started with neither the compose labels nor the service's alias: a container of
    /// no project (a leftover of another deployment) on the project's networks.
    #[serde(default)]
    pub outsider: bool,
    /// Compose keys of the networks to attach, in order.
    pub networks: Vec<String>,
    #[serde(default = "nobody")]
    pub user: String,
    /// Variables of the stack's environment to pass in.
    #[serde(default)]
    pub env: Vec<String>,
    pub command: Vec<String>,
}

fn nobody() -> String {
    "65534:65534".into()
}

/// A directory with `native-old` holding NATIVE_TOKEN_OLD, readable by the fixtures'
/// unprivileged user, as a secrets manager would leave it on a host.
fn secret_files(env: &[(String, String)]) -> tempfile::TempDir {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().expect("a temporary directory");
    let old = env.iter().find(|(k, _)| k == "NATIVE_TOKEN_OLD").map(|(_, v)| v.as_str()).unwrap_or_default();
    let file = dir.path().join("native-old");
    std::fs::write(&file, old).expect("writing a secret file");
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    dir
}

impl Stack {
    /// `subnet` is the first two octets every network of this stack uses, e.g. "10.242":
    /// unique per test so stacks run side by side.
    pub fn up(name: &str, subnet: &str, override_file: Option<&Path>) -> Stack {
        images();
        // Random letters and digits only: no run of eight characters a token shares with
        // anything else cordon prints, so redaction fires only on a real leak.
        let token = |_: &str| random_token();
        let env = vec![
            ("CORDON_SUBNET".to_string(), subnet.to_string()),
            // The same two octets as IPv6 groups, for variants with dual-stack networks.
            ("CORDON_SUBNET6".to_string(), format!("fdcd:{}", subnet.replace('.', ":"))),
            ("CORDON_FIXTURE_IMAGE".to_string(), fixture_image()),
            fixture_digest_env(),
            ("CORDON_FIXTURE_REBUILT_IMAGE".to_string(), rebuilt_image()),
            ("NATIVE_TOKEN".to_string(), token("native")),
            ("LEGACY_TOKEN".to_string(), token("legacy")),
            ("MODERN_TOKEN".to_string(), token("modern")),
            ("GITEA_TOKEN".to_string(), token("gitea")),
            ("WIKI_TOKEN".to_string(), token("wiki")),
            ("NATIVE_TOKEN_OLD".to_string(), token("native-old")),
            ("NATIVE_N8N_TOKEN".to_string(), token("native-n8n")),
        ];
        let mut env = env;
        let secrets = secret_files(&env);
        env.push(("CORDON_SECRETS_DIR".to_string(), secrets.path().display().to_string()));
        let mut files = vec![repo().join("docker/reference/compose.yaml")];
        files.extend(override_file.map(Path::to_path_buf));
        take_subnet(subnet);
        remove_leftover_networks(&format!("cordon-e2e-{name}-"));
        let stack = Stack {
            project: format!("cordon-e2e-{name}-{}", std::process::id()),
            env,
            _secrets: secrets,
            files,
            extras: Default::default(),
            subnet: subnet.to_string(),
        };
        let out = stack.compose(&["up", "-d", "--no-build"]);
        assert!(
            out.status.success(),
            "docker-compose up for {} failed:\n{}",
            stack.project,
            String::from_utf8_lossy(&out.stderr)
        );
        stack
    }

    /// Brings the project to the reference stack with `override_file` on top (`None`: back
    /// to this stack's own files); compose recreates only the services that differ.
    pub fn redeploy(&self, override_file: Option<&Path>) {
        let mut cmd = cordon::demo::compose_command();
        cmd.arg("-p").arg(&self.project);
        for f in &self.files {
            cmd.arg("-f").arg(f);
        }
        if let Some(extra) = override_file {
            cmd.arg("-f").arg(extra);
        }
        cmd.args(["up", "-d", "--no-build"]).envs(self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        let out = cmd.output().expect("docker-compose");
        assert!(out.status.success(), "redeploying {}: {}", self.project, String::from_utf8_lossy(&out.stderr));
    }

    /// Starts `replica` into this project; it is removed when the stack is dropped.
    pub fn run_replica(&self, replica: &ExtraReplica) -> String {
        let name = format!("{}_{}_{}", self.project, replica.service, replica.name);
        let network = |key: &str| format!("{}_{key}", self.project);
        let (first, rest) = replica.networks.split_first().expect("a replica needs a network");
        let mut args: Vec<String> = ["create", "--name", &name, "--label", "cordon-test=1"].map(String::from).to_vec();
        if !replica.outsider {
            for label in [
                format!("com.docker.compose.project={}", self.project),
                format!("com.docker.compose.service={}", replica.service),
            ] {
                args.extend(["--label".into(), label]);
            }
            args.extend(["--network-alias".into(), replica.service.clone()]);
        }
        args.extend(["--network".into(), network(first)]);
        args.extend(["--user".into(), replica.user.clone(), "--read-only".into(), "--cap-drop".into(), "ALL".into()]);
        args.extend(
            ["--security-opt", "no-new-privileges:true", "--memory", "64m", "--cpus", "0.5", "--pids-limit", "64"]
                .map(String::from),
        );
        for var in &replica.env {
            let value = self
                .env
                .iter()
                .find(|(k, _)| k == var)
                .unwrap_or_else(|| panic!("no {var} in the stack's environment"));
            args.extend(["--env".into(), format!("{var}={}", value.1)]);
        }
        args.push(fixture_image());
        args.extend(replica.command.iter().map(|c| self.expand(c)));
        let created = Command::new("docker").args(&args).output().unwrap();
        assert!(created.status.success(), "docker create {name}: {}", String::from_utf8_lossy(&created.stderr));
        self.extras.lock().unwrap().push(name.clone());
        for key in rest {
            let alias: &[&str] = if replica.outsider { &[] } else { &["--alias", &replica.service] };
            let out = Command::new("docker")
                .args(["network", "connect"])
                .args(alias)
                .args([&network(key), &name])
                .output()
                .unwrap();
            assert!(out.status.success(), "connecting {name} to {key}: {}", String::from_utf8_lossy(&out.stderr));
        }
        let started = Command::new("docker").args(["start", &name]).output().unwrap();
        assert!(started.status.success(), "docker start {name}: {}", String::from_utf8_lossy(&started.stderr));
        name
    }

    /// `${CORDON_SUBNET}` and `{project}` in a variant's text, as this stack has them.
    pub fn expand(&self, text: &str) -> String {
        let subnet = &self.env.iter().find(|(k, _)| k == "CORDON_SUBNET").expect("subnet").1;
        text.replace("${CORDON_SUBNET}", subnet).replace("{project}", &self.project)
    }

    /// The request lines a fixture server of `service` logged, and those it did not refuse
    /// for want of a valid bearer: any such line means a credential it accepts reached it.
    /// Restarts a service's container: its own start-up (a listen delay) begins again now.
    pub fn restart(&self, service: &str) {
        let container = format!("{}_{service}_1", self.project);
        let out = Command::new("docker").args(["restart", "-t", "1", &container]).output().unwrap();
        assert!(out.status.success(), "docker restart {container}: {}", String::from_utf8_lossy(&out.stderr));
    }

    pub fn accepted_requests(&self, service: &str) -> (usize, Vec<String>) {
        let container = format!("{}_{service}_1", self.project);
        let out = Command::new("docker").args(["logs", &container]).output().unwrap();
        assert!(out.status.success(), "docker logs {container}: {}", String::from_utf8_lossy(&out.stderr));
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        let requests: Vec<&str> = text.lines().filter(|l| l.starts_with("mcp ") && l.contains(" -> ")).collect();
        let accepted = requests.iter().filter(|l| !l.contains("auth=refused")).map(|l| l.to_string()).collect();
        (requests.len(), accepted)
    }

    fn compose(&self, args: &[&str]) -> std::process::Output {
        let mut cmd = cordon::demo::compose_command();
        cmd.arg("-p").arg(&self.project);
        for f in &self.files {
            cmd.arg("-f").arg(f);
        }
        cmd.args(args).envs(self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        cmd.output().expect("docker-compose (apt-get install docker-compose)")
    }

    /// Runs `cordon compose` against this stack; returns exit code, stdout, stderr and
    /// the JSON report.
    pub fn cordon(&self, scenario: &Path, results: &Path, extra: &[&str]) -> (i32, String, String, Value) {
        let mut args = vec![
            "compose".to_string(),
            "--project".into(),
            self.project.clone(),
            "--scenario".into(),
            scenario.display().to_string(),
        ];
        args.extend([
            "--suite".into(),
            repo().join("suites/compose.yaml").display().to_string(),
            "--results".into(),
            results.display().to_string(),
        ]);
        args.extend(extra.iter().map(|s| s.to_string()));
        run_cordon(&args, self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())), results)
    }

    /// `cordon init --project <this stack> --out <dir>/draft.yaml`: the draft's path, with
    /// the exit code and stderr. The bearers are in the environment as the deploy had them.
    pub fn init(&self, dir: &Path) -> (i32, PathBuf, String) {
        let draft = dir.join("draft.yaml");
        let out = Command::new(env!("CARGO_BIN_EXE_cordon"))
            .args(["init", "--project", &self.project, "--out"])
            .arg(&draft)
            .envs(self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .output()
            .expect("running cordon init");
        (out.status.code().unwrap_or(-1), draft, String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

/// The pairs a draft of `cordon init` admits for review (`client -> provider`), sorted.
pub fn reviewed_pairs(draft: &str) -> Vec<String> {
    let mut pairs: Vec<String> = draft
        .lines()
        .filter_map(|l| l.trim().strip_prefix("# review: "))
        .filter_map(|l| l.split_once(": observed, not declared").map(|(pair, _)| pair.to_string()))
        .collect();
    pairs.sort();
    pairs
}

impl Drop for Stack {
    fn drop(&mut self) {
        self.tear_down();
        release_subnet(&self.subnet);
    }
}

impl Stack {
    fn tear_down(&self) {
        // Compose does not know the hand-started replicas; they hold its networks.
        for name in self.extras.lock().map(|e| e.clone()).unwrap_or_default() {
            let _ = Command::new("docker").args(["rm", "-f", "-v", &name]).output();
        }
        let out = self.compose(&["down", "-v", "--remove-orphans", "-t", "1"]);
        if out.status.success() {
            return;
        }
        // Docker 20.10 sometimes keeps a stale endpoint on a network for a moment after its
        // container is gone ("has active endpoints"): retry what compose left behind.
        let label = format!("label=com.docker.compose.project={}", self.project);
        for _ in 0..10 {
            let listed = Command::new("docker").args(["network", "ls", "-q", "--filter", &label]).output();
            let ids: Vec<String> = listed
                .map(|o| String::from_utf8_lossy(&o.stdout).lines().map(String::from).collect())
                .unwrap_or_default();
            if ids.is_empty() {
                return;
            }
            for id in &ids {
                let _ = Command::new("docker").args(["network", "rm", id]).output();
            }
            std::thread::sleep(std::time::Duration::from_secs(1));
        }
        eprintln!(
            "docker-compose down for {} left networks behind (a stale endpoint; restarting dockerd clears it):\n{}",
            self.project,
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// Networks an earlier run of this same test could not remove (see the Drop below) still
/// hold this test's subnets; nothing else uses the name prefix.
fn remove_leftover_networks(prefix: &str) {
    // Replicas a killed run started by hand would pin them.
    let listed = Command::new("docker")
        .args([
            "ps",
            "-a",
            "--filter",
            "label=cordon-test=1",
            "--filter",
            &format!("name={prefix}"),
            "--format",
            "{{.Names}}",
        ])
        .output();
    for name in listed
        .map(|o| String::from_utf8_lossy(&o.stdout).lines().map(String::from).collect::<Vec<_>>())
        .unwrap_or_default()
    {
        if name.starts_with(prefix) {
            let _ = Command::new("docker").args(["rm", "-f", "-v", &name]).output();
        }
    }
    let listed = Command::new("docker").args(["network", "ls", "--format", "{{.Name}}"]).output();
    let names: Vec<String> = listed
        .map(|o| {
            String::from_utf8_lossy(&o.stdout).lines().filter(|n| n.starts_with(prefix)).map(String::from).collect()
        })
        .unwrap_or_default();
    for name in names {
        eprintln!("removing {name}, left behind by an earlier run");
        let out = Command::new("docker").args(["network", "rm", &name]).output();
        if let Some(out) = out.ok().filter(|o| !o.status.success()) {
            eprintln!(
                "{name} cannot be removed and holds its subnet (restarting dockerd clears a stale endpoint): {}",
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
    }
}

/// 32 random letters and digits.
pub fn random_token() -> String {
    cordon::secret::random_token(32)
}

/// (name, verdict, reason) of every check in a report.
pub fn verdicts(report: &Value) -> Vec<(String, String, String)> {
    report["report"]["results"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .map(|r| {
            (
                r["name"].as_str().unwrap_or("").to_string(),
                r["verdict"].as_str().unwrap_or("").to_string(),
                r["reason"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

/// Runs cordon with `args` and `env`; returns exit code, stdout, stderr and the JSON
/// report it wrote under `results` (`Null` when it wrote none).
pub fn run_cordon<'a>(
    args: &[String],
    env: impl IntoIterator<Item = (&'a str, &'a str)>,
    results: &Path,
) -> (i32, String, String, Value) {
    let out = Command::new(env!("CARGO_BIN_EXE_cordon")).args(args).envs(env).output().expect("running cordon");
    let report = std::fs::read_to_string(results.join("report.json"))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or(Value::Null);
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        report,
    )
}
