//! `--compare` end to end: the reference stack, then a broken variant of it
//! (docker/reference/broken/extra-tool), then the reference stack again, each run
//! compared with the history the suite keeps: its new failures (the extra tool listed, and run when called), then the same checks fixed,
//! in the console, summary.md, report.html and report.json.

mod support;

use std::path::Path;
use std::process::Command;

use serde_json::Value;
use support::stack::{Stack, repo};

struct Night {
    code: i32,
    stdout: String,
    stderr: String,
    since: Value,
    provenance: Value,
}

/// One run of the compose suite (timestamped, so each run lands in the history) compared
/// with the newest earlier run in `results/history`.
fn night(stack: &Stack, suite: &Path, results: &Path) -> Night {
    let out = Command::new(env!("CARGO_BIN_EXE_cordon"))
        .args(["compose", "--project", &stack.project, "--scenario"])
        .arg(repo().join("scenarios/reference.yaml"))
        .arg("--suite")
        .arg(suite)
        .arg("--results")
        .arg(results)
        .arg("--compare-init")
        .arg(results.join("history"))
        .envs(stack.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .output()
        .unwrap();
    let report: Value = std::fs::read_to_string(results.join("report.json"))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or(Value::Null);
    // The history copy must not be taken for "the previous run" by the next night too early.
    std::thread::sleep(std::time::Duration::from_millis(1100));
    Night {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        since: report["since"].clone(),
        provenance: report["report"]["provenance"].clone(),
    }
}

fn checks(list: &Value) -> Vec<&str> {
    list.as_array().map(|a| a.iter().filter_map(|c| c["check"].as_str()).collect()).unwrap_or_default()
}

#[test]
fn a_broken_night_between_two_good_ones_is_new_failures_then_the_same_fixed() {
    let stack = Stack::up("since", "10.151", None);
    let dir = tempfile::tempdir().unwrap();
    let suite = dir.path().join("compose.yaml");
    let text = std::fs::read_to_string(repo().join("suites/compose.yaml")).unwrap();
    std::fs::write(
        &suite,
        text.replace("outputs:\n  dir: results\n", "outputs:\n  dir: results\n  timestamped: true\n"),
    )
    .unwrap();
    let results = dir.path().join("results");

    let first = night(&stack, &suite, &results);
    assert_eq!(first.code, 0, "{}\n{}", first.stdout, first.stderr);
    assert!(first.since["previous"].is_null(), "{}", first.since);
    assert!(first.stdout.contains("does not exist yet: no earlier run to compare with"), "{}", first.stdout);

    stack.redeploy(Some(&repo().join("docker/reference/broken/extra-tool/compose.yaml")));
    let broken = night(&stack, &suite, &results);
    assert_eq!(broken.code, 1, "{}\n{}", broken.stdout, broken.stderr);
    // extra-tool breaks one provider two ways: the tool is listed, and it runs when called.
    let broken_checks = ["contract::native::call_allowlist", "contract::native::tools"];
    assert_eq!(sorted(checks(&broken.since["new_failures"])), broken_checks, "{}", broken.since);
    assert!(checks(&broken.since["fixed"]).is_empty() && checks(&broken.since["still_failing"]).is_empty());
    assert!(broken.since["previous"]["path"].as_str().unwrap().contains("/history/"), "{}", broken.since);
    // The same cordon, scenario, suite and engine both nights: the change is the platform's.
    assert!(broken.since["changed_inputs"].is_null(), "{}", broken.since);
    assert_eq!(broken.provenance, first.provenance);
    assert!(
        first.provenance["engine"].as_str().unwrap_or_default().starts_with("Docker Engine "),
        "{}",
        first.provenance
    );
    assert!(first.provenance["scenario_sha256"].as_str().unwrap_or_default().starts_with("sha256:"));
    assert!(
        broken.stdout.contains("2 new failure(s), 0 fixed, 0 still failing")
            && broken.stdout.contains("new failure   contract::native::tools: "),
        "{}",
        broken.stdout
    );
    let summary = std::fs::read_to_string(results.join("summary.md")).unwrap();
    assert!(
        summary.contains("## Since last run")
            && summary.contains("| 🆕 new failure | `contract::native::tools` | passed → failed |"),
        "{summary}"
    );

    stack.redeploy(None);
    let fixed = night(&stack, &suite, &results);
    assert_eq!(fixed.code, 0, "{}\n{}", fixed.stdout, fixed.stderr);
    assert_eq!(sorted(checks(&fixed.since["fixed"])), broken_checks, "{}", fixed.since);
    assert!(checks(&fixed.since["new_failures"]).is_empty(), "{}", fixed.since);
    let fixed_reasons = fixed.since["fixed"].as_array().unwrap();
    assert!(
        fixed_reasons.iter().all(|f| f["reason"].as_str().unwrap().contains("delete_everything")),
        "{}",
        fixed.since
    );
    assert_eq!(fixed.since["previous"]["path"], broken_path(&results), "compared with the broken night");
    assert_eq!(fixed.since["runs_looked_at"], 3);
    let html = std::fs::read_to_string(results.join("report.html")).unwrap();
    assert!(
        html.contains("<h2 id=\"since\">Since last run</h2>") && html.contains("data-change=\"fixed\""),
        "no section in report.html"
    );
}

/// The history's second-newest report.json: the broken night, as the third night saw it.
fn broken_path(results: &Path) -> String {
    let mut runs: Vec<String> = std::fs::read_dir(results.join("history"))
        .unwrap()
        .map(|e| e.unwrap().path().join("report.json").display().to_string())
        .collect();
    runs.sort();
    runs[runs.len() - 2].clone()
}

fn sorted(mut names: Vec<&str>) -> Vec<&str> {
    names.sort();
    names
}
