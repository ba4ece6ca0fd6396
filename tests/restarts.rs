//! Kill, pause and restart during a run, end to end on the reference stack: a client and
//! a provider restarted while `cordon compose` runs are found again (new pids, new
//! namespaces) within the deadline; a paused provider ends the run with its checks
//! unreachable by deadline + one exchange limit + 1 s (its full accept queue proves no
//! route and no isolation); nothing is left running.

mod support;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use support::stack::{REFERENCE_SKIPS, Stack, as_on_the_reference, repo, verdicts};

/// The compose suite with the timeouts these tests bound.
fn suite(dir: &Path, deadline: &str) -> std::path::PathBuf {
    let text = format!(
        "mode: compose\nfamilies: [route, reach, session, contract, disabled, sidecar]\n\
         timeouts: {{ connect: 1s, read: 2s, exchange: 5s, deadline: {deadline}, retry_interval: 500ms, sse_max_duration: 5s }}\n\
         limits: {{ max_response_bytes: 4MiB, max_pages: 20 }}\nconcurrency: 8\n"
    );
    let path = dir.join("suite.yaml");
    std::fs::write(&path, text).unwrap();
    path
}

fn spawn_cordon(stack: &Stack, suite: &Path, results: &Path) -> Child {
    Command::new(env!("CARGO_BIN_EXE_cordon"))
        .args(["compose", "--project", &stack.project, "--scenario"])
        .arg(repo().join("scenarios/reference.yaml"))
        .arg("--suite")
        .arg(suite)
        .arg("--results")
        .arg(results)
        .envs(stack.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn cordon")
}

fn container(stack: &Stack, service: &str) -> String {
    let out = Command::new("docker")
        .args(["ps", "-q", "--filter"])
        .arg(format!("label=com.docker.compose.project={}", stack.project))
        .args(["--filter", &format!("label=com.docker.compose.service={service}")])
        .output()
        .unwrap();
    let ids = String::from_utf8_lossy(&out.stdout).lines().map(str::to_string).collect::<Vec<_>>();
    assert_eq!(ids.len(), 1, "one running {service} container, got {ids:?}");
    ids[0].clone()
}

fn pid_of(id: &str) -> String {
    let out = Command::new("docker").args(["inspect", "-f", "{{.State.Pid}}", id]).output().unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn docker(args: &[&str]) {
    let out = Command::new("docker").args(args).output().unwrap();
    assert!(out.status.success(), "docker {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

fn report_of(results: &Path) -> Value {
    std::fs::read_to_string(results.join("report.json"))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or(Value::Null)
}

/// Nothing of the stack is left once it is dropped.
fn assert_nothing_left(project: &str) {
    let out = Command::new("docker")
        .args(["ps", "-aq", "--filter", &format!("label=com.docker.compose.project={project}")])
        .output()
        .unwrap();
    assert!(out.stdout.is_empty(), "containers left behind: {}", String::from_utf8_lossy(&out.stdout));
}

#[test]
fn a_client_and_a_provider_restarted_during_a_run_are_found_again() {
    let stack = Stack::up("restart", "10.220", None);
    let project = stack.project.clone();
    let dir = tempfile::tempdir().unwrap();
    let suite = suite(dir.path(), "60s");
    let results = dir.path().join("results");
    let (webui, native) = (container(&stack, "webui"), container(&stack, "native"));
    let before = (pid_of(&webui), pid_of(&native));

    let started = Instant::now();
    let cordon = spawn_cordon(&stack, &suite, &results);
    // Discovery has seen both containers by now; their checks are queued or running.
    std::thread::sleep(Duration::from_millis(700));
    docker(&["restart", "-t", "1", &webui, &native]);
    let restarted_at = started.elapsed();
    let out = cordon.wait_with_output().unwrap();
    let took = started.elapsed();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    let after = (pid_of(&webui), pid_of(&native));
    assert!(before.0 != after.0 && before.1 != after.1, "the restarts gave new pids: {before:?} → {after:?}");

    let report = report_of(&results);
    let all = verdicts(&report);
    let retried: Vec<String> = report["report"]["results"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .filter(|r| r["attempts"].as_u64().unwrap_or(1) > 1)
        .map(|r| format!("{} ({} attempts)", r["name"].as_str().unwrap_or(""), r["attempts"]))
        .collect();
    eprintln!("MEASURED restart: restart done at {restarted_at:?}, run took {took:?}; retried: {retried:?}");
    let not_passed: Vec<_> = all.iter().filter(|(n, v, r)| !as_on_the_reference(n, v, r)).collect();
    assert!(
        out.status.code() == Some(0) && not_passed.is_empty(),
        "exit {:?}; not passed: {not_passed:#?}\n{stdout}\n{stderr}",
        out.status.code()
    );
    assert!(took > restarted_at, "the run outlived the restart ({restarted_at:?} vs {took:?})");
    assert!(took < Duration::from_secs(60), "recovered within the deadline, took {took:?}");
    drop(stack);
    assert_nothing_left(&project);
}

/// Unpauses on every path, so the stack can be torn down.
struct Paused(String);

impl Drop for Paused {
    fn drop(&mut self) {
        let _ = Command::new("docker").args(["unpause", &self.0]).output();
    }
}

/// Connections to a paused container until its accept queue is full: the kernel
/// completes handshakes for a frozen process until the queue holds `backlog + 1`, then
/// drops every SYN. Held open until dropped, so the queue stays full for the run.
fn fill_accept_queue(container: &str, port: u16) -> Vec<std::net::TcpStream> {
    let out = Command::new("docker")
        .args(["inspect", "-f", "{{range .NetworkSettings.Networks}}{{.IPAddress}} {{end}}", container])
        .output()
        .unwrap();
    let ip = String::from_utf8_lossy(&out.stdout).split_whitespace().next().expect("an IPv4 address").to_string();
    let addr: std::net::SocketAddr = format!("{ip}:{port}").parse().unwrap();
    let mut held = Vec::new();
    while let Ok(stream) = std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(300)) {
        held.push(stream);
        assert!(held.len() < 5000, "{addr} took 5000 connections while paused: is it paused?");
    }
    eprintln!("MEASURED pause: {addr} took {} connections, then dropped SYNs", held.len());
    held
}

/// A paused provider whose accept queue is full drops every SYN, from an admitted client
/// and a non-admitted one alike: cordon proves neither route nor isolation there (a
/// silence that is the provider's own), and ends every check about it unreachable by
/// deadline + one exchange limit + 1 s. Nothing else is judged otherwise than on the
/// reference.
#[test]
fn a_paused_provider_ends_the_run_unreachable_by_the_bound() {
    let stack = Stack::up("pause", "10.221", None);
    let project = stack.project.clone();
    let dir = tempfile::tempdir().unwrap();
    let suite = suite(dir.path(), "15s");
    let results = dir.path().join("results");
    let native = container(&stack, "native");
    docker(&["pause", &native]);
    let paused = Paused(native);
    let queue = fill_accept_queue(&paused.0, 8000);

    let started = Instant::now();
    let out = spawn_cordon(&stack, &suite, &results).wait_with_output().unwrap();
    let took = started.elapsed();
    drop(queue);
    drop(paused);
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    let bound = Duration::from_secs(15 + 5 + 1);
    eprintln!("MEASURED pause: run took {took:?} (bound {bound:?}), exit {:?}", out.status.code());
    assert!(took <= bound, "a paused provider held the run {took:?}, over {bound:?}\n{stderr}");
    assert_eq!(out.status.code(), Some(3), "unreachable is an infrastructure error\n{stdout}\n{stderr}");

    let all = verdicts(&report_of(&results));
    let about_native = |n: &str| {
        n.starts_with("contract::native::")
            || n.ends_with("->native")
            // A sidecar's egress cannot be proven closed towards a provider that drops every SYN.
            || n.ends_with("::egress")
    };
    let native_checks: Vec<_> = all
        .iter()
        .filter(|(n, _, _)| about_native(n))
        .filter(|(n, _, _)| !REFERENCE_SKIPS.iter().any(|(skipped, _)| skipped == n))
        .collect();
    let connects_only = |n: &str| n.starts_with("route::") || n.starts_with("reach::") || n.ends_with("::egress");
    assert!(native_checks.iter().filter(|(n, _, _)| connects_only(n)).count() >= 4, "{all:#?}");
    assert!(native_checks.len() >= 10, "{all:#?}");
    for (name, verdict, reason) in &native_checks {
        eprintln!("observed: {name}: {verdict}: {reason}");
        assert_eq!(verdict, "unreachable", "{name}: {reason}");
        assert!(reason.contains("15s deadline"), "{name}: {reason}");
        if connects_only(name) {
            assert!(reason.contains("takes no connections: its accept queue is full"), "{name}: {reason}");
        }
    }
    let others: Vec<_> = all
        .iter()
        .filter(|(n, v, r)| !as_on_the_reference(n, v, r) && !native_checks.iter().any(|(m, _, _)| m == n))
        .collect();
    assert!(others.is_empty(), "only the paused provider's checks may be unreachable: {others:#?}");
    drop(stack);
    assert_nothing_left(&project);
}

#[test]
fn a_client_killed_during_a_run_ends_its_checks_unreachable_by_the_bound() {
    let stack = Stack::up("kill", "10.222", None);
    let project = stack.project.clone();
    let dir = tempfile::tempdir().unwrap();
    let suite = suite(dir.path(), "15s");
    let results = dir.path().join("results");
    let flowise = container(&stack, "flowise");

    let started = Instant::now();
    let child = spawn_cordon(&stack, &suite, &results);
    std::thread::sleep(Duration::from_millis(500));
    docker(&["kill", &flowise]);
    let out = child.wait_with_output().unwrap();
    let took = started.elapsed();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    let bound = Duration::from_secs(15 + 5 + 1);
    eprintln!("MEASURED kill: run took {took:?} (bound {bound:?}), exit {:?}", out.status.code());
    assert!(took <= bound, "a killed client held the run {took:?}, over {bound:?}\n{stderr}");
    assert_eq!(out.status.code(), Some(3), "a gone client is an infrastructure error\n{stdout}\n{stderr}");

    let all = verdicts(&report_of(&results));
    assert!(!all.is_empty(), "the reports are written on an infrastructure error too\n{stderr}");
    let failed: Vec<_> = all.iter().filter(|(_, v, _)| v == "failed").collect();
    assert!(failed.is_empty(), "a killed client is no contract violation: {failed:#?}");
    let flowise_checks: Vec<_> = all.iter().filter(|(n, _, _)| n.contains("flowise")).collect();
    assert!(!flowise_checks.is_empty(), "{all:#?}");
    // A check that finished before the kill may have passed; none may fail, and those
    // still running when the client went end unreachable.
    for (name, verdict, reason) in &flowise_checks {
        eprintln!("observed: {name}: {verdict}: {reason}");
        assert!(verdict == "unreachable" || verdict == "passed", "{name}: {verdict}: {reason}");
    }
    assert!(
        flowise_checks.iter().any(|(_, v, _)| v == "unreachable"),
        "the kill came after the run: {flowise_checks:#?}"
    );
    drop(stack);
    assert_nothing_left(&project);
}
