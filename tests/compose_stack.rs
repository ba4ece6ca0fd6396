//! End to end on Docker: the reference stack passes every check; each variant in
//! docker/reference/broken/ fails exactly the checks its expect.yaml names, for the stated
//! reason, while every other check stays green. Each stack runs under its own compose
//! project and subnet and is torn down on every path.
//!
//! The variants are data: a folder with an `expect.yaml` (and a compose override, a
//! scenario, or both) is a test named `variant::<folder>`, so adding a variant is adding
//! a folder. The runner is libtest-mimic (`harness = false`): `cargo test --test
//! compose_stack -- variant::hosts-pin` runs one, and the usual filters and
//! `--test-threads` apply. Stacks are mostly waits on the engine, so by default
//! [`STACKS_AT_ONCE`] run side by side, each on a subnet block of its own.

mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use libtest_mimic::{Arguments, Failed, Trial};
use serde::Deserialize;
use support::stack::{REFERENCE_SKIPS, Stack, as_on_the_reference, repo, reviewed_pairs, verdicts};

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
    /// Services restarted just before cordon runs, so their start-up (a listen delay) is
    /// under way when it does however long the stack took to come up.
    #[serde(default)]
    restart: Vec<String>,
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
    /// Pairs (`client -> provider`) a `cordon init` draft of the variant must admit for
    /// review beyond the reference stack's own (the stray pairs it shows).
    #[serde(default)]
    init_strays: Vec<String>,
    /// Every pair the draft must admit, where the variant's providers differ from the
    /// reference stack's (instead of `init_strays`).
    #[serde(default)]
    init_pairs: Vec<String>,
    /// The stack's subnet block (`10.x`, i.e. 10.x.0.0/16), one no other variant has.
    subnet: String,
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

/// Stacks brought up, judged and torn down at once when `--test-threads` is not given.
const STACKS_AT_ONCE: usize = 4;

fn main() {
    let mut args = Arguments::from_args();
    if args.test_threads.is_none() && std::env::var_os("RUST_TEST_THREADS").is_none() {
        args.test_threads = Some(STACKS_AT_ONCE);
    }
    const REFERENCE: &str = "the_reference_stack_passes_every_check_twenty_times_in_a_row";
    let reference_runs = !args.list
        && !args.ignored
        && args
            .filter
            .as_ref()
            .is_none_or(|f| if args.exact { f == REFERENCE } else { REFERENCE.contains(f.as_str()) })
        && !args.skip.iter().any(|s| REFERENCE.contains(s.as_str()));
    if !reference_runs {
        FIRST_REFERENCE_RUN.open();
    }
    let mut trials = vec![
        Trial::test(REFERENCE, || caught(the_reference_stack_passes_every_check_twenty_times_in_a_row)),
        Trial::test("every_variant_states_its_expectations", || caught(every_variant_states_its_expectations)),
        Trial::test("a_missing_project_is_an_infrastructure_error_that_says_what_to_do", || {
            caught(a_missing_project_is_an_infrastructure_error_that_says_what_to_do)
        }),
    ];
    for dir in variant_dirs() {
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        trials.push(Trial::test(format!("variant::{name}"), move || {
            FIRST_REFERENCE_RUN.wait(std::time::Duration::from_secs(150));
            caught(move || variant(&dir))
        }));
    }
    libtest_mimic::run(&args, trials).exit();
}

/// The variants' stacks come up once the reference stack's first run is over: that run
/// is the one that shows a correct deployment passes, and six stacks booting beside it on
/// two cores (with the swarm lane's) starved its servers past their answer timeouts.
static FIRST_REFERENCE_RUN: Gate = Gate::new();

struct Gate {
    open: std::sync::Mutex<bool>,
    opened: std::sync::Condvar,
}

impl Gate {
    const fn new() -> Self {
        Gate { open: std::sync::Mutex::new(false), opened: std::sync::Condvar::new() }
    }

    fn open(&self) {
        *self.open.lock().unwrap_or_else(|p| p.into_inner()) = true;
        self.opened.notify_all();
    }

    /// Waits until the gate opens, or `at_most`.
    fn wait(&self, at_most: std::time::Duration) {
        let open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        let _ = self.opened.wait_timeout_while(open, at_most, |open| !*open);
    }
}

/// Opens the gate when dropped: after the first run, or when the test ends early.
struct OpensOnDrop(&'static Gate);

impl Drop for OpensOnDrop {
    fn drop(&mut self) {
        self.0.open();
    }
}

/// A test body that asserts (panics) as a libtest-mimic outcome, with the panic's message.
fn caught(body: impl FnOnce() + std::panic::UnwindSafe) -> Result<(), Failed> {
    std::panic::catch_unwind(body).map_err(|panic| {
        let text = panic
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "panicked".into());
        Failed::from(text)
    })
}

fn variant_dirs() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(repo().join("docker/reference/broken"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    dirs
}

fn expect_of(dir: &Path) -> Expect {
    let path = dir.join("expect.yaml");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// One variant: a scenario error (`exit:`) stops before any check, anything else is
/// deployed and judged.
fn variant(dir: &Path) {
    let expect = expect_of(dir);
    match expect.exit {
        Some(exit) => {
            let name = dir.file_name().unwrap().to_string_lossy();
            let stack = Stack::up(&name, &expect.subnet, None);
            scenario_error(&stack, &dir.join("scenario.yaml"), &expect, exit);
        }
        None => broken_variant(dir, &expect),
    }
}

fn the_reference_stack_passes_every_check_twenty_times_in_a_row() {
    let first_run = OpensOnDrop(&FIRST_REFERENCE_RUN);
    let stack = Stack::up("good", "10.242", None);
    let results = tempfile::tempdir().unwrap();
    let (code, stdout, stderr, report) = stack.cordon(&reference_scenario(), results.path(), &[]);
    drop(first_run);
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
    assert_eq!(first.len(), 69, "{first:#?}");
    // The adapter image the deploy built is the one the sidecar runs (the pin is not skipped).
    assert!(first.iter().any(|(n, v, _)| n == "sidecar::gitea::image" && v == "passed"), "{first:#?}");
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
    a_drafted_scenario_passes_on_the_stack_it_was_drafted_from(&stack);
}

/// What `cordon init` admits on the reference stack: the scenario's pairs, and the gitea
/// app, which shares net-gitea with its sidecar (reachability today, for review).
const REFERENCE_DRAFT_PAIRS: [&str; 7] = [
    "flowise -> native",
    "gitea -> gitea-mcp",
    "n8n -> modern",
    "webui -> gitea-mcp",
    "webui -> legacy",
    "webui -> modern",
    "webui -> native",
];

/// `cordon init` drafts a scenario from the running reference stack (no metadata, no hand
/// work), and `cordon compose` passes it: the draft holds what the stack does.
fn a_drafted_scenario_passes_on_the_stack_it_was_drafted_from(stack: &Stack) {
    let dir = tempfile::tempdir().unwrap();
    let (code, draft, stderr) = stack.init(dir.path());
    assert_eq!(code, 0, "cordon init: {stderr}");
    let text = std::fs::read_to_string(&draft).unwrap();
    assert_eq!(reviewed_pairs(&text), REFERENCE_DRAFT_PAIRS, "{text}");
    for (var, value) in stack.env.iter().filter(|(k, _)| k.ends_with("_TOKEN")) {
        assert!(!text.contains(value.as_str()) && !stderr.contains(value.as_str()), "the draft holds {var}'s value");
    }
    let results = tempfile::tempdir().unwrap();
    let (code, stdout, stderr, report) = stack.cordon(&draft, results.path(), &[]);
    let not_passed: Vec<_> =
        verdicts(&report).into_iter().filter(|(_, v, _)| v != "passed" && v != "skipped").collect();
    assert!(code == 0 && not_passed.is_empty(), "exit {code}; not passed: {not_passed:#?}\n{text}\n{stdout}\n{stderr}");
    let passed = verdicts(&report).iter().filter(|(_, v, _)| v == "passed").count();
    assert!(passed >= 40, "the draft proves little: {passed} checks passed\n{stdout}");
    let summary = stdout.lines().rev().find(|l| l.starts_with("cordon: ")).unwrap_or("");
    eprintln!("observed: a scenario drafted by cordon init, run on the stack it was drafted from: {summary}");
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

fn broken_variant(dir: &Path, expect: &Expect) {
    let name = &*dir.file_name().unwrap().to_string_lossy();
    let override_file = dir.join("compose.yaml");
    let stack = Stack::up(name, &expect.subnet, override_file.exists().then_some(override_file.as_path()));
    for replica in &expect.replicas {
        stack.run_replica(replica);
    }
    let scenario = dir.join("scenario.yaml");
    let scenario = if scenario.exists() { scenario } else { reference_scenario() };
    let mut first: Option<Vec<(String, String)>> = None;
    for run in 1..=expect.runs {
        for service in &expect.restart {
            stack.restart(service);
        }
        let results = tempfile::tempdir().unwrap();
        let (code, stdout, stderr, report) = stack.cordon(&scenario, results.path(), &[]);
        let got = judge_variant(name, &stack, expect, run == 1, (code, &stdout, &stderr, &report));
        assert_no_token_in(&stack, results.path(), &[&stdout, &stderr]);
        let verdicts: Vec<(String, String)> = got.into_iter().map(|(n, (v, _))| (n, v)).collect();
        match &first {
            None => first = Some(verdicts),
            Some(f) => assert_eq!(f, &verdicts, "{name}: run {run} changed verdicts"),
        }
    }
    if !expect.init_strays.is_empty() || !expect.init_pairs.is_empty() {
        a_draft_shows_the_stray_pairs(name, &stack, expect);
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

/// `cordon init` on a broken variant admits its stray pairs, each on a `# review` line,
/// beside the reference stack's own.
fn a_draft_shows_the_stray_pairs(name: &str, stack: &Stack, expect: &Expect) {
    let dir = tempfile::tempdir().unwrap();
    let (code, draft, stderr) = stack.init(dir.path());
    assert_eq!(code, 0, "{name}: cordon init: {stderr}");
    let text = std::fs::read_to_string(&draft).unwrap();
    let mut want: Vec<String> = if expect.init_pairs.is_empty() {
        REFERENCE_DRAFT_PAIRS.iter().map(|p| p.to_string()).chain(expect.init_strays.iter().cloned()).collect()
    } else {
        expect.init_pairs.clone()
    };
    want.sort();
    assert_eq!(reviewed_pairs(&text), want, "{name}:\n{text}");
    for stray in want.iter().filter(|p| !REFERENCE_DRAFT_PAIRS.contains(&p.as_str())) {
        let line = text.lines().find(|l| l.contains(&format!("# review: {stray}: "))).unwrap();
        eprintln!("observed: {name}: cordon init: {}", line.trim());
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
    assert!(
        unrelated.is_empty(),
        "{name}: unrelated checks are not green: {unrelated:#?}\nhost load average: {}\n{stderr}",
        std::fs::read_to_string("/proc/loadavg").unwrap_or_default().trim()
    );
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

/// Every folder states what it shows: a subnet, a failure or a correct shape, and
/// something to deploy or a scenario to judge.
fn every_variant_states_its_expectations() {
    let mut blocks: BTreeMap<String, String> = BTreeMap::new();
    for dir in variant_dirs() {
        let expect = expect_of(&dir);
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        // Docker 20.10 sometimes cannot remove a network after its containers are gone (a
        // stale endpoint, seen on dnsnet once a run): its block stays taken until dockerd
        // restarts, and a second variant on that block would fail to come up.
        if let Some(other) = blocks.insert(expect.subnet.clone(), name.clone()) {
            panic!("{name} and {other} share the subnet block {}: give each its own", expect.subnet);
        }
        assert!(
            expect.subnet.starts_with("10.") && expect.subnet.split('.').count() == 2,
            "{}: subnet {:?} is not a 10.x block",
            dir.display(),
            expect.subnet
        );
        assert!(
            dir.join("compose.yaml").exists() || dir.join("scenario.yaml").exists() || !expect.replicas.is_empty(),
            "{}: changes nothing of the reference stack",
            dir.display()
        );
    }
}

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
        .env(support::stack::STAND_IN_DIGEST.0, support::stack::STAND_IN_DIGEST.1)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(stderr.contains("cordon-e2e-never-deployed"), "{stderr}");
}
