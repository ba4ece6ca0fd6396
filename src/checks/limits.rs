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
//! Bounded: one oversized request, one listing, two reads and the limit plus one in
//! parallel. `stream_seconds` is not waited out (it would hold a stream open that long);
//! the evidence says so.

use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::future::{BoxFuture, join_all};
use serde::{Deserialize, Serialize};

use super::answers::{CallAnswer, era_words};
use super::sessions::ErrorSeen;
use super::vantage::{contract_vantages, observe_everywhere};
use super::wire;
use crate::check::{Check, Probe, RunContext};
use crate::config::{ProviderLimits, ReadSpec, Scenario};
use crate::mcp::{Endpoint, Limits, McpClient, PageSeen, Session};
use crate::model::{Attempt, Finding, FindingKind};
use crate::netns::NsView;
use crate::secret::Secret;

/// How often the request after an oversized one or a burst is asked again while busy.
const BUSY_RETRIES: usize = 5;

pub fn plan(scenario: &Scenario) -> Vec<Arc<dyn Check>> {
    super::vantage::for_enabled_providers(scenario, "limits", |id| LimitsCheck { provider: id.to_string() })
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
    pub client_limits: Limits,
}

/// One answer and how long it took.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Timed {
    pub answer: CallAnswer,
    pub millis: u64,
    /// Bytes of the reply, when it carried a result.
    pub bytes: Option<usize>,
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
}

impl LimitsPlan {
    pub async fn observe(self, view: Rc<NsView>) -> Vec<LimitsSeen> {
        let plan = &self;
        super::vantage::at_every_replica(&view, &self.endpoints, |r, e| async move { plan.at_replica(&r, &e).await })
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
        };
        // One client per role: the padded request's size depends on its id.
        let client = || McpClient::new(endpoint.clone(), Some(self.secret.clone()), self.client_limits.clone());
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
            Some(_) => Some(self.timed_read(&main, &session).await),
            None => None,
        };
        if let Some(limit) = self.limits.request_bytes {
            let over = limit as usize + 1;
            let started = Instant::now();
            let answer = match padded.connect().await {
                Ok(s) => {
                    let a = CallAnswer::of_request(
                        padded.request_padded(&s, "tools/list", serde_json::json!({}), over).await,
                    );
                    padded.close(s).await;
                    a
                }
                Err(e) => CallAnswer::Failed((&e).into()),
            };
            let oversized = Timed { answer, millis: millis(started), bytes: None };
            seen.oversize = Some((over, oversized, self.next_served(&main, &session).await));
        }
        if let Some(n) = self.limits.concurrent_requests {
            let calls = (0..=n).map(|_| self.next(&main, &session));
            let burst = join_all(calls).await;
            seen.burst = Some((burst, self.next_served(&main, &session).await));
        }
        main.close(session).await;
        seen
    }

    async fn timed_read(&self, client: &McpClient, session: &Session) -> Timed {
        let read = self.read.as_ref().expect("asked only with a read");
        let started = Instant::now();
        match client.call_tool_sized(session, &read.tool, read.arguments.clone()).await {
            Ok((result, bytes)) => {
                Timed { answer: CallAnswer::of(Ok(result)), millis: millis(started), bytes: Some(bytes) }
            }
            Err(e) => Timed { answer: CallAnswer::of(Err(e)), millis: millis(started), bytes: None },
        }
    }

    /// The next valid request, asked again while the provider says it is busy (other
    /// checks may hold its concurrency slots): is it still serving?
    async fn next_served(&self, client: &McpClient, session: &Session) -> Timed {
        let mut answer = self.next(client, session).await;
        for _ in 0..BUSY_RETRIES {
            if !answer.answer.busy() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(300)).await;
            answer = self.next(client, session).await;
        }
        answer
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
        Timed { answer, millis: millis(started), bytes: None }
    }
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
            let plan = |endpoints: &[(String, Endpoint)]| LimitsPlan {
                endpoints: endpoints.to_vec(),
                secret: ctx.scenario.secret(&provider.credential).clone(),
                read: provider.read.clone(),
                limits: limits.clone(),
                client_limits: client_limits.clone(),
            };
            match observe_everywhere(ctx, &vantages, plan).await {
                Ok((observed, from)) => judge(&limits, &observed, vec![format!("probed from {from}")]),
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
}

impl Verdicts {
    /// `limit` does not hold at `replica`: the finding's sentence is `template`, with the
    /// facts `facts` adds to it.
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
            && Duration::from_millis(t.millis) > Duration::from_secs(secs)
        {
            let took = t.millis as f64 / 1000.0;
            self.broken(replica, "timeout_seconds", " took {seconds}s, longer than timeout_seconds {max}", |f| {
                what_facts(f.prefixed(what)).fact("seconds", format!("{took:.1}")).fact("max", secs)
            });
        }
    }
}

/// Pure: every limit the scenario gives holds at every replica.
pub fn judge(limits: &ProviderLimits, observed: &[LimitsSeen], evidence: Vec<String>) -> Attempt {
    let mut v = Verdicts { findings: Vec::new(), not_ready: Vec::new(), evidence };
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
        if let Some((burst, after)) = &s.burst {
            judge_burst(&mut v, r, limits, burst, after);
        }
    }
    Attempt::settle(v.findings, v.not_ready, v.evidence)
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
    v.evidence.push(format!(
        "{r}: the read → {} in {} ms{}",
        t.answer,
        t.millis,
        t.bytes.map(|b| format!(", {b} bytes")).unwrap_or_default()
    ));
    v.timing(r, limits, "the read", |f| f, t);
    match &t.answer {
        a if a.not_ready() => v.not_ready.push(format!("{r}: the read: {a}")),
        CallAnswer::Result { items, .. } => {
            if let Some(max) = limits.result_items
                && *items > max as usize
            {
                v.broken(r, "result_items", "the read's result held {count} items, over result_items {max}", |f| {
                    f.fact("count", items).fact("max", max)
                });
            }
            if let (Some(max), Some(bytes)) = (limits.response_bytes, t.bytes)
                && bytes as u64 > max
            {
                v.broken(r, "response_bytes", "the read's reply was {bytes} bytes, over response_bytes {max}", |f| {
                    f.fact("bytes", bytes).fact("max", max)
                });
            }
        }
        other => v.evidence.push(format!("{r}: the read was not served ({other}): its result cannot be measured")),
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
    if !after.answer.served() {
        v.broken(
            r,
            "request_bytes",
            "after one request over request_bytes the provider no longer serves: {answer}",
            |f| f.fact("answer", &after.answer),
        );
    }
}

fn judge_burst(v: &mut Verdicts, r: &str, limits: &ProviderLimits, burst: &[Timed], after: &Timed) {
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
    for (i, t) in burst.iter().enumerate() {
        v.timing(r, limits, "parallel request {request}", |f| f.fact("request", i + 1), t);
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
