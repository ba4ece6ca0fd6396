//! `contract::<provider>::arguments`, for providers the scenario marks
//! `strict_arguments` (the platform's adapters must refuse "an argument the tool's own
//! schema does not describe"): at every replica, in every era, the read tool called with
//! one argument its schema does not describe is refused; a tool called with a required
//! argument missing is refused; a tool that declares no inputs takes none. The read with
//! its own arguments, in the same session, is the control: a refusal counts only where
//! the right call is served.

use std::rc::Rc;
use std::sync::Arc;

use futures_util::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::answers::{CallAnswer, era_words, sessions_in_every_era};
use super::sessions::ErrorSeen;
use super::vantage::{contract_vantages, observe_everywhere};
use super::wire;
use crate::check::{Check, Probe, RunContext};
use crate::config::{ReadSpec, Scenario};
use crate::mcp::{Endpoint, Limits, McpClient, Session, Tool};
use crate::model::{Attempt, Finding, FindingKind};
use crate::netns::NsView;
use crate::secret::Secret;

/// The argument no schema declares.
pub const STRAY_ARGUMENT: &str = "cordon_undeclared_argument";
/// Tools without inputs called with a stray argument, at most, per session.
const NO_INPUT_TOOLS: usize = 8;

pub fn plan(scenario: &Scenario) -> Vec<Arc<dyn Check>> {
    super::vantage::for_enabled_providers(scenario, "arguments", |id| ArgumentsCheck { provider: id.to_string() })
}

struct ArgumentsCheck {
    provider: String,
}

#[derive(Clone, Serialize, Deserialize)]
pub struct ArgumentsPlan {
    pub endpoints: Vec<(String, Endpoint)>,
    #[serde(with = "wire::secret")]
    pub secret: Secret,
    #[serde(with = "wire::read")]
    pub read: Option<ReadSpec>,
    pub allowlist: Vec<String>,
    /// Tools never called (mutating ones, unless enabled).
    pub never_call: Vec<String>,
    pub limits: Limits,
}

/// One call that must be refused, and its answer.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ArgumentCase {
    pub sent: Sent,
    pub answer: CallAnswer,
}

/// What a call that must be refused sent.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Sent {
    /// The read tool, with the argument no schema declares.
    StrayToRead { tool: String },
    /// The read tool, without one of its required arguments.
    ReadWithoutRequired { tool: String, argument: String },
    /// Another tool, with no arguments at all, though it requires `argument`.
    NoArguments { tool: String, argument: String },
    /// A tool that declares no inputs, with the argument no schema declares.
    StrayToNoInputs { tool: String },
}

impl Sent {
    /// A finding whose sentence begins with what was sent (facts `tool` and `argument`).
    pub fn finding(&self, kind: FindingKind) -> Finding {
        let (template, tool, argument) = match self {
            Sent::StrayToRead { tool } => {
                ("the read tool `{tool}` with the undeclared argument `{argument}`", tool, STRAY_ARGUMENT)
            }
            Sent::ReadWithoutRequired { tool, argument } => {
                ("the read tool `{tool}` without its required argument `{argument}`", tool, argument.as_str())
            }
            Sent::NoArguments { tool, argument } => {
                ("`{tool}` without its required argument `{argument}` (no arguments at all)", tool, argument.as_str())
            }
            Sent::StrayToNoInputs { tool } => {
                ("`{tool}`, which declares no inputs, with the argument `{argument}`", tool, STRAY_ARGUMENT)
            }
        };
        Finding::new(kind, template).fact("tool", tool).fact("argument", argument)
    }
}

/// What was sent, in the words a finding uses.
impl std::fmt::Display for Sent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.finding(FindingKind::ArgumentAccepted).sentence())
    }
}

/// One session at one replica.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ArgumentSession {
    pub replica: String,
    pub era: Result<String, ErrorSeen>,
    /// The read with its own arguments.
    pub control: Option<CallAnswer>,
    pub cases: Vec<ArgumentCase>,
    /// What could not be tried, for evidence.
    pub notes: Vec<String>,
}

impl ArgumentsPlan {
    pub async fn observe(self, view: Rc<NsView>) -> Vec<ArgumentSession> {
        let plan = &self;
        let seen =
            super::vantage::at_every_replica(
                &view,
                &self.endpoints,
                |r, e| async move { plan.at_replica(&r, &e).await },
            );
        seen.await.into_iter().flatten().collect()
    }

    async fn at_replica(&self, replica: &str, endpoint: &Endpoint) -> Vec<ArgumentSession> {
        let unopened = |e: ErrorSeen| ArgumentSession {
            replica: replica.to_string(),
            era: Err(e),
            control: None,
            cases: vec![],
            notes: vec![],
        };
        let client = match McpClient::new(endpoint.clone(), Some(self.secret.clone()), self.limits.clone()) {
            Ok(c) => c,
            Err(e) => return vec![unopened((&e).into())],
        };
        let mut out = Vec::new();
        for session in sessions_in_every_era(&client).await {
            match session {
                Ok(s) => {
                    out.push(self.in_session(replica, &client, &s).await);
                    client.close(s).await;
                }
                Err(e) => out.push(unopened(e)),
            }
        }
        out
    }

    async fn in_session(&self, replica: &str, client: &McpClient, session: &Session) -> ArgumentSession {
        let mut seen = ArgumentSession {
            replica: replica.to_string(),
            era: Ok(era_words(&session.era)),
            control: None,
            cases: vec![],
            notes: vec![],
        };
        let Some(read) = &self.read else { return seen };
        let call =
            |tool: String, args: Value| async move { CallAnswer::of(client.call_tool(session, &tool, args).await) };
        seen.control = Some(call(read.tool.clone(), read.arguments.clone()).await);
        let tools = client.list_tools(session).await.unwrap_or_default();
        let callable: Vec<&Tool> =
            tools.iter().filter(|t| self.allowlist.contains(&t.name) && !self.never_call.contains(&t.name)).collect();
        for (sent, tool, args) in cases(read, &callable, &mut seen.notes) {
            let answer = call(tool, args).await;
            seen.cases.push(ArgumentCase { sent, answer });
        }
        seen
    }
}

/// Pure: the calls to make — (what is sent, tool, arguments).
pub fn cases(read: &ReadSpec, tools: &[&Tool], notes: &mut Vec<String>) -> Vec<(Sent, String, Value)> {
    let mut out = Vec::new();
    let mut stray = read.arguments.clone();
    if let Some(map) = stray.as_object_mut() {
        map.insert(STRAY_ARGUMENT.into(), json!("x"));
    }
    out.push((Sent::StrayToRead { tool: read.tool.clone() }, read.tool.clone(), stray));
    let read_schema = tools.iter().find(|t| t.name == read.tool).map(|t| schema_of(t));
    let read_required: Vec<String> = read_schema
        .as_ref()
        .map(required)
        .unwrap_or_default()
        .into_iter()
        .filter(|r| read.arguments.get(r).is_some())
        .collect();
    if let Some(missing) = read_required.first() {
        let mut args = read.arguments.clone();
        if let Some(map) = args.as_object_mut() {
            map.remove(missing);
        }
        out.push((
            Sent::ReadWithoutRequired { tool: read.tool.clone(), argument: missing.clone() },
            read.tool.clone(),
            args,
        ));
    } else if let Some((tool, first)) =
        tools.iter().find_map(|t| required(&schema_of(t)).first().map(|r| (t.name.clone(), r.clone())))
    {
        out.push((Sent::NoArguments { tool: tool.clone(), argument: first }, tool, json!({})));
    } else {
        notes.push("no served tool declares a required argument: a missing one cannot be tried".into());
    }
    let no_inputs: Vec<&str> = tools
        .iter()
        .filter(|t| t.name != read.tool && declares_no_inputs(&schema_of(t)))
        .map(|t| t.name.as_str())
        .collect();
    if no_inputs.len() > NO_INPUT_TOOLS {
        notes.push(format!("{} tools declare no inputs; the first {NO_INPUT_TOOLS} are tried", no_inputs.len()));
    }
    for tool in no_inputs.into_iter().take(NO_INPUT_TOOLS) {
        out.push((Sent::StrayToNoInputs { tool: tool.to_string() }, tool.to_string(), json!({ STRAY_ARGUMENT: "x" })));
    }
    out
}

fn schema_of(tool: &Tool) -> Value {
    serde_json::from_str(tool.input_schema.as_str()).unwrap_or(Value::Null)
}

fn required(schema: &Value) -> Vec<String> {
    schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(|v| v.as_str().map(str::to_string)).collect())
        .unwrap_or_default()
}

fn declares_no_inputs(schema: &Value) -> bool {
    schema.get("properties").and_then(Value::as_object).is_none_or(|p| p.is_empty())
}

impl Probe for ArgumentsCheck {
    fn run<'a>(&'a self, ctx: &'a RunContext) -> BoxFuture<'a, Attempt> {
        Box::pin(async move {
            let provider = ctx.scenario.provider(&self.provider).expect("planned from the scenario").clone();
            if !provider.boundary.strict_arguments {
                return Attempt::Skip {
                    reason: format!(
                        "the scenario does not mark provider `{}` `strict_arguments: true` (the platform's adapters refuse arguments their schema does not describe)",
                        provider.id
                    ),
                };
            }
            if provider.read.is_none() {
                return Attempt::Skip {
                    reason: format!(
                        "provider `{}` has no deterministic read (scenario `read:`): cordon needs a call that is served to compare its refusals with",
                        provider.id
                    ),
                };
            }
            let vantages = match contract_vantages(ctx, &provider) {
                Ok(v) => v,
                Err(attempt) => return attempt,
            };
            let never_call = if provider.tools.mutating_enabled { vec![] } else { provider.tools.mutating.clone() };
            let plan = |endpoints: &[(String, Endpoint)]| ArgumentsPlan {
                endpoints: endpoints.to_vec(),
                secret: ctx.scenario.secret(&provider.credential).clone(),
                read: provider.read.clone(),
                allowlist: provider.tools.allowlist.clone(),
                never_call: never_call.clone(),
                limits: ctx.suite.limits.clone(),
            };
            match observe_everywhere(ctx, &vantages, plan).await {
                Ok((observed, from)) => judge(&observed, vec![format!("probed from {from}")]),
                Err(attempt) => attempt,
            }
        })
    }
}

/// Pure: where the right call is served, every call with a stray or a missing argument
/// is refused.
pub fn judge(observed: &[ArgumentSession], mut evidence: Vec<String>) -> Attempt {
    let mut findings = Vec::new();
    let mut not_ready = Vec::new();
    for s in observed {
        let (era, words) = match &s.era {
            Ok(words) => (format!("{}, {words}", s.replica), words),
            Err(e) if e.not_ready => {
                not_ready.push(format!("{}: no session: {}", s.replica, e.text));
                continue;
            }
            Err(e) => {
                findings.push(
                    Finding::new(FindingKind::CannotBeJudged, "{replica}: cannot be judged: no session: {error}")
                        .fact("replica", &s.replica)
                        .fact("error", &e.text),
                );
                continue;
            }
        };
        evidence.extend(s.notes.iter().map(|n| format!("{era}: {n}")));
        match &s.control {
            Some(c) => evidence.push(format!("{era}: the read with its own arguments → {c}")),
            None => continue,
        }
        match s.control.as_ref() {
            // The comparison needs the read served in this session: a read refused, cut
            // or unanswered now (a provider busy with another check's burst, a slow
            // upstream) says nothing of arguments, so the check asks again; a read that is
            // never served is the read check's failure, and this one ends unreachable.
            Some(c) if !c.served() => {
                not_ready.push(format!(
                    "{era}: the read with its own arguments is not served ({c}), so no refusal can be compared with it"
                ));
                continue;
            }
            _ => {}
        }
        for case in &s.cases {
            let line = format!("{era}: {} → {}", case.sent, case.answer);
            evidence.push(line.clone());
            if case.answer.refused() {
                continue;
            }
            if case.answer.not_ready() {
                not_ready.push(format!("{era}: {}: {}", case.sent, case.answer));
                continue;
            }
            findings.push(
                case.sent
                    .finding(FindingKind::ArgumentAccepted)
                    .prefixed("{replica}, {era}: ")
                    .suffixed(" was not refused: it answered {answer}")
                    .fact("replica", &s.replica)
                    .fact("era", words)
                    .fact("answer", &case.answer)
                    .proven_by(line),
            );
        }
    }
    Attempt::settle(findings, not_ready, evidence)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Expectation;

    fn tool(name: &str, schema: Value) -> Tool {
        Tool { name: name.into(), description: None, input_schema: schema.into() }
    }

    fn read(tool: &str, args: Value) -> ReadSpec {
        ReadSpec { tool: tool.into(), arguments: args, expect: Expectation::TextContains("x".into()) }
    }

    #[test]
    fn cases_cover_a_stray_a_missing_and_a_no_input_call() {
        let add = tool("add", json!({"type": "object", "properties": {"a": {}, "b": {}}, "required": ["a", "b"]}));
        let status = tool("status", json!({"type": "object", "properties": {}}));
        let mut notes = vec![];
        let c = cases(&read("add", json!({"a": 2, "b": 3})), &[&add, &status], &mut notes);
        let whats: Vec<String> = c.iter().map(|(w, _, _)| w.to_string()).collect();
        assert_eq!(
            whats,
            [
                "the read tool `add` with the undeclared argument `cordon_undeclared_argument`",
                "the read tool `add` without its required argument `a`",
                "`status`, which declares no inputs, with the argument `cordon_undeclared_argument`",
            ]
        );
        assert_eq!(c[0].2, json!({"a": 2, "b": 3, "cordon_undeclared_argument": "x"}));
        assert_eq!(c[1].2, json!({"b": 3}));
        // A read without required arguments borrows another tool's; none at all is noted.
        let get = tool("get_item", json!({"properties": {"id": {}}, "required": ["id"]}));
        let c = cases(&read("status", json!({})), &[&status, &get], &mut notes);
        assert_eq!(c[1].0.to_string(), "`get_item` without its required argument `id` (no arguments at all)");
        let c = cases(&read("status", json!({})), &[&status], &mut notes);
        assert_eq!(c.len(), 1);
        assert!(notes[0].contains("no served tool declares a required argument"));
    }

    fn session(control: CallAnswer, answers: Vec<CallAnswer>) -> ArgumentSession {
        ArgumentSession {
            replica: "gitea-mcp_1".into(),
            era: Ok("the initialize handshake (2025-06-18)".into()),
            control: Some(control),
            cases: answers
                .into_iter()
                .map(|answer| ArgumentCase { sent: Sent::StrayToRead { tool: "get_status".into() }, answer })
                .collect(),
            notes: vec![],
        }
    }

    fn ok() -> CallAnswer {
        CallAnswer::Result { is_error: false, text: "{}".into(), structured: true, items: 0 }
    }

    #[test]
    fn stray_arguments_must_be_refused_where_the_read_is_served() {
        let refused = CallAnswer::RpcError { code: -32600, message: "undeclared_argument".into() };
        assert!(judge(&[session(ok(), vec![refused.clone()])], vec![]).is_pass());
        let validation =
            CallAnswer::Result { is_error: true, text: "validation error".into(), structured: false, items: 1 };
        assert!(judge(&[session(ok(), vec![validation])], vec![]).is_pass());
        match judge(&[session(ok(), vec![ok()])], vec![]) {
            Attempt::Fail { findings, .. } => {
                assert_eq!(findings[0].kind, FindingKind::ArgumentAccepted);
                assert!(
                    findings[0].sentence().contains(
                        "gitea-mcp_1, the initialize handshake (2025-06-18): the read tool `get_status` with the undeclared argument `cordon_undeclared_argument` was not refused: it answered a result with isError: false"
                    ),
                    "{}",
                    findings[0].sentence()
                );
            }
            other => panic!("{other:?}"),
        }
        // The read itself refused or cut: nothing can be judged yet, so it is asked again.
        let cut = CallAnswer::RpcError { code: -32001, message: "request_timeout".into() };
        for control in [refused.clone(), cut] {
            match judge(&[session(control, vec![refused.clone()])], vec![]) {
                Attempt::NotReady { reason, .. } => assert!(reason.contains("is not served"), "{reason}"),
                other => panic!("{other:?}"),
            }
        }
        let busy = CallAnswer::Http { status: 503, body: "busy".into() };
        assert!(matches!(judge(&[session(busy, vec![])], vec![]), Attempt::NotReady { .. }));
    }
}
