//! `contract::<provider>::{tools,read,anonymous,wrong_bearer,foreign_bearer}`.

use std::collections::BTreeSet;
use std::sync::Arc;

use futures_util::future::BoxFuture;
use serde_json::Value;

use super::{attempt_from_error, refusal, with_provider_endpoint};
use crate::config::{Expectation, Family, Provider, ReadSpec, Scenario};
use crate::mcp::{Endpoint, Limits, McpClient, Session, Tool, ToolResult, schema_hash};
use crate::model::{Attempt, CheckName};
use crate::runner::{Check, Probe, RunContext, named};
use crate::secret::Secret;

pub fn plan(scenario: &Scenario) -> Vec<Arc<dyn Check>> {
    let mut checks: Vec<Arc<dyn Check>> = Vec::new();
    for provider in scenario.providers.iter().filter(|p| !p.disabled) {
        let id = &provider.id;
        let aspect = |a: &str| CheckName::with_aspect(Family::Contract, id.clone(), a);
        checks.push(named(aspect("tools"), ToolsCheck { provider: id.clone() }));
        checks.push(named(aspect("read"), ReadCheck { provider: id.clone() }));
        for bearer in [refusal::Bearer::Anonymous, refusal::Bearer::Wrong, refusal::Bearer::Foreign] {
            checks.push(named(aspect(bearer.aspect()), refusal::RefusalCheck { provider: id.clone(), bearer }));
        }
    }
    checks
}

/// Opens a session at `endpoint` with `secret`.
pub async fn open_session(
    endpoint: Endpoint,
    secret: Secret,
    limits: Limits,
    mut evidence: Vec<String>,
) -> Result<(McpClient, Session, Vec<String>), Attempt> {
    let url = endpoint.url.clone();
    evidence.push(match endpoint.pin {
        Some(pin) => format!("endpoint: {url} at {pin} ({:?})", endpoint.transport),
        None => format!("endpoint: {url} ({:?})", endpoint.transport),
    });
    let client = match McpClient::new(endpoint, Some(secret), limits) {
        Ok(c) => c,
        Err(e) => return Err(attempt_from_error("cannot build the HTTP client", &e, evidence)),
    };
    match client.connect().await {
        Ok(session) => {
            evidence.push(format!("era: {:?}", session.era));
            Ok((client, session, evidence))
        }
        Err(e) => Err(attempt_from_error(&format!("session with {url} refused or failed"), &e, evidence)),
    }
}

struct ToolsCheck {
    provider: String,
}

impl Probe for ToolsCheck {
    fn run<'a>(&'a self, ctx: &'a RunContext) -> BoxFuture<'a, Attempt> {
        Box::pin(async move {
            let provider = ctx.scenario.provider(&self.provider).expect("planned from the scenario").clone();
            let secret = ctx.scenario.secret(&provider.credential).clone();
            let limits = ctx.suite.limits.clone();
            with_provider_endpoint(ctx, &provider.clone(), move |endpoint, evidence| async move {
                let (client, session, mut evidence) = match open_session(endpoint, secret, limits, evidence).await {
                    Ok(s) => s,
                    Err(attempt) => return attempt,
                };
                let listed = client.list_tools(&session).await;
                client.close(session).await;
                match listed {
                    Ok(tools) => judge_tools(&provider, &tools, &mut evidence),
                    Err(e) => attempt_from_error("tools/list failed", &e, evidence),
                }
            })
            .await
        })
    }
}

/// The served set must equal the allowlist exactly: a subset is as wrong as a superset.
pub fn judge_tools(provider: &Provider, tools: &[Tool], evidence: &mut Vec<String>) -> Attempt {
    let served: BTreeSet<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    let allowed: BTreeSet<&str> = provider.tools.allowlist.iter().map(String::as_str).collect();
    let hash = schema_hash(tools);
    evidence.push(format!("served: [{}]", served.iter().copied().collect::<Vec<_>>().join(", ")));
    evidence.push(format!("allowlist: [{}]", allowed.iter().copied().collect::<Vec<_>>().join(", ")));
    evidence.push(format!("schema_sha256: {hash}"));
    let mut problems = Vec::new();
    if served.len() != tools.len() {
        problems.push(format!("{} tool name(s) served more than once", tools.len() - served.len()));
    }
    let extra: Vec<&str> = served.difference(&allowed).copied().collect();
    let missing: Vec<&str> = allowed.difference(&served).copied().collect();
    let mutating: Vec<&str> =
        served.iter().copied().filter(|t| provider.tools.mutating.iter().any(|m| m == t)).collect();
    if !provider.tools.mutating_enabled && !mutating.is_empty() {
        problems.push(format!("mutating tool(s) served while mutating tools are not enabled: {}", mutating.join(", ")));
    }
    if !extra.is_empty() {
        problems.push(format!("serves tool(s) outside the allowlist: {}", extra.join(", ")));
    }
    if !missing.is_empty() {
        problems
            .push(format!("does not serve allowlisted tool(s): {} (a subset is not the contract)", missing.join(", ")));
    }
    if let Some(pinned) = &provider.tools.schema_sha256
        && *pinned != hash
    {
        problems.push(format!("tool schema hash {hash} differs from the pinned {pinned}"));
    }
    if problems.is_empty() {
        Attempt::Pass { evidence: std::mem::take(evidence) }
    } else {
        Attempt::fail(problems.join("; "), std::mem::take(evidence))
    }
}

struct ReadCheck {
    provider: String,
}

impl Probe for ReadCheck {
    fn run<'a>(&'a self, ctx: &'a RunContext) -> BoxFuture<'a, Attempt> {
        Box::pin(async move {
            let provider = ctx.scenario.provider(&self.provider).expect("planned from the scenario");
            let Some(read) = provider.read.clone() else {
                return Attempt::Skip {
                    reason: format!(
                        "no deterministic read is configured for provider `{}` (scenario `read:`, probe `--read`)",
                        provider.id
                    ),
                };
            };
            let secret = ctx.scenario.secret(&provider.credential).clone();
            let limits = ctx.suite.limits.clone();
            with_provider_endpoint(ctx, provider, move |endpoint, evidence| async move {
                match open_session(endpoint, secret, limits, evidence).await {
                    Ok((client, session, evidence)) => deterministic_read(&client, session, &read, evidence).await,
                    Err(attempt) => attempt,
                }
            })
            .await
        })
    }
}

/// Calls the read tool on an open session, closes it, and judges the result.
pub async fn deterministic_read(
    client: &McpClient,
    session: Session,
    read: &ReadSpec,
    mut evidence: Vec<String>,
) -> Attempt {
    let called = client.call_tool(&session, &read.tool, read.arguments.clone()).await;
    client.close(session).await;
    evidence.push(format!("call: {}({})", read.tool, read.arguments));
    match called {
        Ok(result) => judge_read(&read.tool, &read.expect, &result, evidence),
        Err(e) => attempt_from_error(&format!("tools/call {} failed", read.tool), &e, evidence),
    }
}

pub fn judge_read(tool: &str, expect: &Expectation, result: &ToolResult, mut evidence: Vec<String>) -> Attempt {
    evidence.push(format!("result: {}", excerpt(&result.raw.to_string(), 400)));
    if result.is_error {
        return Attempt::fail(
            format!("read tool `{tool}` returned isError: true: {}", excerpt(&result.text.join(" "), 200)),
            evidence,
        );
    }
    match expect {
        Expectation::TextContains(needle) => {
            if result.text.iter().any(|t| t.contains(needle.as_str())) {
                Attempt::Pass { evidence }
            } else {
                Attempt::fail(format!("read tool `{tool}` returned no text containing {needle:?}"), evidence)
            }
        }
        Expectation::JsonSubset(expected) => {
            let candidates = result
                .structured
                .iter()
                .cloned()
                .chain(result.text.iter().filter_map(|t| serde_json::from_str::<Value>(t).ok()));
            for candidate in candidates {
                if json_contains(&candidate, expected) {
                    return Attempt::Pass { evidence };
                }
            }
            Attempt::fail(
                format!("read tool `{tool}` returned nothing (structuredContent or JSON text) containing {expected}"),
                evidence,
            )
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

pub fn excerpt(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        text.to_string()
    } else {
        format!("{}…", text.chars().take(max).collect::<String>())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn json_subset_matches_nested_objects() {
        assert!(json_contains(&json!({"result": 5, "x": {"a": 1, "b": 2}}), &json!({"x": {"a": 1}})));
        assert!(!json_contains(&json!({"result": 5}), &json!({"result": 6})));
        assert!(!json_contains(&json!([1, 2]), &json!([1])));
    }
}

#[cfg(test)]
mod tools_diff_tests {
    use super::*;
    use crate::config::ToolsContract;
    use crate::mcp::Transport;
    use serde_json::json;

    fn provider(allowlist: &[&str], mutating: &[&str], pin: Option<&str>) -> Provider {
        Provider {
            id: "p".into(),
            url: "http://127.0.0.1:1/mcp".parse().unwrap(),
            transport: Transport::StreamableHttp,
            credential: "c".into(),
            refusal: Default::default(),
            allowed_consumers: vec![],
            tools: ToolsContract {
                allowlist: allowlist.iter().map(|s| s.to_string()).collect(),
                schema_sha256: pin.map(String::from),
                mutating: mutating.iter().map(|s| s.to_string()).collect(),
                mutating_enabled: false,
            },
            read: None,
            disabled: false,
            app_ports: vec![],
            service: "p".into(),
            sidecar_networks: None,
            app: None,
            networks: vec![],
        }
    }

    fn tools(names: &[&str]) -> Vec<Tool> {
        names
            .iter()
            .map(|n| Tool {
                name: n.to_string(),
                description: None,
                input_schema: json!({"type": "object"}),
                raw: json!({"name": n}),
            })
            .collect()
    }

    fn reason(a: Attempt) -> String {
        match a {
            Attempt::Fail { reason, .. } => reason,
            other => panic!("expected a failure, got {other:?}"),
        }
    }

    #[test]
    fn exact_set_passes_and_records_the_hash() {
        let mut evidence = vec![];
        let a = judge_tools(&provider(&["a", "b"], &[], None), &tools(&["b", "a"]), &mut vec![]);
        assert!(matches!(a, Attempt::Pass { .. }));
        let hash = schema_hash(&tools(&["a", "b"]));
        assert!(matches!(
            judge_tools(&provider(&["a", "b"], &[], Some(&hash)), &tools(&["a", "b"]), &mut evidence),
            Attempt::Pass { .. }
        ));
        assert!(evidence.is_empty(), "evidence moves into the attempt");
    }

    #[test]
    fn subset_superset_mutating_duplicates_and_pin_each_fail() {
        assert!(
            reason(judge_tools(&provider(&["a", "b"], &[], None), &tools(&["a"]), &mut vec![]))
                .contains("does not serve allowlisted tool(s): b")
        );
        let r = reason(judge_tools(&provider(&["a"], &["drop"], None), &tools(&["a", "drop"]), &mut vec![]));
        assert!(r.contains("outside the allowlist: drop") && r.contains("mutating tool(s) served"), "{r}");
        assert!(
            reason(judge_tools(&provider(&["a"], &[], None), &tools(&["a", "a"]), &mut vec![]))
                .contains("served more than once")
        );
        assert!(
            reason(judge_tools(&provider(&["a"], &[], Some(&"0".repeat(64))), &tools(&["a"]), &mut vec![]))
                .contains("differs from the pinned")
        );
    }

    #[test]
    fn read_expectations() {
        let result = ToolResult { is_error: false, text: vec!["{\"n\": 5}".into()], structured: None, raw: json!({}) };
        assert!(matches!(
            judge_read("t", &Expectation::JsonSubset(json!({"n": 5})), &result, vec![]),
            Attempt::Pass { .. }
        ));
        assert!(matches!(
            judge_read("t", &Expectation::TextContains("5".into()), &result, vec![]),
            Attempt::Pass { .. }
        ));
        assert!(
            reason(judge_read("t", &Expectation::TextContains("6".into()), &result, vec![]))
                .contains("no text containing")
        );
        let failed = ToolResult { is_error: true, ..result };
        assert!(
            reason(judge_read("t", &Expectation::TextContains("5".into()), &failed, vec![])).contains("isError: true")
        );
    }
}
