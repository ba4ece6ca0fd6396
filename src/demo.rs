//! `cordon demo`: import the reference stack's scenario from its role metadata, build the
//! fixture images, deploy the stack, run the compose suite against it from inside each
//! client's namespace, write the reports, tear down.
//!
//! Quiet by default: image builds and compose output go to `results/demo.log`, and the
//! console shows one line per stage with its time; a stage that fails prints the tail of
//! that log. `--verbose` shows everything as it happens.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use crate::engine::Engine;
use crate::exit::Ending;

pub const PROJECT: &str = "cordon-demo";
/// The demo's networks live in 10.240.0.0/16; the end-to-end tests use other ranges.
pub const SUBNET: &str = "10.240";
/// The variables the reference stacks and scenario read their credentials from: the
/// providers' bearers, and the dead ones nothing may accept (native's before its rotation,
/// n8n's before native stopped admitting it).
pub const TOKEN_VARS: [&str; 7] = [
    "NATIVE_TOKEN",
    "LEGACY_TOKEN",
    "MODERN_TOKEN",
    "GITEA_TOKEN",
    "WIKI_TOKEN",
    "NATIVE_TOKEN_OLD",
    "NATIVE_N8N_TOKEN",
];
const COMPOSE_FILE: &str = "docker/reference/compose.yaml";
const LOG: &str = "results/demo.log";
/// Lines of the log shown when a stage fails.
const TAIL_LINES: usize = 30;

pub struct DemoArgs {
    pub keep: bool,
    pub verbose: bool,
    pub swarm: bool,
    /// A broken variant of the reference stack (`docker/reference/broken/<name>`) to
    /// deploy instead, to see a failing run.
    pub variant: Option<String>,
    pub extra: Vec<String>,
}

/// Exports the id of the fixture image just built as the pin of gitea's adapter image
/// (the scenario reads it from [`reference::FIXTURE_DIGEST_VAR`]); the line that says so.
pub(crate) fn pin_fixture_image(env: &mut Vec<(String, String)>) -> Result<String, String> {
    let tag = env.iter().find(|(k, _)| k == "CORDON_FIXTURE_IMAGE").map(|(_, v)| v.clone()).unwrap_or_default();
    let id = reference::image_id(&tag)?;
    let line = format!(
        "{} = {id}: the adapter image this deploy built is the one gitea's sidecar must run (sidecar::gitea::image)",
        reference::FIXTURE_DIGEST_VAR
    );
    env.push((reference::FIXTURE_DIGEST_VAR.into(), id));
    Ok(line)
}

/// The compose files and scenario of the stack the demo deploys.
struct StackFiles {
    compose: Vec<String>,
    scenario: String,
}

fn stack_files(variant: Option<&str>) -> Result<StackFiles, String> {
    let mut files = StackFiles { compose: vec![COMPOSE_FILE.into()], scenario: reference::CHECKED_IN.into() };
    let Some(name) = variant else { return Ok(files) };
    let dir = Path::new("docker/reference/broken").join(name);
    if !crate::config::scenario::is_valid_id(name) || !dir.is_dir() {
        let known: Vec<String> = std::fs::read_dir("docker/reference/broken")
            .map(|d| d.filter_map(|e| e.ok()?.file_name().into_string().ok()).collect())
            .unwrap_or_default();
        return Err(format!(
            "--variant {name}: no such variant in docker/reference/broken (there are: {})",
            known.join(", ")
        ));
    }
    if dir.join("compose.yaml").exists() {
        files.compose.push(dir.join("compose.yaml").display().to_string());
    }
    if dir.join("scenario.yaml").exists() {
        files.scenario = dir.join("scenario.yaml").display().to_string();
    }
    Ok(files)
}

mod child;
pub mod reference;
pub mod swarm;

/// Where stage output goes: the terminal (verbose) or the demo log.
struct Stages {
    verbose: bool,
    log: Option<File>,
    path: PathBuf,
}

impl Stages {
    fn open(verbose: bool) -> Stages {
        let path = PathBuf::from(LOG);
        let log = if verbose {
            None
        } else {
            let _ = std::fs::create_dir_all(path.parent().unwrap_or(Path::new(".")));
            File::create(&path).ok()
        };
        Stages { verbose, log, path }
    }

    /// Runs one stage's command; prints `<done> <seconds>` or the failure and the log's tail.
    fn run(&mut self, cmd: &mut Command, done: &str, failed: &str) -> bool {
        let started = Instant::now();
        let status = match &mut self.log {
            Some(log) => {
                let _ = writeln!(log, "\n$ {:?}", cmd);
                let (out, err) = match (log.try_clone(), log.try_clone()) {
                    (Ok(a), Ok(b)) => (Stdio::from(a), Stdio::from(b)),
                    _ => (Stdio::null(), Stdio::null()),
                };
                cmd.stdout(out).stderr(err).status()
            }
            None => cmd.status(),
        };
        let ok = matches!(status, Ok(s) if s.success());
        if ok {
            step(&format!("{done} {:.1} s", started.elapsed().as_secs_f64()));
        } else {
            match status {
                Err(e) => eprintln!("error: {failed}: cannot run {:?}: {e}", cmd.get_program()),
                Ok(s) => eprintln!("error: {failed} ({s})"),
            }
            self.show_tail();
        }
        ok
    }

    fn show_tail(&mut self) {
        if self.verbose {
            return;
        }
        let Some(log) = &mut self.log else { return };
        let mut text = String::new();
        if log.seek(SeekFrom::Start(0)).is_ok() {
            let _ = File::open(&self.path).and_then(|mut f| f.read_to_string(&mut text));
        }
        let lines: Vec<&str> = text.lines().collect();
        eprintln!("last lines of {}:", self.path.display());
        for line in &lines[lines.len().saturating_sub(TAIL_LINES)..] {
            eprintln!("  {}", crate::text::sanitize(line));
        }
    }
}

pub fn run(args: DemoArgs) -> Ending {
    if args.swarm {
        return swarm::run(args);
    }
    let mut files = match stack_files(args.variant.as_deref()) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("error: {e}");
            return Ending::Usage;
        }
    };
    if !Path::new(COMPOSE_FILE).exists() {
        eprintln!("error: {COMPOSE_FILE} not found: run `cargo run -- demo` from the repository root");
        return Ending::Usage;
    }
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("tokio runtime");
    if let Err(e) = runtime.block_on(Engine::connect()) {
        eprintln!("error: the demo needs a running Docker engine and root (to enter container namespaces): {e}");
        eprintln!("       on Debian: apt-get install docker.io docker-compose busybox-static && dockerd &");
        return Ending::Infrastructure;
    }
    drop(runtime);
    let tokens: Vec<(String, String)> =
        TOKEN_VARS.iter().map(|name| (name.to_string(), crate::secret::random_token(32))).collect();
    let mut env = tokens.clone();
    env.push(("CORDON_SUBNET".into(), SUBNET.into()));
    // The IPv6 prefix dual-stack variants use, derived from the IPv4 one as the tests do.
    env.push(("CORDON_SUBNET6".into(), format!("fdcd:{}", SUBNET.replace('.', ":"))));
    // The image docker/build-images.sh builds (FIXTURE_TAG), which the stack then runs.
    env.push((
        "CORDON_FIXTURE_IMAGE".into(),
        std::env::var("FIXTURE_TAG").unwrap_or_else(|_| "cordon-fixture:dev".into()),
    ));
    let mut stages = Stages::open(args.verbose);
    if !args.verbose {
        step(&format!("output of image builds and compose goes to {LOG} (--verbose shows it here)"));
    }
    if files.scenario == reference::CHECKED_IN {
        match reference::import(Path::new("results")) {
            Ok((path, account)) => {
                step(&account);
                files.scenario = path.display().to_string();
            }
            Err(code) => return code,
        }
    }

    if !stages.run(Command::new("bash").arg("docker/build-images.sh"), "images ready", "building the images failed") {
        return Ending::Infrastructure;
    }
    match pin_fixture_image(&mut env) {
        Ok(line) => step(&line),
        Err(e) => {
            eprintln!("error: {e}");
            return Ending::Infrastructure;
        }
    }
    let started = Instant::now();
    if !stages.run(
        compose(&files, &env).args(["up", "-d", "--no-build", "--remove-orphans"]),
        "stack up",
        "compose up failed",
    ) {
        stages.run(compose(&files, &env).args(["down", "-v", "-t", "1"]), "torn down", "compose down failed");
        return Ending::Infrastructure;
    }
    let containers = count_containers();
    step(&format!(
        "reference stack `{PROJECT}` on {SUBNET}.0.0/16: {containers} containers after {:.1} s; running suites/compose.yaml",
        started.elapsed().as_secs_f64()
    ));
    let suite_started = Instant::now();
    let suite =
        ["compose", "--project", PROJECT, "--scenario", files.scenario.as_str(), "--suite", "suites/compose.yaml"];
    let code = child::run_suite(&mut stages, &suite, &args.extra, &env);
    step(&format!(
        "suite finished in {:.1} s with exit code {}; reports in results/ (report.html has the reach matrix)",
        suite_started.elapsed().as_secs_f64(),
        code.exit_code()
    ));
    if args.keep {
        let vars: Vec<String> = env.iter().map(|(k, _)| format!("{k}=x")).collect();
        let cli = compose_command();
        let cli =
            std::iter::once(cli.get_program()).chain(cli.get_args()).map(|a| a.to_string_lossy()).collect::<Vec<_>>();
        step(&format!(
            "keeping the stack; tear it down with: {} {} -p {PROJECT} -f {} down -v",
            vars.join(" "),
            cli.join(" "),
            files.compose.join(" -f ")
        ));
    } else {
        stages.run(
            compose(&files, &env).args(["down", "-v", "--remove-orphans", "-t", "1"]),
            "torn down",
            "compose down failed",
        );
    }
    code
}

fn count_containers() -> usize {
    Command::new("docker")
        .args(["ps", "-q", "--filter", &format!("label=com.docker.compose.project={PROJECT}")])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).lines().count())
        .unwrap_or(0)
}

/// The Compose CLI that is there: the plugin first (`docker compose`, Compose v2), else
/// the standalone `docker-compose` (1.29, as Debian bookworm ships it).
pub fn compose_command() -> Command {
    let plugin = Command::new("docker")
        .args(["compose", "version"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if plugin {
        let mut cmd = Command::new("docker");
        cmd.arg("compose");
        cmd
    } else {
        Command::new("docker-compose")
    }
}

fn compose(files: &StackFiles, env: &[(String, String)]) -> Command {
    let mut cmd = compose_command();
    cmd.args(["-p", PROJECT]);
    for f in &files.compose {
        cmd.args(["-f", f]);
    }
    cmd.envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    cmd
}

fn step(text: &str) {
    eprintln!("==> {text}");
}
