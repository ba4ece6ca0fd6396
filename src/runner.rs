//! Runs planned checks: bounded concurrency, retries of not-ready answers until the
//! suite's deadline, a hard stop for the whole run, then the baseline. It knows no output
//! format: it tells an [`Events`] sink what happens, and returns the results.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::Semaphore;

use crate::check::{Check, RunContext};
use crate::config::KnownFailure;
use crate::model::{Attempt, CheckName, CheckResult, Finding, Outcome, Verdict, reason_of};

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
    let mut slots: Vec<Option<(CheckName, tokio::task::JoinHandle<CheckResult>)>> = Vec::new();
    slots.resize_with(checks.len(), || None);
    for (index, check) in start_order(checks) {
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
        slots[index] = Some((name, handle));
    }
    handles.extend(slots.into_iter().flatten());
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

/// The checks with their place in the plan, in the order they start: the checks of one
/// client×provider pair one after another (route, reach, session, … of `c1->p1`, then of
/// `c1->p2`), the others first, each group in plan order. The checks of one pair ask the
/// same namespace for the same name and the same provider's sockets: started together,
/// they share one lookup and one read instead of repeating them seconds apart.
fn start_order(checks: Vec<Arc<dyn Check>>) -> Vec<(usize, Arc<dyn Check>)> {
    let mut order: Vec<(usize, Arc<dyn Check>)> = checks.into_iter().enumerate().collect();
    order.sort_by(|(a, x), (b, y)| {
        let pair = |c: &Arc<dyn Check>| {
            let n = c.name();
            n.client.clone().zip(n.provider.clone())
        };
        pair(x).cmp(&pair(y)).then(a.cmp(b))
    });
    order
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
        // One clock for the run: an attempt that waited in line for a slot starts with what
        // is left of it, never with an allowance of its own, so the run ends at its hard
        // stop however many checks queued (one that waited past it does not run at all).
        let cut = clock.hard_stop();
        let hard_stop = (clock.deadline + clock.exchange_limit).as_secs_f64();
        let outcome = if began >= cut {
            Outcome::from(Attempt::not_ready(
                format!(
                    "the run's hard stop ({hard_stop:.1}s: the deadline plus one exchange limit) came while it waited {:.1}s for one of the {} slots, so it did not run",
                    queued.as_secs_f64(),
                    ctx.suite.concurrency
                ),
                vec![],
            ))
        } else {
            match tokio::time::timeout_at(cut.into(), check.run(ctx)).await {
                Ok(outcome) => outcome,
                Err(_) => Outcome::from(Attempt::not_ready(
                    format!(
                        "the attempt was cut at the run's hard stop ({hard_stop:.1}s: the deadline plus one exchange limit)"
                    ),
                    vec![],
                )),
            }
        };
        let Outcome { attempt, transient } = outcome;
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
        result.transient = transient;
        result.duration = own;
        result.queued = queued;
        return result;
    }
}

/// Turns listed failures into known failures, and listed passes into a stale baseline.
/// An unreachable check stays unreachable: the baseline vouches for a known contract
/// violation, not for a provider that is down.
#[cfg(test)]
pub fn apply_baseline(results: &mut [CheckResult], known: &[KnownFailure]) {
    for result in results.iter_mut() {
        apply_baseline_to(result, known);
    }
}

fn apply_baseline_to(result: &mut CheckResult, known: &[KnownFailure]) {
    let entries: Vec<&KnownFailure> = known.iter().filter(|k| k.check.matches(&result.id)).collect();
    if entries.is_empty() {
        return;
    }
    let accepted = || entries.iter().map(|k| k.finding.to_string()).collect::<Vec<_>>().join("; ");
    match result.verdict {
        Verdict::Failed => {
            let unaccepted: Vec<Finding> =
                result.findings.iter().filter(|f| !entries.iter().any(|k| k.finding.matches(f))).cloned().collect();
            if !unaccepted.is_empty() {
                // The baseline vouches for one finding; anything else on the check is news.
                result.reason = format!(
                    "{} (not the known failure: the baseline accepts only {} on this check)",
                    reason_of(&unaccepted),
                    accepted()
                );
                return;
            }
            let original = std::mem::take(&mut result.reason);
            let accepting: Vec<&&KnownFailure> =
                entries.iter().filter(|k| result.findings.iter().any(|f| k.finding.matches(f))).collect();
            // A pattern speaks for checks it never named: say which entry accepted this one.
            for k in accepting.iter().filter(|k| k.check.is_pattern()) {
                result.evidence.insert(
                    0,
                    format!("accepted by the known failure `{}` ({}): {}", k.check, k.location(), k.finding),
                );
            }
            result.evidence.insert(0, format!("observed: {} — {original}", result.verdict.as_str()));
            result.verdict = Verdict::KnownFailure;
            let mut reasons: Vec<&str> = accepting.iter().map(|k| k.reason.as_str()).collect();
            reasons.dedup();
            result.reason = reasons.join("; ");
        }
        Verdict::Passed => {
            result.verdict = Verdict::StaleBaseline;
            let reasons: Vec<&str> = entries.iter().map(|k| k.reason.as_str()).collect();
            result.reason = format!(
                "listed as a known failure ({}) but it passes: remove it from the suite's known_failures",
                reasons.join("; ")
            );
        }
        Verdict::Unreachable | Verdict::Skipped | Verdict::KnownFailure | Verdict::StaleBaseline => {}
    }
}

/// Baseline entries that name a check exactly must name a planned one; a typo would
/// otherwise hide nothing and rot silently. A pattern may match none (a platform rule on
/// "any sidecar" applied to a stack without sidecars): [`pattern_coverage`] says so.
pub fn unknown_baseline_entries<'a>(known: &'a [KnownFailure], planned: &[CheckName]) -> Vec<&'a KnownFailure> {
    known.iter().filter(|k| !k.check.is_pattern() && !planned.iter().any(|n| k.check.matches(n))).collect()
}

/// Every pattern entry of the baseline with the planned checks it speaks for.
pub fn pattern_coverage<'a>(known: &'a [KnownFailure], planned: &[CheckName]) -> Vec<(&'a KnownFailure, Vec<String>)> {
    known
        .iter()
        .filter(|k| k.check.is_pattern())
        .map(|k| {
            let names = planned.iter().filter(|n| k.check.matches(n)).map(ToString::to_string).collect();
            (k, names)
        })
        .collect()
}

/// One line for the console: what a pattern entry of the baseline applies to in this run.
pub fn describe_coverage(entry: &KnownFailure, names: &[String]) -> String {
    match names {
        [] => format!(
            "baseline: `{}` ({}) matches no check planned for this scenario; it accepts nothing in this run",
            entry.check,
            entry.location()
        ),
        names => format!(
            "baseline: `{}` ({}) accepts {} on {} planned check(s): {}",
            entry.check,
            entry.location(),
            entry.finding,
            names.len(),
            names.join(", ")
        ),
    }
}

#[cfg(test)]
mod tests {
    use futures_util::future::BoxFuture;

    use super::*;
    use crate::check::{Named, Probe};
    use crate::config::{ConfigError, Family, FindingMatch};
    use crate::model::FindingKind;

    /// `a` stands for `contract::a::read`.
    fn full(name: &str) -> String {
        if name.contains("::") { name.to_string() } else { format!("contract::{name}::read") }
    }

    fn result(name: &str, verdict: Verdict) -> CheckResult {
        CheckResult::new(&CheckName::parse(&full(name)).expect("a check name"), verdict, "why")
    }

    fn known(check: &str) -> KnownFailure {
        known_finding(check, FindingKind::ReadFailed, &[])
    }

    fn known_finding(check: &str, kind: FindingKind, facts: &[(&str, &str)]) -> KnownFailure {
        KnownFailure {
            check: crate::config::CheckPattern::parse(&full(check)).unwrap(),
            finding: FindingMatch { kind, facts: facts.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect() },
            reason: "ticket 12".into(),
            origin: ConfigError::whole_file(std::path::Path::new("s.yaml"), ""),
        }
    }

    fn failed(name: &str, findings: Vec<Finding>) -> CheckResult {
        let mut r = result(name, Verdict::Failed);
        r.reason = reason_of(&findings);
        r.findings = findings;
        r
    }

    struct Idle;

    impl Probe for Idle {
        fn run<'a>(&'a self, _: &'a RunContext) -> BoxFuture<'a, Attempt> {
            Box::pin(async { Attempt::Pass { evidence: vec![] } })
        }
    }

    /// A check whose every attempt takes longer than any hard stop.
    struct Stuck;

    impl Probe for Stuck {
        fn run<'a>(&'a self, _: &'a RunContext) -> BoxFuture<'a, Attempt> {
            Box::pin(async {
                tokio::time::sleep(Duration::from_secs(30)).await;
                Attempt::Pass { evidence: vec![] }
            })
        }
    }

    /// One clock for the run: with one slot, a deadline of 0 and an exchange limit of
    /// 300 ms, the first stuck check is cut at the hard stop and the ones queued behind
    /// it get what is left, nothing, instead of an allowance of their own each.
    #[test]
    fn checks_that_queued_for_a_slot_share_the_run_s_hard_stop() {
        let limits = crate::mcp::Limits { exchange_timeout: Duration::from_millis(300), ..Default::default() };
        let mut suite = crate::config::Suite::for_probe(limits, Duration::ZERO);
        suite.concurrency = 1;
        let clock = crate::check::RunClock::new(&suite);
        let scenario = crate::config::Scenario {
            name: "clock".into(),
            project: None,
            file: "<test>".into(),
            providers: vec![],
            clients: vec![],
            credentials: Default::default(),
            foreign_credentials: vec![],
            sha256: String::new(),
        };
        let ctx = Arc::new(RunContext {
            scenario,
            suite,
            redactor: crate::secret::Redactor::new(),
            deployment: None,
            pool: Arc::new(crate::netns::NsPool::new()),
            clock,
        });
        let checks: Vec<Arc<dyn Check>> = ["a", "b", "c", "d", "e"]
            .iter()
            .map(|n| Arc::new(Named { name: CheckName::parse(&full(n)).unwrap(), probe: Stuck }) as Arc<dyn Check>)
            .collect();
        struct Quiet;
        impl Events for Quiet {}
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let started = Instant::now();
        let results = runtime.block_on(run_checks(checks, ctx, Arc::new(Quiet)));
        let took = started.elapsed();
        // An allowance each would take 5 × 300 ms.
        assert!(took < Duration::from_millis(1000), "five stuck checks held the run {took:?}");
        assert!(results.iter().all(|r| r.verdict == Verdict::Unreachable), "{results:#?}");
        let queued: Vec<&CheckResult> = results.iter().filter(|r| r.reason.contains("did not run")).collect();
        assert_eq!(queued.len(), 4, "{results:#?}");
        assert!(queued[0].reason.contains("for one of the 1 slots"), "{}", queued[0].reason);
    }

    #[test]
    fn the_checks_of_one_pair_start_together_and_the_others_first() {
        let pair = |family, client: &str, provider: &str| -> Arc<dyn Check> {
            Arc::new(Named {
                name: CheckName::pair(family, client, crate::model::Relation::Admitted, provider),
                probe: Idle,
            })
        };
        let planned: Vec<Arc<dyn Check>> = vec![
            pair(Family::Route, "c1", "p1"),
            pair(Family::Route, "c1", "p2"),
            pair(Family::Route, "c2", "p1"),
            Arc::new(Named { name: CheckName::of_provider(Family::Disabled, "gone", None), probe: Idle }),
            pair(Family::Session, "c1", "p1"),
            pair(Family::Session, "c1", "p2"),
            pair(Family::Session, "c2", "p1"),
        ];
        let order: Vec<usize> = start_order(planned).into_iter().map(|(i, _)| i).collect();
        assert_eq!(order, [3, 0, 4, 1, 5, 2, 6]);
    }

    #[test]
    fn baseline_turns_failures_known_and_passes_stale() {
        let read_failed = || vec![Finding::new(FindingKind::ReadFailed, "why")];
        let mut results = vec![failed("a", read_failed()), result("b", Verdict::Passed), failed("c", read_failed())];
        apply_baseline(&mut results, &[known("a"), known("b")]);
        assert_eq!(results[0].verdict, Verdict::KnownFailure);
        assert_eq!(results[0].reason, "ticket 12");
        assert!(results[0].evidence[0].contains("why"));
        assert_eq!(results[1].verdict, Verdict::StaleBaseline);
        assert_eq!(results[2].verdict, Verdict::Failed);
    }

    /// A baseline vouches for a finding, not a check: another kind, other facts, or one
    /// more finding beside the known one fail the run.
    #[rstest::rstest]
    #[case::same_kind_and_facts(vec![("access_drift", "server", "a")], Verdict::KnownFailure)]
    #[case::facts_not_named_are_free(vec![("access_drift", "server", "b")], Verdict::Failed)]
    #[case::other_kind(vec![("cannot_be_judged", "server", "a")], Verdict::Failed)]
    #[case::one_more_finding(vec![("access_drift", "server", "a"), ("access_drift", "server", "b")], Verdict::Failed)]
    #[case::two_known(vec![("access_drift", "server", "a"), ("hardening", "rule", "no_new_privileges")], Verdict::KnownFailure)]
    fn a_baseline_matches_findings_not_checks(#[case] seen: Vec<(&str, &str, &str)>, #[case] want: Verdict) {
        let findings = seen
            .iter()
            .map(|(kind, k, v)| {
                let kind = serde_json::from_value(serde_json::Value::String(kind.to_string())).unwrap();
                Finding::new(kind, "{k} {v}").fact("k", k).fact("v", v).fact(k, v)
            })
            .collect();
        let mut results = vec![failed("x", findings)];
        let known = [
            known_finding("x", FindingKind::AccessDrift, &[("server", "a")]),
            known_finding("x", FindingKind::Hardening, &[("rule", "no_new_privileges")]),
        ];
        apply_baseline(&mut results, &known);
        assert_eq!(results[0].verdict, want, "{}", results[0].reason);
        if want == Verdict::Failed {
            assert!(results[0].reason.contains("not the known failure"), "{}", results[0].reason);
        }
    }

    fn hardening(rule: &str) -> Finding {
        Finding::new(FindingKind::Hardening, "{rule} broken").fact("rule", rule)
    }

    /// swarm's platform limit as suites/swarm.yaml ships it: that finding on any sidecar.
    fn any_sidecar_without_nnp() -> KnownFailure {
        known_finding("sidecar::*::hardening", FindingKind::Hardening, &[("rule", "no_new_privileges")])
    }

    #[rstest::rstest]
    #[case::the_platform_limit("sidecar::notes::hardening", vec![hardening("no_new_privileges")], Verdict::KnownFailure)]
    #[case::on_another_sidecar("sidecar::gitea::hardening", vec![hardening("no_new_privileges")], Verdict::KnownFailure)]
    #[case::a_published_port_beside_it("sidecar::notes::hardening", vec![hardening("no_new_privileges"), hardening("published_ports")], Verdict::Failed)]
    #[case::a_published_port_alone("sidecar::notes::hardening", vec![hardening("published_ports")], Verdict::Failed)]
    #[case::not_a_sidecar_check("contract::notes::tools", vec![hardening("no_new_privileges")], Verdict::Failed)]
    #[case::another_aspect("sidecar::notes::interfaces", vec![hardening("no_new_privileges")], Verdict::Failed)]
    #[case::a_sidecar_that_passes("sidecar::notes::hardening", vec![], Verdict::StaleBaseline)]
    fn a_pattern_accepts_its_finding_on_every_check_it_matches(
        #[case] check: &str,
        #[case] findings: Vec<Finding>,
        #[case] want: Verdict,
    ) {
        let mut results =
            vec![if findings.is_empty() { result(check, Verdict::Passed) } else { failed(check, findings) }];
        apply_baseline(&mut results, &[any_sidecar_without_nnp()]);
        assert_eq!(results[0].verdict, want, "{}", results[0].reason);
        if want == Verdict::KnownFailure {
            assert!(
                results[0]
                    .evidence
                    .iter()
                    .any(|l| l.contains("accepted by the known failure `sidecar::*::hardening` (s.yaml:")),
                "{:?}",
                results[0].evidence
            );
        }
    }

    #[rstest::rstest]
    #[case::exact_names_nothing_planned("sidecar::gitea::hardening", &["route::a->b"], true)]
    #[case::exact_names_a_planned_check("sidecar::gitea::hardening", &["sidecar::gitea::hardening"], false)]
    #[case::pattern_matching_nothing("sidecar::*::hardening", &["route::a->b"], false)]
    #[case::pattern_matching_something("sidecar::*::hardening", &["sidecar::gitea::hardening"], false)]
    fn only_exact_names_must_name_a_planned_check(
        #[case] entry: &str,
        #[case] planned: &[&str],
        #[case] unknown: bool,
    ) {
        let planned: Vec<CheckName> = planned.iter().map(|n| CheckName::parse(n).unwrap()).collect();
        let known = [known_finding(entry, FindingKind::Hardening, &[])];
        assert_eq!(unknown_baseline_entries(&known, &planned).len(), usize::from(unknown));
        let coverage = pattern_coverage(&known, &planned);
        let line = coverage.first().map(|(k, names)| describe_coverage(k, names)).unwrap_or_default();
        match (entry.contains('*'), planned.iter().any(|n| n.to_string() == "sidecar::gitea::hardening")) {
            (true, true) => assert!(line.contains("on 1 planned check(s): sidecar::gitea::hardening"), "{line}"),
            (true, false) => assert!(line.contains("matches no check planned"), "{line}"),
            (false, _) => assert!(coverage.is_empty()),
        }
    }
}
