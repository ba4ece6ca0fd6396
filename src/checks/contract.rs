//! `contract::<provider>::{tools,read,anonymous,wrong_bearer,foreign_bearer}`, at every
//! replica of the provider.

pub mod arguments;
pub mod calls;
pub mod limits;
pub mod refusal;

use std::collections::BTreeSet;
use std::rc::Rc;
use std::sync::Arc;

use futures_util::future::{BoxFuture, join_all};
use serde::{Deserialize, Serialize};

use super::kit::sessions::{SessionPlan, SessionRun, SessionsPlan, judge_runs, run_session};
use super::kit::vantage::{contract_vantages, observe_everywhere};
use crate::check::Spec;
use crate::check::{Check, Probe, RunContext, named};
use crate::config::Suite;
use crate::config::{Family, Provider, Scenario};
use crate::mcp::{Era, EraChoice, Tool, schema_hash};
use crate::model::{Attempt, CheckName, Finding, FindingKind};
use crate::netns::NsView;
use crate::text::name_list;

pub fn plan(scenario: &Scenario) -> Vec<Arc<dyn Check>> {
    let mut checks: Vec<Arc<dyn Check>> = Vec::new();
    for provider in scenario.providers.iter().filter(|p| !p.disabled) {
        let id = &provider.id;
        let aspect = |a: &str| CheckName::of_provider(Family::Contract, id, Some(a));
        checks.push(named(aspect("tools"), ToolsCheck { provider: id.clone() }));
        checks.push(named(aspect("read"), ReadCheck { provider: id.clone() }));
        for bearer in [refusal::Bearer::Anonymous, refusal::Bearer::Wrong, refusal::Bearer::Foreign] {
            checks.push(named(aspect(bearer.aspect()), refusal::RefusalCheck { provider: id.clone(), bearer }));
        }
    }
    checks
}

struct ToolsCheck {
    provider: String,
}

/// One replica's listings: in the era the server offers first, and — when that was
/// 2026-07-28 — again through the `initialize` handshake older clients use.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ToolsObservation {
    pub first: SessionRun,
    pub handshake: Option<SessionRun>,
}

/// A listing at every replica (each a session plan with `list`).
#[derive(Clone, Serialize, Deserialize)]
pub struct ToolsPlan {
    pub sessions: Vec<SessionPlan>,
}

impl ToolsPlan {
    pub async fn observe(self, view: Rc<NsView>) -> Vec<ToolsObservation> {
        let sessions = self
            .sessions
            .into_iter()
            .map(|p| SessionPlan { endpoint: super::kit::vantage::in_libc_order(&view, &p.endpoint), ..p });
        join_all(sessions.map(|plan| async move {
            let first = run_session(plan.clone()).await;
            let handshake = match first.era {
                Some(Era::Stateless2026) => Some(run_session(SessionPlan { era: EraChoice::Handshake, ..plan }).await),
                _ => None,
            };
            ToolsObservation { first, handshake }
        }))
        .await
    }
}

impl Probe for ToolsCheck {
    fn run<'a>(&'a self, ctx: &'a RunContext) -> BoxFuture<'a, Attempt> {
        Box::pin(async move {
            let provider = ctx.scenario.provider(&self.provider).expect("planned from the scenario").clone();
            let vantages = match contract_vantages(ctx, &provider) {
                Ok(v) => v,
                Err(attempt) => return attempt,
            };
            let secret = ctx.scenario.secret(&provider.credential).clone();
            let limits = ctx.suite.limits.clone();
            let observed = observe_everywhere(ctx, &vantages, |endpoints| ToolsPlan {
                sessions: session_plans(endpoints, &secret, &limits, true, None),
            })
            .await;
            match observed {
                Ok((observations, from)) => {
                    judge_tools_everywhere(&provider, &observations, vec![format!("probed from {from}")])
                }
                Err(attempt) => attempt,
            }
        })
    }
}

/// One session per replica endpoint, with the provider's own credential.
fn session_plans(
    endpoints: &[(String, crate::mcp::Endpoint)],
    secret: &crate::secret::Secret,
    limits: &crate::mcp::Limits,
    list: bool,
    read: Option<&crate::config::ReadSpec>,
) -> Vec<SessionPlan> {
    endpoints
        .iter()
        .map(|(replica, endpoint)| SessionPlan {
            replica: replica.clone(),
            endpoint: endpoint.clone(),
            secret: secret.clone(),
            limits: limits.clone(),
            era: EraChoice::Auto,
            list,
            read: read.cloned(),
        })
        .collect()
}

/// Pure: every replica, in every era it speaks, serves exactly the allowlist.
pub fn judge_tools_everywhere(
    provider: &Provider,
    observations: &[ToolsObservation],
    mut evidence: Vec<String>,
) -> Attempt {
    let mut findings = Vec::new();
    let many = observations.len() > 1;
    for o in observations {
        let runs: Vec<&SessionRun> = std::iter::once(&o.first).chain(o.handshake.as_ref()).collect();
        match judge_runs(std::slice::from_ref(&o.first), None, vec![]) {
            Attempt::Pass { evidence: e } => evidence.extend(e),
            failed_or_waiting => return with_evidence(failed_or_waiting, evidence),
        }
        let Some(tools) = &o.first.tools else { continue };
        let prefix = if many { format!("{}: ", o.first.replica) } else { String::new() };
        // Where it was seen, when there is more than one place it could have been.
        let at_replica = |f: Finding| {
            let f = f.fact("replica", &o.first.replica);
            if many { f.prefixed("{replica}: ") } else { f }
        };
        let (f, e) = judge_tools(provider, tools);
        evidence.extend(e.into_iter().map(|l| format!("{prefix}{l}")));
        findings.extend(f.into_iter().map(at_replica));
        if let Some(hs) = runs.get(1) {
            evidence.extend(hs.evidence().into_iter().map(|l| format!("{l} (initialize handshake)")));
            if let Some(old) = &hs.tools {
                let modern: BTreeSet<&str> = tools.iter().map(|t| t.name.as_str()).collect();
                let handshake: BTreeSet<&str> = old.iter().map(|t| t.name.as_str()).collect();
                if modern != handshake {
                    let only_old: Vec<&str> = handshake.difference(&modern).copied().collect();
                    let only_new: Vec<&str> = modern.difference(&handshake).copied().collect();
                    findings.push(at_replica(
                        Finding::new(
                            FindingKind::ErasDisagree,
                            "the eras serve different tools: only through initialize [{only_initialize}], only through server/discover [{only_discover}]",
                        )
                        .fact("only_initialize", name_list(only_old, 20))
                        .fact("only_discover", name_list(only_new, 20)),
                    ));
                }
                let (f, _) = judge_tools(provider, old);
                findings.extend(f.into_iter().map(|f| at_replica(f.prefixed("through the initialize handshake: "))));
            }
        }
    }
    findings.dedup();
    Attempt::from_findings(findings, evidence)
}

fn with_evidence(attempt: Attempt, mut evidence: Vec<String>) -> Attempt {
    match attempt {
        Attempt::Fail { findings, evidence: e } => {
            evidence.extend(e);
            Attempt::Fail { findings, evidence }
        }
        Attempt::NotReady { reason, evidence: e } => {
            evidence.extend(e);
            Attempt::NotReady { reason, evidence }
        }
        other => other,
    }
}

/// The served set must equal the allowlist exactly: a subset is as wrong as a superset.
/// Returns the findings and the evidence lines.
pub fn judge_tools(provider: &Provider, tools: &[Tool]) -> (Vec<Finding>, Vec<String>) {
    let served: BTreeSet<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    let allowed: BTreeSet<&str> = provider.tools.allowlist.iter().map(String::as_str).collect();
    let hash = schema_hash(tools);
    let evidence = vec![
        format!("served: [{}]", name_list(served.iter().copied(), 40)),
        format!("allowlist: [{}]", name_list(allowed.iter().copied(), 40)),
        format!("schema_sha256: {hash}"),
    ];
    let mut problems = Vec::new();
    if served.len() != tools.len() {
        let mut seen = BTreeSet::new();
        let twice: Vec<&str> = tools.iter().map(|t| t.name.as_str()).filter(|n| !seen.insert(*n)).collect();
        problems.push(
            Finding::new(FindingKind::ToolsMismatch, "{count} tool name(s) served more than once")
                .fact("count", tools.len() - served.len())
                .fact("duplicated", name_list(twice, 20)),
        );
    }
    let extra: Vec<&str> = served.difference(&allowed).copied().collect();
    let missing: Vec<&str> = allowed.difference(&served).copied().collect();
    let mutating: Vec<&str> =
        served.iter().copied().filter(|t| provider.tools.mutating.iter().any(|m| m == t)).collect();
    if !provider.tools.mutating_enabled && !mutating.is_empty() {
        let names = name_list(mutating, 20);
        problems.push(
            Finding::new(
                FindingKind::MutatingToolServed,
                "mutating tool(s) served while mutating tools are not enabled: {tools}",
            )
            .fact("tools", names),
        );
    }
    if !extra.is_empty() {
        let names = name_list(extra, 20);
        problems.push(
            Finding::new(FindingKind::ToolsMismatch, "serves tool(s) outside the allowlist: {extra}")
                .fact("extra", names),
        );
    }
    if !missing.is_empty() {
        let names = name_list(missing, 20);
        problems.push(
            Finding::new(
                FindingKind::ToolsMismatch,
                "does not serve allowlisted tool(s): {missing} (a subset is not the contract)",
            )
            .fact("missing", names),
        );
    }
    if let Some(pinned) = &provider.tools.schema_sha256
        && *pinned != hash
    {
        problems.push(
            Finding::new(FindingKind::SchemaPinMismatch, "tool schema hash {served} differs from the pinned {pinned}")
                .fact("served", &hash)
                .fact("pinned", pinned),
        );
    }
    (problems, evidence)
}

struct ReadCheck {
    provider: String,
}

impl Probe for ReadCheck {
    fn run<'a>(&'a self, ctx: &'a RunContext) -> BoxFuture<'a, Attempt> {
        Box::pin(async move {
            let provider = ctx.scenario.provider(&self.provider).expect("planned from the scenario").clone();
            let Some(read) = provider.read.clone() else {
                return Attempt::Skip {
                    reason: format!(
                        "no deterministic read is configured for provider `{}` (scenario `read:`, probe `--read`)",
                        provider.id
                    ),
                };
            };
            let vantages = match contract_vantages(ctx, &provider) {
                Ok(v) => v,
                Err(attempt) => return attempt,
            };
            let secret = ctx.scenario.secret(&provider.credential).clone();
            let limits = ctx.suite.limits.clone();
            let observed = observe_everywhere(ctx, &vantages, |endpoints| SessionsPlan {
                sessions: session_plans(endpoints, &secret, &limits, false, Some(&read)),
            })
            .await;
            match observed {
                Ok((runs, from)) => judge_runs(&runs, Some(&read), vec![format!("probed from {from}")]),
                Err(attempt) => attempt,
            }
        })
    }
}

/// The family, registered once (`checks::FAMILIES`).
pub const SPEC: Spec = Spec { family: Family::Contract, plan: planned, explain };

fn planned(scenario: &Scenario, _: &Suite) -> Vec<Arc<dyn Check>> {
    let mut checks = plan(scenario);
    checks.extend(calls::plan(scenario));
    checks.extend(arguments::plan(scenario));
    checks.extend(limits::plan(scenario));
    checks
}

/// What a check of this family proves, and where it looks from (`cordon explain`); `None`
/// for one it does not plan.
fn explain(name: &CheckName) -> Option<(&'static str, &'static str)> {
    Some(match name.aspect.first().map(String::as_str) {
        Some("tools") => (
            "every replica serves exactly the allowlisted tools (a subset fails too), in every era it speaks (2026-07-28 and the initialize handshake), no mutating tool unless enabled, and the pinned schema hash if one is set",
            "the first admitted client that shares a network with the provider, else the provider's own container (host mode: cordon's namespace)",
        ),
        Some("read") => (
            "the deterministic read tool answers isError: false with the expected content, at every replica",
            "the first admitted client that shares a network with the provider, else the provider's own container",
        ),
        Some("anonymous" | "wrong_bearer" | "foreign_bearer") => (
            "the bearer is refused (401/403, or a JSON-RPC error where the scenario says so) at every entry point of every replica — initialize, server/discover, tools/list and tools/call with and without the 2026-07-28 headers, the SSE GET, the valid session's own id, any id a refusal hands out, a legacy session's message URL — and no answer discloses a tool name; it cannot be judged when the valid bearer gets no session either",
            "the first admitted client that shares a network with the provider, else the provider's own container",
        ),
        Some("call_allowlist") => (
            "tools/call of every name the provider must not run (mutating with mutation off, denied_tools, the upstream specification's other tools, any name a listing served outside the allowlist) is refused at every replica, in every era, with every credential its clients hold, and shows no sign of having run: not isError: false, not an error that carries output, not a 5xx where that name is refused, and the read answers the same before and after; behind an adapter with an app, no denied call's nonce reaches the app's log; an error in the server's own words (unlike the refusal of a name that cannot exist) is a refusal only when the app's log holds an allowed control call's nonce and not the denied call's, and where nothing proves it either way the check is not judged (skipped, with why), whatever the words",
            "the first admitted client that shares a network with the provider, else the provider's own container",
        ),
        Some("arguments") => (
            "(strict_arguments) the read tool with an argument its schema does not describe, a tool with a required argument missing, a tool that declares no inputs given one, and every other allowlisted tool given one beside arguments its schema describes, are each refused where the same call without it is served",
            "the first admitted client that shares a network with the provider, else the provider's own container",
        ),
        Some("limits") => (
            "(limits) each limit pushed past its bound holds: a request one byte over request_bytes is refused and the provider still serves; no tools/list page holds more than page_size tools; the large call (limit_probes.large) stays within result_items and response_bytes; the slow call (limit_probes.slow) is cut within timeout_seconds; concurrent_requests + 1 parallel calls are each served or refused, none dropped, and not all let in at once; a limit nothing could push past is not judged (skipped, naming it), never passed",
            "the first admitted client that shares a network with the provider, else the provider's own container",
        ),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::kit::sessions::{json_contains, judge_read};
    use crate::config::Expectation;
    use crate::config::ToolsContract;
    use crate::mcp::ToolResult;
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
            served_by_app: false,
            app_ports: vec![],
            service: "p".into(),
            sidecar_networks: None,
            sidecar_image: None,
            app: None,
            networks: vec![],
            boundary: Default::default(),
        }
    }

    fn tools(names: &[&str]) -> Vec<Tool> {
        names
            .iter()
            .map(|n| Tool { name: n.to_string(), description: None, input_schema: json!({"type": "object"}).into() })
            .collect()
    }

    fn run(replica: &str, era: Option<Era>, names: Option<&[&str]>) -> SessionRun {
        SessionRun {
            replica: replica.into(),
            connected: None,
            first: None,
            era,
            hops: vec![],
            failed: None,
            tools: names.map(tools),
            read: None,
        }
    }

    fn kinds(a: &Attempt) -> Vec<FindingKind> {
        match a {
            Attempt::Fail { findings, .. } => findings.iter().map(|f| f.kind).collect(),
            _ => vec![],
        }
    }

    #[test]
    fn exact_set_passes_and_records_the_hash() {
        let (f, e) = judge_tools(&provider(&["a", "b"], &[], None), &tools(&["b", "a"]));
        assert!(f.is_empty());
        assert!(e[2].starts_with("schema_sha256: "));
        let hash = schema_hash(&tools(&["a", "b"]));
        assert!(judge_tools(&provider(&["a", "b"], &[], Some(&hash)), &tools(&["a", "b"])).0.is_empty());
    }

    #[test]
    fn subset_superset_mutating_duplicates_and_pin_each_fail() {
        let msg = |p: Provider, t: &[&str]| {
            judge_tools(&p, &tools(t)).0.iter().map(|f| f.sentence()).collect::<Vec<_>>().join("; ")
        };
        assert!(msg(provider(&["a", "b"], &[], None), &["a"]).contains("does not serve allowlisted tool(s): b"));
        let r = msg(provider(&["a"], &["drop"], None), &["a", "drop"]);
        assert!(r.contains("outside the allowlist: drop") && r.contains("mutating tool(s) served"), "{r}");
        assert!(msg(provider(&["a"], &[], None), &["a", "a"]).contains("served more than once"));
        assert!(msg(provider(&["a"], &[], Some(&"0".repeat(64))), &["a"]).contains("differs from the pinned"));
    }

    #[test]
    fn every_replica_and_every_era_is_judged() {
        let p = provider(&["add", "echo"], &["delete_everything"], None);
        let good =
            ToolsObservation { first: run("r1", Some(Era::Stateless2026), Some(&["add", "echo"])), handshake: None };
        assert!(judge_tools_everywhere(&p, std::slice::from_ref(&good), vec![]).is_pass());
        // A mutating tool shown only to clients that use the initialize handshake.
        let eras = ToolsObservation {
            first: run("r1", Some(Era::Stateless2026), Some(&["add", "echo"])),
            handshake: Some(run(
                "r1",
                Some(Era::Stateful { protocol_version: "2025-06-18".into() }),
                Some(&["add", "echo", "delete_everything"]),
            )),
        };
        let k = kinds(&judge_tools_everywhere(&p, &[eras], vec![]));
        assert!(k.contains(&FindingKind::ErasDisagree) && k.contains(&FindingKind::MutatingToolServed), "{k:?}");
        // One replica of two serves an extra tool.
        let bad = ToolsObservation { first: run("r2", None, Some(&["add", "echo", "x"])), handshake: None };
        let a = judge_tools_everywhere(&p, &[good, bad], vec![]);
        match &a {
            Attempt::Fail { findings, .. } => assert!(findings[0].sentence().starts_with("r2: "), "{findings:?}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn read_expectations() {
        let result = ToolResult { is_error: false, text: vec!["{\"n\": 5}".into()], structured: None, raw: json!({}) };
        assert!(judge_read("t", &Expectation::JsonSubset(json!({"n": 5})), &result, vec![]).is_pass());
        assert!(judge_read("t", &Expectation::TextContains("5".into()), &result, vec![]).is_pass());
        assert_eq!(
            kinds(&judge_read("t", &Expectation::TextContains("6".into()), &result, vec![])),
            vec![FindingKind::ReadFailed]
        );
        let failed = ToolResult { is_error: true, ..result };
        assert_eq!(
            kinds(&judge_read("t", &Expectation::TextContains("5".into()), &failed, vec![])),
            vec![FindingKind::ReadFailed]
        );
    }

    #[test]
    fn json_subset_matches_nested_objects() {
        assert!(json_contains(&json!({"result": 5, "x": {"a": 1, "b": 2}}), &json!({"x": {"a": 1}})));
        assert!(!json_contains(&json!({"result": 5}), &json!({"result": 6})));
        assert!(!json_contains(&json!([1, 2]), &json!([1])));
    }
}
