//! Bearers a provider must not honour, presented at every entry point of every replica,
//! in both eras, with and without a session (the valid session's own id and any id a
//! refusal handed out included), and judged: each is refused everywhere and learns no
//! tool name in any answer. The one way `contract::<p>::{anonymous,wrong_bearer,
//! foreign_bearer}` and `credentials::<p>::{retired,revoked}` try a credential.
//!
//! Observed per replica: a valid session (its era, its id, the tools it is served), the
//! valid bearer's answer at every entry point (the control), and the bad bearer's answer
//! at the same entry points plus the session-bound ones. Judged by [`judge`], a pure
//! function over those observations.

use std::collections::{BTreeMap, BTreeSet};

use futures_util::StreamExt;
use futures_util::future::join_all;
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::check::RunContext;
use crate::checks::kit::sessions::{ErrorSeen, Try};
use crate::checks::kit::vantage::{contract_vantages, observe_everywhere};
use crate::config::{Provider, Refusal};
use crate::mcp::{Ask, Endpoint, EntryPoint, Era, EraChoice, Exchange, Limits, McpClient, SessionSource, Transport};
use crate::model::{Attempt, Finding, FindingKind};
use crate::secret::Secret;
/// One credential presented, and how evidence names it.
#[derive(Clone, Serialize, Deserialize)]
pub struct Presented {
    pub label: String,
    #[serde(with = "crate::checks::kit::wire::opt_secret")]
    pub secret: Option<Secret>,
    /// Sent as this URL query parameter, with no `Authorization` header.
    #[serde(default)]
    pub in_query: Option<String>,
    /// How a list of bearers that got the same answer names this one after the first
    /// (`near miss: cut by one`); the label when absent.
    #[serde(default)]
    pub short: Option<String>,
}

impl Presented {
    pub(crate) fn bearer(label: impl Into<String>, secret: Option<Secret>) -> Self {
        Presented { label: label.into(), secret, in_query: None, short: None }
    }

    pub(crate) fn shortly(self, short: impl Into<String>) -> Self {
        Presented { short: Some(short.into()), ..self }
    }
}

/// What the vantage point does: at every replica, a valid session, the valid bearer's
/// control answers, and every presented bearer at every entry point.
#[derive(Clone, Serialize, Deserialize)]
pub struct RefusalPlan {
    /// (replica label, endpoint pinned to it)
    pub endpoints: Vec<(String, Endpoint)>,
    #[serde(with = "crate::checks::kit::wire::provider")]
    pub provider: Provider,
    #[serde(with = "crate::checks::kit::wire::secret")]
    pub valid: Secret,
    pub presented: Vec<Presented>,
    pub limits: Limits,
}

impl RefusalPlan {
    pub async fn observe(self, view: std::rc::Rc<crate::netns::NsView>) -> Vec<ReplicaRefusal> {
        let RefusalPlan { endpoints, provider, valid, presented, limits } = self;
        let endpoints = endpoints.into_iter().map(|(r, e)| (r, crate::checks::kit::vantage::in_libc_order(&view, &e)));
        join_all(endpoints.map(|(replica, endpoint)| {
            observe_replica(replica, endpoint, &provider, valid.clone(), presented.clone(), limits.clone())
        }))
        .await
    }
}

/// The valid bearer's own session at a replica.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ValidSession {
    /// The valid bearer's initialize-handshake session, when the server offered the
    /// stateless era first (absent otherwise), or why it could not be opened.
    #[serde(default)]
    pub handshake: Option<Result<HandshakeSession, ErrorSeen>>,
    pub era: Era,
    pub session_id: bool,
    pub served: Vec<String>,
}

/// A second valid session, in the handshake era.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HandshakeSession {
    pub protocol_version: Option<String>,
    pub session_id: bool,
}

/// Everything seen at one replica.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReplicaRefusal {
    pub replica: String,
    pub valid: Result<ValidSession, ErrorSeen>,
    /// The valid bearer at the sessionless entry points.
    pub control: Vec<Try>,
    /// Each bad bearer (by label) at every entry point.
    pub probes: Vec<(String, Vec<Try>)>,
}

/// What the judge needs beyond observations.
#[derive(Clone, Debug, Default)]
pub struct RefusalRule {
    pub refusal: Refusal,
    pub bearer_label: String,
    /// Providers whose credential has the same value as this one's.
    pub shared_with: Vec<String>,
    /// A presented bearer's short name by its label (see [`Presented::short`]).
    pub short_names: BTreeMap<String, String>,
    /// The bearers are other providers' valid credentials, which cordon itself presents:
    /// a finding says so, so no reader hunts for a client that held one.
    pub presented_by_cordon: bool,
}

impl RefusalRule {
    /// The rule, knowing how to name each of `presented` in a list.
    fn naming(&self, presented: &[Presented]) -> RefusalRule {
        let short_names = presented.iter().filter_map(|p| Some((p.label.clone(), p.short.clone()?))).collect();
        RefusalRule { short_names, ..self.clone() }
    }

    fn short_name<'a>(&'a self, label: &'a str) -> &'a str {
        self.short_names.get(label).map_or(label, String::as_str)
    }
}

/// Presents bad bearers at `provider` from every vantage and judges what they got: the one
/// way `anonymous`, `wrong_bearer`, `foreign_bearer` and dead credentials are tried.
pub async fn presented_everywhere(
    ctx: &RunContext,
    provider: &Provider,
    presented: Vec<Presented>,
    rule: &RefusalRule,
) -> Attempt {
    let vantages = match contract_vantages(ctx, provider) {
        Ok(v) => v,
        Err(attempt) => return attempt,
    };
    let observed = observe_everywhere(ctx, &vantages, |endpoints| RefusalPlan {
        endpoints: endpoints.to_vec(),
        provider: provider.clone(),
        valid: ctx.scenario.secret(&provider.credential).clone(),
        presented: presented.clone(),
        limits: ctx.suite.limits.clone(),
    })
    .await;
    let (observations, from) = match observed {
        Ok(o) => o,
        Err(attempt) => return attempt,
    };
    let mut attempt = judge(&observations, &rule.naming(&presented));
    attempt.lead_with(format!("probed from {from}"));
    attempt
}

/// 40 random letters and digits, no fixed prefix: nothing else cordon prints can share a
/// run of eight characters with it, so its redaction never fires on innocent text.
pub fn wrong_bearer() -> String {
    crate::secret::random_token(40)
}

/// Credentials one edit away from the valid one, each with how it was made: a server that
/// compares only a prefix, accepts the token with anything appended or cut short, or
/// ignores case lets one of them in. None equals the valid value.
pub fn near_misses(valid: &str) -> Vec<(&'static str, String)> {
    let chars: Vec<char> = valid.chars().collect();
    let n = chars.len();
    if n == 0 {
        return vec![];
    }
    let other = |c: char| match c {
        '0'..='8' => ((c as u8) + 1) as char,
        '9' => '0',
        'a'..='y' | 'A'..='Y' => ((c as u8) + 1) as char,
        'z' => 'a',
        'Z' => 'A',
        _ => 'x',
    };
    let mut last_changed = chars.clone();
    last_changed[n - 1] = other(chars[n - 1]);
    let half = n / 2;
    let new_tail: String = chars[half..].iter().map(|&c| other(other(c))).collect();
    let swapped: String = chars
        .iter()
        .map(|c| if c.is_ascii_lowercase() { c.to_ascii_uppercase() } else { c.to_ascii_lowercase() })
        .collect();
    let candidates = [
        ("last character changed", last_changed.into_iter().collect::<String>()),
        ("first half kept, new tail", chars[..half].iter().collect::<String>() + &new_tail),
        ("suffix appended", format!("{valid}0")),
        ("cut by one", chars[..n - 1].iter().collect()),
        ("case swapped", swapped),
    ];
    let mut out: Vec<(&'static str, String)> = Vec::new();
    for (how, value) in candidates {
        if value != valid && !value.is_empty() && !out.iter().any(|(_, v)| *v == value) {
            out.push((how, value));
        }
    }
    out
}

/// The tool `tools/call` asks for: the read tool, else the first allowlisted one.
fn call_tool(provider: &Provider) -> Option<(String, serde_json::Value)> {
    match &provider.read {
        Some(read) => Some((read.tool.clone(), read.arguments.clone())),
        None => provider.tools.allowlist.first().map(|t| (t.clone(), json!({}))),
    }
}

/// The sessionless entry points of a transport, each era.
pub fn base_asks(provider: &Provider) -> Vec<Ask> {
    match provider.transport {
        Transport::Sse => vec![Ask::new(EntryPoint::SseGet)],
        Transport::StreamableHttp => {
            let mut asks = vec![
                Ask::new(EntryPoint::Initialize),
                Ask::new(EntryPoint::Discover).modern(),
                Ask::new(EntryPoint::ToolsList),
                Ask::new(EntryPoint::ToolsList).modern(),
            ];
            if let Some((tool, args)) = call_tool(provider) {
                asks.push(Ask::new(EntryPoint::ToolsCall).calling(&tool, args.clone()));
                asks.push(Ask::new(EntryPoint::ToolsCall).calling(&tool, args).modern());
            }
            asks.push(Ask::new(EntryPoint::SseGet));
            asks
        }
    }
}

/// Entry points that ride on a live session: its `Mcp-Session-Id` (streamable) on every
/// session-bound entry point, or its message URL (legacy).
fn session_asks(
    provider: &Provider,
    session: Option<(&str, Option<&str>, SessionSource)>,
    message_url: Option<&str>,
) -> Vec<Ask> {
    let call = call_tool(provider);
    let mut asks = Vec::new();
    if let Some((id, version, from)) = session {
        let bound = |entry: EntryPoint| Ask::new(entry).with_session(id, from).negotiated(version);
        asks.push(bound(EntryPoint::ToolsList));
        if let Some((tool, args)) = &call {
            asks.push(bound(EntryPoint::ToolsCall).calling(tool, args.clone()));
        }
        asks.push(bound(EntryPoint::SseGet));
        asks.push(bound(EntryPoint::Delete));
    }
    if let Some(url) = message_url {
        asks.push(Ask::new(EntryPoint::Initialize).at_message_url(url));
        asks.push(Ask::new(EntryPoint::ToolsList).at_message_url(url));
        if let Some((tool, args)) = &call {
            asks.push(Ask::new(EntryPoint::ToolsCall).calling(tool, args.clone()).at_message_url(url));
        }
    }
    asks
}

/// Bad bearers tried at once at one replica.
const BEARERS_AT_ONCE: usize = 8;

/// How long one ask may take before the asks after it stop waiting their turn.
const PATIENCE: std::time::Duration = std::time::Duration::from_millis(250);

/// Every ask with one client (one bearer), answers in the order of `asks`. The asks go
/// one after another on the client's kept-alive connection, as a client holding that
/// bearer sends them: at a thousand pairs a connection per ask was most of the work
/// (the foreign bearers alone, O(providers²), opened 4,600 connections for 4,600
/// requests). An event-stream GET holds its connection open, so those go beside the rest
/// at once; and once an ask is slower than [`PATIENCE`] (a tarpit, a loaded provider) the
/// asks after it go at once too, so a slow server costs one exchange limit, not one each.
/// A session's DELETE comes after its other asks (see [`session_asks`]), so it ends the
/// session only once they are done.
async fn try_all(client: &McpClient, asks: &[Ask], names: &BTreeSet<String>) -> Vec<Try> {
    let one = |i: usize| async move {
        let ask = &asks[i];
        (i, Try { ask: ask.clone(), outcome: client.exchange(ask, names).await.map_err(|e| ErrorSeen::from(&e)) })
    };
    let (streams, plain): (Vec<usize>, Vec<usize>) =
        (0..asks.len()).partition(|i| asks[*i].entry == EntryPoint::SseGet);
    let in_turn = async {
        let mut out = Vec::new();
        let mut rest = plain.into_iter();
        while let Some(i) = rest.next() {
            let this = one(i);
            futures_util::pin_mut!(this);
            match tokio::time::timeout(PATIENCE, &mut this).await {
                Ok(done) => out.push(done),
                Err(_) => {
                    let (done, others) = futures_util::join!(this, join_all(rest.map(one)));
                    out.push(done);
                    out.extend(others);
                    break;
                }
            }
        }
        out
    };
    let (beside, in_turn) = futures_util::join!(join_all(streams.into_iter().map(one)), in_turn);
    let mut all: Vec<(usize, Try)> = beside.into_iter().chain(in_turn).collect();
    all.sort_by_key(|(i, _)| *i);
    all.into_iter().map(|(_, t)| t).collect()
}

/// Observes one replica: runs in the vantage point's namespace.
async fn observe_replica(
    replica: String,
    endpoint: Endpoint,
    provider: &Provider,
    valid: Secret,
    presented: Vec<Presented>,
    limits: Limits,
) -> ReplicaRefusal {
    let mut names: BTreeSet<String> =
        provider.tools.allowlist.iter().chain(&provider.tools.mutating).cloned().collect();
    let valid_client = match McpClient::new(endpoint.clone(), Some(valid), limits.clone()) {
        Ok(c) => c,
        Err(e) => {
            let valid = Err((&e).into());
            return ReplicaRefusal { replica, valid, control: vec![], probes: vec![] };
        }
    };
    // The valid sessions stay open while the bad bearers are tried: their ids and message
    // URLs are entry points too.
    let opened = open_valid(&valid_client, &mut names).await;
    let base = base_asks(provider);
    let mut asks = base.clone();
    for (id, version, from) in &opened.bound {
        asks.extend(session_asks(provider, Some((id, version.as_deref(), *from)), None));
    }
    asks.extend(session_asks(provider, None, opened.message_url.as_deref()));
    // Side by side: an attempt against a server that never answers costs one wait, not two,
    // so the last attempt before the deadline ends before the run's hard stop.
    let (control, probes) = futures_util::join!(
        try_all(&valid_client, &base, &names),
        try_bearers(presented, &endpoint, &limits, provider, &asks, &names)
    );
    for session in opened.sessions {
        valid_client.close(session).await;
    }
    ReplicaRefusal { replica, valid: opened.valid, control, probes }
}

/// The valid bearer's sessions, held open while the bad bearers are tried.
struct Opened {
    valid: Result<ValidSession, ErrorSeen>,
    /// (session id, its negotiated version, which session) for every session with an id.
    bound: Vec<(String, Option<String>, SessionSource)>,
    /// A legacy session's message URL.
    message_url: Option<String>,
    /// Closed once the bad bearers are done: the handshake session first.
    sessions: Vec<crate::mcp::Session>,
}

/// Opens the valid bearer's session and reads its tools (added to `names`). Every era the
/// server speaks is a way in: when it offers the stateless era first, a handshake session
/// is opened as well.
async fn open_valid(valid_client: &McpClient, names: &mut BTreeSet<String>) -> Opened {
    let session = match valid_client.connect().await {
        Ok(s) => s,
        Err(e) => {
            return Opened { valid: Err((&e).into()), bound: vec![], message_url: None, sessions: vec![] };
        }
    };
    let served: Vec<String> = match valid_client.list_tools(&session).await {
        Ok(tools) => tools.into_iter().map(|t| t.name).collect(),
        Err(_) => vec![],
    };
    names.extend(served.iter().cloned());
    let mut bound = Vec::new();
    if let Some(id) = session.session_id() {
        bound.push((id.to_string(), session.protocol_version().map(str::to_string), SessionSource::Valid));
    }
    let mut sessions = Vec::new();
    let handshake = if session.era == Era::Stateless2026 {
        let opened = valid_client.connect_era(EraChoice::Handshake).await;
        let seen = match &opened {
            Ok(h) => {
                if let Some(id) = h.session_id() {
                    bound.push((
                        id.to_string(),
                        h.protocol_version().map(str::to_string),
                        SessionSource::ValidHandshake,
                    ));
                }
                Ok(HandshakeSession {
                    protocol_version: h.protocol_version().map(str::to_string),
                    session_id: h.session_id().is_some(),
                })
            }
            Err(e) => Err(ErrorSeen::from(e)),
        };
        sessions.extend(opened.ok());
        Some(seen)
    } else {
        None
    };
    let valid =
        Ok(ValidSession { handshake, era: session.era.clone(), session_id: session.session_id().is_some(), served });
    let message_url = session.message_url.as_ref().map(|u| u.to_string());
    sessions.push(session);
    Opened { valid, bound, message_url, sessions }
}

/// Every bad bearer at every ask, a few bearers at a time: with many providers, foreign
/// bearers are many, and each holds a client and its connections while it waits. A
/// refusal that hands out a session id: that id must not serve anything either.
async fn try_bearers(
    presented: Vec<Presented>,
    endpoint: &Endpoint,
    limits: &Limits,
    provider: &Provider,
    asks: &[Ask],
    names: &BTreeSet<String>,
) -> Vec<(String, Vec<Try>)> {
    futures_util::stream::iter(presented.into_iter().map(|bearer| async move {
        let client = match McpClient::new(endpoint.clone(), bearer.secret, limits.clone()) {
            Ok(c) => match &bearer.in_query {
                Some(param) => c.credential_in_query(param),
                None => c,
            },
            Err(e) => {
                return (bearer.label, vec![Try { ask: Ask::new(EntryPoint::Initialize), outcome: Err((&e).into()) }]);
            }
        };
        let mut tries = try_all(&client, asks, names).await;
        let handed: Vec<Ask> = tries
            .iter()
            .filter_map(|t| t.outcome.as_ref().ok())
            .filter(|e| matches!(e.status, 401 | 403))
            .filter_map(|e| e.session_id.as_deref())
            .collect::<BTreeSet<_>>()
            .into_iter()
            .flat_map(|id| session_asks(provider, Some((id, None, SessionSource::HandedOut)), None))
            .collect();
        tries.extend(try_all(&client, &handed, names).await);
        (bearer.label, tries)
    }))
    .buffered(BEARERS_AT_ONCE)
    .collect()
    .await
}

/// How one answer to a bad bearer counts.
#[derive(Debug, PartialEq)]
enum Verdict {
    Refused,
    /// The valid bearer gets the same non-success answer: this entry point turns everyone
    /// away, and says nothing about the bearer.
    Neutral,
    NotReady(String),
    Broken(Finding),
}

/// Pure: is this answer a refusal of the bearer? `control` is the valid bearer's answer
/// to the same request, if there is one.
fn classify(e: &Exchange, control: Option<&Try>, refusal: Refusal) -> Verdict {
    let at = &e.ask;
    let finding = |kind: FindingKind, template: &'static str| {
        Finding::new(kind, template).prefixed("{entry}: ").fact("entry", at).fact("status", e.status)
    };
    // What a disclosing answer gave away, put after the sentence so far.
    let with_disclosed = |f: Finding| {
        if e.body.names.is_empty() {
            f.suffixed("a tool inventory")
        } else {
            f.suffixed("tool name(s) {tools}")
                .fact("tools", crate::text::name_list(e.body.names.iter().map(String::as_str), 20))
        }
    };
    // A borrowed session that serves is its own class (not bound, or handed out by a
    // refusal); what it disclosed is told with it.
    let borrowed_session = at.session_from.is_some() && (200..300).contains(&e.status);
    if e.body.discloses() && !borrowed_session {
        let f = finding(FindingKind::ToolsDisclosed, "answered {status} and disclosed ");
        return Verdict::Broken(with_disclosed(f));
    }
    if let Some(why) = &e.body.undecodable {
        return Verdict::Broken(
            finding(
                FindingKind::Undecodable,
                "answered {status} with a body cordon cannot read ({error}): a refusal that cannot be read is not proof of one",
            )
            .fact("error", why),
        );
    }
    let served_kind = match at.session_from {
        Some(from) if from.is_valid_bearers() => FindingKind::SessionNotBound,
        Some(_) => FindingKind::RefusalSessionServes,
        None => FindingKind::SessionGranted,
    };
    let served = |template: &'static str| {
        let mut f = finding(served_kind, template);
        if e.body.discloses() {
            f = with_disclosed(f.suffixed(" (disclosing ")).suffixed(")");
        }
        Verdict::Broken(match served_kind {
            FindingKind::SessionNotBound => {
                f.suffixed(" with the valid session's id: the session is not bound to its bearer")
            }
            FindingKind::RefusalSessionServes => f.suffixed(": the id a refusal handed out serves requests"),
            _ => f,
        })
    };
    let not_refused = |template: &'static str| Verdict::Broken(finding(FindingKind::NotRefused, template));
    match e.status {
        300..=399 => Verdict::Broken(match e.location.as_deref() {
            Some(location) => finding(
                FindingKind::Redirected,
                "answered {status} redirecting to {location} — a redirect is not a refusal of the MCP protocol (a client that follows it reads a 200)",
            )
            .fact("location", location),
            None => finding(
                FindingKind::Redirected,
                "answered {status} redirecting to (no Location header) — a redirect is not a refusal of the MCP protocol (a client that follows it reads a 200)",
            ),
        }),
        401 | 403 if e.body.has_result() => served("answered {status} but carried a JSON-RPC result"),
        401 | 403 if e.body.endpoint_event => served("answered {status} but handed out a message endpoint"),
        401 | 403 => Verdict::Refused,
        404 | 405 if matches!(at.entry, EntryPoint::SseGet | EntryPoint::Delete) => Verdict::Refused,
        200..=299 if at.entry == EntryPoint::Delete => served("answered {status} and ended the session"),
        200..=299 if e.is_html() => not_refused("answered {status} with an HTML page, not a refusal"),
        200..=299 if e.body.endpoint_event => {
            served("answered {status} and handed out a message endpoint (a session)")
        }
        200..=299 if e.body.has_result() => served("answered {status} with a result"),
        200..=299 if at.entry == EntryPoint::SseGet && e.is_event_stream() => {
            served("answered {status} and opened an event stream")
        }
        200..=299 if e.body.has_error() && refusal == Refusal::JsonrpcError && e.session_id.is_none() => {
            Verdict::Refused
        }
        200..=299 if e.body.has_error() && refusal == Refusal::HttpStatus => not_refused(
            "answered {status} with a JSON-RPC error; only a provider marked `refusal: jsonrpc_error` may refuse that way, this one must answer 401 or 403",
        ),
        200..=299 if e.session_id.is_some() => served("answered {status} and issued an mcp-session-id"),
        202 => not_refused("answered 202: the message was accepted"),
        200..=299 => not_refused("answered {status}, which is not a refusal"),
        500..=599 => Verdict::NotReady(format!("{at}: answered {}", e.status)),
        // A session that turns the bad bearer away, however it says so, did not serve.
        _ if at.session.is_some() || at.message_url.is_some() => Verdict::Refused,
        status => match control.and_then(Try::status) {
            Some(c) if c == status => Verdict::Neutral,
            Some(c) => Verdict::Broken(
                finding(
                    FindingKind::NotRefused,
                    "answered {status} where the valid bearer gets {control_status}; a refusal is 401 or 403",
                )
                .fact("control_status", c),
            ),
            None => not_refused("answered {status}; a refusal is 401 or 403"),
        },
    }
}

/// Pure: the bad bearer is refused everywhere, at every replica, and the verdict can be
/// trusted (the valid bearer itself gets through).
pub fn judge(observations: &[ReplicaRefusal], rule: &RefusalRule) -> Attempt {
    let mut evidence = vec![format!("bearer: {}", rule.bearer_label)];
    let mut findings: Vec<Finding> = rule
        .shared_with
        .iter()
        .map(|other| {
            Finding::new(
                FindingKind::SharedSecret,
                "provider {provider} holds the same secret: one credential opens both, so neither is confined",
            )
            .fact("provider", other)
        })
        .collect();
    let mut not_ready = Vec::new();
    let mut cannot_judge = Vec::new();
    let many = observations.len() > 1;
    for o in observations {
        let prefix = if many { format!("{}: ", o.replica) } else { String::new() };
        evidence.extend(valid_evidence(o, &prefix));
        evidence.extend(o.control.iter().map(|t| format!("{prefix}valid bearer, {}", t.summary())));
        let mut broken_here = 0;
        let mut differs = false;
        for (label, tries) in &o.probes {
            for t in tries {
                evidence.push(format!("{prefix}{label}, {}", t.summary()));
                let proof = match &t.outcome {
                    Ok(e) => e.proof(&format!("{prefix}{label}, ")),
                    Err(e) => format!("{prefix}{label}, {}: {}", t.ask, e.text),
                };
                let control = o.control.iter().find(|c| c.ask.same_shape(&t.ask));
                if let (Some(c), Some(s)) = (control.and_then(Try::status), t.status())
                    && c != s
                {
                    differs = true;
                }
                let verdict = match &t.outcome {
                    Err(e) if e.not_ready => Verdict::NotReady(format!("{}: {}", t.ask, e.text)),
                    Err(e) => Verdict::Broken(
                        Finding::new(FindingKind::NotRefused, "{entry}: {error}")
                            .fact("entry", &t.ask)
                            .fact("error", &e.text),
                    ),
                    Ok(e) => classify(e, control, rule.refusal),
                };
                match verdict {
                    Verdict::Refused | Verdict::Neutral => {}
                    Verdict::NotReady(why) => not_ready.push(format!("{prefix}{label}: {why}")),
                    Verdict::Broken(f) => {
                        broken_here += 1;
                        let f = f.prefixed("{bearer} was not refused: ").proven_by(proof);
                        let f = if many { f.prefixed("{replica}: ") } else { f };
                        let f = if rule.presented_by_cordon {
                            f.suffixed(" (cordon presented that bearer itself, as a client holding the wrong provider's credential would)")
                        } else {
                            f
                        };
                        findings.push(
                            f.fact("replica", &o.replica)
                                .fact("bearer", label)
                                .fact("bearer_short", rule.short_name(label)),
                        );
                    }
                }
            }
        }
        if broken_here == 0 {
            match unjudgeable(o, &prefix, many, differs) {
                Some(Ok(waiting)) => not_ready.push(waiting),
                Some(Err(finding)) => cannot_judge.push(finding),
                None => {}
            }
        }
    }
    let mut findings = group(findings);
    findings.extend(cannot_judge);
    Attempt::settle(findings, not_ready, evidence)
}

/// What the valid bearer got at this replica: the session refusals are measured against.
fn valid_evidence(o: &ReplicaRefusal, prefix: &str) -> Vec<String> {
    let mut evidence = Vec::new();
    match &o.valid {
        Ok(v) => {
            evidence.push(format!(
                "{prefix}the valid bearer opened a session ({:?}{}; served {})",
                v.era,
                if v.session_id { ", with an mcp-session-id" } else { "" },
                crate::text::name_list(v.served.iter().map(String::as_str), 20)
            ));
            match &v.handshake {
                Some(Ok(h)) => evidence.push(format!(
                    "{prefix}the valid bearer also opened an initialize-handshake session (protocol {}{}): its id is replayed too",
                    h.protocol_version.as_deref().unwrap_or("unknown"),
                    if h.session_id { ", with an mcp-session-id" } else { ", no mcp-session-id" }
                )),
                Some(Err(e)) => evidence.push(format!(
                    "{prefix}the server speaks no initialize handshake for the valid bearer ({})",
                    e.text
                )),
                None => {}
            }
        }
        Err(e) => evidence.push(format!("{prefix}the valid bearer could not open a session: {}", e.text)),
    }
    evidence
}

/// Refusing everyone proves nothing: without a session for the valid bearer there is no
/// session to refuse, whatever the bad bearers were told. A replica where nothing was
/// broken waits (`Ok`) or cannot be judged (`Err`) while the valid bearer has no session.
fn unjudgeable(o: &ReplicaRefusal, prefix: &str, many: bool, differs: bool) -> Option<Result<String, Finding>> {
    match &o.valid {
        Err(e) if e.not_ready => Some(Ok(format!("{prefix}the valid bearer: {}", e.text))),
        Err(e) => {
            let seen: Vec<String> = o
                .control
                .iter()
                .filter_map(|t| t.status().map(|s| format!("{s} at {}", t.ask.entry)))
                .take(4)
                .collect();
            let template = if differs {
                "cannot be judged: the valid bearer cannot open a session either ({seen}; {error}) — is `transport` right?"
            } else {
                "cannot be judged: the valid bearer gets the same answer ({seen}; {error}) — is `transport` right?"
            };
            let f = Finding::new(FindingKind::CannotBeJudged, template);
            let f = if many { f.prefixed("{replica}: ") } else { f };
            Some(Err(f.fact("replica", &o.replica).fact("seen", seen.join(", ")).fact("error", &e.text)))
        }
        Ok(_) => None,
    }
}

/// One finding per bearer, replica and kind, naming every entry point it covers: the
/// first in full, the rest by name. Grouped by facts, never by the sentence. (The console
/// tells the bearers that got the same answer on one line: [`crate::model::told_once`].)
fn group(findings: Vec<Finding>) -> Vec<Finding> {
    let key =
        |x: &Finding| x.facts.get("bearer").map(|bearer| (x.kind, bearer.clone(), x.facts.get("replica").cloned()));
    let mut out: Vec<(Finding, Vec<String>)> = Vec::new();
    for f in findings {
        match key(&f).and_then(|k| out.iter_mut().find(|(o, _)| key(o).as_ref() == Some(&k))) {
            Some((kept, more)) => {
                more.push(f.facts.get("entry").cloned().unwrap_or_default());
                kept.add_proof(f.proof);
            }
            None => out.push((f, Vec::new())),
        }
    }
    out.into_iter()
        .map(|(f, more)| {
            if more.is_empty() {
                return f;
            }
            f.suffixed(" (and the same at {more} more entry point(s): {more_entries})")
                .fact("more", more.len())
                .fact("more_entries", more.join("; "))
        })
        .collect()
}

#[cfg(test)]
mod tests;
