//! End to end on Docker: the reference stack passes every check; each broken variant in
//! docker/reference/broken/ fails exactly the checks its expect.yaml names, for the stated
//! reason, while every other check stays green. Each stack runs under its own compose
//! project and subnet and is torn down on every path.

mod support;

use std::collections::BTreeMap;

use serde::Deserialize;
use support::stack::{REFERENCE_SKIPS, Stack, as_on_the_reference, repo, verdicts};

/// What a variant must show (docker/reference/broken/<name>/expect.yaml). `{project}` in a
/// text stands for the stack's compose project.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Expect {
    /// Checks that must fail, each for a reason containing `reason` (a check may be listed
    /// more than once); every other check must pass. Empty: a correct shape.
    fails: Vec<Failure>,
    /// Text that must appear in a check's evidence.
    #[serde(default)]
    evidence: Vec<Evidence>,
    /// Checks that must have needed more than one attempt (the deployment was still starting).
    #[serde(default)]
    waits: Vec<String>,
    /// Compose services (fixture MCP servers) that must have accepted no request at all.
    #[serde(default)]
    accepts_nothing: Vec<String>,
    /// Containers the test starts by hand into the project before cordon runs.
    #[serde(default)]
    replicas: Vec<support::stack::ExtraReplica>,
    /// How many times cordon runs; every run must show the same.
    #[serde(default = "one")]
    runs: usize,
    /// A scenario error: the exit code, what stderr says, and how soon (no report).
    exit: Option<i32>,
    #[serde(default)]
    stderr: Vec<String>,
    within_seconds: Option<u64>,
}

fn one() -> usize {
    1
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Failure {
    check: String,
    reason: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Evidence {
    check: String,
    text: String,
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
    let not_passed: Vec<_> = first.iter().filter(|(n, v, r)| !as_on_the_reference(n, v, r)).collect();
    assert!(code == 0 && not_passed.is_empty(), "exit {code}; not passed: {not_passed:#?}\n{stdout}\n{stderr}");
    let skipped: Vec<&str> = first.iter().filter(|(_, v, _)| v == "skipped").map(|(n, _, _)| n.as_str()).collect();
    assert_eq!(skipped.len(), REFERENCE_SKIPS.len(), "skipped: {skipped:#?}");
    let families: std::collections::BTreeSet<&str> =
        first.iter().map(|(n, _, _)| n.split("::").next().unwrap()).collect();
    assert_eq!(
        families.into_iter().collect::<Vec<_>>(),
        ["contract", "credentials", "disabled", "reach", "route", "secrets", "session", "sidecar"]
    );
    assert_eq!(first.len(), 68, "{first:#?}");
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
    for replica in &expect.replicas {
        stack.run_replica(replica);
    }
    let scenario = dir.join("scenario.yaml");
    let scenario = if scenario.exists() { scenario } else { reference_scenario() };
    let mut first: Option<Vec<(String, String)>> = None;
    for run in 1..=expect.runs {
        let results = tempfile::tempdir().unwrap();
        let (code, stdout, stderr, report) = stack.cordon(&scenario, results.path(), &[]);
        let got = judge_variant(name, &stack, &expect, run == 1, (code, &stdout, &stderr, &report));
        assert_no_token_in(&stack, results.path(), &[&stdout, &stderr]);
        let verdicts: Vec<(String, String)> = got.into_iter().map(|(n, (v, _))| (n, v)).collect();
        match &first {
            None => first = Some(verdicts),
            Some(f) => assert_eq!(f, &verdicts, "{name}: run {run} changed verdicts"),
        }
    }
    for service in &expect.accepts_nothing {
        let (requests, accepted) = stack.accepted_requests(service);
        assert!(
            accepted.is_empty(),
            "{name}: {service} accepted requests (a credential reached it):\n{}",
            accepted.join("\n")
        );
        eprintln!(
            "observed: {name}: {service} logged {requests} request(s), every one refused for want of its credential"
        );
    }
}

/// Asserts one run of a variant; returns every check's (verdict, reason).
fn judge_variant(
    name: &str,
    stack: &Stack,
    expect: &Expect,
    print: bool,
    (code, stdout, stderr, report): (i32, &str, &str, &serde_json::Value),
) -> BTreeMap<String, (String, String)> {
    let got: BTreeMap<String, (String, String)> = verdicts(report).into_iter().map(|(n, v, r)| (n, (v, r))).collect();
    assert!(!got.is_empty(), "no report:\n{stdout}\n{stderr}");
    for f in &expect.fails {
        let (verdict, reason) =
            got.get(&f.check).unwrap_or_else(|| panic!("{name}: no check {} in the report\n{stdout}", f.check));
        let want = stack.expand(&f.reason);
        assert_eq!(verdict, "failed", "{name}: {} should fail for {want:?}; reason: {reason}", f.check);
        if print && expect.fails.iter().find(|x| x.check == f.check).is_some_and(|x| std::ptr::eq(x, f)) {
            eprintln!("observed: {name}: {} failed: {reason}", f.check);
        }
        assert!(
            reason.contains(&want),
            "{name}: {} failed for the wrong reason:\n  expected: {want}\n  got: {reason}",
            f.check
        );
    }
    let unrelated: Vec<_> = got
        .iter()
        .filter(|(n, (v, r))| !as_on_the_reference(n, v, r) && !expect.fails.iter().any(|f| &f.check == *n))
        .collect();
    assert!(unrelated.is_empty(), "{name}: unrelated checks are not green: {unrelated:#?}\n{stderr}");
    for e in &expect.evidence {
        let lines = result_of(report, &e.check)["evidence"].as_array().cloned().unwrap_or_default();
        let want = stack.expand(&e.text);
        let found = lines.iter().filter_map(|l| l.as_str()).find(|l| l.contains(&want));
        assert!(found.is_some(), "{name}: the evidence of {} says nothing like {want:?}: {lines:#?}", e.check);
        if print {
            eprintln!("observed: {name}: {} evidence: {}", e.check, found.unwrap());
        }
    }
    for check in &expect.waits {
        let attempts = result_of(report, check)["attempts"].as_u64().unwrap_or(0);
        assert!(attempts > 1, "{name}: {check} took {attempts} attempt(s), so it never waited for the provider");
        if print {
            eprintln!("observed: {name}: {check} waited: {attempts} attempts, then {}", got[check].0);
        }
    }
    let expected = if expect.fails.is_empty() { 0 } else { 1 };
    assert_eq!(code, expected, "{name}: exit code\n{stderr}");
    assert_failures_read_at_a_glance(name, expect, stdout);
    got
}

/// Most lines the console may give one failing check by default: its name, a line per
/// broken rule (five, then a count), the proving evidence (five, then a count), where the
/// probe ran and where the rest is.
const MAX_LINES_PER_FAILURE: usize = 15;

/// Every failing check is shown under `---- <check> ----` with its reason within
/// [`MAX_LINES_PER_FAILURE`] lines, and the closing list names it with its reason.
fn assert_failures_read_at_a_glance(name: &str, expect: &Expect, stdout: &str) {
    let lines: Vec<&str> = stdout.lines().collect();
    let mut blocks: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    for (i, line) in lines.iter().enumerate() {
        let Some(check) = line.strip_prefix("---- ").and_then(|l| l.strip_suffix(" ----")) else { continue };
        let block: Vec<&str> = lines[i..].iter().take_while(|l| !l.is_empty()).copied().collect();
        blocks.insert(check.to_string(), block);
    }
    for f in &expect.fails {
        let block =
            blocks.get(&f.check).unwrap_or_else(|| panic!("{name}: no `---- {} ----` block:\n{stdout}", f.check));
        assert!(
            block.len() <= MAX_LINES_PER_FAILURE,
            "{name}: {} takes {} lines on the console, more than {MAX_LINES_PER_FAILURE}:\n{}",
            f.check,
            block.len(),
            block.join("\n")
        );
        assert!(
            lines.iter().any(|l| l.starts_with(&format!("    {}: ", f.check))),
            "{name}: the closing list does not name {} with its reason:\n{stdout}",
            f.check
        );
    }
}

fn result_of<'a>(report: &'a serde_json::Value, check: &str) -> &'a serde_json::Value {
    report["report"]["results"]
        .as_array()
        .and_then(|rs| rs.iter().find(|r| r["name"] == check))
        .unwrap_or_else(|| panic!("no check {check} in the report"))
}

/// A scenario that does not match the deployment stops before any check, at once.
fn scenario_error(stack: &Stack, scenario: &std::path::Path, expect: &Expect, exit: i32) {
    let results = tempfile::tempdir().unwrap();
    let started = std::time::Instant::now();
    let (code, stdout, stderr, _) = stack.cordon(scenario, results.path(), &[]);
    let took = started.elapsed();
    eprintln!("observed: {}: exit {code} after {took:.1?}: {}", scenario.display(), stderr.trim());
    assert_eq!(code, exit, "{stdout}\n{stderr}");
    for text in &expect.stderr {
        assert!(stderr.contains(&stack.expand(text)), "stderr says nothing like {text:?}:\n{stderr}");
    }
    if let Some(within) = expect.within_seconds.map(std::time::Duration::from_secs) {
        assert!(took < within, "took {took:?}, more than {within:?}: it waited instead of stopping");
    }
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
fn broken_init_logs_bearer() {
    broken_variant("init-logs-bearer", "10.227");
}

#[test]
fn correct_init_logs_nothing() {
    broken_variant("init-logs-nothing", "10.228");
}

#[test]
fn broken_retired_in_secret_file() {
    broken_variant("retired-in-secret-file", "10.229");
}

#[test]
fn broken_sidecar_egress_outsider() {
    broken_variant("sidecar-egress-outsider", "10.193");
}

#[test]
fn correct_disabled_keeps_own_token() {
    broken_variant("disabled-keeps-own-token", "10.194");
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
fn every_listener_extra_port() {
    // Shares its subnet with the scenario-error stack: they take turns (support::stack).
    broken_variant("extra-listener", "10.212");
}

#[test]
fn published_port_reach() {
    broken_variant("published-port", "10.201");
}

#[test]
fn not_ready_is_not_isolation_correct() {
    broken_variant("listen-delay", "10.202");
}

#[test]
fn not_ready_is_not_isolation_leak() {
    broken_variant("listen-delay-leak", "10.203");
}

#[test]
fn every_replica_open_replica() {
    broken_variant("open-replica", "10.204");
}

#[test]
fn every_replica_even_one_the_first_client_cannot_reach() {
    broken_variant("open-replica-elsewhere", "10.219");
}

#[test]
fn every_replica_extra_tool() {
    broken_variant("replica-extra-tool", "10.205");
}

#[test]
fn hosts_file_pin() {
    broken_variant("hosts-pin", "10.206");
}

#[test]
fn shared_network_namespace_passes() {
    broken_variant("shared-netns", "10.207");
}

#[test]
fn route_names_the_container_behind_an_alias() {
    broken_variant("alias-elsewhere", "10.208");
}

#[test]
fn route_names_the_container_behind_a_dns_record() {
    broken_variant("dns-record-elsewhere", "10.218");
}

#[test]
fn same_origin_redirect_passes() {
    broken_variant("same-origin-redirect", "10.209");
}

#[test]
fn cross_origin_redirect() {
    broken_variant("cross-origin-redirect", "10.210");
}

#[test]
fn same_origin_redirects_are_followed_three_hops_at_most() {
    broken_variant("redirect-loop", "10.216");
}

#[test]
fn disabled_credential_on_a_leftover() {
    broken_variant("wiki-leftover", "10.213");
}

#[test]
fn disabled_credential_on_a_consumers_network_and_another_port() {
    broken_variant("wiki-leftover-elsewhere", "10.217");
}

#[test]
fn disabled_credential_on_a_leftover_of_another_transport_and_path() {
    broken_variant("wiki-leftover-sse", "10.213");
}

#[test]
fn disabled_credential_on_a_container_of_no_project() {
    broken_variant("wiki-outsider", "10.213");
}

#[test]
fn call_allowlist_a_gateway_that_filters_only_the_listing() {
    broken_variant("gateway-lists-only", "10.181");
}

#[test]
fn arguments_an_adapter_that_ignores_undeclared_arguments() {
    broken_variant("lax-arguments", "10.182");
}

#[test]
fn limits_no_request_size_limit() {
    broken_variant("no-request-limit", "10.183");
}

#[test]
fn limits_pages_ten_times_page_size() {
    broken_variant("pages-too-big", "10.184");
}

#[test]
fn credentials_a_retired_credential_still_accepted() {
    broken_variant("retired-alive", "10.185");
}

#[test]
fn credentials_a_retired_credential_still_held_by_a_client() {
    broken_variant("retired-held", "10.186");
}

#[test]
fn credentials_a_removed_consumers_credential_still_accepted() {
    broken_variant("revoked-alive", "10.187");
}

#[test]
fn credentials_a_rotation_done_right_passes() {
    broken_variant("rotation-done", "10.192");
}

#[test]
fn secrets_a_provider_that_logs_the_bearer() {
    broken_variant("logs-bearer", "10.188");
}

#[test]
fn secrets_a_provider_that_logs_the_bearer_base64_encoded() {
    broken_variant("logs-bearer-base64", "10.189");
}

#[test]
fn secrets_a_provider_url_with_its_key_in_the_path() {
    broken_variant("key-in-url", "10.190");
}

#[test]
fn egress_a_sidecar_that_reaches_another_provider() {
    broken_variant("sidecar-egress", "10.191");
}

/// Scenarios that name what the deployment does not have: one stack, each scenario in turn.
#[test]
fn scenarios_naming_what_the_deployment_lacks_stop_at_once_with_exit_2() {
    let stack = Stack::up("scenario-errors", "10.212", None);
    for name in ["unknown-network", "unknown-service"] {
        let dir = repo().join("docker/reference/broken").join(name);
        let expect: Expect =
            serde_saphyr::from_str(&std::fs::read_to_string(dir.join("expect.yaml")).unwrap()).unwrap();
        scenario_error(&stack, &dir.join("scenario.yaml"), &expect, expect.exit.expect("a scenario error"));
    }
}

#[test]
fn app_behind_the_sidecar_reached_directly() {
    broken_variant("app-reach", "10.214");
}

#[test]
fn sidecar_checks_cover_every_replica() {
    broken_variant("sidecar-replica", "10.215");
}

/// Issue 14 item 9: `internal: true` networks, where unknown names time out (must pass).
#[test]
fn broken_internal_networks() {
    broken_variant("internal-networks", "10.224");
}

/// Issue 14 item 4: a dual-stack provider listening on IPv6 only (must pass).
#[test]
fn broken_ipv6_only_listener() {
    broken_variant("ipv6-only-listener", "10.225");
}

/// Issue 14 item 4: IPv6 is not isolated between user networks (Docker 20.10).
#[test]
fn broken_ipv6_lateral() {
    broken_variant("ipv6-lateral", "10.226");
}

#[test]
fn every_broken_variant_has_a_test() {
    let source = std::fs::read_to_string(repo().join("tests/compose_stack.rs")).unwrap();
    for entry in std::fs::read_dir(repo().join("docker/reference/broken")).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        assert!(source.contains(&format!("\"{name}\"")), "docker/reference/broken/{name} has no test");
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
        .envs(cordon::demo::TOKEN_VARS.map(|var| (var, support::stack::random_token())))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(stderr.contains("cordon-e2e-never-deployed"), "{stderr}");
}
