//! End to end on Docker: the reference stack passes every check; each broken variant in
//! docker/reference/broken/ fails exactly the checks its expect.yaml names, for the stated
//! reason, while every other check stays green. Each stack runs under its own compose
//! project and subnet and is torn down on every path.

mod support;

use std::collections::BTreeMap;

use serde::Deserialize;
use support::stack::{Stack, repo, verdicts};

#[derive(Deserialize)]
struct Expect {
    fails: Vec<Failure>,
}

#[derive(Deserialize)]
struct Failure {
    check: String,
    reason: String,
}

fn reference_scenario() -> std::path::PathBuf {
    repo().join("scenarios/reference.yaml")
}

#[test]
fn the_reference_stack_passes_every_check_twenty_times_in_a_row() {
    let stack = Stack::up("good", "10.242", None);
    let results = tempfile::tempdir().unwrap();
    let (code, stdout, stderr, report) = stack.cordon(&reference_scenario(), results.path(), &[]);
    let first = verdicts(&report);
    let not_passed: Vec<_> = first.iter().filter(|(_, v, _)| v != "passed").collect();
    assert!(code == 0 && not_passed.is_empty(), "exit {code}; not passed: {not_passed:#?}\n{stdout}\n{stderr}");
    let families: std::collections::BTreeSet<&str> =
        first.iter().map(|(n, _, _)| n.split("::").next().unwrap()).collect();
    assert_eq!(
        families.into_iter().collect::<Vec<_>>(),
        ["contract", "disabled", "reach", "route", "session", "sidecar"]
    );
    assert_eq!(first.len(), 44, "{first:#?}");
    assert_no_token_in(&stack, results.path(), &[&stdout, &stderr]);

    for run in 2..=20 {
        let (code, stdout, _, report) = stack.cordon(&reference_scenario(), results.path(), &[]);
        let again = verdicts(&report);
        let changed: Vec<_> = first.iter().zip(&again).filter(|(a, b)| a.0 != b.0 || a.1 != b.1).collect();
        assert!(
            code == 0 && changed.is_empty() && again.len() == first.len(),
            "run {run}: verdicts changed: {changed:#?}\n{stdout}"
        );
    }
}

/// Every written report and the console carry no token value of the stack.
fn assert_no_token_in(stack: &Stack, results: &std::path::Path, console: &[&str]) {
    let mut texts: Vec<(String, String)> = std::fs::read_dir(results)
        .unwrap()
        .map(|e| e.unwrap().path())
        .map(|p| (p.display().to_string(), std::fs::read_to_string(&p).unwrap()))
        .collect();
    assert_eq!(texts.len(), 4, "junit, json, markdown, html");
    texts.extend(console.iter().map(|c| ("console".to_string(), c.to_string())));
    for (name, text) in &texts {
        for (var, value) in stack.env.iter().filter(|(k, _)| k.ends_with("_TOKEN")) {
            assert!(!text.contains(value.as_str()), "{name} contains the value of {var}");
        }
    }
}

fn broken_variant(name: &str, subnet: &str) {
    let dir = repo().join("docker/reference/broken").join(name);
    let expect: Expect = serde_saphyr::from_str(&std::fs::read_to_string(dir.join("expect.yaml")).unwrap()).unwrap();
    let override_file = dir.join("compose.yaml");
    let stack = Stack::up(name, subnet, override_file.exists().then_some(override_file.as_path()));
    let scenario = dir.join("scenario.yaml");
    let scenario = if scenario.exists() { scenario } else { reference_scenario() };
    let results = tempfile::tempdir().unwrap();
    let (code, stdout, stderr, report) = stack.cordon(&scenario, results.path(), &[]);
    let got: BTreeMap<String, (String, String)> = verdicts(&report).into_iter().map(|(n, v, r)| (n, (v, r))).collect();
    assert!(!got.is_empty(), "no report:\n{stdout}\n{stderr}");
    for f in &expect.fails {
        let (verdict, reason) =
            got.get(&f.check).unwrap_or_else(|| panic!("{name}: no check {} in the report\n{stdout}", f.check));
        assert_eq!(verdict, "failed", "{name}: {} should fail for {:?}; reason: {reason}", f.check, f.reason);
        eprintln!("observed: {name}: {} failed: {reason}", f.check);
        assert!(
            reason.contains(&f.reason),
            "{name}: {} failed for the wrong reason:\n  expected: {}\n  got: {reason}",
            f.check,
            f.reason
        );
    }
    let unrelated: Vec<_> =
        got.iter().filter(|(n, (v, _))| v != "passed" && !expect.fails.iter().any(|f| &f.check == *n)).collect();
    assert!(unrelated.is_empty(), "{name}: unrelated checks are not green: {unrelated:#?}");
    assert_eq!(code, 1, "{name}: a failed check exits 1\n{stderr}");
    assert_no_token_in(&stack, results.path(), &[&stdout, &stderr]);
}

#[test]
fn broken_wildcard_route() {
    broken_variant("wildcard-route", "10.243");
}

#[test]
fn broken_shared_infra_reach() {
    broken_variant("shared-infra-reach", "10.244");
}

#[test]
fn broken_any_bearer() {
    broken_variant("any-bearer", "10.245");
}

#[test]
fn broken_disabled_401() {
    broken_variant("disabled-401", "10.246");
}

#[test]
fn broken_sidecar_second_network() {
    broken_variant("sidecar-second-network", "10.247");
}

#[test]
fn broken_sidecar_root() {
    broken_variant("sidecar-root", "10.248");
}

#[test]
fn broken_extra_tool() {
    broken_variant("extra-tool", "10.249");
}

#[test]
fn broken_read_error() {
    broken_variant("read-error", "10.250");
}

#[test]
fn every_broken_variant_has_a_test() {
    let source = std::fs::read_to_string(repo().join("tests/compose_stack.rs")).unwrap();
    for entry in std::fs::read_dir(repo().join("docker/reference/broken")).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        assert!(source.contains(&format!("broken_variant(\"{name}\"")), "docker/reference/broken/{name} has no test");
    }
}

#[test]
fn a_missing_project_is_an_infrastructure_error_that_says_what_to_do() {
    let results = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_cordon"))
        .args(["compose", "--project", "cordon-e2e-never-deployed", "--results", results.path().to_str().unwrap()])
        .args([
            "--scenario",
            reference_scenario().to_str().unwrap(),
            "--suite",
            repo().join("suites/compose.yaml").to_str().unwrap(),
        ])
        .envs(
            ["NATIVE_TOKEN", "LEGACY_TOKEN", "MODERN_TOKEN", "GITEA_TOKEN", "WIKI_TOKEN"]
                .map(|var| (var, support::stack::random_token())),
        )
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(stderr.contains("cordon-e2e-never-deployed"), "{stderr}");
}
