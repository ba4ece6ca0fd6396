//! Discovery against an engine that accepts and never answers, in compose and in swarm:
//! the suite's connect timeout and deadline bound the run, and the reports still say
//! what was planned and why none of it ran (exit 3), so a CI job reading JUnit sees the
//! infrastructure failure instead of a missing file.

use std::os::unix::net::UnixListener;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use rstest::rstest;

/// The platform example's scenario and its credential files, in a fresh directory.
fn workdir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    std::fs::create_dir_all(dir.path().join("secrets")).unwrap();
    std::fs::copy(repo.join("examples/platform/scenario.yaml"), dir.path().join("scenario.yaml")).unwrap();
    for name in ["notes", "search", "archive"] {
        std::fs::write(dir.path().join("secrets").join(name), format!("token-of-{name}-0123456789")).unwrap();
    }
    dir
}

/// A suite of `mode` with a 1 s connect timeout and a 2 s deadline.
fn suite(dir: &Path, mode: &str) -> std::path::PathBuf {
    let path = dir.join("suite.yaml");
    let text = format!(
        "mode: {mode}\nfamilies: [route, reach, session, contract]\ntimeouts:\n  connect: 1s\n  read: 1s\n  deadline: 2s\n  retry_interval: 500ms\n"
    );
    std::fs::write(&path, text).unwrap();
    path
}

#[rstest]
#[case::compose("compose", "--project")]
#[case::swarm("swarm", "--stack")]
fn a_stalled_engine_ends_the_run_by_the_deadline_with_reports(#[case] mode: &str, #[case] target: &str) {
    let dir = workdir();
    let socket = dir.path().join("stalled.sock");
    // Accepts connections (the kernel's backlog does) and never answers one.
    let _listener = UnixListener::bind(&socket).unwrap();
    let suite = suite(dir.path(), mode);
    let results = dir.path().join("results");
    let started = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_cordon"))
        .args([mode, target, "platform", "--scenario", "scenario.yaml"])
        .arg("--suite")
        .arg(&suite)
        .arg("--results")
        .arg(&results)
        .env("DOCKER_HOST", format!("unix://{}", socket.display()))
        .current_dir(dir.path())
        .output()
        .unwrap();
    let took = started.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{mode}: {stderr}");
    // The deadline (2 s) + one exchange limit (the 1 s connect) + 1 s.
    assert!(took < Duration::from_secs(4), "{mode}: took {took:?}: {stderr}");
    assert!(stderr.contains("no answer within 2.0s"), "{mode}: {stderr}");
    let junit = std::fs::read_to_string(results.join("junit.xml")).unwrap_or_else(|e| panic!("{mode}: junit.xml: {e}"));
    assert!(junit.contains("route::assistant-&gt;notes") || junit.contains("route::assistant->notes"), "{junit}");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(results.join("report.json")).unwrap()).unwrap();
    assert_eq!(report["exit_code"], 3, "{report}");
    let checks = report["report"]["results"].as_array().expect("results in report.json");
    assert!(!checks.is_empty(), "{report}");
    for check in checks {
        assert_eq!(check["verdict"], "unreachable", "{check}");
        assert!(check["reason"].as_str().unwrap_or_default().starts_with("not run: "), "{check}");
    }
}
