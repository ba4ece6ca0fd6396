//! End to end on Docker Swarm: the reference stack (docker/swarm/stack.yaml) passes every
//! check of suites/swarm.yaml twenty times in a row with no verdict change (its one known
//! failure included); each broken variant in docker/swarm/broken/ fails exactly the checks
//! its expect.yaml names, for the stated reason; the carrier path gives the same verdicts
//! as setns, forced for the manager and for real on a second engine joined as a worker;
//! and nothing is left behind.
//!
//! One test, in steps, because the swarm, its iptables rule and the second engine are set
//! up once and must be undone once. `CORDON_SWARM_STEPS=good,carrier,variants,worker`
//! picks steps (all by default), `CORDON_SWARM_VARIANTS=a,b` variants.

mod support {
    pub mod stack;
    pub mod swarm;
}

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use cordon::demo::swarm::SwarmHost;
use serde::Deserialize;
use support::stack::{as_on_the_reference, repo};
use support::swarm::{Deployed, Run, SUBNET, WORKER_HOSTNAME, Worker, leftovers, static_cordon, suite_with_engines};

#[derive(Deserialize)]
struct Expect {
    fails: Vec<Failure>,
    #[serde(default)]
    known: Vec<Failure>,
}

#[derive(Deserialize)]
struct Failure {
    check: String,
    /// Found in the reason (failed) or the evidence (known failure: the baseline's reason
    /// replaces the finding, which moves to the evidence).
    reason: String,
}

const KNOWN: &str = "sidecar::gitea::hardening";

fn scenario() -> PathBuf {
    repo().join("scenarios/reference.yaml")
}

fn suite() -> PathBuf {
    repo().join("suites/swarm.yaml")
}

fn wanted(step: &str) -> bool {
    std::env::var("CORDON_SWARM_STEPS").map(|s| s.split(',').any(|x| x == step)).unwrap_or(true)
}

#[test]
fn swarm_end_to_end() {
    let host = SwarmHost::prepare(&[&format!("{SUBNET}.0.0/16"), "10.170.0.0/16"]).expect("a swarm to run stacks on");
    // The static build (minutes from clean) is needed only by the carrier steps: the
    // stacks deploy and the good stack's twenty runs go on while it builds.
    let agent = std::thread::spawn(|| {
        if wanted("carrier") || wanted("worker") { static_cordon().display().to_string() } else { String::new() }
    });
    let agent = std::sync::LazyLock::new(move || agent.join().expect("building the static cordon"));
    let agent_env = || [("CORDON_AGENT_BINARY", agent.as_str())];
    let failures: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
    let fail = |e: String| failures.lock().unwrap_or_else(|p| p.into_inner()).push(e);
    // The good stack's steps and the broken variants side by side: every stack has its
    // own networks, subnet block and secrets, so none sees another (docker/swarm/deploy.sh).
    let queue = std::sync::Mutex::new(if wanted("variants") { variants() } else { Vec::new() }.into_iter());
    std::thread::scope(|scope| {
        scope.spawn(|| {
            if wanted("good") || wanted("carrier") {
                let started = std::time::Instant::now();
                let stack = Deployed::up("good", 1, &[]);
                let mut found = Vec::new();
                if wanted("good") {
                    good_twenty_times(&stack, &mut found);
                }
                if wanted("carrier") {
                    forced_carrier(&stack, &agent_env(), &mut found);
                }
                drop(stack);
                eprintln!("good stack and carriers: {:.1}s", started.elapsed().as_secs_f64());
                found.into_iter().for_each(fail);
            }
        });
        for _ in 0..VARIANTS_AT_ONCE {
            scope.spawn(|| {
                loop {
                    let Some((block, dir)) = queue.lock().unwrap_or_else(|p| p.into_inner()).next() else { break };
                    let started = std::time::Instant::now();
                    let outcome = broken_variant(&dir, block);
                    eprintln!("variant {}: {:.1}s", dir.display(), started.elapsed().as_secs_f64());
                    if let Err(e) = outcome {
                        fail(e);
                    }
                }
            });
        }
    });
    let mut failures = failures.into_inner().unwrap_or_else(|p| p.into_inner());
    // A worker joins only a swarm cordon made (this test, or the CI run holding one):
    // never someone else's.
    if wanted("worker")
        && host.ours()
        && let Err(e) = on_a_second_engine(&agent_env())
    {
        failures.push(e);
    }
    drop(host);
    let left = leftovers();
    if !left.is_empty() {
        failures.push(format!("left behind: {left:#?}"));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// How many broken variants are deployed and judged at once, beside the good stack: the
/// deploys and teardowns are mostly waits on the engine, so three at a time take about a
/// third of the time on two cores without slowing any one run past its deadline.
const VARIANTS_AT_ONCE: usize = 3;

/// Every variant in docker/swarm/broken with its subnet block (2 and up, by name), or
/// those `CORDON_SWARM_VARIANTS=a,b` picks (each keeps its block).
fn variants() -> Vec<(u8, PathBuf)> {
    let mut dirs: Vec<PathBuf> =
        std::fs::read_dir(repo().join("docker/swarm/broken")).unwrap().map(|e| e.unwrap().path()).collect();
    dirs.sort();
    let only = std::env::var("CORDON_SWARM_VARIANTS").ok();
    let picked =
        |dir: &Path| only.as_ref().is_none_or(|o| o.split(',').any(|v| dir.file_name().is_some_and(|n| n == v)));
    dirs.into_iter().enumerate().filter(|(_, d)| picked(d)).map(|(i, d)| (2 + i as u8, d)).collect()
}

fn good_twenty_times(stack: &Deployed, failures: &mut Vec<String>) {
    let results = tempfile::tempdir().unwrap();
    let first = stack.cordon(&scenario(), &suite(), results.path(), &[]);
    let verdicts = first.results();
    let not_passed: Vec<_> = verdicts
        .iter()
        .filter(|(n, v, r, _)| !(as_on_the_reference(n, v, r) || (n == KNOWN && v == "known_failure")))
        .collect();
    eprintln!("good stack: {} checks in {:.1}s", verdicts.len(), first.wall.as_secs_f64());
    if first.code != 0 || !not_passed.is_empty() || verdicts.len() < 40 {
        failures.push(format!(
            "good stack: exit {}; not passed: {not_passed:#?}\n{}\n{}",
            first.code, first.stdout, first.stderr
        ));
        return;
    }
    let known = verdicts.iter().find(|(n, ..)| n == KNOWN).expect("the known failure is planned");
    assert!(known.3.contains("no-new-privileges is not set (a swarm service cannot set it"), "{}", known.3);
    let families: std::collections::BTreeSet<&str> =
        verdicts.iter().map(|(n, ..)| n.split("::").next().unwrap()).collect();
    assert_eq!(
        families.into_iter().collect::<Vec<_>>(),
        ["contract", "credentials", "disabled", "reach", "route", "secrets", "session", "sidecar"]
    );
    // Streamable HTTP sessions are also tried through the name (legacy SSE lives on one stream).
    let streamable = |n: &str| n.starts_with("session::") && !n.ends_with("->legacy");
    assert!(
        verdicts.iter().filter(|(n, ..)| streamable(n)).all(|(_, _, _, e)| e.contains("session 6 through the name"))
    );
    assert!(
        verdicts.iter().all(|(_, _, _, e)| !e.contains("by a carrier")),
        "the manager's tasks are entered by setns"
    );
    assert_no_token_in(stack, results.path(), &[&first.stdout, &first.stderr]);
    let history = std::fs::read_dir(results.path().join("history")).unwrap().count();
    assert_eq!(history, 1, "one timestamped copy per run");
    for run in 2..=20 {
        let again = stack.cordon(&scenario(), &suite(), results.path(), &[]);
        let changed: Vec<_> = verdicts
            .iter()
            .zip(again.results())
            .filter(|(a, b)| a.0 != b.0 || a.1 != b.1)
            .map(|(a, b)| (a.0.clone(), a.1.clone(), b.1, b.2))
            .collect();
        if again.code != 0 || !changed.is_empty() {
            failures.push(format!("good stack, run {run}: verdicts changed: {changed:#?}\n{}", again.stdout));
            return;
        }
        eprintln!("good stack: run {run} in {:.1}s, no verdict changed", again.wall.as_secs_f64());
    }
}

/// The manager named in `engines:`: every task probed through a carrier, same verdicts.
fn forced_carrier(stack: &Deployed, agent_env: &[(&str, &str)], failures: &mut Vec<String>) {
    let dir = tempfile::tempdir().unwrap();
    let hostname = String::from_utf8(
        std::process::Command::new("docker").args(["info", "--format", "{{.Name}}"]).output().unwrap().stdout,
    )
    .unwrap();
    let suite = suite_with_engines(dir.path(), &[(hostname.trim(), "unix:///var/run/docker.sock")]);
    let results = tempfile::tempdir().unwrap();
    let run = stack.cordon(&scenario(), &suite, results.path(), agent_env);
    eprintln!("good stack through carriers: {} checks in {:.1}s", run.results().len(), run.wall.as_secs_f64());
    let bad: Vec<_> = run
        .results()
        .into_iter()
        .filter(|(n, v, r, _)| !(as_on_the_reference(n, v, r) || (n == KNOWN && v == "known_failure")))
        .collect();
    if run.code != 0 || !bad.is_empty() {
        failures.push(format!("forced carrier: exit {}: {bad:#?}\n{}", run.code, run.stderr));
        return;
    }
    let carried = run
        .results()
        .iter()
        .filter(|(_, _, _, e)| e.contains(&format!("by a carrier on node {}", hostname.trim())))
        .count();
    if carried < 20 {
        failures.push(format!("forced carrier: only {carried} checks say they ran through a carrier"));
    }
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(results.path().join("report.json")).unwrap()).unwrap();
    let started = &report["report"]["cost"]["carriers_started"];
    if started != 1 {
        failures.push(format!("forced carrier: {started} carriers started for one node, not one for the run"));
    }
    assert_no_token_in(stack, results.path(), &[&run.stdout, &run.stderr]);
    if let Err(e) = interrupted(stack, &suite, agent_env) {
        failures.push(e);
    }
}

/// Ctrl-C while carriers run: cordon removes every carrier of its run and exits 130.
fn interrupted(stack: &Deployed, suite: &Path, agent_env: &[(&str, &str)]) -> Result<(), String> {
    let results = tempfile::tempdir().unwrap();
    let carriers = || -> usize {
        let out = std::process::Command::new("docker")
            .args(["ps", "-aq", "--filter", "label=cordon.carrier"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).lines().count()
    };
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_cordon"))
        .args(["swarm", "--stack", &stack.stack, "--scenario"])
        .arg(scenario())
        .arg("--suite")
        .arg(suite)
        .arg("--results")
        .arg(results.path())
        .envs(stack.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .envs(agent_env.iter().copied())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while carriers() < 1 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    let running = carriers();
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), nix::sys::signal::Signal::SIGINT).unwrap();
    let status = child.wait().unwrap();
    let left = carriers();
    eprintln!("interrupted with {running} carriers running: exit {:?}, {left} left", status.code());
    if running == 0 || status.code() != Some(130) || left != 0 {
        return Err(format!("Ctrl-C with {running} carriers running: exit {:?}, {left} carriers left", status.code()));
    }
    Ok(())
}

/// Every service placed on the worker (node label): cordon, on the manager, probes every
/// task through a carrier on the worker's engine.
fn on_a_second_engine(agent_env: &[(&str, &str)]) -> Result<(), String> {
    let token = String::from_utf8(
        std::process::Command::new("docker").args(["swarm", "join-token", "-q", "worker"]).output().unwrap().stdout,
    )
    .unwrap();
    let worker = Worker::start(token.trim())?;
    let placed = repo().join("docker/swarm/on-worker.yaml");
    let stack = Deployed::up_with("remote", 20, &[placed], &[("CORDON_DNS_ENGINE", &worker.host())]);
    let dir = tempfile::tempdir().unwrap();
    let suite = suite_with_engines(dir.path(), &[(WORKER_HOSTNAME, &worker.host())]);
    let results = tempfile::tempdir().unwrap();
    let run = stack.cordon(&scenario(), &suite, results.path(), agent_env);
    eprintln!("stack on the second engine: {} checks in {:.1}s", run.results().len(), run.wall.as_secs_f64());
    let bad: Vec<_> = run
        .results()
        .into_iter()
        .filter(|(n, v, r, _)| !(as_on_the_reference(n, v, r) || (n == KNOWN && v == "known_failure")))
        .collect();
    let carried = run
        .results()
        .iter()
        .filter(|(_, _, _, e)| e.contains(&format!("by a carrier on node {WORKER_HOSTNAME}")))
        .count();
    drop(stack);
    drop(worker);
    if run.code != 0 || !bad.is_empty() || carried < 20 {
        return Err(format!("second engine: exit {}, {carried} carried: {bad:#?}\n{}", run.code, run.stderr));
    }
    Ok(())
}

fn broken_variant(dir: &Path, block: u8) -> Result<(), String> {
    let name = dir.file_name().unwrap().to_string_lossy().to_string();
    let expect: Expect = serde_saphyr::from_str(&std::fs::read_to_string(dir.join("expect.yaml")).unwrap()).unwrap();
    let overrides: Vec<PathBuf> = [dir.join("stack.yaml")].into_iter().filter(|p| p.exists()).collect();
    let stack = Deployed::up(&name, block, &overrides);
    let scenario = Some(dir.join("scenario.yaml")).filter(|p| p.exists()).unwrap_or_else(scenario);
    let results = tempfile::tempdir().unwrap();
    let run: Run = stack.cordon(&scenario, &suite(), results.path(), &[]);
    let got: BTreeMap<String, (String, String, String)> =
        run.results().into_iter().map(|(n, v, r, e)| (n, (v, r, e))).collect();
    if got.is_empty() {
        return Err(format!("{name}: no report\n{}\n{}", run.stdout, run.stderr));
    }
    let mut problems = Vec::new();
    for f in &expect.fails {
        match got.get(&f.check) {
            Some((v, r, _)) if v == "failed" && r.contains(&f.reason) => {
                eprintln!("observed: {name}: {} failed: {r}", f.check)
            }
            Some((v, r, _)) => problems.push(format!("{} should fail for {:?}; got {v}: {r}", f.check, f.reason)),
            None => problems.push(format!("no check {}", f.check)),
        }
    }
    for f in &expect.known {
        match got.get(&f.check) {
            Some((v, _, e)) if v == "known_failure" && e.contains(&f.reason) => {
                eprintln!("observed: {name}: {} known failure, evidence has {:?}", f.check, f.reason)
            }
            Some((v, r, _)) => {
                problems.push(format!("{} should be a known failure with {:?}; got {v}: {r}", f.check, f.reason))
            }
            None => problems.push(format!("no check {}", f.check)),
        }
    }
    let expected = |n: &str| expect.fails.iter().chain(&expect.known).any(|f| f.check == n) || n == KNOWN;
    for (n, (v, r, _)) in &got {
        if !as_on_the_reference(n, v, r) && !expected(n) {
            problems.push(format!("unrelated check not green: {n}: {v}: {r}"));
        }
    }
    let want = if expect.fails.is_empty() { 0 } else { 1 };
    if run.code != want {
        problems.push(format!("exit code {} (want {want}: a failed check exits 1, a correct shape 0)", run.code));
    }
    assert_no_token_in(&stack, results.path(), &[&run.stdout, &run.stderr]);
    if problems.is_empty() { Ok(()) } else { Err(format!("{name}:\n  {}\n{}", problems.join("\n  "), run.stderr)) }
}

/// No written report and no console output carries a token of the stack.
fn assert_no_token_in(stack: &Deployed, results: &Path, console: &[&str]) {
    let mut texts: Vec<(String, String)> = Vec::new();
    for entry in walk(results) {
        texts.push((entry.display().to_string(), std::fs::read_to_string(&entry).unwrap()));
    }
    texts.extend(console.iter().map(|c| ("console".to_string(), c.to_string())));
    for (name, text) in &texts {
        for (var, value) in stack.env.iter().filter(|(k, _)| k.ends_with("_TOKEN")) {
            assert!(!text.contains(value.as_str()), "{name} contains the value of {var}");
        }
    }
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() { out.extend(walk(&p)) } else { out.push(p) }
    }
    out
}

#[test]
fn every_broken_variant_has_an_expectation() {
    for entry in std::fs::read_dir(repo().join("docker/swarm/broken")).unwrap() {
        let dir = entry.unwrap().path();
        assert!(dir.join("expect.yaml").exists(), "{} has no expect.yaml", dir.display());
        assert!(
            dir.join("stack.yaml").exists() || dir.join("scenario.yaml").exists(),
            "{} breaks nothing",
            dir.display()
        );
    }
}

/// The agent a node's carrier runs: plans as lines on stdin, each for one container of
/// the node by id and pid, answered by their ask as lines on stdout, with the same
/// observation code as setns (here: this test's own namespace); a pid that is not the
/// container's is answered "gone", a line that is no plan is skipped, and the agent ends
/// once its input has and every plan has answered.
#[test]
fn the_agent_answers_every_plan_on_stdin_by_its_ask_on_stdout() {
    use std::io::Write;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let knock = serde_json::json!({"Knock": {
        "doors": [{"addr": addr.to_string(), "container": "x", "network": "lo", "via": "Direct"},
                  {"addr": "127.0.0.1:1", "container": "x", "network": "lo", "via": "Direct"}],
        "timeout": {"secs": 1, "nanos": 0},
        "ask": null
    }});
    // The engine names a container's cgroups by its id: this process's own cgroup path
    // stands in for an id here.
    let cgroups = std::fs::read_to_string("/proc/self/cgroup").unwrap();
    let ours = cgroups.lines().map(|l| l.rsplit(':').next().unwrap()).max_by_key(|p| p.len()).unwrap().to_string();
    let me = std::process::id();
    let lines = [
        serde_json::json!({"ask": 7, "container": ours, "pid": me, "label": "here", "plan": knock}).to_string(),
        "not a plan".to_string(),
        serde_json::json!({"ask": 8, "container": "f".repeat(64), "pid": me, "label": "here", "plan": knock})
            .to_string(),
    ];
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_cordon"))
        .arg("agent")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(format!("{}\n", lines.join("\n")).as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let answers: Vec<serde_json::Value> =
        String::from_utf8_lossy(&out.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(answers.len(), 2, "{answers:?}");
    let by_ask = |ask: u64| answers.iter().find(|a| a["ask"] == ask).unwrap_or_else(|| panic!("{answers:?}"));
    let knocks = by_ask(7)["observed"]["Ok"]["Knock"].as_array().unwrap_or_else(|| panic!("{answers:?}")).clone();
    assert_eq!(knocks[0]["first"], serde_json::json!({"Ok": null}), "{knocks:?}");
    assert_eq!(knocks[1]["first"], serde_json::json!({"Err": "Refused"}), "{knocks:?}");
    let gone = by_ask(8)["observed"]["Err"]["Gone"].as_str().unwrap_or_else(|| panic!("{answers:?}"));
    assert!(gone.contains("no longer a process of container"), "{gone}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("a line that is not a plan"));
}
