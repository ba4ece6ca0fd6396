//! `contract::<provider>::arguments`, for providers the scenario marks
//! `strict_arguments` (the platform's adapters must refuse "an argument the tool's own
//! schema does not describe"): at every replica, in every era, the read tool called with
//! one argument its schema does not describe is refused; a tool called with a required
//! argument missing is refused; a tool that declares no inputs takes none; every other
//! allowlisted tool whose schema is known, called with arguments its schema describes
//! (defaults, examples, enums, or a plain value of the declared type), refuses the same
//! call with one argument more. The read with its own arguments, in the same session, is
//! the control: a refusal counts only where the right call is served, and each other tool
//! has its own control (the same call without the stray argument).

use std::rc::Rc;
use std::sync::Arc;

use futures_util::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::check::{Check, Probe, RunContext};
use crate::checks::kit::answers::{CallAnswer, era_words, sessions_in_every_era};
use crate::checks::kit::sessions::ErrorSeen;
use crate::checks::kit::vantage::{contract_vantages, observe_everywhere};
use crate::checks::kit::wire;
use crate::config::{ReadSpec, Scenario};
use crate::mcp::{Endpoint, Limits, McpClient, Session, Tool};
use crate::model::{Attempt, Finding, FindingKind};
use crate::netns::NsView;
use crate::secret::Secret;

/// The argument no schema declares.
pub const STRAY_ARGUMENT: &str = "cordon_undeclared_argument";
/// Tools without inputs called with a stray argument, at most, per session.
const NO_INPUT_TOOLS: usize = 8;
/// Other tools with inputs called with and without a stray argument, at most, per session.
const WITH_INPUT_TOOLS: usize = 8;

pub fn plan(scenario: &Scenario) -> Vec<Arc<dyn Check>> {
    crate::checks::kit::vantage::for_enabled_providers(scenario, "arguments", |id| ArgumentsCheck {
        provider: id.to_string(),
    })
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
    /// The same call without what makes it wrong, where the read is not the control.
    #[serde(default)]
    pub control: Option<CallAnswer>,
}

/// A call to make: what is sent, to which tool, with which arguments, and the arguments
/// of its own control call (none: the read is its control).
#[derive(Clone, Debug, PartialEq)]
pub struct Planned {
    pub sent: Sent,
    pub tool: String,
    pub arguments: Value,
    pub control: Option<Value>,
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
    /// Another tool, with arguments its schema describes and the one no schema declares.
    StrayToTool { tool: String },
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
            Sent::StrayToTool { tool } => (
                "`{tool}`, with arguments its schema describes and the undeclared argument `{argument}`",
                tool,
                STRAY_ARGUMENT,
            ),
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
        let seen = crate::checks::kit::vantage::at_every_replica(&view, &self.endpoints, |r, e| async move {
            plan.at_replica(&r, &e).await
        });
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
        for planned in cases(read, &callable, &mut seen.notes) {
            let control = match planned.control {
                Some(args) => Some(call(planned.tool.clone(), args).await),
                None => None,
            };
            let answer = call(planned.tool, planned.arguments).await;
            seen.cases.push(ArgumentCase { sent: planned.sent, answer, control });
        }
        seen
    }
}

/// Pure: the calls to make.
pub fn cases(read: &ReadSpec, tools: &[&Tool], notes: &mut Vec<String>) -> Vec<Planned> {
    let plain =
        |sent: Sent, tool: &str, arguments: Value| Planned { sent, tool: tool.to_string(), arguments, control: None };
    let mut out = Vec::new();
    out.push(plain(Sent::StrayToRead { tool: read.tool.clone() }, &read.tool, with_stray(&read.arguments)));
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
        out.push(plain(
            Sent::ReadWithoutRequired { tool: read.tool.clone(), argument: missing.clone() },
            &read.tool,
            args,
        ));
    } else if let Some((tool, first)) =
        tools.iter().find_map(|t| required(&schema_of(t)).first().map(|r| (t.name.clone(), r.clone())))
    {
        out.push(plain(Sent::NoArguments { tool: tool.clone(), argument: first }, &tool, json!({})));
    } else {
        notes.push("no served tool declares a required argument: a missing one cannot be tried".into());
    }
    let others: Vec<&Tool> = tools.iter().copied().filter(|t| t.name != read.tool).collect();
    let no_inputs: Vec<&str> =
        others.iter().filter(|t| declares_no_inputs(&schema_of(t))).map(|t| t.name.as_str()).collect();
    if no_inputs.len() > NO_INPUT_TOOLS {
        notes.push(format!("{} tools declare no inputs; the first {NO_INPUT_TOOLS} are tried", no_inputs.len()));
    }
    for tool in no_inputs.into_iter().take(NO_INPUT_TOOLS) {
        out.push(plain(Sent::StrayToNoInputs { tool: tool.to_string() }, tool, json!({ STRAY_ARGUMENT: "x" })));
    }
    let with_inputs: Vec<&Tool> = others.into_iter().filter(|t| !declares_no_inputs(&schema_of(t))).collect();
    if with_inputs.len() > WITH_INPUT_TOOLS {
        notes.push(format!("{} other tools take inputs; the first {WITH_INPUT_TOOLS} are tried", with_inputs.len()));
    }
    for tool in with_inputs.into_iter().take(WITH_INPUT_TOOLS) {
        let schema = schema_of(tool);
        if schema.get("additionalProperties").is_some_and(|a| a.as_bool() != Some(false)) {
            notes.push(format!(
                "`{}`'s schema describes arguments beyond its properties (additionalProperties): a stray one is not tried",
                crate::text::sanitize(&tool.name)
            ));
            continue;
        }
        match arguments_from_schema(&schema) {
            Ok(arguments) => out.push(Planned {
                sent: Sent::StrayToTool { tool: tool.name.clone() },
                tool: tool.name.clone(),
                arguments: with_stray(&arguments),
                control: Some(arguments),
            }),
            Err(why) => notes.push(format!(
                "`{}`: no call its schema accepts can be made ({why}): a stray argument is not tried",
                crate::text::sanitize(&tool.name)
            )),
        }
    }
    out
}

fn with_stray(arguments: &Value) -> Value {
    let mut stray = arguments.clone();
    if let Some(map) = stray.as_object_mut() {
        map.insert(STRAY_ARGUMENT.into(), json!("x"));
    }
    stray
}

/// Pure: arguments a schema describes, its required ones only: each property's
/// `default`, first `examples`, `const` or first `enum` value, else a plain value of its
/// type. `Err` names the property no value can be made for.
pub fn arguments_from_schema(schema: &Value) -> Result<Value, String> {
    let properties = schema.get("properties").and_then(Value::as_object);
    let mut out = serde_json::Map::new();
    for name in required(schema) {
        let property = properties
            .and_then(|p| p.get(&name))
            .ok_or_else(|| format!("required `{name}` is not among its properties"))?;
        out.insert(name.clone(), value_for(property).ok_or_else(|| format!("no value for `{name}`: {property}"))?);
    }
    Ok(Value::Object(out))
}

fn value_for(property: &Value) -> Option<Value> {
    if let Some(v) = property.get("default").or_else(|| property.get("const")) {
        return Some(v.clone());
    }
    for list in ["examples", "enum"] {
        if let Some(v) = property.get(list).and_then(Value::as_array).and_then(|a| a.first()) {
            return Some(v.clone());
        }
    }
    let kind = match property.get("type") {
        Some(Value::String(t)) => t.as_str(),
        // `["string", "null"]`: the first type that is not null.
        Some(Value::Array(types)) => types.iter().filter_map(Value::as_str).find(|t| *t != "null")?,
        _ => return None,
    };
    Some(match kind {
        "string" => json!("cordon"),
        "integer" | "number" => json!(property.get("minimum").and_then(Value::as_i64).unwrap_or(1)),
        "boolean" => json!(false),
        "array" => json!([]),
        "object" => json!({}),
        _ => return None,
    })
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
            if let Some(control) = &case.control {
                evidence.push(format!("{era}: the same call without `{STRAY_ARGUMENT}` → {control}"));
                if control.not_ready() {
                    not_ready.push(format!("{era}: {}: its control is not answered yet ({control})", case.sent));
                    continue;
                }
                if !control.served() {
                    // Arguments made from a schema alone may be refused for their values:
                    // nothing to compare the stray call with, for this tool.
                    evidence.push(format!("{era}: {}: not judged, the same call without it is not served", case.sent));
                    continue;
                }
            }
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
        let whats: Vec<String> = c.iter().map(|p| p.sent.to_string()).collect();
        assert_eq!(
            whats,
            [
                "the read tool `add` with the undeclared argument `cordon_undeclared_argument`",
                "the read tool `add` without its required argument `a`",
                "`status`, which declares no inputs, with the argument `cordon_undeclared_argument`",
            ]
        );
        assert_eq!(c[0].arguments, json!({"a": 2, "b": 3, "cordon_undeclared_argument": "x"}));
        assert_eq!(c[1].arguments, json!({"b": 3}));
        // A read without required arguments borrows another tool's; none at all is noted.
        let get = tool("get_item", json!({"properties": {"id": {"type": "string"}}, "required": ["id"]}));
        let c = cases(&read("status", json!({})), &[&status, &get], &mut notes);
        assert_eq!(c[1].sent.to_string(), "`get_item` without its required argument `id` (no arguments at all)");
        let c = cases(&read("status", json!({})), &[&status], &mut notes);
        assert_eq!(c.len(), 1);
        assert!(notes[0].contains("no served tool declares a required argument"));
    }

    #[test]
    fn every_other_tool_with_inputs_gets_a_stray_argument_beside_its_own_control() {
        let status = tool("get_status", json!({"type": "object", "properties": {}}));
        let get =
            tool("get_item", json!({"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}));
        let search = tool(
            "search",
            json!({"properties": {"query": {"type": ["string", "null"]}, "kind": {"enum": ["issue", "pr"]},
                   "limit": {"type": "integer", "default": 5}}, "required": ["query", "kind"]}),
        );
        let open = tool("open", json!({"properties": {"q": {"type": "string"}}, "additionalProperties": true}));
        let odd = tool("odd", json!({"properties": {"x": {}}, "required": ["x"]}));
        let mut notes = vec![];
        let c = cases(&read("get_status", json!({})), &[&status, &get, &search, &open, &odd], &mut notes);
        let strays: Vec<&Planned> = c.iter().filter(|p| matches!(p.sent, Sent::StrayToTool { .. })).collect();
        assert_eq!(strays.len(), 2, "{c:?}");
        assert_eq!(strays[0].control, Some(json!({"id": "cordon"})));
        assert_eq!(strays[0].arguments, json!({"id": "cordon", "cordon_undeclared_argument": "x"}));
        assert_eq!(strays[1].control, Some(json!({"query": "cordon", "kind": "issue"})));
        assert_eq!(
            strays[0].sent.to_string(),
            "`get_item`, with arguments its schema describes and the undeclared argument `cordon_undeclared_argument`"
        );
        assert!(notes.iter().any(|n| n.contains("`open`'s schema describes arguments beyond")), "{notes:?}");
        assert!(notes.iter().any(|n| n.contains("`odd`: no call its schema accepts can be made")), "{notes:?}");
    }

    #[test]
    fn a_stray_argument_counts_only_where_the_same_call_without_it_is_served() {
        let stray_to_get = |control: CallAnswer, answer: CallAnswer| ArgumentSession {
            cases: vec![ArgumentCase {
                sent: Sent::StrayToTool { tool: "get_item".into() },
                answer,
                control: Some(control),
            }],
            ..session(ok(), vec![])
        };
        let refused = CallAnswer::RpcError { code: -32600, message: "undeclared_argument".into() };
        assert!(judge(&[stray_to_get(ok(), refused.clone())], vec![]).is_pass());
        match judge(&[stray_to_get(ok(), ok())], vec![]) {
            Attempt::Fail { findings, .. } => assert!(
                findings[0].sentence().contains("`get_item`, with arguments its schema describes and the undeclared argument `cordon_undeclared_argument` was not refused"),
                "{}",
                findings[0].sentence()
            ),
            other => panic!("{other:?}"),
        }
        // Its own arguments refused (a value the schema allows but the tool does not know):
        // nothing to compare with, so no verdict from this tool either way.
        let not_found = CallAnswer::Result { is_error: true, text: "no such item".into(), structured: false, items: 1 };
        let a = judge(&[stray_to_get(not_found, ok())], vec![]);
        assert!(a.is_pass(), "{a:?}");
        let busy = CallAnswer::Http { status: 503, body: "busy".into() };
        assert!(matches!(judge(&[stray_to_get(busy, ok())], vec![]), Attempt::NotReady { .. }));
    }

    fn session(control: CallAnswer, answers: Vec<CallAnswer>) -> ArgumentSession {
        ArgumentSession {
            replica: "gitea-mcp_1".into(),
            era: Ok("the initialize handshake (2025-06-18)".into()),
            control: Some(control),
            cases: answers
                .into_iter()
                .map(|answer| ArgumentCase {
                    sent: Sent::StrayToRead { tool: "get_status".into() },
                    answer,
                    control: None,
                })
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
