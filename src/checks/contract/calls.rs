//! `contract::<provider>::call_allowlist`: a policy gateway enforces its allowlist on
//! `tools/call`, not only on `tools/list`. At every replica, in every era it speaks and
//! with every credential its clients hold, `tools/call` of every name the provider must
//! not run is refused and shows no sign of having run.
//!
//! The names: mutating tools while mutation is off, `denied_tools`, the upstream
//! specification's tools outside the allowlist, and every name any listing served
//! outside the allowlist (another era, another page, another bearer). A name that
//! cannot exist is called first, as the control: it shows how this provider refuses.
//!
//! A hostile gateway can fake a refusal; each way is judged:
//! - it runs the tool and answers `isError: false` (or a result that is not a
//!   `CallToolResult`): ran;
//! - it runs it and reports the upstream's failure as `isError: true`: an error in its
//!   own words (unlike the control's) says nothing either way, whatever the words (a
//!   correct gateway may refuse in any words, and a leaky one may say "forbidden" after
//!   the run): the check is not judged, with why, unless the read proves a run;
//! - it answers `isError: true` with `structuredContent`: a tool's output;
//! - it forwards the call and the upstream fails (5xx) where the control is refused;
//! - it says "unknown" and runs it anyway: the deterministic read, asked before and
//!   after the calls, answers differently.

use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;
use std::sync::Arc;

use futures_util::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::check::{Check, Probe, RunContext};
use crate::checks::kit::answers::{CallAnswer, era_words, sessions_in_every_era};
use crate::checks::kit::sessions::ErrorSeen;
use crate::checks::kit::upstream::{self, UpstreamLog};
use crate::checks::kit::vantage::{contract_vantages, observe_everywhere};
use crate::checks::kit::wire;
use crate::config::{Provider, ReadSpec, Scenario};
use crate::mcp::{Endpoint, Limits, McpClient};
use crate::model::{Attempt, Finding, FindingKind};
use crate::netns::NsView;
use crate::secret::Secret;
use crate::text::name_list;

/// How often the read around the calls is asked again, and how long apart, before its
/// answer stands.
const READ_AGAIN: usize = 2;
const READ_AGAIN_AFTER: std::time::Duration = std::time::Duration::from_millis(500);

pub fn plan(scenario: &Scenario) -> Vec<Arc<dyn Check>> {
    crate::checks::kit::vantage::for_enabled_providers(scenario, "call_allowlist", |id| CallAllowlistCheck {
        provider: id.to_string(),
    })
}

struct CallAllowlistCheck {
    provider: String,
}

/// A credential to call with, and how evidence names it.
#[derive(Clone, Serialize, Deserialize)]
pub struct Bearer {
    pub label: String,
    #[serde(with = "wire::secret")]
    pub secret: Secret,
}

/// The names the scenario says the provider must not run, each with why.
pub fn denied_names(provider: &Provider) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    let mut add = |name: &str, why: &str| {
        if !provider.tools.allowlist.iter().any(|a| a == name) && !out.iter().any(|(n, _)| n == name) {
            out.push((name.to_string(), why.to_string()));
        }
    };
    if !provider.tools.mutating_enabled {
        provider.tools.mutating.iter().for_each(|m| add(m, "mutating, and mutation is not enabled"));
    }
    provider.boundary.denied_tools.iter().for_each(|d| add(d, "in denied_tools"));
    if let Some(spec) = &provider.boundary.specification {
        for tool in &spec.tools {
            add(&tool.name, "in the upstream specification, outside the allowlist");
        }
    }
    out
}

/// What the vantage point does at each replica.
#[derive(Clone, Serialize, Deserialize)]
pub struct CallsPlan {
    pub endpoints: Vec<(String, Endpoint)>,
    /// The provider's own credential first, then every other one its clients hold.
    pub bearers: Vec<Bearer>,
    pub denied: Vec<String>,
    pub allowlist: Vec<String>,
    /// A name that cannot exist: the control.
    pub unknown: String,
    #[serde(with = "wire::read")]
    pub read: Option<ReadSpec>,
    pub limits: Limits,
    /// Denied name → its input schema, for a provider with an app behind it: each call
    /// carries a nonce to the app if it runs (see [`upstream`]).
    #[serde(default)]
    pub nonce_schemas: BTreeMap<String, Value>,
    /// An allowed, non-mutating tool and its schema: called once with a nonce of its own,
    /// it shows whether the app logs what it receives.
    #[serde(default)]
    pub control: Option<(String, Value)>,
}

/// One session (a replica, an era, a bearer) and every call made in it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SessionCalls {
    pub replica: String,
    pub bearer: String,
    /// The era, in words; `Err` when no session opened.
    pub era: Result<String, ErrorSeen>,
    /// Names served outside the allowlist in this session's listing.
    pub listed_outside: Vec<String>,
    /// (tool, answer); the control first.
    pub calls: Vec<(String, CallAnswer)>,
    /// The deterministic read before and after the calls (the first session only).
    pub reads: Option<(CallAnswer, CallAnswer)>,
    /// The nonce each call carried, in the order of `calls`; `None` for a call whose
    /// tool has no string argument to carry one (and for the control name).
    #[serde(default)]
    pub nonces: Vec<Option<String>>,
    /// The allowed call with a nonce of its own (the first session only): tool, nonce,
    /// answer.
    #[serde(default)]
    pub upstream_control: Option<(String, String, CallAnswer)>,
}

impl CallsPlan {
    pub async fn observe(self, view: Rc<NsView>) -> Vec<SessionCalls> {
        let plan = &self;
        let seen = crate::checks::kit::vantage::at_every_replica(&view, &self.endpoints, |r, e| async move {
            plan.at_replica(&r, &e).await
        });
        seen.await.into_iter().flatten().collect()
    }

    async fn at_replica(&self, replica: &str, endpoint: &Endpoint) -> Vec<SessionCalls> {
        let mut clients = Vec::new();
        let mut out = Vec::new();
        // First every listing, so that a name one era or bearer shows is called in all.
        for bearer in &self.bearers {
            let client = match McpClient::new(endpoint.clone(), Some(bearer.secret.clone()), self.limits.clone()) {
                Ok(c) => c,
                Err(e) => {
                    out.push(self.unopened(replica, bearer, (&e).into()));
                    continue;
                }
            };
            let mut sessions = Vec::new();
            for session in sessions_in_every_era(&client).await {
                match session {
                    Ok(s) => {
                        let listed = client.list_tools(&s).await.unwrap_or_default();
                        let outside: Vec<String> =
                            listed.into_iter().map(|t| t.name).filter(|n| !self.allowlist.contains(n)).collect();
                        sessions.push((s, outside));
                    }
                    Err(e) => out.push(self.unopened(replica, bearer, e)),
                }
            }
            clients.push((bearer, client, sessions));
        }
        let mut names: Vec<String> = self.denied.clone();
        for (_, _, sessions) in &clients {
            for (_, outside) in sessions {
                names.extend(outside.iter().filter(|n| !names.contains(n)).cloned().collect::<Vec<_>>());
            }
        }
        let mut first = true;
        for (bearer, client, sessions) in clients {
            for (session, outside) in sessions {
                let before = if first { self.read_before(&client, &session).await } else { None };
                let mut calls = Vec::new();
                let mut nonces = Vec::new();
                for name in std::iter::once(&self.unknown).chain(&names) {
                    let nonce = upstream::nonce();
                    let with_nonce = self.nonce_schemas.get(name).and_then(|s| upstream::nonce_arguments(s, &nonce));
                    nonces.push(with_nonce.is_some().then_some(nonce));
                    let arguments = with_nonce.unwrap_or_else(|| serde_json::json!({}));
                    calls.push((name.clone(), CallAnswer::of(client.call_tool(&session, name, arguments).await)));
                }
                // After the denied calls: an app that logged the control logged what came
                // before it too.
                let upstream_control = if first { self.control_call(&client, &session).await } else { None };
                let after = match &before {
                    Some(before) => self.read_after(&client, &session, before).await,
                    None => None,
                };
                first = false;
                out.push(SessionCalls {
                    replica: replica.to_string(),
                    bearer: bearer.label.clone(),
                    era: Ok(era_words(&session.era)),
                    listed_outside: outside,
                    calls,
                    reads: before.zip(after),
                    nonces,
                    upstream_control,
                });
                client.close(session).await;
            }
        }
        out
    }

    /// The allowed tool called with a nonce of its own: what the app's log shows of a call
    /// that runs.
    async fn control_call(
        &self,
        client: &McpClient,
        session: &crate::mcp::Session,
    ) -> Option<(String, String, CallAnswer)> {
        let (tool, schema) = self.control.as_ref()?;
        let nonce = upstream::nonce();
        let arguments = upstream::nonce_arguments(schema, &nonce)?;
        let answer = CallAnswer::of(client.call_tool(session, tool, arguments).await);
        Some((tool.clone(), nonce, answer))
    }

    async fn read_once(&self, client: &McpClient, session: &crate::mcp::Session) -> Option<CallAnswer> {
        let read = self.read.as_ref()?;
        Some(CallAnswer::of(client.call_tool(session, &read.tool, read.arguments.clone()).await))
    }

    /// The read before the calls, asked again while it serves no result: the side effect
    /// is judged against a result, never against a timeout of a busy host.
    async fn read_before(&self, client: &McpClient, session: &crate::mcp::Session) -> Option<CallAnswer> {
        let mut answer = self.read_once(client, session).await?;
        for _ in 0..READ_AGAIN {
            if answer.served() {
                break;
            }
            tokio::time::sleep(READ_AGAIN_AFTER).await;
            answer = self.read_once(client, session).await?;
        }
        Some(answer)
    }

    /// The read after the calls, asked again while it differs from `before`: a side effect
    /// lasts, a busy moment passes.
    async fn read_after(
        &self,
        client: &McpClient,
        session: &crate::mcp::Session,
        before: &CallAnswer,
    ) -> Option<CallAnswer> {
        let mut answer = self.read_once(client, session).await?;
        for _ in 0..READ_AGAIN {
            if answer == *before {
                break;
            }
            tokio::time::sleep(READ_AGAIN_AFTER).await;
            answer = self.read_once(client, session).await?;
        }
        Some(answer)
    }

    fn unopened(&self, replica: &str, bearer: &Bearer, e: ErrorSeen) -> SessionCalls {
        SessionCalls {
            replica: replica.to_string(),
            bearer: bearer.label.clone(),
            era: Err(e),
            listed_outside: vec![],
            calls: vec![],
            reads: None,
            nonces: vec![],
            upstream_control: None,
        }
    }
}

impl Probe for CallAllowlistCheck {
    fn run<'a>(&'a self, ctx: &'a RunContext) -> BoxFuture<'a, Attempt> {
        Box::pin(async move {
            let provider = ctx.scenario.provider(&self.provider).expect("planned from the scenario").clone();
            let vantages = match contract_vantages(ctx, &provider) {
                Ok(v) => v,
                Err(attempt) => return attempt,
            };
            let denied = denied_names(&provider);
            let (nonce_schemas, control, in_path) =
                if ctx.deployment.is_some() { upstream_probe(&provider) } else { Default::default() };
            let plan = |endpoints: &[(String, Endpoint)]| CallsPlan {
                endpoints: endpoints.to_vec(),
                bearers: bearers_of(ctx, &provider),
                denied: denied.iter().map(|(n, _)| n.clone()).collect(),
                allowlist: provider.tools.allowlist.clone(),
                unknown: unknown_name(),
                read: provider.read.clone(),
                limits: ctx.suite.limits.clone(),
                nonce_schemas: nonce_schemas.clone(),
                control: control.clone(),
            };
            let (observed, from) = match observe_everywhere(ctx, &vantages, plan).await {
                Ok(seen) => seen,
                Err(attempt) => return attempt,
            };
            let controls = control_nonces(&observed);
            let upstream = match (&provider.app, &ctx.deployment) {
                (Some(app), Some(deployment)) if !controls.is_empty() => {
                    let nonces: Vec<String> =
                        observed.iter().flat_map(|s| s.nonces.iter().flatten().cloned()).collect();
                    Some(upstream::read_app_logs(deployment, &app.service, &nonces, &controls, in_path).await)
                }
                _ => None,
            };
            judge(&denied, &observed, upstream.as_ref(), vec![format!("probed from {from}")])
        })
    }
}

/// Tool → schema, the control (tool, schema), the tools whose nonce travels in the path.
type UpstreamProbe = (BTreeMap<String, Value>, Option<(String, Value)>, BTreeSet<String>);

/// For a provider with an app behind it and a specification: the schema of every
/// specified tool, an allowed, non-mutating one whose nonce travels in its operation's
/// path (the control), and every tool whose nonce does. Nothing for any other provider:
/// no app, no log.
fn upstream_probe(provider: &Provider) -> UpstreamProbe {
    let (Some(_), Some(spec)) = (&provider.app, &provider.boundary.specification) else {
        return (BTreeMap::new(), None, BTreeSet::new());
    };
    // Only a tool whose nonce travels in its request line is called with one: a call that
    // ran then touched nothing but a resource the nonce names, which does not exist.
    let in_path: BTreeSet<String> = spec
        .tools
        .iter()
        .filter(|t| t.input_schema.as_ref().zip(t.path.as_ref()).is_some_and(|(s, p)| upstream::carried_in_path(s, p)))
        .filter(|t| t.input_schema.as_ref().is_some_and(|s| upstream::nonce_arguments(s, "probe").is_some()))
        .map(|t| t.name.clone())
        .collect();
    let schemas: BTreeMap<String, Value> = spec
        .tools
        .iter()
        .filter(|t| in_path.contains(&t.name))
        .filter_map(|t| Some((t.name.clone(), t.input_schema.clone()?)))
        .collect();
    let mut allowed: Vec<&String> = provider.tools.allowlist.iter().collect();
    allowed.sort();
    let control = allowed
        .into_iter()
        .filter(|t| !provider.tools.mutating.contains(t) && in_path.contains(*t))
        .filter(|t| spec.tools.iter().any(|s| &&s.name == t && !s.mutating))
        .find_map(|t| Some((t.clone(), schemas.get(t)?.clone())));
    (schemas, control, in_path)
}

/// The nonces of the allowed calls, one per replica the calls went through.
fn control_nonces(observed: &[SessionCalls]) -> Vec<String> {
    observed.iter().filter_map(|s| s.upstream_control.as_ref().map(|(_, nonce, _)| nonce.clone())).collect()
}

/// The provider's own credential, then every other credential an admitted client holds
/// for it.
pub fn bearers_of(ctx: &RunContext, provider: &Provider) -> Vec<Bearer> {
    let own = ctx.scenario.secret(&provider.credential);
    let mut out = vec![Bearer { label: format!("the provider's credential ({})", own.label()), secret: own.clone() }];
    for client in ctx.scenario.clients.iter().filter(|c| provider.allowed_consumers.contains(&c.id)) {
        let Some(id) = client.credentials.get(&provider.id) else { continue };
        let secret = ctx.scenario.secret(id);
        if out.iter().all(|b| b.secret.expose() != secret.expose()) {
            out.push(Bearer {
                label: format!("client {}'s credential ({})", client.id, secret.label()),
                secret: secret.clone(),
            });
        }
    }
    out
}

/// A tool name no provider serves: lowercase letters after a fixed prefix.
pub fn unknown_name() -> String {
    use rand::RngExt;
    let mut rng = rand::rng();
    let tail: String = (0..10).map(|_| (b'a' + rng.random_range(0..26u8)) as char).collect();
    format!("cordon_no_such_tool_{tail}")
}

/// How one call of a name that must not run counts.
#[derive(Debug, PartialEq)]
pub enum Called {
    Refused,
    /// `isError: true` in the server's own words, unlike the refusal of a name that cannot
    /// exist: the answer shows neither a refusal nor a run.
    OwnWords,
    NotReady(String),
    /// A 5xx where a name that cannot exist is refused: the call went past the policy,
    /// unless the app's log shows it never arrived there.
    PastPolicy(Finding),
    /// Why it may have run: the end of a finding's sentence (`answered … : the tool ran`),
    /// which the judge begins with where and what was called.
    Ran(Finding),
}

/// Pure: is `answer` to a call of `name` a refusal? `control` is the answer to the name
/// that cannot exist, in the same session.
pub fn classify(name: &str, answer: &CallAnswer, control: Option<(&str, &CallAnswer)>) -> Called {
    let control_refused = control.is_some_and(|(_, c)| c.refused());
    let ran_answering =
        |template: &'static str| Called::Ran(Finding::new(FindingKind::DeniedToolRan, template).fact("answer", answer));
    match answer {
        CallAnswer::RpcError { .. } => Called::Refused,
        a if a.busy() => Called::NotReady(format!("busy: {a}")),
        CallAnswer::Http { status, .. } if *status < 500 => Called::Refused,
        CallAnswer::Http { status, .. } if control_refused => Called::PastPolicy(
            Finding::new(
                FindingKind::DeniedToolRan,
                "answered HTTP {status} where a name that cannot exist is refused: the call went past the policy",
            )
            .fact("status", status),
        ),
        CallAnswer::Http { status, body } => Called::NotReady(format!("HTTP {status}: {body}")),
        CallAnswer::Failed(e) if e.not_ready => Called::NotReady(e.text.clone()),
        CallAnswer::Failed(e) => Called::Ran(
            Finding::new(FindingKind::DeniedToolRan, "answered something that is not a refusal: {error}")
                .fact("error", &e.text),
        ),
        CallAnswer::Result { is_error: false, .. } => ran_answering("answered {answer}: the tool ran"),
        CallAnswer::Result { structured: true, .. } => {
            ran_answering("answered {answer}: structured output is a tool's output")
        }
        CallAnswer::Result { text, .. } => {
            // What the server did, not what it said: refused the way it refuses a name
            // that cannot exist (its words, with the name put in), or nothing is shown.
            let same_as_control = control.is_some_and(|(unknown, c)| match c {
                CallAnswer::Result { is_error: true, text: t, .. } => t.replace(unknown, name) == *text,
                _ => false,
            });
            if same_as_control { Called::Refused } else { Called::OwnWords }
        }
    }
}

/// Pure: every name that must not run was refused everywhere, showing no sign of a run.
pub fn judge(
    denied: &[(String, String)],
    observed: &[SessionCalls],
    upstream: Option<&UpstreamLog>,
    mut evidence: Vec<String>,
) -> Attempt {
    let outside: BTreeSet<&str> = observed.iter().flat_map(|s| s.listed_outside.iter().map(String::as_str)).collect();
    if denied.is_empty() && outside.is_empty() {
        return Attempt::Skip {
            reason: "no tool name this provider must not run: the scenario lists no mutating tool (with mutation off), `denied_tools` or `specification` for it, and no listing served a name outside the allowlist".into(),
        };
    }
    for (name, why) in denied {
        evidence.push(format!("must not run `{}`: {why}", crate::text::sanitize(name)));
    }
    if !outside.is_empty() {
        evidence
            .push(format!("served outside the allowlist, so called too: {}", name_list(outside.iter().copied(), 20)));
    }
    let mut findings = Vec::new();
    let mut not_ready = Vec::new();
    let mut own_words: Vec<String> = Vec::new();
    let mut reads_seen = false;
    let control = observed.iter().find_map(|s| s.upstream_control.as_ref());
    let controls: Vec<&(String, String, CallAnswer)> =
        observed.iter().filter_map(|s| s.upstream_control.as_ref()).collect();
    // Every replica's control in the log, and every log read whole: else a missing nonce
    // may be in a log that was not read.
    let control_seen = upstream.is_some_and(|u| {
        u.unread.is_empty() && !controls.is_empty() && controls.iter().all(|(_, nonce, _)| u.holds(nonce).is_some())
    });
    for s in observed {
        let at = format!("{}, {}", s.replica, s.bearer);
        let era = match &s.era {
            Ok(era) => era,
            Err(e) if e.not_ready => {
                not_ready.push(format!("{at}: no session: {}", e.text));
                continue;
            }
            Err(e) => {
                findings.push(
                    Finding::new(
                        FindingKind::CannotBeJudged,
                        "{replica}, {bearer}: cannot be judged: no session: {error}",
                    )
                    .fact("replica", &s.replica)
                    .fact("bearer", &s.bearer)
                    .fact("error", &e.text),
                );
                continue;
            }
        };
        let unknown = s.calls.first().map(|(n, a)| (n.as_str(), a));
        for (i, (name, answer)) in s.calls.iter().enumerate() {
            let shown = crate::text::sanitize(name);
            let line = format!("{at}, {era}: tools/call {shown} → {answer}");
            evidence.push(line.clone());
            let verdict = if i == 0 {
                match answer {
                    a if a.refused() => Called::Refused,
                    a if a.not_ready() => Called::NotReady(a.to_string()),
                    a => Called::Ran(
                        Finding::new(
                            FindingKind::DeniedToolRan,
                            "answered {answer} to a name that cannot exist: it runs any name",
                        )
                        .fact("answer", a),
                    ),
                }
            } else {
                classify(name, answer, unknown)
            };
            let nonce = s.nonces.get(i).and_then(Option::as_deref);
            let (verdict, proof) = with_upstream(verdict, (name, answer), nonce, upstream, control_seen);
            evidence.extend(proof.map(|p| format!("{at}, {era}: tools/call {shown}: {p}")));
            match verdict {
                Called::Refused => {}
                Called::OwnWords => own_words.push(line),
                Called::NotReady(why) => not_ready.push(format!("{at}: tools/call {shown}: {why}")),
                Called::Ran(why) | Called::PastPolicy(why) => findings.push(
                    why.prefixed("{replica}, {bearer}, {era}: tools/call `{tool_shown}` ")
                        .fact("replica", &s.replica)
                        .fact("bearer", &s.bearer)
                        .fact("era", era)
                        .fact("tool_shown", &shown)
                        .fact("tool", name)
                        .proven_by(line),
                ),
            }
        }
        if let Some((before, after)) = &s.reads {
            let (line, change) = read_change(s, &at, era, before, after);
            reads_seen |= !before.not_ready() && !after.not_ready() && !server_error(before);
            evidence.push(line);
            findings.extend(change);
        }
    }
    evidence.extend(upstream.map(|u| upstream_line(u, control)));
    if findings.is_empty() && not_ready.is_empty() && !own_words.is_empty() {
        return not_judged(&own_words, reads_seen, &upstream_why(upstream, control, control_seen));
    }
    Attempt::settle(findings, not_ready, evidence)
}

/// What the app's log adds to a call's verdict, and the evidence of it: the call's nonce
/// there is a run, whatever was answered; its absence, where the app logged the allowed
/// control call's nonce, makes an answer in the server's own words a refusal.
fn with_upstream(
    verdict: Called,
    (name, answer): (&str, &CallAnswer),
    nonce: Option<&str>,
    upstream: Option<&UpstreamLog>,
    control_seen: bool,
) -> (Called, Option<String>) {
    let (Some(nonce), Some(log)) = (nonce, upstream) else { return (verdict, None) };
    match (log.holds(nonce), verdict) {
        (Some(container), Called::Ran(finding) | Called::PastPolicy(finding)) => {
            (Called::Ran(finding), Some(format!("its nonce {nonce} is in {container}'s log too")))
        }
        (Some(container), _) => {
            let finding = Finding::new(
                FindingKind::DeniedToolRan,
                "answered {answer}, yet the upstream app {app} received it ({container}'s log holds the call's nonce): the tool ran",
            )
            .fact("answer", answer)
            .fact("app", &log.app)
            .fact("container", container);
            (Called::Ran(finding), Some(format!("its nonce {nonce} is in {container}'s log: it reached the app")))
        }
        (None, Called::PastPolicy(_)) if control_seen && log.in_path.contains(name) => (
            Called::Refused,
            Some(format!(
                "refused: app {} logged the allowed control call's nonce and not this call's ({nonce}): the gateway's 5xx is its own, the call never reached the app",
                log.app
            )),
        ),
        (None, Called::OwnWords) if control_seen && log.in_path.contains(name) => (
            Called::Refused,
            Some(format!(
                "refused: app {} logged the allowed control call's nonce and not this call's ({nonce}), so it was never sent there",
                log.app
            )),
        ),
        (None, verdict) => (verdict, None),
    }
}

/// The evidence line of the app's logs.
fn upstream_line(log: &UpstreamLog, control: Option<&(String, String, CallAnswer)>) -> String {
    let control = match control {
        Some((tool, nonce, answer)) => match log.holds(nonce) {
            Some(container) => format!("the allowed control call `{tool}` ({answer}) is in {container}'s log"),
            None => format!("the allowed control call `{tool}` ({answer}) is in no log"),
        },
        None => "no control call was made".into(),
    };
    let unread = if log.unread.is_empty() { String::new() } else { format!("; unread: {}", log.unread.join("; ")) };
    format!(
        "upstream app {}: logs read of {}; {control}{unread}",
        log.app,
        name_list(log.containers.iter().map(String::as_str), 10)
    )
}

/// Why the app's log proves nothing here, for the "not judged" reason.
fn upstream_why(
    upstream: Option<&UpstreamLog>,
    control: Option<&(String, String, CallAnswer)>,
    control_seen: bool,
) -> String {
    match (upstream, control) {
        (None, None) => "no app behind the provider whose log would show a forwarded call, or no allowed tool of its specification with a string argument to carry a control nonce".into(),
        (None, Some(_)) => "the provider names no app whose log would show a forwarded call".into(),
        (Some(u), _) if !u.unread.is_empty() => format!(
            "not every log of app {} was read whole ({}), so a missing nonce proves nothing",
            u.app,
            u.unread.join("; ")
        ),
        (Some(u), _) if !control_seen => format!(
            "app {}'s log holds not even the allowed control call's nonce (of every replica), so it does not show what the app receives",
            u.app
        ),
        (Some(_), _) => "no operation of the specification for that name carries a string argument in its path (where an access log would show a nonce), or a required argument of it is no free string".into(),
    }
}

/// The read before and after the calls of session `s`: its evidence line, and the finding
/// when a refused call changed what it answers. The probe asked each again while it
/// looked passing (no result before the calls, a different answer after them), so a
/// timeout of a busy host is gone and what differs here lasted.
fn read_change(
    s: &SessionCalls,
    at: &str,
    era: &str,
    before: &CallAnswer,
    after: &CallAnswer,
) -> (String, Option<Finding>) {
    if server_error(before) {
        let line = format!(
            "{at}: the read before the calls failed on the server's side ({before}), asked three times, so what the calls changed is not judged; after: {after}"
        );
        return (line, None);
    }
    let line = format!("{at}: the read before the calls: {before}; after: {after}");
    if before.not_ready() || after.not_ready() || before == after {
        return (line, None);
    }
    let finding = Finding::new(
        FindingKind::DeniedToolRan,
        "{replica}, {bearer}, {era}: the deterministic read answered {read_before} before the denied calls and {read_after} after them: a call that was refused changed the provider",
    )
    .fact("replica", &s.replica)
    .fact("bearer", &s.bearer)
    .fact("era", era)
    .fact("read_before", before)
    .fact("read_after", after)
    .proven_by(line.clone());
    (line, Some(finding))
}

/// A JSON-RPC server error (-32000 to -32099: the server's own failure, a timeout of its
/// upstream on a busy host) is no answer of the read to compare a later one with.
fn server_error(answer: &CallAnswer) -> bool {
    matches!(answer, CallAnswer::RpcError { code: -32099..=-32000, .. })
}

/// Calls answered in the server's own words and nothing that shows a run: neither a pass
/// nor a failure, whatever the words say.
fn not_judged(own_words: &[String], reads_seen: bool, upstream_why: &str) -> Attempt {
    let side_effect = if reads_seen {
        "the deterministic read answered the same before and after (a tool with no side effect it shows may still have run)"
    } else {
        "the scenario names no deterministic read to show a side effect"
    };
    let more = match own_words.len() {
        1 => String::new(),
        n => format!(" (and {} more like it)", n - 1),
    };
    Attempt::Skip {
        reason: format!(
            "not judged: a name this provider must not run was answered with an error in the server's own words, not the way it refuses a name that cannot exist, and nothing shows whether the tool ran: {side_effect}; {upstream_why}; {}{more}",
            own_words[0]
        ),
    }
}

#[cfg(test)]
mod tests;
