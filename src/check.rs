//! What a check is, for the families that plan them and the runner that runs them: a
//! named [`Check`], the [`Probe`] a family writes, and the [`RunContext`] both may read
//! (scenario, suite, redactor, the deployment and the run's one clock).

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::future::BoxFuture;

use crate::config::{Family, Provider, Scenario, Suite};
use crate::deployment::Deployment;
use crate::model::{Attempt, CheckName, Outcome};
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
    fn run<'a>(&'a self, ctx: &'a RunContext) -> BoxFuture<'a, Outcome>;
}

/// A probe's body that may stop early: `?` on a step that already decided the attempt
/// (a job that could not sign in, say), and `Ok` with the attempt it reached otherwise.
pub fn settled<'a>(body: impl Future<Output = Result<Attempt, Attempt>> + Send + 'a) -> BoxFuture<'a, Attempt> {
    Box::pin(async move { body.await.unwrap_or_else(|stopped| stopped) })
}

/// How one family reaches a verdict; the check's name travels beside it in [`Named`], so
/// family modules say only what they probe.
pub trait Probe: Send + Sync + 'static {
    fn run<'a>(&'a self, ctx: &'a RunContext) -> BoxFuture<'a, Attempt>;

    /// The attempt with what it saw that did not repeat. Only probes that repeat what
    /// they saw (a TCP connect) have anything to note.
    fn run_noting<'a>(&'a self, ctx: &'a RunContext) -> BoxFuture<'a, Outcome> {
        Box::pin(async move { Outcome::from(self.run(ctx).await) })
    }
}

pub struct Named<P> {
    pub name: CheckName,
    pub probe: P,
}

impl<P: Probe> Check for Named<P> {
    fn name(&self) -> &CheckName {
        &self.name
    }

    fn run<'a>(&'a self, ctx: &'a RunContext) -> BoxFuture<'a, Outcome> {
        self.probe.run_noting(ctx)
    }
}

/// A planned check: `probe` under `name`.
pub fn named(name: CheckName, probe: impl Probe) -> Arc<dyn Check> {
    Arc::new(Named { name, probe })
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

/// One family, registered once in `checks::FAMILIES`: how it plans its checks from the scenario
/// and what each of them proves (`cordon explain`).
pub struct Spec {
    pub family: Family,
    pub plan: fn(&Scenario, &Suite) -> Vec<Arc<dyn Check>>,
    /// (what it proves, where it looks from) for one of the family's checks; `None` for a
    /// check it does not plan.
    pub explain: fn(&CheckName) -> Option<(&'static str, &'static str)>,
}
