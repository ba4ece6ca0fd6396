//! One run, end to end: plan → select → run → report → exit code.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Instant, SystemTime};

use libtest_mimic::Arguments;

use crate::check::{Check, RunClock, RunContext};
use crate::checks;
use crate::compare::{self, CompareRequest, Earlier};
use crate::config::{ConfigErrors, Mode, Outputs, Scenario, Suite};
use crate::deployment::{Deployment, DiscoveryError};
use crate::exit::Ending;
use crate::interrupt;
use crate::model::{CheckName, CheckResult, RunReport, Verdict};
use crate::netns::NsPool;
use crate::report::failure::EvidenceLevel;
use crate::report::live::{LiveConsole, LiveEvents};
use crate::report::{self, console};
use crate::runner;
use crate::secret::Redactor;

pub struct RunRequest {
    pub scenario: Scenario,
    pub suite: Suite,
    pub redactor: Redactor,
    pub tests: Arguments,
    /// Every filter given (`route:: reach::`): a check any of them matches is selected.
    pub filters: Vec<String>,
    /// How much of a failed check's evidence the console prints.
    pub evidence: EvidenceLevel,
    pub results_dir: Option<PathBuf>,
    /// The compose project; overrides the scenario's `project`.
    pub project: Option<String>,
    /// `--compare`: earlier runs to say what changed since.
    pub compare: Option<CompareRequest>,
}

fn mode_name(mode: Mode) -> &'static str {
    match mode {
        Mode::Host => "host",
        Mode::Compose => "compose",
        Mode::Swarm => "swarm",
    }
}

pub fn report_config_errors(what: &str, errors: &ConfigErrors, redactor: &Redactor) -> Ending {
    eprintln!("error: invalid {what}:");
    for e in &errors.0 {
        eprintln!("  {}", crate::text::sanitize(&redactor.redact(&e.to_string())));
    }
    Ending::Usage
}

pub fn execute(request: RunRequest) -> Ending {
    let RunRequest { scenario, mut suite, redactor, tests, filters, evidence, results_dir, project, compare } = request;
    if let Some(threads) = tests.test_threads {
        // libtest's habit: --test-threads N runs N checks at a time.
        suite.concurrency = threads.max(1);
    }
    if let Some(dir) = results_dir {
        suite.outputs.override_dir(dir, "--results");
    }
    let Selection { selected, unselected, earlier } =
        match select(&scenario, &suite, (&tests, &filters), compare, &redactor) {
            Ok(s) => s,
            Err(ending) => return ending,
        };
    let started_at = SystemTime::now();
    let started = Instant::now();
    let scenario_name = scenario.name.clone();
    let suite_name = suite.file.display().to_string();
    let mode = suite.mode;
    let outputs = suite.outputs.clone();
    runner::prepare_process();
    let filtered_out = unselected.len();
    let (scenario_sha, suite_sha) = (scenario.sha256.clone(), suite.sha256.clone());
    let report_of = move |results, engine: Option<String>| RunReport {
        scenario: scenario_name.clone(),
        suite: suite_name.clone(),
        mode,
        started_at,
        duration: started.elapsed(),
        results,
        filtered_out,
        cost: crate::cost::Cost::now(),
        provenance: crate::model::Provenance::of(&scenario_sha, &suite_sha, engine),
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("cannot start the tokio runtime");
    // One clock for the run: discovery's waiting spends the same deadline as the checks.
    let clock = RunClock::new(&suite);
    {
        // Ctrl-C ends every run as interrupted (exit 130), after undoing what it made.
        let _inside = runtime.enter();
        interrupt::listen();
    }
    let deployment = match discover(&runtime, project, &scenario, &suite, &clock, &redactor) {
        Found::Deployment(d) => d,
        Found::Ended(ending) => return ending,
        Found::Interrupted => return interrupted(runtime),
        Found::Unreachable(message) => {
            let report = report_of(not_run(&selected, &message), None);
            return finish(&tests, evidence, &report, &unselected, &outputs, &redactor, None, earlier.as_ref());
        }
    };
    let engine = deployment.as_ref().and_then(|d| d.engine()).map(|e| runtime.block_on(e.describe_version()));
    let pool = deployment.as_ref().map(|d| d.pool.clone()).unwrap_or_else(|| Arc::new(NsPool::new()));
    let ctx = Arc::new(RunContext { scenario, suite, redactor: redactor.clone(), deployment, pool, clock });
    let names: Vec<String> = selected.iter().map(|c| c.name().to_string()).collect();
    let console = LiveConsole::new(&tests, evidence, &names, redactor.clone());
    let run = runner::run_checks(selected, ctx, Arc::new(LiveEvents(console.clone())));
    let Some(results) = runtime.block_on(interrupt::unless_interrupted(run)) else { return interrupted(runtime) };
    runtime.block_on(crate::engine::carrier::carriers().finish());
    runtime.shutdown_background();

    let report = report_of(results, engine);
    finish(&tests, evidence, &report, &unselected, &outputs, &redactor, Some(&console), earlier.as_ref())
}

/// What a run will check, and what it compares with.
struct Selection {
    selected: Vec<Arc<dyn Check>>,
    unselected: Vec<String>,
    earlier: Option<Earlier>,
}

/// Plans the checks and selects the ones the filter names; everything that can be wrong
/// before a probe runs (a stale baseline entry, a filter that matches nothing, outputs
/// that cannot be written, an earlier run that cannot be read) ends the command here.
/// `--list` ends it too, having listed.
fn select(
    scenario: &Scenario,
    suite: &Suite,
    (tests, filters): (&Arguments, &[String]),
    compare: Option<CompareRequest>,
    redactor: &Redactor,
) -> Result<Selection, Ending> {
    let planned: Vec<Arc<dyn Check>> = checks::plan(scenario, suite);
    let names: Vec<CheckName> = planned.iter().map(|c| c.name().clone()).collect();
    let stale: Vec<_> = runner::unknown_baseline_entries(&suite.known_failures, &names)
        .into_iter()
        .map(|k| {
            let mut e = k.origin.clone();
            e.message = format!("known failure `{}` names no check this suite plans for this scenario", k.check);
            e
        })
        .collect();
    if !stale.is_empty() {
        return Err(report_config_errors("suite", &ConfigErrors(stale), redactor));
    }
    if tests.list {
        console::list(tests, filters, &names);
        return Err(Ending::Passed);
    }
    for (entry, matched) in runner::pattern_coverage(&suite.known_failures, &names) {
        eprintln!("{}", crate::text::sanitize(&runner::describe_coverage(entry, &matched)));
    }
    let (selected, unselected): (Vec<_>, Vec<_>) =
        planned.into_iter().partition(|c| console::is_selected(tests, filters, &c.name().to_string()));
    let unselected: Vec<String> = unselected.iter().map(|c| c.name().to_string()).collect();
    if selected.is_empty() {
        // A typo in a CI filter must not turn into a green job that checked nothing.
        eprintln!("error: no check matches the filter (planned: {}); see --list", names.len());
        return Err(Ending::Usage);
    }
    // Before anything runs: a report that cannot be written fails now, not after the run.
    if let Err(errors) = suite.outputs.prepare() {
        eprintln!("error: invalid outputs:");
        for e in errors {
            eprintln!("  {}", crate::text::sanitize(&redactor.redact(&e)));
        }
        return Err(Ending::Usage);
    }
    // Read before this run writes anything: the newest run found is an earlier one.
    let earlier = match compare.map(|c| compare::load_for(&c, &suite.outputs.json)).transpose() {
        Ok(e) => e,
        Err(message) => {
            eprintln!("error: {}", crate::text::sanitize(&redactor.redact(&message)));
            return Err(Ending::Usage);
        }
    };
    Ok(Selection { selected, unselected, earlier })
}

/// What discovery found.
enum Found {
    /// The deployment (none in host mode).
    Deployment(Option<Arc<Deployment>>),
    /// The engine did not answer: the reports say why nothing ran.
    Unreachable(String),
    /// A usage error, said.
    Ended(Ending),
    Interrupted,
}

/// In compose and swarm mode, the deployment through the engine, on the run's clock.
fn discover(
    runtime: &tokio::runtime::Runtime,
    project: Option<String>,
    scenario: &Scenario,
    suite: &Suite,
    clock: &RunClock,
    redactor: &Redactor,
) -> Found {
    let mode = suite.mode;
    if mode == Mode::Host {
        return Found::Deployment(None);
    }
    let Some(project) = project.or_else(|| scenario.project.clone()) else {
        eprintln!(
            "error: {} mode needs the compose project: pass --project or set `project:` in {}",
            mode_name(mode),
            scenario.file.display()
        );
        return Found::Ended(Ending::Usage);
    };
    let what = if mode == Mode::Swarm { "swarm stack" } else { "compose project" };
    eprintln!("resolving {what} `{project}` through the Docker engine");
    let found = crate::deployment::discover(mode, &project, scenario, suite, clock.started);
    let Some(found) = runtime.block_on(interrupt::unless_interrupted(found)) else {
        return Found::Interrupted;
    };
    match found {
        Ok(d) => Found::Deployment(Some(Arc::new(d))),
        Err(DiscoveryError::Scenario(message)) => {
            let message = crate::text::sanitize(&redactor.redact(&message));
            eprintln!("error: invalid scenario {}: {message}", scenario.file.display());
            Found::Ended(Ending::Usage)
        }
        Err(DiscoveryError::Infrastructure(message)) => {
            eprintln!("error: {}", crate::text::sanitize(&redactor.redact(&message)));
            Found::Unreachable(message)
        }
    }
}

/// Discovery failed: the reports still say what was planned and why none of it ran.
fn not_run(selected: &[Arc<dyn Check>], why: &str) -> Vec<CheckResult> {
    let reason = format!("not run: {why}");
    selected.iter().map(|c| CheckResult::new(c.name(), Verdict::Unreachable, reason.clone())).collect()
}

/// Ctrl-C, and what cordon made is undone: nothing is reported, the run ends at once.
fn interrupted(runtime: tokio::runtime::Runtime) -> Ending {
    runtime.shutdown_background();
    Ending::Interrupted
}

/// Prints the console summary, writes the reports and picks the exit code. A failed check
/// outranks a report that could not be written; that otherwise is an infrastructure error.
#[allow(clippy::too_many_arguments)]
fn finish(
    tests: &Arguments,
    evidence: EvidenceLevel,
    report: &RunReport,
    unselected: &[String],
    outputs: &Outputs,
    redactor: &Redactor,
    live: Option<&LiveConsole>,
    earlier: Option<&Earlier>,
) -> Ending {
    match live {
        Some(live) => {
            let matrix = console::matrix_text(&report::redacted(report, redactor));
            live.finish(unselected.len(), report.duration.as_secs_f64(), matrix.as_deref())
        }
        None => console::print(tests, evidence, report, unselected, redactor),
    }
    // A JSON console stream stays pure JSON: the human lines go to stderr then.
    let json = tests.format == Some(libtest_mimic::FormatSetting::Json);
    let say = |line: String| if json { eprintln!("{line}") } else { println!("{line}") };
    let c = report.counts();
    let unstable = report.instability().len();
    if unstable > 0 {
        say(format!(
            "cordon: engine instability observed: {unstable} check(s) saw a connect get through once and never again (recorded as transient, not judged)"
        ));
    }
    say(format!(
        "cordon: {} passed, {} failed, {} unreachable, {} skipped, {} known failure(s), {} stale baseline entr(ies) in {:.1}s",
        c.passed,
        c.failed,
        c.unreachable,
        c.skipped,
        c.known_failures,
        c.stale_baseline,
        report.duration.as_secs_f64()
    ));
    // From the redacted report: the sections escape what they show, and an escaped
    // secret would no longer be found by the redactor afterwards.
    let since = earlier.map(|e| compare::since(e, &report::redacted(report, redactor)));
    if let Some(since) = &since {
        say(redactor.redact(report::since::console(since).trim_end()));
    }
    let code = report.ending();
    match report::write_all(report, outputs, redactor, since.as_ref()) {
        Ok(paths) => {
            let copies = if outputs.timestamped {
                crate::history::copy(&paths, &outputs.dir, report.started_at)
            } else {
                Ok(vec![])
            };
            for p in paths.iter().chain(copies.iter().flatten()) {
                say(format!("wrote {}", p.display()));
            }
            if let Err(e) = copies {
                eprintln!("error: {}", crate::text::sanitize(&redactor.redact(&e.to_string())));
                return exit_when_reports_fail(code);
            }
            match report::job_summary::append(&outputs.markdown_path()) {
                Ok(Some(target)) => say(format!("appended the summary to {}", target.display())),
                Ok(None) => {}
                Err(e) => {
                    eprintln!("error: {}", crate::text::sanitize(&e));
                    return exit_when_reports_fail(code);
                }
            }
            code
        }
        Err(e) => {
            eprintln!("error: {}", crate::text::sanitize(&redactor.redact(&e.to_string())));
            exit_when_reports_fail(code)
        }
    }
}

/// The exit code of a run whose reports could not be written: a failed check still
/// outranks it (the contract is broken either way); otherwise the harness failed.
fn exit_when_reports_fail(run_code: Ending) -> Ending {
    if run_code == Ending::ChecksFailed { run_code } else { Ending::Infrastructure }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_check_outranks_a_report_that_cannot_be_written() {
        assert_eq!(exit_when_reports_fail(Ending::ChecksFailed), Ending::ChecksFailed);
        assert_eq!(exit_when_reports_fail(Ending::Passed), Ending::Infrastructure);
        assert_eq!(exit_when_reports_fail(Ending::Infrastructure), Ending::Infrastructure);
    }
}
