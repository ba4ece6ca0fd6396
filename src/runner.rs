//! Runs planned checks: bounded concurrency, retries of not-ready answers until the
//! suite's deadline, a hard stop for the whole run, then the baseline. It knows no output
//! format: it tells an [`Events`] sink what happens, and returns the results.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::future::BoxFuture;
use tokio::sync::Semaphore;

use crate::config::{KnownFailure, Provider, Scenario, Suite};
use crate::deployment::Deployment;
use crate::model::{Attempt, CheckName, CheckResult, Verdict, reason_of};
use crate::netns::NsPool;
use crate::secret::Redactor;

/// Everything a check may read while it runs.
pub struct RunContext {
    pub scenario: Scenario,
    pub suite: Suite,
    pub redactor: Redactor,
    /// The deployment under test (engine view, namespaces); `None` in host mode.
    pub deployment: Option<Arc<Deployment>>,
    /// The namespace workers (the deployment's, or one for cordon's own namespace).
    pub pool: Arc<NsPool>,
    pub clock: RunClock,
}

/// When the run began and when it must be over.
#[derive(Clone, Copy, Debug)]
pub struct RunClock {
    pub started: Instant,
    /// No new attempt starts after `started + deadline`.
    pub deadline: Duration,
    /// An attempt in flight at the deadline may finish its exchange, no more: every
    /// attempt is cut at `started + deadline + exchange_limit`.
    pub exchange_limit: Duration,
}

impl RunClock {
    pub fn new(suite: &Suite) -> Self {
        RunClock { started: Instant::now(), deadline: suite.deadline, exchange_limit: suite.limits.exchange_timeout }
    }

    pub fn deadline_at(&self) -> Instant {
        self.started + self.deadline
    }

    pub fn hard_stop(&self) -> Instant {
        self.deadline_at() + self.exchange_limit
    }
}

impl RunContext {
    /// The deployment and a planned provider: where every namespace check starts.
    /// Planning guarantees both (namespace families run only in compose or swarm mode,
    /// and only for the scenario's own providers).
    pub fn deployment(&self, provider: &str) -> (Arc<Deployment>, &Provider) {
        let deployment = self.deployment.clone().expect("namespace checks run in compose or swarm mode");
        (deployment, self.scenario.provider(provider).expect("planned from the scenario"))
    }
}

/// One named verdict with evidence, as the runner sees it.
pub trait Check: Send + Sync {
    fn name(&self) -> &CheckName;
    fn run<'a>(&'a self, ctx: &'a RunContext) -> BoxFuture<'a, Attempt>;
}

/// How one family reaches a verdict; the check's name travels beside it in [`Named`], so
/// family modules say only what they probe.
pub trait Probe: Send + Sync + 'static {
    fn run<'a>(&'a self, ctx: &'a RunContext) -> BoxFuture<'a, Attempt>;
}

pub struct Named<P> {
    pub name: CheckName,
    pub probe: P,
}

impl<P: Probe> Check for Named<P> {
    fn name(&self) -> &CheckName {
        &self.name
    }

    fn run<'a>(&'a self, ctx: &'a RunContext) -> BoxFuture<'a, Attempt> {
        self.probe.run(ctx)
    }
}

/// A planned check: `probe` under `name`.
pub fn named(name: CheckName, probe: impl Probe) -> Arc<dyn Check> {
    Arc::new(Named { name, probe })
}

/// What the runner tells whoever watches: a live console, a progress line, a log.
/// Every method has a default, so a sink implements only what it shows.
pub trait Events: Send + Sync {
    fn run_started(&self, _planned: usize) {}
    fn check_started(&self, _check: &CheckName) {}
    /// A not-ready check waits before its next attempt (at most once per interval).
    fn waiting(&self, _check: &str, _reason: &str, _elapsed: Duration, _deadline: Duration) {}
    /// A finished result, baseline applied.
    fn check_finished(&self, _result: &CheckResult) {}
}

/// Waiting notes to stderr, redacted.
pub struct StderrProgress {
    pub redactor: Redactor,
}

impl Events for StderrProgress {
    fn waiting(&self, check: &str, reason: &str, elapsed: Duration, deadline: Duration) {
        let left = deadline.saturating_sub(elapsed);
        eprintln!(
            "{}",
            self.redactor.redact(&format!(
                "waiting: {check} not ready after {:.0}s ({reason}); retrying for {:.0}s more",
                elapsed.as_secs_f64(),
                left.as_secs_f64()
            ))
        );
    }
}

/// Events nobody watches.
pub struct Silent;
impl Events for Silent {}

const PROGRESS_EVERY: Duration = Duration::from_secs(5);

/// Fits the process to hundreds of checks in flight, best effort:
/// - every check holds sockets (a reach check one per door, a disabled look three per
///   listener): the soft limit on open files (often 1024) goes up to the hard one;
/// - every namespace thread would get its own malloc arena, each keeping what its
///   probes freed: two arenas keep the peak RSS of a 200-pair run ~10 MB lower, and
///   the threads mostly wait, so they hardly contend for them.
pub fn prepare_process() {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: plain calls on a valid, owned struct, before any probe thread starts.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 && limit.rlim_cur < limit.rlim_max {
            limit.rlim_cur = limit.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
        }
        #[cfg(target_env = "gnu")]
        libc::mallopt(libc::M_ARENA_MAX, 2);
    }
}

pub async fn run_checks(
    checks: Vec<Arc<dyn Check>>,
    ctx: Arc<RunContext>,
    events: Arc<dyn Events>,
) -> Vec<CheckResult> {
    events.run_started(checks.len());
    let permits = Arc::new(Semaphore::new(ctx.suite.concurrency.max(1)));
    let mut handles = Vec::with_capacity(checks.len());
    for check in checks {
        let ctx = ctx.clone();
        let permits = permits.clone();
        let events = events.clone();
        let name = check.name().clone();
        let handle = tokio::spawn(async move {
            let mut result = run_one(check.as_ref(), &ctx, &permits, events.as_ref()).await;
            apply_baseline_to(&mut result, &ctx.suite.known_failures);
            events.check_finished(&result);
            result
        });
        handles.push((name, handle));
    }
    let mut results = Vec::with_capacity(handles.len());
    for (name, handle) in handles {
        results.push(match handle.await {
            Ok(result) => result,
            // A panic is a cordon bug, not a verdict on the deployment: report it as an
            // infrastructure error and keep every other result.
            Err(e) => {
                let result =
                    CheckResult::new(&name, Verdict::Unreachable, format!("the check panicked (a bug in cordon): {e}"));
                events.check_finished(&result);
                result
            }
        });
    }
    results
}

async fn run_one(check: &dyn Check, ctx: &RunContext, permits: &Semaphore, events: &dyn Events) -> CheckResult {
    let name = check.name();
    let clock = ctx.clock;
    let mut attempts = 0;
    let mut own = Duration::ZERO;
    let mut queued = Duration::ZERO;
    let mut last_progress: Option<Instant> = None;
    events.check_started(name);
    loop {
        attempts += 1;
        // The permit is held per attempt, not across retries: a check waiting out a
        // starting provider must not starve the checks queued behind it.
        let waited = Instant::now();
        let _permit = permits.acquire().await.expect("semaphore closed");
        queued += waited.elapsed();
        let began = Instant::now();
        // A first attempt that waited in line past the hard stop still gets one exchange
        // limit of its own: every check runs at least once. Retries never outlive the stop.
        let cut = if attempts == 1 { clock.hard_stop().max(began + clock.exchange_limit) } else { clock.hard_stop() };
        let attempt = match tokio::time::timeout_at(cut.into(), check.run(ctx)).await {
            Ok(attempt) => attempt,
            Err(_) => Attempt::not_ready(
                format!(
                    "the attempt was cut at the run's hard stop ({:.1}s: the deadline plus one exchange limit)",
                    (clock.deadline + clock.exchange_limit).as_secs_f64()
                ),
                vec![],
            ),
        };
        own += began.elapsed();
        drop(_permit);
        let mut result = CheckResult::new(name, Verdict::Passed, "");
        result.attempts = attempts;
        match attempt {
            Attempt::Pass { evidence } => result.evidence = evidence,
            Attempt::Fail { findings, evidence } => {
                result.verdict = Verdict::Failed;
                result.reason = reason_of(&findings);
                result.findings = findings;
                result.evidence = evidence;
            }
            Attempt::Skip { reason } => {
                result.verdict = Verdict::Skipped;
                result.reason = reason;
            }
            Attempt::NotReady { reason, evidence } => {
                let elapsed = clock.started.elapsed();
                if Instant::now() + ctx.suite.retry_interval < clock.deadline_at() {
                    if last_progress.is_none_or(|t| t.elapsed() >= PROGRESS_EVERY) {
                        events.waiting(&name.to_string(), &reason, elapsed, clock.deadline);
                        last_progress = Some(Instant::now());
                    }
                    tokio::time::sleep(ctx.suite.retry_interval).await;
                    continue;
                }
                result.verdict = Verdict::Unreachable;
                result.reason = format!(
                    "still not ready when the {:.0}s deadline passed, after {attempts} attempt(s); last answer: {reason}",
                    clock.deadline.as_secs_f64()
                );
                result.evidence = evidence;
            }
        }
        split_transient(&mut result);
        result.duration = own;
        result.queued = queued;
        return result;
    }
}

/// Evidence lines a probe marked as not repeated move into `transient`.
fn split_transient(result: &mut CheckResult) {
    let (transient, evidence): (Vec<String>, Vec<String>) =
        std::mem::take(&mut result.evidence).into_iter().partition(|l| l.starts_with(TRANSIENT_MARK));
    result.evidence = evidence;
    result.transient = transient.into_iter().map(|l| l[TRANSIENT_MARK.len()..].to_string()).collect();
}

/// Probes prefix an evidence line with this when what they saw did not repeat.
pub const TRANSIENT_MARK: &str = "transient: ";

/// Turns listed failures into known failures, and listed passes into a stale baseline.
/// An unreachable check stays unreachable: the baseline vouches for a known contract
/// violation, not for a provider that is down.
pub fn apply_baseline(results: &mut [CheckResult], known: &[KnownFailure]) {
    for result in results.iter_mut() {
        apply_baseline_to(result, known);
    }
}

fn apply_baseline_to(result: &mut CheckResult, known: &[KnownFailure]) {
    let Some(entry) = known.iter().find(|k| k.check == result.name) else { return };
    match result.verdict {
        Verdict::Failed => {
            let original = std::mem::take(&mut result.reason);
            result.evidence.insert(0, format!("observed: {} — {original}", result.verdict.as_str()));
            result.verdict = Verdict::KnownFailure;
            result.reason = entry.reason.clone();
        }
        Verdict::Passed => {
            result.verdict = Verdict::StaleBaseline;
            result.reason = format!(
                "listed as a known failure ({}) but it passes: remove it from the suite's known_failures",
                entry.reason
            );
        }
        Verdict::Unreachable | Verdict::Skipped | Verdict::KnownFailure | Verdict::StaleBaseline => {}
    }
}

/// Baseline entries must name planned checks; a typo would otherwise hide nothing and
/// rot silently.
pub fn unknown_baseline_entries<'a>(known: &'a [KnownFailure], planned: &[CheckName]) -> Vec<&'a KnownFailure> {
    known.iter().filter(|k| !planned.iter().any(|n| n.to_string() == k.check)).collect()
}

/// A fixed skip, for surfaces this mode cannot examine.
pub struct Skipped {
    pub reason: String,
}

impl Probe for Skipped {
    fn run<'a>(&'a self, _ctx: &'a RunContext) -> BoxFuture<'a, Attempt> {
        Box::pin(async move { Attempt::Skip { reason: self.reason.clone() } })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{ConfigError, Family};

    fn result(name: &str, verdict: Verdict) -> CheckResult {
        let mut r = CheckResult::new(&CheckName::new(Family::Contract, name), verdict, "why");
        r.name = name.into();
        r
    }

    fn known(check: &str) -> KnownFailure {
        KnownFailure {
            check: check.into(),
            reason: "ticket 12".into(),
            origin: ConfigError::whole_file(std::path::Path::new("s.yaml"), ""),
        }
    }

    #[test]
    fn baseline_turns_failures_known_and_passes_stale() {
        let mut results =
            vec![result("a", Verdict::Failed), result("b", Verdict::Passed), result("c", Verdict::Failed)];
        apply_baseline(&mut results, &[known("a"), known("b")]);
        assert_eq!(results[0].verdict, Verdict::KnownFailure);
        assert_eq!(results[0].reason, "ticket 12");
        assert!(results[0].evidence[0].contains("why"));
        assert_eq!(results[1].verdict, Verdict::StaleBaseline);
        assert_eq!(results[2].verdict, Verdict::Failed);
    }

    #[test]
    fn transient_lines_move_apart() {
        let mut r = result("a", Verdict::Passed);
        r.evidence = vec!["x".into(), format!("{TRANSIENT_MARK}10.0.0.1:80 connected once, not again")];
        split_transient(&mut r);
        assert_eq!(r.evidence, vec!["x"]);
        assert_eq!(r.transient, vec!["10.0.0.1:80 connected once, not again"]);
    }
}
