//! Sessions as every family opens them: one session at one replica (handshake, tools
//! list, the read tool), several at once, and the pure judgement of what they saw.
//! Route, session, contract and the boundary families build on these.

use std::net::SocketAddr;
use std::rc::Rc;

use futures_util::future::join_all;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::vantage::in_libc_order;
use super::wire;
use crate::config::{Expectation, ReadSpec};
use crate::mcp::{Ask, Endpoint, Era, EraChoice, Exchange, Hop, Limits, McpClient, McpError, Tool, ToolResult};
use crate::model::{Attempt, Finding, FindingKind};
use crate::netns::NsView;
use crate::secret::Secret;

/// An error as observed: its text, and whether it is the "not ready yet" kind.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ErrorSeen {
    pub text: String,
    pub not_ready: bool,
}

impl From<&McpError> for ErrorSeen {
    fn from(e: &McpError) -> Self {
        ErrorSeen { text: e.to_string(), not_ready: e.is_not_ready() }
    }
}

/// Where in a session it stopped.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum SessionStep {
    Client,
    Handshake,
    ListTools,
    /// `tools/call` of this tool.
    Call(String),
}

impl std::fmt::Display for SessionStep {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SessionStep::Client => f.write_str("building the HTTP client"),
            SessionStep::Handshake => f.write_str("the handshake"),
            SessionStep::ListTools => f.write_str("tools/list"),
            SessionStep::Call(tool) => write!(f, "tools/call {tool}"),
        }
    }
}

/// One session at one replica: how far it got and what it saw.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SessionRun {
    pub replica: String,
    /// The address the session's connections ended up on (after any fallback).
    #[serde(default)]
    pub connected: Option<SocketAddr>,
    /// The address it was pinned to first.
    #[serde(default)]
    pub first: Option<SocketAddr>,
    pub era: Option<Era>,
    pub hops: Vec<Hop>,
    pub failed: Option<(SessionStep, ErrorSeen)>,
    pub tools: Option<Vec<Tool>>,
    pub read: Option<ToolResult>,
}

impl SessionRun {
    pub fn evidence(&self) -> Vec<String> {
        let era = match &self.era {
            Some(Era::Stateless2026) => "Stateless2026 (revision 2026-07-28, no session)".to_string(),
            Some(Era::Stateful { protocol_version }) => format!("Stateful ({protocol_version})"),
            Some(Era::LegacySse) => "LegacySse (HTTP+SSE)".to_string(),
            None => "none (no session)".to_string(),
        };
        let mut out = vec![format!("{}: era: {era}", self.replica)];
        if let (Some(first), Some(connected)) = (self.first, self.connected)
            && first != connected
        {
            out.push(format!(
                "{}: {first} did not accept; the connect loop fell back to {connected}, as the client's does",
                self.replica
            ));
        }
        out.extend(self.hops.iter().map(|h| format!("{}: {h}", self.replica)));
        if let Some(tools) = &self.tools {
            let names = tools.iter().map(|t| t.name.as_str());
            out.push(format!("{}: tools/list [{}]", self.replica, crate::text::name_list(names, 40)));
        }
        if let Some((step, e)) = &self.failed {
            out.push(format!("{}: {step} failed: {}", self.replica, e.text));
        }
        out
    }
}

/// What to do in one session.
#[derive(Clone, Serialize, Deserialize)]
pub struct SessionPlan {
    pub replica: String,
    pub endpoint: Endpoint,
    #[serde(with = "wire::secret")]
    pub secret: Secret,
    pub limits: Limits,
    pub era: EraChoice,
    pub list: bool,
    #[serde(with = "wire::read")]
    pub read: Option<ReadSpec>,
}

/// Several sessions at once, each at its own replica (contract reads).
#[derive(Clone, Serialize, Deserialize)]
pub struct SessionsPlan {
    pub sessions: Vec<SessionPlan>,
}

impl SessionsPlan {
    pub async fn observe(self, view: Rc<NsView>) -> Vec<SessionRun> {
        let sessions =
            self.sessions.into_iter().map(|p| SessionPlan { endpoint: in_libc_order(&view, &p.endpoint), ..p });
        join_all(sessions.map(run_session)).await
    }
}

/// Opens a session, lists tools and/or calls the read tool, and closes it. Runs in the
/// namespace of the position.
pub async fn run_session(plan: SessionPlan) -> SessionRun {
    let mut run = SessionRun {
        replica: plan.replica.clone(),
        connected: None,
        first: plan.endpoint.pin,
        era: None,
        hops: vec![],
        failed: None,
        tools: None,
        read: None,
    };
    let client = match McpClient::new(plan.endpoint, Some(plan.secret), plan.limits) {
        Ok(c) => c,
        Err(e) => {
            run.failed = Some((SessionStep::Client, (&e).into()));
            return run;
        }
    };
    let session = match client.connect_era(plan.era).await {
        Ok(s) => s,
        Err(e) => {
            run.hops = client.hops();
            run.failed = Some((SessionStep::Handshake, (&e).into()));
            return run;
        }
    };
    run.era = Some(session.era.clone());
    run.connected = client.peer();
    if plan.list {
        match client.list_tools(&session).await {
            Ok(tools) => run.tools = Some(tools),
            Err(e) => run.failed = Some((SessionStep::ListTools, (&e).into())),
        }
    }
    if let (Some(read), None) = (&plan.read, &run.failed) {
        let mut answer = client.call_tool(&session, &read.tool, read.arguments.clone()).await;
        // A JSON-RPC server error (-32000 to -32099: the server's own failure, the JSON-RPC
        // form of a 5xx, e.g. an adapter's upstream timing out on a busy host) is asked
        // again once; a read that is broken fails the second time too.
        if matches!(&answer, Err(McpError::JsonRpc { code: -32099..=-32000, .. })) {
            tokio::time::sleep(std::time::Duration::from_millis(500)).await;
            answer = client.call_tool(&session, &read.tool, read.arguments.clone()).await;
        }
        match answer {
            Ok(result) => run.read = Some(result),
            Err(e) => run.failed = Some((SessionStep::Call(read.tool.clone()), (&e).into())),
        }
    }
    client.close(session).await;
    run.hops = client.hops();
    run
}

/// Pure: a session that failed is not ready (retried) or a failure naming the replica;
/// a read that came back is judged against its expectation.
pub fn judge_runs(runs: &[SessionRun], read: Option<&ReadSpec>, mut evidence: Vec<String>) -> Attempt {
    let mut findings = Vec::new();
    let mut not_ready = Vec::new();
    for run in runs {
        evidence.extend(run.evidence());
        if let Some((step, e)) = &run.failed {
            if e.not_ready {
                not_ready.push(format!("{}: {step} failed: {}", run.replica, e.text));
            } else {
                let kind = match step {
                    SessionStep::Call(_) => FindingKind::ReadFailed,
                    _ => FindingKind::SessionFailed,
                };
                findings.push(
                    Finding::new(kind, "{replica}: {step} failed: {error}")
                        .fact("replica", &run.replica)
                        .fact("step", step)
                        .fact("error", &e.text),
                );
            }
            continue;
        }
        if let (Some(read), Some(result)) = (read, &run.read)
            && let Attempt::Fail { findings: f, evidence: e } = judge_read(&read.tool, &read.expect, result, vec![])
        {
            evidence.extend(e.into_iter().map(|l| format!("{}: {l}", run.replica)));
            findings.extend(f.into_iter().map(|mut f| {
                f.proof = f.proof.iter().map(|l| format!("{}: {l}", run.replica)).collect();
                f.prefixed("{replica}: ").fact("replica", &run.replica)
            }));
        }
    }
    Attempt::settle(findings, not_ready, evidence)
}

pub fn judge_read(tool: &str, expect: &Expectation, result: &ToolResult, mut evidence: Vec<String>) -> Attempt {
    let returned = format!("result: {}", crate::text::body_excerpt(result.raw.to_string().as_bytes(), 400));
    evidence.push(returned.clone());
    if result.is_error {
        return Attempt::failed(
            vec![
                Finding::new(FindingKind::ReadFailed, "read tool `{tool}` returned isError: true: {text}")
                    .fact("tool", tool)
                    .fact("is_error", true)
                    .fact("text", crate::text::body_excerpt(result.text.join(" ").as_bytes(), 200))
                    .proven_by(returned),
            ],
            evidence,
        );
    }
    let failed = |template: &'static str, expected: String| {
        let finding = Finding::new(FindingKind::ReadFailed, template)
            .fact("tool", tool)
            .fact("expected", expected)
            .proven_by(returned.clone());
        Attempt::failed(vec![finding], evidence.clone())
    };
    match expect {
        Expectation::TextContains(needle) => {
            if result.text.iter().any(|t| t.contains(needle.as_str())) {
                Attempt::Pass { evidence }
            } else {
                failed("read tool `{tool}` returned no text containing {expected}", format!("{needle:?}"))
            }
        }
        Expectation::JsonSubset(expected) => {
            let mut candidates = result
                .structured
                .iter()
                .cloned()
                .chain(result.text.iter().filter_map(|t| serde_json::from_str::<Value>(t).ok()));
            if candidates.any(|c| json_contains(&c, expected)) {
                Attempt::Pass { evidence }
            } else {
                failed(
                    "read tool `{tool}` returned nothing (structuredContent or JSON text) containing {expected}",
                    expected.to_string(),
                )
            }
        }
    }
}

/// `expected` is contained in `actual`: objects by key (recursively), everything else equal.
pub fn json_contains(actual: &Value, expected: &Value) -> bool {
    match (actual, expected) {
        (Value::Object(a), Value::Object(e)) => {
            e.iter().all(|(k, ev)| a.get(k).is_some_and(|av| json_contains(av, ev)))
        }
        _ => actual == expected,
    }
}

/// One request and what came of it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Try {
    pub ask: Ask,
    pub outcome: Result<Exchange, ErrorSeen>,
}

impl Try {
    pub(crate) fn status(&self) -> Option<u16> {
        self.outcome.as_ref().ok().map(|e| e.status)
    }

    pub(crate) fn summary(&self) -> String {
        match &self.outcome {
            Ok(e) => e.summary(),
            Err(e) => format!("{}: {}", self.ask, e.text),
        }
    }
}

#[cfg(test)]
#[path = "sessions_tests.rs"]
mod tests;
