//! `cordon demo`: build the fixture images, deploy the reference stack, run the compose
//! suite against it from inside each client's namespace, write the reports, tear down.

use std::path::Path;
use std::process::Command;

use nix::sys::signal::{SigHandler, Signal, signal};

use crate::engine::Engine;
use crate::exit;

pub const PROJECT: &str = "cordon-demo";
/// The demo's networks live in 10.240.0.0/16; the end-to-end tests use 10.242–10.250.
pub const SUBNET: &str = "10.240";
const COMPOSE_FILE: &str = "docker/reference/compose.yaml";

pub struct DemoArgs {
    pub keep: bool,
    pub swarm: bool,
    pub extra: Vec<String>,
}

pub mod swarm;

pub fn run(args: DemoArgs) -> i32 {
    if args.swarm {
        return swarm::run(args);
    }
    if !Path::new(COMPOSE_FILE).exists() {
        eprintln!("error: {COMPOSE_FILE} not found: run `cargo run -- demo` from the repository root");
        return exit::USAGE;
    }
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("tokio runtime");
    if let Err(e) = runtime.block_on(Engine::connect()) {
        eprintln!("error: the demo needs a running Docker engine and root (to enter container namespaces): {e}");
        eprintln!("       on Debian: apt-get install docker.io docker-compose busybox-static && dockerd &");
        return exit::INFRASTRUCTURE;
    }
    drop(runtime);
    let tokens: Vec<(String, String)> = ["NATIVE_TOKEN", "LEGACY_TOKEN", "MODERN_TOKEN", "GITEA_TOKEN", "WIKI_TOKEN"]
        .iter()
        .map(|name| (name.to_string(), format!("demo-{}", hex::encode(rand::random::<[u8; 16]>()))))
        .collect();
    let mut env = tokens.clone();
    env.push(("CORDON_SUBNET".into(), SUBNET.into()));

    step("building the fixture images (docker/build-images.sh)");
    if !status(Command::new("bash").arg("docker/build-images.sh")) {
        eprintln!("error: building the images failed (see above)");
        return exit::INFRASTRUCTURE;
    }
    step(&format!("deploying the reference stack as compose project `{PROJECT}` on {SUBNET}.0.0/16"));
    if !status(compose(&env).args(["up", "-d", "--no-build", "--remove-orphans"])) {
        eprintln!("error: docker-compose up failed (see above)");
        let _ = status(compose(&env).args(["down", "-v", "-t", "1"]));
        return exit::INFRASTRUCTURE;
    }
    step("running suites/compose.yaml against scenarios/reference.yaml");
    let started = std::time::Instant::now();
    let exe = std::env::current_exe().expect("path of the running cordon binary");
    let suite =
        ["compose", "--project", PROJECT, "--scenario", "scenarios/reference.yaml", "--suite", "suites/compose.yaml"];
    let child =
        Command::new(exe).args(suite).args(&args.extra).envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str()))).spawn();
    // Ctrl-C stops the suite (the child), not the demo: the stack must still come down.
    // SIGINT is ignored only after the spawn, so the child keeps the default.
    // SAFETY: no other thread of this process installs signal handlers.
    let previous = unsafe { signal(Signal::SIGINT, SigHandler::SigIgn) };
    let code = child
        .and_then(|mut c| c.wait())
        .map(|s| s.code().unwrap_or(exit::INFRASTRUCTURE))
        .unwrap_or(exit::INFRASTRUCTURE);
    if let Ok(handler) = previous {
        // SAFETY: as above; restores the disposition found before.
        let _ = unsafe { signal(Signal::SIGINT, handler) };
    }
    step(&format!("suite finished in {:.1}s with exit code {code}", started.elapsed().as_secs_f64()));
    if args.keep {
        step(&format!(
            "keeping the stack; tear it down with: CORDON_SUBNET={SUBNET} NATIVE_TOKEN=x LEGACY_TOKEN=x MODERN_TOKEN=x GITEA_TOKEN=x WIKI_TOKEN=x docker-compose -p {PROJECT} -f {COMPOSE_FILE} down -v"
        ));
    } else {
        step("tearing the stack down");
        let _ = status(compose(&env).args(["down", "-v", "--remove-orphans", "-t", "1"]));
    }
    code
}

fn compose(env: &[(String, String)]) -> Command {
    let mut cmd = Command::new("docker-compose");
    cmd.args(["-p", PROJECT, "-f", COMPOSE_FILE]).envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    cmd
}

fn status(cmd: &mut Command) -> bool {
    match cmd.status() {
        Ok(s) => s.success(),
        Err(e) => {
            eprintln!("error: cannot run {:?}: {e}", cmd.get_program());
            false
        }
    }
}

fn step(text: &str) {
    eprintln!("==> {text}");
}
