//! One run, end to end: plan → select → run → report → exit code.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use libtest_mimic::Arguments;

use crate::checks;
use crate::config::{ConfigErrors, Mode, Outputs, Scenario, Suite};
use crate::deployment::Deployment;
use crate::engine::Engine;
use crate::exit;
use crate::model::{CheckName, CheckResult, RunReport, Verdict};
use crate::netns::{self, NsPool};
use crate::report::live::{LiveConsole, LiveEvents};
use crate::report::{self, console};
use crate::runner::{self, Check, RunClock, RunContext};
use crate::secret::Redactor;
use crate::topology::{Topology, TopologyError};

pub struct RunRequest {
    pub scenario: Scenario,
    pub suite: Suite,
    pub redactor: Redactor,
    pub tests: Arguments,
    pub results_dir: Option<PathBuf>,
    /// The compose project; overrides the scenario's `project`.
    pub project: Option<String>,
}

fn mode_name(mode: Mode) -> &'static str {
    match mode {
        Mode::Host => "host",
        Mode::Compose => "compose",
        Mode::Swarm => "swarm",
    }
}

/// Why discovery stopped: an engine or namespace problem (exit 3), or a scenario that
/// names what the deployment does not have (exit 2).
enum DiscoveryError {
    Infrastructure(String),
    Scenario(String),
}

/// Reads the deployment from the engine and proves a namespace can be entered, so an
/// unprivileged run stops at once with what to do instead of waiting out the deadline.
async fn discover(
    project: &str,
    scenario: &Scenario,
    deadline: Duration,
    retry: Duration,
    connect_timeout: Duration,
) -> Result<(Engine, Topology), DiscoveryError> {
    let infra = |e: String| DiscoveryError::Infrastructure(e);
    let engine = Engine::connect_within(connect_timeout).await.map_err(|e| infra(e.to_string()))?;
    let started = Instant::now();
    // Right after a deploy some containers may not be running yet: wait for them as
    // for any other not-ready answer, up to the suite's deadline.
    let topology = loop {
        match Topology::discover(&engine, project, scenario).await {
            Ok(t) => break t,
            Err(TopologyError::Missing { missing, .. }) if started.elapsed() + retry < deadline => {
                eprintln!(
                    "waiting: {} not running yet ({:.0}s of {:.0}s)",
                    missing.join(", "),
                    started.elapsed().as_secs_f64(),
                    deadline.as_secs_f64()
                );
                tokio::time::sleep(retry.max(Duration::from_secs(1))).await;
            }
            Err(e @ TopologyError::Mismatch { .. }) => return Err(DiscoveryError::Scenario(e.to_string())),
            Err(e) => return Err(infra(e.to_string())),
        }
    };
    if let Some(target) = topology.services.values().flatten().next() {
        netns::run_in_netns_async(target.pid, |_| async {}).await.map_err(|e| infra(e.to_string()))?;
    }
    Ok((engine, topology))
}

pub fn report_config_errors(what: &str, errors: &ConfigErrors, redactor: &Redactor) -> i32 {
    eprintln!("error: invalid {what}:");
    for e in &errors.0 {
        eprintln!("  {}", crate::text::sanitize(&redactor.redact(&e.to_string())));
    }
    exit::USAGE
}

pub fn execute(request: RunRequest) -> i32 {
    let RunRequest { scenario, mut suite, redactor, tests, results_dir, project } = request;
    if let Some(dir) = results_dir {
        suite.outputs.override_dir(dir, "--results");
    }
    let planned: Vec<Arc<dyn Check>> = checks::plan(&scenario, &suite);
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
        return report_config_errors("suite", &ConfigErrors(stale), &redactor);
    }
    if tests.list {
        console::list(&tests, &names);
        return exit::OK;
    }
    let (selected, unselected): (Vec<_>, Vec<_>) =
        planned.into_iter().partition(|c| console::is_selected(&tests, &c.name().to_string()));
    let unselected: Vec<String> = unselected.iter().map(|c| c.name().to_string()).collect();
    if selected.is_empty() {
        // A typo in a CI filter must not turn into a green job that checked nothing.
        eprintln!("error: no check matches the filter (planned: {}); see --list", names.len());
        return exit::USAGE;
    }
    // Before anything runs: a report that cannot be written fails now, not after the run.
    if let Err(errors) = suite.outputs.prepare() {
        eprintln!("error: invalid outputs:");
        for e in errors {
            eprintln!("  {}", crate::text::sanitize(&redactor.redact(&e)));
        }
        return exit::USAGE;
    }

    let started_at = SystemTime::now();
    let started = Instant::now();
    let scenario_name = scenario.name.clone();
    let suite_name = suite.file.display().to_string();
    let mode = suite.mode;
    let outputs = suite.outputs.clone();
    runner::prepare_process();
    let filtered_out = unselected.len();
    let report_of = move |results| RunReport {
        scenario: scenario_name.clone(),
        suite: suite_name.clone(),
        mode,
        started_at,
        duration: started.elapsed(),
        results,
        filtered_out,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("cannot start the tokio runtime");
    let deployment = match mode {
        Mode::Host => None,
        Mode::Compose | Mode::Swarm => {
            let Some(project) = project.or_else(|| scenario.project.clone()) else {
                eprintln!(
                    "error: {} mode needs the compose project: pass --project or set `project:` in {}",
                    mode_name(mode),
                    scenario.file.display()
                );
                return exit::USAGE;
            };
            if mode == Mode::Swarm {
                eprintln!("resolving swarm stack `{project}` through the Docker engine (a manager)");
                let found = runtime.block_on(crate::deployment::discover_swarm(
                    &project,
                    &scenario,
                    &suite.engines,
                    suite.deadline,
                    suite.retry_interval,
                ));
                match found {
                    Ok(d) => Some(Arc::new(d)),
                    Err((message, scenario_problem)) => {
                        eprintln!("error: {}", redactor.redact(&message));
                        return if scenario_problem { exit::USAGE } else { exit::INFRASTRUCTURE };
                    }
                }
            } else {
                eprintln!("resolving compose project `{project}` through the Docker engine");
                let connect_timeout = suite.limits.connect_timeout;
                match runtime.block_on(discover(
                    &project,
                    &scenario,
                    suite.deadline,
                    suite.retry_interval,
                    connect_timeout,
                )) {
                    Ok((engine, topology)) => {
                        Some(Arc::new(Deployment::new(mode, &project, Some(engine), scenario.clone(), topology)))
                    }
                    Err(DiscoveryError::Scenario(message)) => {
                        let message = crate::text::sanitize(&redactor.redact(&message));
                        eprintln!("error: invalid scenario {}: {message}", scenario.file.display());
                        return exit::USAGE;
                    }
                    Err(DiscoveryError::Infrastructure(message)) => {
                        eprintln!("error: {}", crate::text::sanitize(&redactor.redact(&message)));
                        // Reports still say what was planned and why none of it ran.
                        let reason = format!("not run: {message}");
                        let results = selected
                            .iter()
                            .map(|c| CheckResult::new(c.name(), Verdict::Unreachable, reason.clone()))
                            .collect();
                        let report = report_of(results);
                        return finish(&tests, &report, &unselected, &outputs, &redactor, None);
                    }
                }
            }
        }
    };
    let pool = deployment.as_ref().map(|d| d.pool.clone()).unwrap_or_else(|| Arc::new(NsPool::new()));
    let clock = RunClock::new(&suite);
    let ctx = Arc::new(RunContext { scenario, suite, redactor: redactor.clone(), deployment, pool, clock });
    let names: Vec<String> = selected.iter().map(|c| c.name().to_string()).collect();
    let console = LiveConsole::new(&tests, &names, redactor.clone());
    let results = runtime.block_on(runner::run_checks(selected, ctx, Arc::new(LiveEvents(console.clone()))));
    runtime.shutdown_background();

    let report = report_of(results);
    finish(&tests, &report, &unselected, &outputs, &redactor, Some(&console))
}

/// Prints the console summary, writes the reports and picks the exit code. A failed check
/// outranks a report that could not be written; that otherwise is an infrastructure error.
fn finish(
    tests: &Arguments,
    report: &RunReport,
    unselected: &[String],
    outputs: &Outputs,
    redactor: &Redactor,
    live: Option<&LiveConsole>,
) -> i32 {
    match live {
        Some(console) => console.finish(unselected.len(), report.duration.as_secs_f64()),
        None => console::print(tests, report, unselected, redactor),
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
    let code = report.exit_code();
    match report::write_all(report, outputs, redactor) {
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
fn exit_when_reports_fail(run_code: i32) -> i32 {
    if run_code == exit::CHECK_FAILED { run_code } else { exit::INFRASTRUCTURE }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_check_outranks_a_report_that_cannot_be_written() {
        assert_eq!(exit_when_reports_fail(exit::CHECK_FAILED), exit::CHECK_FAILED);
        assert_eq!(exit_when_reports_fail(exit::OK), exit::INFRASTRUCTURE);
        assert_eq!(exit_when_reports_fail(exit::INFRASTRUCTURE), exit::INFRASTRUCTURE);
    }
}
