//! Runs planned checks: bounded concurrency, retries of not-ready answers until the
//! suite's deadline, then the baseline. It knows no output format.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::future::BoxFuture;
use tokio::sync::Semaphore;

use crate::config::{KnownFailure, Provider, Scenario, Suite};
use crate::model::{Attempt, CheckName, CheckResult, Verdict};
use crate::secret::Redactor;
use crate::topology::Topology;

/// Everything a check may read while it runs.
pub struct RunContext {
    pub scenario: Scenario,
    pub suite: Suite,
    pub redactor: Redactor,
    /// The engine's view of the deployment; `None` in host mode.
    pub topology: Option<Arc<Topology>>,
}

impl RunContext {
    /// The engine's view and a planned provider: where every namespace check starts.
    /// Planning guarantees both (namespace families run only in compose or swarm mode,
    /// and only for the scenario's own providers).
    pub fn deployment(&self, provider: &str) -> (Arc<Topology>, &Provider) {
        let topology = self.topology.clone().expect("namespace checks run in compose or swarm mode");
        (topology, self.scenario.provider(provider).expect("planned from the scenario"))
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

/// Receives what the runner is doing, for progress on long waits.
pub trait Progress: Send + Sync {
    fn waiting(&self, check: &str, reason: &str, elapsed: Duration, deadline: Duration);
}

/// Progress to stderr, redacted, at most once per interval per check.
pub struct StderrProgress {
    pub redactor: Redactor,
}

impl Progress for StderrProgress {
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

const PROGRESS_EVERY: Duration = Duration::from_secs(5);

pub async fn run_checks(
    checks: Vec<Arc<dyn Check>>,
    ctx: Arc<RunContext>,
    progress: Arc<dyn Progress>,
) -> Vec<CheckResult> {
    let run_started = Instant::now();
    let permits = Arc::new(Semaphore::new(ctx.suite.concurrency.max(1)));
    let mut handles = Vec::with_capacity(checks.len());
    for check in checks {
        let ctx = ctx.clone();
        let permits = permits.clone();
        let progress = progress.clone();
        let name = check.name().clone();
        let handle =
            tokio::spawn(async move { run_one(check.as_ref(), &ctx, &permits, run_started, progress.as_ref()).await });
        handles.push((name, handle));
    }
    let mut results = Vec::with_capacity(handles.len());
    for (name, handle) in handles {
        results.push(match handle.await {
            Ok(result) => result,
            // A panic is a cordon bug, not a verdict on the deployment: report it as an
            // infrastructure error and keep every other result.
            Err(e) => CheckResult {
                name: name.to_string(),
                family: name.family,
                verdict: Verdict::Unreachable,
                reason: format!("the check panicked (a bug in cordon): {e}"),
                evidence: vec![],
                attempts: 1,
                duration: Duration::ZERO,
            },
        });
    }
    apply_baseline(&mut results, &ctx.suite.known_failures);
    results
}

async fn run_one(
    check: &dyn Check,
    ctx: &RunContext,
    permits: &Semaphore,
    run_started: Instant,
    progress: &dyn Progress,
) -> CheckResult {
    let name = check.name();
    let started = Instant::now();
    let mut attempts = 0;
    let mut last_progress: Option<Instant> = None;
    loop {
        attempts += 1;
        // The permit is held per attempt, not across retries: a check waiting out a
        // starting provider must not starve the checks queued behind it.
        let attempt = {
            let _permit = permits.acquire().await.expect("semaphore closed");
            check.run(ctx).await
        };
        let (verdict, reason, evidence) = match attempt {
            Attempt::Pass { evidence } => (Verdict::Passed, String::new(), evidence),
            Attempt::Fail { reason, evidence } => (Verdict::Failed, reason, evidence),
            Attempt::Skip { reason } => (Verdict::Skipped, reason, Vec::new()),
            Attempt::NotReady { reason, evidence } => {
                let elapsed = run_started.elapsed();
                if elapsed + ctx.suite.retry_interval < ctx.suite.deadline {
                    if last_progress.is_none_or(|t| t.elapsed() >= PROGRESS_EVERY) {
                        progress.waiting(&name.to_string(), &reason, elapsed, ctx.suite.deadline);
                        last_progress = Some(Instant::now());
                    }
                    tokio::time::sleep(ctx.suite.retry_interval).await;
                    continue;
                }
                let reason = format!(
                    "still not ready when the {:.0}s deadline passed, after {attempts} attempt(s); last answer: {reason}",
                    ctx.suite.deadline.as_secs_f64()
                );
                (Verdict::Unreachable, reason, evidence)
            }
        };
        return CheckResult {
            name: name.to_string(),
            family: name.family,
            verdict,
            reason,
            evidence,
            attempts,
            duration: started.elapsed(),
        };
    }
}

/// Turns listed failures into known failures, and listed passes into a stale baseline.
/// An unreachable check stays unreachable: the baseline vouches for a known contract
/// violation, not for a provider that is down.
pub fn apply_baseline(results: &mut [CheckResult], known: &[KnownFailure]) {
    for result in results.iter_mut() {
        let Some(entry) = known.iter().find(|k| k.check == result.name) else { continue };
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
        CheckResult {
            name: name.into(),
            family: Family::Contract,
            verdict,
            reason: "why".into(),
            evidence: vec![],
            attempts: 1,
            duration: Duration::ZERO,
        }
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
}
