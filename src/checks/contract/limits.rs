//! `contract::<provider>::limits`, when the scenario gives `limits` (the platform's
//! adapters "MUST enforce request size, response size, timeout, concurrency, pagination,
//! result-row and stream-duration limits with explicit values"). At every replica, in
//! the era it offers first, with the provider's credential:
//! - a request one byte over `request_bytes` is refused (413 or a JSON-RPC error) and
//!   the next valid request is still served;
//! - no page of `tools/list` holds more than `page_size` tools, and no reply is larger
//!   than `response_bytes`;
//! - the read's result holds at most `result_items` items in at most `response_bytes`;
//! - `concurrent_requests` + 1 parallel reads are each served, refused (4xx, 429, 503) or
//!   queued — none goes unanswered — and the provider serves the next one;
//! - no exchange takes longer than `timeout_seconds`.
//!
//! A limit a fast, small server never reaches cannot fail, so each is pushed past its
//! bound with what the scenario gives, and one nothing can push past is not judged:
//! `request_bytes` by padding; `page_size` by a listing longer than a page;
//! `result_items` and `response_bytes` by `limit_probes.large` (a read that answers more,
//! uncut); `timeout_seconds` by `limit_probes.slow` (a call that takes longer, uncut:
//! served late fails, cut within the limit holds); `concurrent_requests` by the limit
//! plus one calls at once (of the slow call when there is one: all let in at the same
//! time fails, one turned away or queued holds). When every given limit held past its
//! bound the check passes; when some could not be pushed past it is skipped ("not judged
//! in full"), naming what held and what the scenario lacks; never a pass for a limit
//! nothing reached.
//!
//! Bounded: one oversized request, one listing, the read, each probe once and the limit
//! plus one in parallel. `stream_seconds` is not waited out (it would hold a stream open
//! that long); the evidence says so, and it does not keep the check from passing.

use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::future::{BoxFuture, join_all};
use serde::{Deserialize, Serialize};

use crate::check::{Check, Probe, RunContext};
use crate::checks::kit::answers::{CallAnswer, era_words};
use crate::checks::kit::sessions::ErrorSeen;
use crate::checks::kit::vantage::{contract_vantages, observe_everywhere};
use crate::checks::kit::wire;
use crate::config::{LimitProbes, ProbeCall, ProviderLimits, ReadSpec, Scenario};
use crate::mcp::{Endpoint, Limits, McpClient, PageSeen, Session};
use crate::model::{Attempt, Finding, FindingKind};
use crate::netns::NsView;
use crate::secret::Secret;

/// How often the request after an oversized one or a burst is asked again while busy.
const BUSY_RETRIES: usize = 5;

/// How much later than `timeout_seconds` an answer may come, as cordon measures it: a
/// server whose timer starts when the request reaches it answers within the limit plus
/// the way there and back (longer on a busy host).
const GRACE: Duration = Duration::from_secs(1);

/// How long cordon waits for a slow call beyond `timeout_seconds` before it counts it
/// as not cut at all.
const SLOW_WAIT_BEYOND: Duration = Duration::from_secs(5);

/// A call that took at least half this long (ms) ran (or waited to run): one turned
/// away at once takes far less.
const SLOW_AT_LEAST: u64 = 1000;

pub fn plan(scenario: &Scenario) -> Vec<Arc<dyn Check>> {
    crate::checks::kit::vantage::for_enabled_providers(scenario, "limits", |id| LimitsCheck {
        provider: id.to_string(),
    })
}

struct LimitsCheck {
    provider: String,
}

#[derive(Clone, Serialize, Deserialize)]
pub struct LimitsPlan {
    pub endpoints: Vec<(String, Endpoint)>,
    #[serde(with = "wire::secret")]
    pub secret: Secret,
    #[serde(with = "wire::read")]
    pub read: Option<ReadSpec>,
    pub limits: ProviderLimits,
    pub probes: LimitProbes,
    pub client_limits: Limits,
}

/// One answer and how long it took.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Timed {
    pub answer: CallAnswer,
    pub millis: u64,
    /// Bytes of the reply, when it carried a result.
    pub bytes: Option<usize>,
    /// This answer was served later than `timeout_seconds` allows, so the same call was
    /// asked again and served in this many ms: the time judged (a busy host is late now
    /// and then, a server that does not cut its calls every time). The answer judged for
    /// everything else is this one, the first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub again_millis: Option<u64>,
}

/// Everything seen at one replica.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct LimitsSeen {
    pub replica: String,
    pub era: Result<String, ErrorSeen>,
    pub pages: Option<Result<Vec<PageSeen>, ErrorSeen>>,
    pub read: Option<Timed>,
    /// The oversized request (its size) and the request after it.
    pub oversize: Option<(usize, Timed, Timed)>,
    /// The parallel reads and the read after them.
    pub burst: Option<(Vec<Timed>, Timed)>,
    /// The burst was of the slow call (so whether its calls ran at once shows).
    #[serde(default)]
    pub burst_of_slow: bool,
    /// `limit_probes.large` and `limit_probes.slow`, each called once.
    #[serde(default)]
    pub large: Option<Timed>,
    #[serde(default)]
    pub slow: Option<Timed>,
}

impl LimitsPlan {
    pub async fn observe(self, view: Rc<NsView>) -> Vec<LimitsSeen> {
        let plan = &self;
        crate::checks::kit::vantage::at_every_replica(&view, &self.endpoints, |r, e| async move {
            plan.at_replica(&r, &e).await
        })
        .await
    }

    async fn at_replica(&self, replica: &str, endpoint: &Endpoint) -> LimitsSeen {
        let mut seen = LimitsSeen {
            replica: replica.to_string(),
            era: Ok(String::new()),
            pages: None,
            read: None,
            oversize: None,
            burst: None,
            burst_of_slow: false,
            large: None,
            slow: None,
        };
        // One client per role: the padded request's size depends on its id. Impatient:
        // a busy answer is what the burst judges, and the rest ask again on their own.
        let client = || {
            McpClient::new(endpoint.clone(), Some(self.secret.clone()), self.client_limits.clone())
                .map(McpClient::impatient)
        };
        let (main, padded) = match (client(), client()) {
            (Ok(a), Ok(b)) => (a, b),
            (Err(e), _) | (_, Err(e)) => {
                seen.era = Err((&e).into());
                return seen;
            }
        };
        let session = match main.connect().await {
            Ok(s) => s,
            Err(e) => {
                seen.era = Err((&e).into());
                return seen;
            }
        };
        seen.era = Ok(era_words(&session.era));
        seen.pages = Some(main.list_pages(&session).await.map_err(|e| (&e).into()));
        seen.read = match &self.read {
            Some(_) => Some(self.timed_unless_busy(|| self.timed_read(&main, &session)).await),
            None => None,
        };
        if let Some(call) = &self.probes.large {
            seen.large = Some(self.timed_unless_busy(|| self.timed_call(&main, &session, call)).await);
        }
        // With concurrent_requests the burst is of the slow call, and its quickest call
        // judges the timeout: no call of its own.
        let burst_has_it = self.limits.concurrent_requests.is_some();
        if let Some(call) = self.probes.slow.as_ref().filter(|_| self.limits.timeout_seconds.is_some() && !burst_has_it)
        {
            seen.slow = Some(self.timed_call(&main, &session, call).await);
        }
        if let Some(limit) = self.limits.request_bytes {
            let over = limit as usize + 1;
            // Timed from the request on: the session's own handshake is no part of it.
            let (answer, took) = match padded.connect().await {
                Ok(s) => {
                    let started = Instant::now();
                    let a = CallAnswer::of_request(
                        padded.request_padded(&s, "tools/list", serde_json::json!({}), over).await,
                    );
                    let took = millis(started);
                    padded.close(s).await;
                    (a, took)
                }
                Err(e) => (CallAnswer::Failed((&e).into()), 0),
            };
            let oversized = Timed { answer, millis: took, bytes: None, again_millis: None };
            seen.oversize = Some((over, oversized, self.next_served(&main, &session).await));
        }
        // The burst holds every slot of the provider for as long as its calls take (the
        // slow call: up to timeout_seconds), and other checks calling it meanwhile are
        // turned away and retry. An attempt that is already not ready (the provider busy
        // with those checks) skips it, so a retried limits check and the checks it turns
        // away do not keep each other busy until the deadline.
        let busy = |t: &Option<Timed>| t.as_ref().is_some_and(|t| t.answer.busy());
        let already_busy = busy(&seen.read) || busy(&seen.large) || busy(&seen.slow);
        if let Some(n) = self.limits.concurrent_requests.filter(|_| !already_busy) {
            let calls = (0..=n).map(|_| self.burst_call(&main, &session));
            let burst = join_all(calls).await;
            seen.burst_of_slow = self.probes.slow.is_some();
            seen.burst = Some((burst, self.next_served(&main, &session).await));
        }
        main.close(session).await;
        seen
    }

    async fn timed_read(&self, client: &McpClient, session: &Session) -> Timed {
        let read = self.read.as_ref().expect("asked only with a read");
        self.timed_call(client, session, &ProbeCall { tool: read.tool.clone(), arguments: read.arguments.clone() })
            .await
    }

    /// One call of the burst: the slow call when the scenario names one (its calls
    /// overlap, so whether they ran at once shows), else the next valid request.
    async fn burst_call(&self, client: &McpClient, session: &Session) -> Timed {
        match &self.probes.slow {
            Some(call) => self.timed_call(client, session, call).await,
            None => self.next(client, session).await,
        }
    }

    async fn timed_call(&self, client: &McpClient, session: &Session, call: &ProbeCall) -> Timed {
        let started = Instant::now();
        match client.call_tool_sized(session, &call.tool, call.arguments.clone()).await {
            Ok((result, bytes)) => Timed {
                answer: CallAnswer::of(Ok(result)),
                millis: millis(started),
                bytes: Some(bytes),
                again_millis: None,
            },
            Err(e) => {
                Timed { answer: CallAnswer::of(Err(e)), millis: millis(started), bytes: None, again_millis: None }
            }
        }
    }

    /// `call`, asked again while the provider says it is busy (other checks may hold its
    /// concurrency slots).
    async fn unless_busy<F: std::future::Future<Output = Timed>>(&self, call: impl Fn() -> F) -> Timed {
        let mut answer = call().await;
        for _ in 0..BUSY_RETRIES {
            if !answer.answer.busy() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(300)).await;
            answer = call().await;
        }
        answer
    }

    /// [`Self::unless_busy`], and a call served later than `timeout_seconds` allows asked
    /// once more: when that one is served too, its time is the one judged (see
    /// [`Timed::again_millis`]); the first answer stays the one judged for its content.
    async fn timed_unless_busy<F: std::future::Future<Output = Timed>>(&self, call: impl Fn() -> F) -> Timed {
        let mut answer = self.unless_busy(&call).await;
        if answer.answer.served() && late(&self.limits, answer.millis) {
            let again = self.unless_busy(&call).await;
            if again.answer.served() {
                answer.again_millis = Some(again.millis);
            }
        }
        answer
    }

    /// The next valid request, asked again while the provider says it is busy: is it
    /// still serving?
    async fn next_served(&self, client: &McpClient, session: &Session) -> Timed {
        self.unless_busy(|| self.next(client, session)).await
    }

    /// The next valid request: the read, else a listing.
    async fn next(&self, client: &McpClient, session: &Session) -> Timed {
        if self.read.is_some() {
            return self.timed_read(client, session).await;
        }
        let started = Instant::now();
        let answer = CallAnswer::of_request(
            client
                .list_tools(session)
                .await
                .map(|t| serde_json::json!({ "tools": t.iter().map(|t| &t.name).collect::<Vec<_>>() })),
        );
        Timed { answer, millis: millis(started), bytes: None, again_millis: None }
    }
}

impl Timed {
    /// The time judged against `timeout_seconds` (see [`Timed::again_millis`]).
    fn judged_millis(&self) -> u64 {
        self.again_millis.unwrap_or(self.millis)
    }

    /// What the evidence says when the call was asked again for its time.
    fn asked_again(&self) -> String {
        self.again_millis
            .map(|ms| format!(" (later than timeout_seconds allows; the same call asked again was served in {ms} ms)"))
            .unwrap_or_default()
    }
}

/// Later than `timeout_seconds` (and the way there and back) allows.
fn late(limits: &ProviderLimits, millis: u64) -> bool {
    limits.timeout_seconds.is_some_and(|secs| Duration::from_millis(millis) > Duration::from_secs(secs) + GRACE)
}

fn millis(since: Instant) -> u64 {
    since.elapsed().as_millis().try_into().unwrap_or(u64::MAX)
}

impl Probe for LimitsCheck {
    fn run<'a>(&'a self, ctx: &'a RunContext) -> BoxFuture<'a, Attempt> {
        Box::pin(async move {
            let provider = ctx.scenario.provider(&self.provider).expect("planned from the scenario").clone();
            let Some(limits) = provider.boundary.limits.clone() else {
                return Attempt::Skip {
                    reason: format!(
                        "the scenario gives provider `{}` no `limits` (request_bytes, page_size, …) to hold it to",
                        provider.id
                    ),
                };
            };
            let vantages = match contract_vantages(ctx, &provider) {
                Ok(v) => v,
                Err(attempt) => return attempt,
            };
            let mut client_limits = ctx.suite.limits.clone();
            // Answers up to response_bytes must be read whole to be measured.
            if let Some(r) = limits.response_bytes {
                client_limits.max_response_bytes = client_limits.max_response_bytes.max(r.saturating_add(1));
            }
            // A slow call is waited for past timeout_seconds: served late is the finding.
            if let (Some(secs), Some(_)) = (limits.timeout_seconds, &provider.boundary.limit_probes.slow) {
                let wait = Duration::from_secs(secs) + SLOW_WAIT_BEYOND;
                client_limits.read_timeout = client_limits.read_timeout.max(wait);
                client_limits.exchange_timeout = client_limits.exchange_timeout.max(wait);
            }
            let plan = |endpoints: &[(String, Endpoint)]| LimitsPlan {
                endpoints: endpoints.to_vec(),
                secret: ctx.scenario.secret(&provider.credential).clone(),
                read: provider.read.clone(),
                limits: limits.clone(),
                probes: provider.boundary.limit_probes.clone(),
                client_limits: client_limits.clone(),
            };
            match observe_everywhere(ctx, &vantages, plan).await {
                Ok((observed, from)) => {
                    judge(&limits, &provider.boundary.limit_probes, &observed, vec![format!("probed from {from}")])
                }
                Err(attempt) => attempt,
            }
        })
    }
}

/// What the judge collects while it walks the observations.
struct Verdicts {
    findings: Vec<Finding>,
    not_ready: Vec<String>,
    evidence: Vec<String>,
    /// Limits seen to hold past their bound, at some replica.
    held: BTreeSet<&'static str>,
    /// Why a limit could not be pushed past its bound (the first reason given).
    not_pushed: BTreeMap<&'static str, String>,
}

impl Verdicts {
    /// `limit` does not hold at `replica`: the finding's sentence is `template`, with the
    /// facts `facts` adds to it.
    fn held(&mut self, limit: &'static str) {
        self.held.insert(limit);
    }

    fn not_pushed(&mut self, limit: &'static str, why: String) {
        self.not_pushed.entry(limit).or_insert(why);
    }

    fn broken(&mut self, replica: &str, limit: &str, template: &'static str, facts: impl FnOnce(Finding) -> Finding) {
        self.findings.push(
            facts(Finding::new(FindingKind::LimitNotEnforced, template))
                .prefixed("{replica}: ")
                .fact("replica", replica)
                .fact("limit", limit),
        );
    }

    /// `what` (a template, its facts added by `what_facts`) took longer than timeout_seconds.
    fn timing(
        &mut self,
        replica: &str,
        limits: &ProviderLimits,
        what: &'static str,
        what_facts: impl FnOnce(Finding) -> Finding,
        t: &Timed,
    ) {
        if let Some(secs) = limits.timeout_seconds
            && late(limits, t.judged_millis())
        {
            let took = t.judged_millis() as f64 / 1000.0;
            self.broken(replica, "timeout_seconds", " took {seconds}s, longer than timeout_seconds {max}", |f| {
                what_facts(f.prefixed(what)).fact("seconds", format!("{took:.1}")).fact("max", secs)
            });
        }
    }
}

/// Pure: every limit the scenario gives holds at every replica, pushed past its bound;
/// one that nothing could push past is not judged, and says why.
pub fn judge(limits: &ProviderLimits, probes: &LimitProbes, observed: &[LimitsSeen], evidence: Vec<String>) -> Attempt {
    let mut v = Verdicts {
        findings: Vec::new(),
        not_ready: Vec::new(),
        evidence,
        held: BTreeSet::new(),
        not_pushed: BTreeMap::new(),
    };
    if probes.large.is_none() {
        let why = "the scenario names no `limit_probes.large` (a read that answers more, uncut)";
        v.not_pushed("result_items", why.into());
        v.not_pushed("response_bytes", why.into());
    }
    if probes.slow.is_none() {
        v.not_pushed(
            "timeout_seconds",
            "the scenario names no `limit_probes.slow` (a call that takes longer, uncut)".into(),
        );
    }
    if let Some(s) = limits.stream_seconds {
        v.evidence.push(format!("stream_seconds {s}: not waited out (cordon would hold a stream open that long)"));
    }
    for s in observed {
        let r = s.replica.as_str();
        match &s.era {
            Ok(era) => v.evidence.push(format!("{r}: a session in {era}")),
            Err(e) if e.not_ready => {
                v.not_ready.push(format!("{r}: no session: {}", e.text));
                continue;
            }
            Err(e) => {
                v.findings.push(
                    Finding::new(FindingKind::CannotBeJudged, "{replica}: cannot be judged: no session: {error}")
                        .fact("replica", r)
                        .fact("error", &e.text),
                );
                continue;
            }
        }
        judge_pages(&mut v, r, limits, s.pages.as_ref());
        judge_read(&mut v, r, limits, s.read.as_ref());
        if let Some((size, over, after)) = &s.oversize {
            judge_oversize(&mut v, r, limits, *size, over, after);
        }
        judge_large(&mut v, r, limits, s.large.as_ref());
        judge_slow(&mut v, r, limits, s.slow.as_ref().or(quickest_let_in(s)));
        if let Some((burst, after)) = &s.burst {
            judge_burst(&mut v, r, limits, burst, after, s.burst_of_slow);
        }
    }
    if !v.findings.is_empty() || !v.not_ready.is_empty() {
        return Attempt::settle(v.findings, v.not_ready, v.evidence);
    }
    let given = given_limits(limits);
    let unproven: Vec<String> = given
        .iter()
        .filter(|l| !v.held.contains(*l))
        .map(|l| {
            let why = v.not_pushed.get(l).cloned().unwrap_or_else(|| "nothing pushed it past its bound".into());
            format!("{l} ({why})")
        })
        .collect();
    let held: Vec<&str> = given.iter().copied().filter(|l| v.held.contains(l)).collect();
    v.evidence
        .push(format!("held past their bound: {}", if held.is_empty() { "none".to_string() } else { held.join(", ") }));
    if unproven.is_empty() {
        return Attempt::Pass { evidence: v.evidence };
    }
    Attempt::Skip {
        reason: format!(
            "not judged in full: {} could not be pushed past the bound with what the scenario gives, so a server without it would pass as well; held past their bound: {}",
            unproven.join("; "),
            if held.is_empty() { "none".to_string() } else { held.join(", ") }
        ),
    }
}

/// The limits the scenario gives that a run can push past (`stream_seconds` is never
/// waited out, and says so).
fn given_limits(l: &ProviderLimits) -> Vec<&'static str> {
    let given = [
        ("request_bytes", l.request_bytes.is_some()),
        ("page_size", l.page_size.is_some()),
        ("response_bytes", l.response_bytes.is_some()),
        ("result_items", l.result_items.is_some()),
        ("timeout_seconds", l.timeout_seconds.is_some()),
        ("concurrent_requests", l.concurrent_requests.is_some()),
    ];
    given.into_iter().filter(|(_, g)| *g).map(|(n, _)| n).collect()
}

/// Whether the limit plus one calls were let in at once. One turned away at once (while
/// the others ran) or one that waited for another (queued: it took half as long again as
/// the quickest let in) shows the limit; calls that all ran side by side, each as long as
/// the others, show it is not there, when they last long enough to overlap (the slow
/// call). Quick calls all served show nothing either way.
fn judge_let_in(
    v: &mut Verdicts,
    r: &str,
    burst: &[Timed],
    max: u32,
    of_slow: bool,
    turned_away: impl Fn(&CallAnswer) -> bool,
) {
    let longest = burst.iter().map(|t| t.millis).max().unwrap_or(0);
    // Every call turned away (all busy with other checks, or refused outright): none ran,
    // so nothing shows how many may run at once.
    if burst.iter().all(|t| turned_away(&t.answer)) && !burst.iter().any(|t| t.millis * 2 >= SLOW_AT_LEAST) {
        if burst.iter().all(|t| t.answer.busy()) {
            v.not_ready.push(format!("{r}: every parallel call was turned away busy"));
        } else {
            v.not_pushed(
                "concurrent_requests",
                format!("every one of the {} parallel calls was turned away at once", burst.len()),
            );
        }
        return;
    }
    let at_once = |t: &&Timed| turned_away(&t.answer) && t.millis * 2 < longest;
    if burst.iter().any(|t| at_once(&t)) {
        v.held("concurrent_requests");
        return;
    }
    if !of_slow {
        v.not_pushed(
            "concurrent_requests",
            format!(
                "none of the {} parallel calls was turned away, and each took {longest} ms or less: too quick to show whether they ran at once (the scenario names no `limit_probes.slow`)",
                burst.len()
            ),
        );
        return;
    }
    let let_in: Vec<u64> =
        burst.iter().filter(|t| !turned_away(&t.answer) || t.millis * 2 >= longest).map(|t| t.millis).collect();
    let quickest = let_in.iter().copied().min().unwrap_or(0);
    if let_in.iter().any(|&m| m * 2 >= quickest * 3) {
        v.held("concurrent_requests");
        return;
    }
    v.broken(
        r,
        "concurrent_requests",
        "all {count} parallel slow calls (concurrent_requests {max} + 1) were let in at once, each taking {quickest}-{longest} ms: none was turned away or queued",
        |f| f.fact("count", burst.len()).fact("max", max).fact("quickest", quickest).fact("longest", longest),
    );
}

/// With a burst of the slow call, its quickest call that was not turned away at once
/// stands for the slow call (a queued one waited, so it says nothing of the timeout): one
/// slow call fewer per replica.
fn quickest_let_in(s: &LimitsSeen) -> Option<&Timed> {
    let (burst, _) = s.burst.as_ref().filter(|_| s.burst_of_slow)?;
    let longest = burst.iter().map(|t| t.millis).max()?;
    burst.iter().filter(|t| t.answer.served() || t.millis * 2 >= longest).min_by_key(|t| t.millis)
}

/// `limit_probes.slow`: uncut it takes longer than `timeout_seconds`, so a result after
/// the limit breaks it and an error within it (the cut) holds it.
fn judge_slow(v: &mut Verdicts, r: &str, limits: &ProviderLimits, slow: Option<&Timed>) {
    let (Some(t), Some(secs)) = (slow, limits.timeout_seconds) else { return };
    v.evidence.push(format!("{r}: the slow call → {} in {} ms", t.answer, t.millis));
    let took = Duration::from_millis(t.millis);
    match &t.answer {
        a if a.busy() => v.not_ready.push(format!("{r}: the slow call: {a}")),
        // Served after the limit: `timing`'s finding. Within it: the call was not slow.
        a if a.served() && took > Duration::from_secs(secs) + GRACE => v.timing(r, limits, "the slow call", |f| f, t),
        a if a.served() => v.not_pushed(
            "timeout_seconds",
            format!(
                "the slow call was served in {} ms, within timeout_seconds {secs} and a second for the way: it is not slow enough",
                t.millis
            ),
        ),
        _ if took <= Duration::from_secs(secs) + GRACE => v.held("timeout_seconds"),
        other => v.broken(
            r,
            "timeout_seconds",
            "the slow call was cut only after {seconds}s ({answer}), past timeout_seconds {max}: the server does not cut calls at the limit",
            |f| f.fact("seconds", format!("{:.1}", took.as_secs_f64())).fact("answer", other).fact("max", secs),
        ),
    }
}

fn judge_pages(v: &mut Verdicts, r: &str, limits: &ProviderLimits, pages: Option<&Result<Vec<PageSeen>, ErrorSeen>>) {
    match pages {
        None => {}
        Some(Err(e)) if e.not_ready => v.not_ready.push(format!("{r}: tools/list: {}", e.text)),
        Some(Err(e)) => v.broken(r, "page_size", "tools/list failed: {error}", |f| f.fact("error", &e.text)),
        Some(Ok(pages)) => {
            let sizes: Vec<String> = pages.iter().map(|p| format!("{} tools in {} bytes", p.items, p.bytes)).collect();
            v.evidence.push(format!("{r}: tools/list pages: {}", sizes.join("; ")));
            for (i, p) in pages.iter().enumerate() {
                if let Some(max) = limits.page_size
                    && p.items > max as usize
                {
                    v.broken(r, "page_size", "tools/list page {page} held {count} tools, over page_size {max}", |f| {
                        f.fact("page", i + 1).fact("count", p.items).fact("max", max)
                    });
                }
                if let Some(max) = limits.response_bytes
                    && p.bytes as u64 > max
                {
                    v.broken(
                        r,
                        "response_bytes",
                        "tools/list page {page} was {bytes} bytes, over response_bytes {max}",
                        |f| f.fact("page", i + 1).fact("bytes", p.bytes).fact("max", max),
                    );
                }
            }
            if let (Some(max), [only]) = (limits.page_size, pages.as_slice())
                && only.items <= max as usize
            {
                v.evidence.push(format!(
                    "{r}: the listing fits in one page of page_size {max}: paging itself is not exercised"
                ));
                v.not_pushed("page_size", format!("the listing holds {} tool(s), no more than one page", only.items));
            } else if limits.page_size.is_some() && pages.len() > 1 {
                v.held("page_size");
            }
        }
    }
}

fn judge_read(v: &mut Verdicts, r: &str, limits: &ProviderLimits, read: Option<&Timed>) {
    let Some(t) = read else {
        v.evidence.push(format!(
            "{r}: no read in the scenario: result_items and a result's response_bytes are not exercised"
        ));
        return;
    };
    judge_result(v, r, limits, "the read", t, false);
}

/// `limit_probes.large`: its answer, uncut larger than the limits, holds at most
/// `result_items` items in at most `response_bytes` bytes; a refusal holds too.
fn judge_large(v: &mut Verdicts, r: &str, limits: &ProviderLimits, large: Option<&Timed>) {
    if let Some(t) = large {
        judge_result(v, r, limits, "the large call", t, true);
    }
}

/// A call's result within `result_items` and `response_bytes` (and its time within
/// `timeout_seconds`). `pushes`: the call is one that, uncut, goes past both (the large
/// call), so a result within them or a refusal shows the limits hold.
fn judge_result(v: &mut Verdicts, r: &str, limits: &ProviderLimits, what: &'static str, t: &Timed, pushes: bool) {
    v.evidence.push(format!(
        "{r}: {what} → {} in {} ms{}{}",
        t.answer,
        t.millis,
        t.bytes.map(|b| format!(", {b} bytes")).unwrap_or_default(),
        t.asked_again()
    ));
    v.timing(r, limits, "{what}", |f| f.fact("what", what), t);
    match &t.answer {
        a if a.not_ready() => v.not_ready.push(format!("{r}: {what}: {a}")),
        CallAnswer::Result { is_error, items, .. } if !pushes || !is_error => {
            if let Some(max) = limits.result_items {
                if *items > max as usize {
                    v.broken(r, "result_items", "{what}'s result held {count} items, over result_items {max}", |f| {
                        f.fact("what", what).fact("count", items).fact("max", max)
                    });
                } else if pushes {
                    v.held("result_items");
                }
            }
            if let (Some(max), Some(bytes)) = (limits.response_bytes, t.bytes) {
                if bytes as u64 > max {
                    v.broken(r, "response_bytes", "{what}'s reply was {bytes} bytes, over response_bytes {max}", |f| {
                        f.fact("what", what).fact("bytes", bytes).fact("max", max)
                    });
                } else if pushes {
                    v.held("response_bytes");
                }
            }
        }
        a if pushes && a.refused() => {
            // Refused rather than answered over the bound: the limits held.
            v.held("result_items");
            v.held("response_bytes");
        }
        other if pushes => {
            let why = format!("{what} was not served ({other}): nothing was measured");
            v.not_pushed("result_items", why.clone());
            v.not_pushed("response_bytes", why);
        }
        other => v.evidence.push(format!("{r}: {what} was not served ({other}): its result cannot be measured")),
    }
}

fn judge_oversize(v: &mut Verdicts, r: &str, limits: &ProviderLimits, size: usize, over: &Timed, after: &Timed) {
    v.evidence.push(format!("{r}: tools/list of {size} bytes (request_bytes + 1) → {}", over.answer));
    v.evidence.push(format!("{r}: the next request → {}", after.answer));
    v.timing(r, limits, "the oversized request", |f| f, over);
    if over.answer.busy() || after.answer.busy() {
        v.not_ready
            .push(format!("{r}: busy, so the oversized request says nothing yet: {}; {}", over.answer, after.answer));
        return;
    }
    match &over.answer {
        CallAnswer::RpcError { .. } => {}
        CallAnswer::Http { status, .. } if (400..500).contains(status) => {}
        a if a.not_ready() && after.answer.not_ready() => {
            v.not_ready.push(format!("{r}: no answer to the oversized request nor the next: {a}"));
            return;
        }
        CallAnswer::Result { .. } => v.broken(
            r,
            "request_bytes",
            "a request of {bytes} bytes (request_bytes + 1) was served: request_bytes is not enforced",
            |f| f.fact("bytes", size),
        ),
        other => v.broken(
            r,
            "request_bytes",
            "a request of {bytes} bytes (request_bytes + 1) got {answer}: a refusal is 413 or a JSON-RPC error",
            |f| f.fact("bytes", size).fact("answer", other),
        ),
    }
    let refused = matches!(&over.answer, CallAnswer::RpcError { .. } | CallAnswer::Http { status: 400..=499, .. });
    if refused && after.answer.served() {
        v.held("request_bytes");
    }
    if !after.answer.served() {
        v.broken(
            r,
            "request_bytes",
            "after one request over request_bytes the provider no longer serves: {answer}",
            |f| f.fact("answer", &after.answer),
        );
    }
}

fn judge_burst(v: &mut Verdicts, r: &str, limits: &ProviderLimits, burst: &[Timed], after: &Timed, of_slow: bool) {
    let served = burst.iter().filter(|t| t.answer.served()).count();
    let turned_away = |a: &CallAnswer| {
        matches!(a, CallAnswer::RpcError { .. } | CallAnswer::Http { status: 400..=499 | 503, .. }) || a.refused()
    };
    let refused = burst.iter().filter(|t| turned_away(&t.answer)).count();
    let dropped: Vec<String> =
        burst.iter().filter(|t| !t.answer.served() && !turned_away(&t.answer)).map(|t| t.answer.to_string()).collect();
    let max = limits.concurrent_requests.unwrap_or(0);
    v.evidence.push(format!(
        "{r}: {} parallel requests (concurrent_requests + 1): {served} served, {refused} refused, {} without an answer; the next → {}",
        burst.len(),
        dropped.len(),
        after.answer
    ));
    // The slow call's own answer judges the timeout; its copies in the burst would only
    // say it again.
    if !of_slow {
        for (i, t) in burst.iter().enumerate() {
            v.timing(r, limits, "parallel request {request}", |f| f.fact("request", i + 1), t);
        }
    }
    if !dropped.is_empty() {
        v.broken(
            r,
            "concurrent_requests",
            "{dropped} of {count} parallel requests (concurrent_requests {max} + 1) got no answer ({answers}): calls over the limit are refused or queued, never dropped",
            |f| {
                f.fact("dropped", dropped.len())
                    .fact("count", burst.len())
                    .fact("max", max)
                    .fact("answers", dropped.join("; "))
            },
        );
    }
    judge_let_in(v, r, burst, max, of_slow, |a| turned_away(a));
    if after.answer.busy() {
        v.not_ready.push(format!("{r}: still busy after the parallel requests: {}", after.answer));
    } else if !after.answer.served() {
        v.broken(
            r,
            "concurrent_requests",
            "after {count} parallel requests the provider no longer serves: {answer}",
            |f| f.fact("count", burst.len()).fact("answer", &after.answer),
        );
    }
}

#[cfg(test)]
mod tests;
