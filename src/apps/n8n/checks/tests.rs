//! The `n8n` judges on tables of observations: each rule fails alone, for its reason.

use rstest::rstest;

use super::judge::*;
use crate::apps::n8n::observe::{ClientNodeSeen, ExposureSeen, RunSeen, ToolRunSeen, TriggerSeen, WorkflowSeen};
use crate::apps::webapp::Leak;
use crate::config::{Expectation, Provider, ReadSpec, Scenario};
use crate::model::FindingKind;

const SCENARIO: &str = r#"name: n8n
credentials:
  legacy-token: { file: t }
  key: { file: t }
providers:
  legacy:
    url: http://legacy:8000/sse
    transport: sse
    credential: legacy-token
    allowed_consumers: [n8n]
    tools: { allowlist: [add, echo, status] }
    read: { tool: status, expect: { json_subset: { status: ok } } }
  n8n-tools:
    url: http://n8n:5678/mcp/cordon-tools
    service: n8n
    credential: legacy-token
    allowed_consumers: [hermes]
    tools: { allowlist: [calculator] }
  wiki:
    url: http://wiki:8000/sse
    transport: sse
    credential: legacy-token
    disabled: true
    allowed_consumers: [n8n]
    tools: { allowlist: [] }
  gitea:
    url: http://gitea-mcp:8080/mcp
    credential: legacy-token
    allowed_consumers: [hermes]
    tools: { allowlist: [get_status] }
clients:
  n8n:
    credentials: { legacy: legacy-token }
    n8n: { api_key: key, server: n8n-tools }
  hermes:
    credentials: { n8n-tools: legacy-token, gitea: legacy-token }
"#;

fn scenario() -> Scenario {
    crate::config::testing::load(SCENARIO).unwrap()
}

fn provider(id: &str) -> Provider {
    scenario().provider(id).unwrap().clone()
}

fn want() -> WantedClient {
    WantedClient::of(&provider("legacy"), "infinito:")
}

fn node() -> ClientNodeSeen {
    ClientNodeSeen {
        node: "MCP Client".into(),
        endpoint: "http://legacy:8000/sse".into(),
        authentication: "bearerAuth".into(),
        credential: Some("infinito:legacy".into()),
        include: "selected".into(),
        include_tools: vec!["status".into(), "echo".into()],
        exclude_tools: vec![],
    }
}

fn workflow() -> WorkflowSeen {
    WorkflowSeen {
        id: "w1".into(),
        name: "infinito:legacy".into(),
        active: true,
        webhook: Some("infinito-legacy".into()),
        clients: vec![node()],
        triggers: vec![],
        leaks: vec![],
    }
}

#[test]
fn the_plan_checks_admitted_providers_and_n8n_s_own_server() {
    let names: Vec<String> = super::plan(&scenario()).iter().map(|c| c.name().to_string()).collect();
    assert_eq!(names, ["n8n::client::legacy", "n8n::workflows", "n8n::server"]);
}

fn managed_set() -> ManagedSet {
    ManagedSet::of(&scenario(), "n8n", "infinito:", Some("n8n-tools"))
}

fn kept(name: &str, endpoint: &str, active: bool) -> WorkflowSeen {
    let mut w = workflow();
    w.name = name.into();
    w.active = active;
    w.clients[0].endpoint = endpoint.into();
    w
}

#[test]
fn the_declared_workflows_n8n_s_own_trigger_and_a_person_s_workflows_pass() {
    let mut server = kept("infinito:n8n-tools", "", true);
    server.clients.clear();
    // A person's workflow may reach anything with a credential of their own.
    let person = kept("on-call helper", "http://wiki:8000/sse", true);
    // A trigger workflow named otherwise is the server's too (found by its path there).
    let mut trigger = kept("infinito:n8n-mcp", "", true);
    trigger.clients.clear();
    trigger.triggers = vec![TriggerSeen { path: "cordon-tools".into(), ..Default::default() }];
    assert_eq!(judge_workflows(&[workflow(), server, person, trigger], &managed_set()), vec![]);
}

#[rstest]
#[case::disabled_active(
    kept("infinito:wiki", "http://wiki:8000/sse", true),
    "workflow `infinito:wiki` is kept for provider `wiki`, which is disabled: none may be, its credential must be revoked (active, its MCP Client Tool nodes use credential `infinito:legacy`)"
)]
#[case::disabled_inactive(
    kept("infinito:wiki", "http://wiki:8000/sse", false),
    "which is disabled: none may be, its credential must be revoked (inactive, its MCP Client Tool nodes use credential"
)]
#[case::not_admitted(
    kept("infinito:gitea", "http://gitea-mcp:8080/mcp", true),
    "workflow `infinito:gitea` is kept for provider `gitea`, which does not admit `n8n` (consumer_not_allowed): none may be (active"
)]
#[case::no_provider(
    kept("infinito:retired-app", "http://retired:8000/sse", true),
    "workflow `infinito:retired-app` carries the managed prefix `infinito:` but names no provider of the scenario (active"
)]
#[case::node_reaches_a_disabled_provider(
    kept("infinito:legacy", "http://wiki:8000/sse", true),
    "`MCP Client` in workflow `infinito:legacy` points at http://wiki:8000/sse, provider `wiki`, which is disabled: no managed workflow may reach it"
)]
#[case::node_reaches_another_path_of_a_non_admitting_origin(
    kept("infinito:legacy", "http://gitea-mcp:8080/sse", true),
    "points at http://gitea-mcp:8080/sse, provider `gitea`, which does not admit `n8n` (consumer_not_allowed)"
)]
#[case::node_reaches_n8n_s_own_trigger(
    kept("infinito:legacy", "http://n8n:5678/mcp/cordon-tools", true),
    "provider `n8n-tools`, which does not admit `n8n`"
)]
fn a_managed_workflow_the_scenario_does_not_allow_fails(#[case] w: WorkflowSeen, #[case] reason: &str) {
    let findings = judge_workflows(&[workflow(), w], &managed_set());
    assert_eq!(findings.len(), 1, "{findings:?}");
    assert_eq!(findings[0].kind, FindingKind::WorkflowDrift);
    assert!(findings[0].sentence().contains(reason), "{}", findings[0].sentence());
}

#[test]
fn a_correct_workflow_passes() {
    assert!(judge_client_config(&[workflow()], &want()).is_empty());
}

#[rstest]
#[case::include_all(|n: &mut ClientNodeSeen| n.include = "all".into(), "has `include: all`: an explicit include list of the allowed tools is required, never all")]
#[case::include_except(|n: &mut ClientNodeSeen| { n.include = "except".into(); n.exclude_tools = vec!["add".into()]; }, "has `include: except` [add]: it offers every tool the server serves but those")]
#[case::empty_selection(|n: &mut ClientNodeSeen| n.include_tools.clear(), "selects tools from an empty list, which n8n 1.100.1 reads as every tool")]
#[case::outside(|n: &mut ClientNodeSeen| n.include_tools.push("delete_everything".into()), "includes tools outside the allowlist: [delete_everything]")]
#[case::no_read(|n: &mut ClientNodeSeen| n.include_tools = vec!["echo".into()], "does not include the read tool `status`")]
#[case::no_auth(|n: &mut ClientNodeSeen| { n.authentication = "none".into(); n.credential = None; }, "authenticates with `none`: only Bearer or Header authentication")]
#[case::no_credential(|n: &mut ClientNodeSeen| n.credential = None, "uses bearerAuth with no credential")]
fn each_node_rule_fails_alone(#[case] breaks: fn(&mut ClientNodeSeen), #[case] reason: &str) {
    let mut w = workflow();
    breaks(&mut w.clients[0]);
    let findings = judge_client_config(&[w], &want());
    assert_eq!(findings.len(), 1, "{findings:?}");
    assert_eq!(findings[0].kind, FindingKind::WorkflowDrift);
    assert!(findings[0].sentence().contains(reason), "{}", findings[0].sentence());
}

#[test]
fn the_workflow_must_exist_once_be_active_point_at_the_provider_and_hold_no_secret() {
    let missing = judge_client_config(&[], &want());
    assert!(missing[0].sentence().contains("no managed workflow `infinito:legacy`"));
    let twice = judge_client_config(&[workflow(), workflow()], &want());
    assert!(twice[0].sentence().contains("2 workflows are named `infinito:legacy`"));
    let mut inactive = workflow();
    inactive.active = false;
    assert!(judge_client_config(&[inactive], &want())[0].sentence().contains("is inactive"));
    let mut elsewhere = workflow();
    elsewhere.clients[0].endpoint = "http://notes:8000/sse".into();
    let findings = judge_client_config(&[elsewhere], &want());
    assert!(findings.iter().any(|f| f.sentence().contains("has no MCP Client Tool node for http://legacy:8000/sse")));
    assert!(findings.iter().any(|f| f.sentence().contains("points at http://notes:8000/sse")));
    let mut leaky = workflow();
    leaky.leaks =
        vec![Leak { field: "nodes[3] `MCP Client`.parameters.headers".into(), credential: "legacy-token".into() }];
    let findings = judge_client_config(&[leaky], &want());
    assert_eq!(findings[0].kind, FindingKind::SecretInPlain);
}

#[test]
fn a_node_of_another_managed_workflow_pointing_at_the_provider_is_judged_too() {
    let mut other = workflow();
    other.id = "w2".into();
    other.name = "infinito:reports".into();
    other.clients[0].include = "all".into();
    let findings = judge_client_config(&[workflow(), other], &want());
    assert_eq!(findings.len(), 1, "{findings:?}");
    assert!(findings[0].sentence().contains("in workflow `infinito:reports` has `include: all`"));
}

fn read() -> ReadSpec {
    ReadSpec {
        tool: "status".into(),
        arguments: serde_json::json!({}),
        expect: Expectation::JsonSubset(serde_json::json!({"status": "ok"})),
    }
}

fn good_run() -> RunSeen {
    let output = "[{\"type\":\"text\",\"text\":\"{\\\"status\\\":\\\"ok\\\"}\"}]".to_string();
    RunSeen {
        workflow: "infinito:legacy".into(),
        status: Some(200),
        reply: Some(output.clone()),
        execution: Some("7".into()),
        calls: vec![ToolRunSeen {
            node: "MCP Client".into(),
            tool: "status".into(),
            status: "success".into(),
            output,
            error: None,
        }],
        waited_ms: 3000,
        error: None,
    }
}

#[rstest]
#[case::passes(|_: &mut RunSeen| {}, None)]
#[case::no_answer(|r: &mut RunSeen| { r.status = None; r.calls.clear(); r.error = Some("timed out".into()); }, Some("got no answer after 3000 ms: timed out"))]
#[case::refused(|r: &mut RunSeen| { r.status = Some(500); r.calls[0].status = "error".into(); r.calls[0].error = Some("Could not connect to your MCP server".into()); }, Some("failed in the run: Could not connect to your MCP server"))]
#[case::not_run(|r: &mut RunSeen| r.calls.clear(), Some("shows no call of `status`"))]
#[case::wrong_result(|r: &mut RunSeen| r.calls[0].output = "[]".into(), Some("the call of `status` returned \"[]\""))]
#[case::fabricated(|r: &mut RunSeen| r.calls.clear(), Some("n8n's record of the run (execution 7) shows no call"))]
#[case::not_back(|r: &mut RunSeen| r.reply = Some("The tool said nothing.".into()), Some("the agent never got the result of `status` back"))]
fn a_run_passes_only_on_n8n_s_own_record_of_the_call(#[case] breaks: fn(&mut RunSeen), #[case] reason: Option<&str>) {
    let mut run = good_run();
    breaks(&mut run);
    let findings = judge_client_run(&want(), &read(), &run, None);
    match reason {
        None => assert!(findings.is_empty(), "{findings:?}"),
        Some(reason) => {
            assert_eq!(findings.len(), 1, "{findings:?}");
            assert!(findings[0].sentence().contains(reason), "{}", findings[0].sentence());
        }
    }
}

fn trigger() -> (WorkflowSeen, TriggerSeen) {
    let t = TriggerSeen {
        node: "MCP Server Trigger".into(),
        type_version: 2.0,
        authentication: "bearerAuth".into(),
        credential: Some("infinito:n8n-tools".into()),
        path: "cordon-tools".into(),
        tools: vec!["Calculator".into()],
    };
    let w = WorkflowSeen {
        id: "s1".into(),
        name: "infinito:n8n-tools".into(),
        active: true,
        triggers: vec![t.clone()],
        ..WorkflowSeen::default()
    };
    (w, t)
}

fn exposure(tools: &[&str]) -> ExposureSeen {
    ExposureSeen {
        url: "http://127.0.0.1:5678/mcp/cordon-tools".into(),
        tools: Some(tools.iter().map(|t| t.to_string()).collect()),
        error: None,
    }
}

#[rstest]
#[case::passes(|_: &mut WorkflowSeen, _: &mut TriggerSeen| {}, &["calculator"], None)]
#[case::auth_none(|_: &mut WorkflowSeen, t: &mut TriggerSeen| { t.authentication = "none".into(); t.credential = None; }, &["calculator"], Some("has authentication `none`: Bearer authentication is required"))]
#[case::version_1(|_: &mut WorkflowSeen, t: &mut TriggerSeen| t.type_version = 1.1, &["calculator"], Some("is typeVersion 1.1: version 2 or later is required"))]
#[case::inactive(|w: &mut WorkflowSeen, _: &mut TriggerSeen| w.active = false, &["calculator"], Some("is inactive although the provider is enabled"))]
#[case::extra_tool(|_: &mut WorkflowSeen, _: &mut TriggerSeen| {}, &["calculator", "wikipedia"], Some("exposes [calculator, wikipedia] (tool nodes [Calculator]), the allowlist is [calculator]"))]
#[case::other_path(|_: &mut WorkflowSeen, t: &mut TriggerSeen| t.path = "elsewhere".into(), &["calculator"], Some("no MCP Server Trigger serves path `cordon-tools`"))]
#[case::bearer_in_its_workflow(|w: &mut WorkflowSeen, _: &mut TriggerSeen| w.leaks = vec![Leak { field: "staticData.global.token".into(), credential: "n8n-tools-token".into() }], &["calculator"], Some("holds the value of credential `n8n-tools-token` in staticData.global.token"))]
fn each_server_rule_fails_alone(
    #[case] breaks: fn(&mut WorkflowSeen, &mut TriggerSeen),
    #[case] served: &[&str],
    #[case] reason: Option<&str>,
) {
    let (mut w, mut t) = trigger();
    breaks(&mut w, &mut t);
    let findings = judge_server(&provider("n8n-tools"), "cordon-tools", &[(&w, &t)], Some(&exposure(served)));
    match reason {
        None => assert!(findings.is_empty(), "{findings:?}"),
        Some(reason) => {
            assert_eq!(findings.len(), 1, "{findings:?}");
            assert!(findings[0].sentence().contains(reason), "{}", findings[0].sentence());
        }
    }
}

#[test]
fn a_disabled_server_must_be_inactive_and_two_triggers_on_one_path_fail() {
    let mut p = provider("n8n-tools");
    p.disabled = true;
    let (w, t) = trigger();
    let findings = judge_server(&p, "cordon-tools", &[(&w, &t)], None);
    assert!(findings[0].sentence().contains("is active although the provider is disabled"), "{findings:?}");
    let findings = judge_server(&provider("n8n-tools"), "cordon-tools", &[(&w, &t), (&w, &t)], None);
    assert!(findings[0].sentence().contains("2 MCP Server Triggers serve path `cordon-tools`"));
}

/// Every field of a workflow is read, for every workflow: a bearer in a node's notes, in
/// a Sticky Note, in `staticData` or `pinData` is found; a credential reference is not.
#[test]
fn a_bearer_anywhere_in_any_workflow_is_found() {
    let redactor = crate::secret::Redactor::new();
    redactor.register("legacy-token", "legacy-bearer-value-0123456789".into());
    let token = "legacy-bearer-value-0123456789";
    let w = serde_json::json!({
        "id": "h1",
        "name": "my notes",
        "active": false,
        "staticData": {"global": {"seen": format!("Bearer {token}")}},
        "pinData": {"Webhook": [{"json": {"auth": token}}]},
        "nodes": [
            {"name": "HTTP", "type": "n8n-nodes-base.httpRequest", "notes": format!("use {token}"),
             "credentials": {"httpBearerAuth": {"id": "7", "name": "infinito:legacy"}}, "parameters": {}},
            {"name": "Note", "type": "n8n-nodes-base.stickyNote", "parameters": {"content": token}}
        ]
    });
    let seen = crate::apps::n8n::gather::workflow_seen(&w, &redactor);
    let fields: Vec<&str> = seen.leaks.iter().map(|l| l.field.as_str()).collect();
    for field in [
        "staticData.global.seen",
        "pinData.Webhook[0].json.auth",
        "nodes[0] `HTTP`.notes",
        "nodes[1] `Note`.parameters.content",
    ] {
        assert!(fields.contains(&field), "{field} in {fields:?}");
    }
    assert!(fields.iter().all(|f| !f.contains("credentials")), "{fields:?}");
    // A workflow a person made, holding the provider's bearer, fails the provider's check;
    // the managed one passes.
    let mut human = workflow();
    human.id = "h1".into();
    human.name = "my notes".into();
    human.clients.clear();
    human.leaks = seen.leaks.clone();
    let want = WantedClient { credential: "legacy-token".into(), ..want() };
    let findings = judge_client_config(&[workflow(), human.clone()], &want);
    assert_eq!(findings.len(), 4, "{findings:#?}");
    assert!(
        findings.iter().all(|f| f.kind == FindingKind::SecretInPlain && f.sentence().contains("workflow `my notes`"))
    );
    // Another provider's check does not report it (each leak under its own provider).
    let other = WantedClient { credential: "notes-token".into(), ..want };
    assert!(judge_client_config(&[workflow(), human], &other).is_empty());
}
