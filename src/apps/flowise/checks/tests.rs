//! The `flowise` judges on tables of observations: each rule fails alone, for its reason.

use rstest::rstest;

use super::judge::*;
use crate::apps::flowise::observe::{
    AccessView, ApiKeySeen, AuthorSeen, EntrySeen, FlowSeen, GuardSeen, Leak, RegistryView, RunSeen, UsedTool,
    VariableSeen,
};
use crate::config::{Expectation, ReadSpec, Scenario};
use crate::model::FindingKind;
use crate::secret::Redactor;

/// After [`crate::config::testing::native_for`].
const SCENARIO_REST: &str = r#"  legacy: { url: "http://legacy:8000/sse", transport: sse, credential: native-token, allowed_consumers: [flowise], tools: { allowlist: [echo] } }
  wiki:
    url: http://wiki:8000/mcp
    credential: native-token
    disabled: true
    tools: { allowlist: [] }
  other:
    url: http://other:8000/mcp
    credential: native-token
    tools: { allowlist: [echo] }
clients:
  flowise:
    credentials: { native: native-token }
    flowise:
      admin: { email: admin@x.test, password: admin-pw }
      admin_keys: [reconciler]
"#;

fn scenario() -> Scenario {
    let head = crate::config::testing::native_for("fw", "flowise", "{ text: hi }");
    crate::config::testing::load(&format!("{head}{SCENARIO_REST}")).unwrap()
}

fn desired() -> Desired {
    Desired::of(&scenario(), "flowise")
}

fn good_entry() -> EntrySeen {
    EntrySeen {
        id: "e1".into(),
        name: "infinito:native".into(),
        shown_url: "http://native:8000/************".into(),
        auth_type: "CUSTOM_HEADERS".into(),
        header_names: vec!["Authorization".into()],
        status: "AUTHORIZED".into(),
        tools: vec!["echo".into(), "add".into()],
        schema_sha256: Some("abc".into()),
        leaks: vec![],
    }
}

fn view(entries: Vec<EntrySeen>) -> RegistryView {
    RegistryView { entries, flows: vec![], variables: vec![] }
}

fn kinds(findings: &[crate::model::Finding]) -> Vec<FindingKind> {
    findings.iter().map(|f| f.kind).collect()
}

#[test]
fn the_desired_registry_holds_admitted_streamable_providers_only() {
    let d = desired();
    assert_eq!(d.entries.iter().map(|e| e.name.as_str()).collect::<Vec<_>>(), ["infinito:native"]);
    assert_eq!(d.entries[0].origin, "http://native:8000");
    assert_eq!(d.forbidden["legacy"], Forbidden::Sse);
    assert_eq!(d.forbidden["wiki"], Forbidden::Disabled);
    assert_eq!(d.forbidden["other"], Forbidden::NotAdmitted { client: "flowise".into() });
}

#[test]
fn a_key_in_another_header_is_held_encrypted_too() {
    let mut e = good_entry();
    e.header_names = vec!["X-Api-Key".into()];
    assert!(judge_registry(&view(vec![e]), &desired()).is_empty());
}

#[test]
fn a_correct_registry_passes_and_human_made_entries_are_left_alone() {
    let mut human = good_entry();
    human.name = "my own server".into();
    human.auth_type = "NONE".into();
    human.status = "ERROR".into();
    assert!(judge_registry(&view(vec![good_entry(), human]), &desired()).is_empty());
}

fn human(name: &str, url: &str, status: &str, auth: &str) -> EntrySeen {
    EntrySeen {
        id: format!("h-{name}"),
        name: name.into(),
        shown_url: url.into(),
        auth_type: auth.into(),
        status: status.into(),
        ..good_entry()
    }
}

#[rstest]
// A person's entry elsewhere, one that never got in, or one with no credential at all.
#[case::elsewhere(human("my wiki", "http://tools.example:9000/************", "AUTHORIZED", "CUSTOM_HEADERS"), "")]
#[case::refused(human("my native", "http://native:8000/************", "ERROR", "CUSTOM_HEADERS"), "")]
#[case::no_credential(human("my native", "http://native:8000/************", "AUTHORIZED", "NONE"), "")]
// Let in by a provider that takes only the deployment's credentials: whoever made it.
#[case::deployment_bearer(
    human("my native", "http://native:8000/************", "AUTHORIZED", "CUSTOM_HEADERS"),
    "entry `my native` has no managed prefix but Flowise AUTHORIZED it at http://native:8000, provider `native`'s, with encrypted headers [Authorization]"
)]
#[case::non_admitting_provider(
    human("ops", "http://other:8000/************", "AUTHORIZED", "CUSTOM_HEADERS"),
    "Flowise AUTHORIZED it at http://other:8000, provider `other`'s"
)]
fn an_entry_without_the_prefix_fails_only_when_a_provider_let_its_credential_in(
    #[case] entry: EntrySeen,
    #[case] reason: &str,
) {
    let findings = judge_registry(&view(vec![good_entry(), entry]), &desired());
    if reason.is_empty() {
        assert!(findings.is_empty(), "{findings:?}");
    } else {
        assert_eq!(findings.len(), 1, "{findings:?}");
        assert_eq!(findings[0].kind, FindingKind::RegistryDrift);
        assert!(findings[0].sentence().contains(reason), "{}", findings[0].sentence());
    }
}

#[test]
fn a_bearer_in_a_variable_fails_and_a_variable_without_one_passes() {
    let leak = Leak { credential: "native-token".into(), field: "value".into() };
    let mut v = view(vec![good_entry()]);
    v.variables = vec![
        VariableSeen { name: "region".into(), kind: "static".into(), leaks: vec![] },
        VariableSeen { name: "native_bearer".into(), kind: "static".into(), leaks: vec![leak] },
    ];
    let findings = judge_registry(&v, &desired());
    assert_eq!(findings.len(), 1, "{findings:?}");
    assert_eq!(findings[0].kind, FindingKind::SecretInPlain);
    assert!(
        findings[0].sentence().starts_with(
            "variable `native_bearer` (static) holds the value of credential `native-token` in `value`: Flowise stores variables unencrypted"
        ),
        "{}",
        findings[0].sentence()
    );
}

#[rstest]
#[case::missing(vec![], "no entry `infinito:native` for provider `native`")]
#[case::twice(vec![good_entry(), good_entry()], "2 entries are named `infinito:native`: exactly one may be")]
fn the_managed_entry_is_there_exactly_once(#[case] entries: Vec<EntrySeen>, #[case] reason: &str) {
    let findings = judge_registry(&view(entries), &desired());
    assert_eq!(findings.len(), 1, "{findings:?}");
    assert!(findings[0].sentence().contains(reason), "{}", findings[0].sentence());
}

#[rstest]
#[case::no_headers(|e: &mut EntrySeen| { e.auth_type = "NONE".into(); e.header_names.clear(); }, "holds no credential in Flowise's encrypted custom headers (auth NONE")]
#[case::headers_unused(|e: &mut EntrySeen| e.auth_type = "NONE".into(), "holds no credential in Flowise's encrypted custom headers (auth NONE, headers [Authorization])")]
#[case::no_header_at_all(|e: &mut EntrySeen| e.header_names.clear(), "holds no credential in Flowise's encrypted custom headers (auth CUSTOM_HEADERS, headers [])")]
#[case::not_authorized(|e: &mut EntrySeen| e.status = "ERROR".into(), "is ERROR, not AUTHORIZED")]
#[case::elsewhere(|e: &mut EntrySeen| e.shown_url = "http://evil:8000/************".into(), "points at http://evil:8000, not at provider `native`'s http://native:8000")]
#[case::subset(|e: &mut EntrySeen| e.tools = vec!["echo".into()], "discovered tools [echo], the allowlist is [add, echo]")]
#[case::extra(|e: &mut EntrySeen| e.tools.push("delete_everything".into()), "discovered tools [add, delete_everything, echo]")]
fn each_entry_rule_fails_alone(#[case] breaks: fn(&mut EntrySeen), #[case] reason: &str) {
    let mut e = good_entry();
    breaks(&mut e);
    let findings = judge_registry(&view(vec![e]), &desired());
    assert_eq!(findings.len(), 1, "{findings:?}");
    assert!(findings[0].sentence().contains(reason), "{}", findings[0].sentence());
}

#[test]
fn an_entry_for_a_forbidden_or_unknown_provider_fails() {
    for (name, reason) in [
        ("infinito:legacy", "which speaks HTTP+SSE only"),
        ("infinito:wiki", "which is disabled"),
        ("infinito:other", "which does not admit `flowise`"),
        ("infinito:ghost", "names no provider of the scenario"),
    ] {
        let mut extra = good_entry();
        extra.name = name.into();
        let findings = judge_registry(&view(vec![good_entry(), extra]), &desired());
        assert_eq!(kinds(&findings), [FindingKind::RegistryDrift], "{name}");
        assert!(findings[0].sentence().contains(reason), "{name}: {}", findings[0].sentence());
    }
}

#[test]
fn a_credential_in_a_plain_field_or_in_flow_data_fails_naming_it_never_showing_it() {
    let mut e = good_entry();
    e.leaks = vec![Leak { field: "authConfig.token".into(), credential: "native-token".into() }];
    let flow = FlowSeen {
        name: "infinito:native".into(),
        kind: "CHATFLOW".into(),
        leaks: vec![Leak {
            field: "flowData.nodes[0].data.inputs.mcpServerConfig".into(),
            credential: "native-token".into(),
        }],
        ..FlowSeen::default()
    };
    let findings = judge_registry(&RegistryView { entries: vec![e], flows: vec![flow], variables: vec![] }, &desired());
    assert_eq!(kinds(&findings), [FindingKind::SecretInPlain, FindingKind::SecretInPlain]);
    assert!(findings[0].sentence().contains("plain field `authConfig.token`"));
    assert!(findings[1].sentence().contains("chatflow `infinito:native` holds the value of credential `native-token`"));
    assert!(findings.iter().all(|f| !f.sentence().contains("a-credential-value")));
}

#[test]
fn leaks_are_found_in_any_form_inside_json_strings() {
    let r = Redactor::new();
    r.register("native-token", "native-secret-value-1".into());
    let flow = serde_json::json!({"flowData": serde_json::json!({"nodes": [{"data": {"inputs": {"cfg": "{\"headers\":{\"Authorization\":\"Bearer native-secret-value-1\"}}"}}}]}).to_string()});
    let mut leaks = vec![];
    crate::apps::webapp::leaks_in(&flow, "", &r, &mut leaks);
    assert_eq!(
        leaks,
        [Leak {
            field: "flowData.nodes[0].data.inputs.cfg.headers.Authorization".into(),
            credential: "native-token".into()
        }]
    );
}

fn read() -> ReadSpec {
    ReadSpec {
        tool: "echo".into(),
        arguments: serde_json::json!({"text": "hi"}),
        expect: Expectation::TextContains("hi".into()),
    }
}

fn good_run() -> RunSeen {
    RunSeen {
        chatflow: "infinito:native".into(),
        uses: vec!["e1".into()],
        entries: vec!["e1".into()],
        entry_origins: vec!["http://native:8000".into()],
        flow_type: "CHATFLOW".into(),
        via: "POST /api/v1/prediction/f1".into(),
        status: Some(200),
        reply: Some("[{\"type\":\"text\",\"text\":\"hi\"}]".into()),
        used: vec![UsedTool {
            tool: "echo".into(),
            input: "{\"text\":\"hi\"}".into(),
            output: "[{\"type\":\"text\",\"text\":\"hi\"}]".into(),
        }],
        waited_ms: 900,
        error: None,
    }
}

#[rstest]
#[case::passes(|_: &mut RunSeen| {}, None)]
#[case::no_answer(|r: &mut RunSeen| { r.status = None; r.error = Some("no whole answer within 90s".into()); }, Some("got no answer after 900 ms: no whole answer within 90s"))]
#[case::no_entry(|r: &mut RunSeen| r.entries.clear(), Some("Flowise holds no entry `infinito:native`"))]
#[case::other_entry(|r: &mut RunSeen| r.uses = vec!["e9".into()], Some("does not use the entry `infinito:native` (its Custom MCP Server nodes use [e9])"))]
#[case::error(|r: &mut RunSeen| { r.status = Some(500); r.error = Some("answered 500: boom".into()); }, Some("failed: answered 500: boom"))]
#[case::not_run(|r: &mut RunSeen| r.used.clear(), Some("shows no call of `echo`"))]
#[case::not_offered(|r: &mut RunSeen| { r.used.clear(); r.reply = Some("I cannot do that: your message names none of the tools I was offered (none).".into()); }, Some("Flowise did not offer `echo` to the model"))]
#[case::never_returned(|r: &mut RunSeen| r.used[0].output = String::new(), Some("the call of `echo` never returned its result"))]
#[case::model_fabricates(|r: &mut RunSeen| { r.used.clear(); r.reply = Some("hi".into()); }, Some("shows no call of `echo`"))]
#[case::model_never_got_it(|r: &mut RunSeen| r.reply = Some("No result came back.".into()), Some("the model never got the result of `echo` back"))]
fn a_run_passes_only_on_flowise_s_own_record_of_the_call(
    #[case] breaks: fn(&mut RunSeen),
    #[case] reason: Option<&str>,
) {
    let mut run = good_run();
    breaks(&mut run);
    let findings = judge_run("native", "infinito:native", &run, &read(), None);
    match reason {
        None => assert!(findings.is_empty(), "{findings:?}"),
        Some(reason) => {
            assert_eq!(kinds(&findings), [FindingKind::ToolCallFailed]);
            assert!(findings[0].sentence().contains(reason), "{}", findings[0].sentence());
        }
    }
}

#[test]
fn with_a_nonce_only_this_call_s_result_passes() {
    let mut run = good_run();
    run.used[0].output = "[{\"type\":\"text\",\"text\":\"hi cordon-nonce-1\"}]".into();
    run.reply = Some("hi cordon-nonce-1".into());
    assert!(judge_run("native", "infinito:native", &run, &read(), Some("cordon-nonce-1")).is_empty());
    let stale = judge_run("native", "infinito:native", &run, &read(), Some("cordon-nonce-2"));
    assert!(stale[0].sentence().contains("with this call's nonce cordon-nonce-2"), "{stale:?}");
    let mut fabricated = run.clone();
    fabricated.reply = Some("hi".into());
    let findings = judge_run("native", "infinito:native", &fabricated, &read(), Some("cordon-nonce-1"));
    assert!(findings[0].sentence().contains("the model never got the result of `echo` back"), "{findings:?}");
}

fn guarded(status: u16, detail: &str) -> Vec<GuardSeen> {
    crate::apps::flowise::gather::GUARDED
        .iter()
        .map(|u| GuardSeen { url: u.to_string(), status, detail: detail.into() })
        .collect()
}

fn access(keys: Vec<ApiKeySeen>, offered: Vec<&str>) -> AccessView {
    AccessView {
        guard: guarded(400, "Server URL is not allowed by policy"),
        author: Some(AuthorSeen {
            permissions: vec!["chatflows:view".into()],
            list_status: 403,
            listed: vec![],
            load_method_status: 200,
            offered: offered.into_iter().map(str::to_string).collect(),
        }),
        keys,
        managed: vec!["infinito:native".into()],
    }
}

fn key(name: &str, permissions: &[&str]) -> ApiKeySeen {
    ApiKeySeen { name: name.into(), permissions: permissions.iter().map(|p| p.to_string()).collect() }
}

#[test]
fn access_passes_with_the_guard_on_and_no_key_that_sees_the_servers() {
    let keys = vec![key("reconciler", &["tools:view", "tools:create"]), key("reader", &["variables:view"])];
    assert!(judge_access(&access(keys, vec!["infinito:native"]), &desired()).is_empty());
}

#[test]
fn the_guard_off_fails_naming_each_address() {
    let mut v = access(vec![], vec![]);
    v.guard = guarded(200, "Flowise stored it as entry x");
    let findings = judge_access(&v, &desired());
    assert_eq!(findings.len(), 3);
    assert!(findings.iter().all(|f| f.kind == FindingKind::SsrfGuardOff));
    assert!(findings[1].sentence().contains("http://169.254.169.254/mcp"));
}

#[rstest]
#[case::tools(key("ops", &["tools:view"]), vec![], Some("API key `ops` is not an admin key but sees the managed MCP servers: its tools:view opens the custom MCP server routes"))]
#[case::load_method(key("author", &["chatflows:update"]), vec!["infinito:native"], Some("its chatflows:update opens POST /api/v1/node-load-method/customMcpServerTool"))]
#[case::load_method_hides_them(key("author", &["chatflows:update"]), vec![], None)]
#[case::admin_key(key("reconciler", &["tools:create"]), vec!["infinito:native"], None)]
fn a_non_admin_key_that_sees_the_servers_fails(
    #[case] k: ApiKeySeen,
    #[case] offered: Vec<&str>,
    #[case] reason: Option<&str>,
) {
    let findings = judge_access(&access(vec![k], offered), &desired());
    match reason {
        None => assert!(findings.is_empty(), "{findings:?}"),
        Some(reason) => {
            assert_eq!(kinds(&findings), [FindingKind::AccessDrift]);
            assert!(findings[0].sentence().contains(reason), "{}", findings[0].sentence());
        }
    }
}

#[test]
fn an_author_key_that_lists_the_servers_fails() {
    let mut v = access(vec![], vec![]);
    if let Some(a) = v.author.as_mut() {
        a.list_status = 200;
        a.listed = vec!["infinito:native".into()];
    }
    let findings = judge_access(&v, &desired());
    assert_eq!(kinds(&findings), [FindingKind::AccessDrift]);
    assert!(findings[0].sentence().contains("lists the managed MCP servers [infinito:native]"));
}

#[test]
fn a_run_through_an_entry_pointing_elsewhere_proves_nothing_of_the_provider() {
    let mut run = good_run();
    run.entry_origins = vec!["http://native:8000".into()];
    assert_eq!(judge_run_target("native", "infinito:native", "http://native:8000", &run), None);
    run.entry_origins = vec!["http://impostor:8000".into()];
    let f = judge_run_target("native", "infinito:native", "http://native:8000", &run).expect("a finding");
    assert_eq!(f.kind, FindingKind::ToolCallFailed);
    assert!(
        f.sentence().contains("points at http://impostor:8000, not at provider `native`'s http://native:8000: whatever answered the read, it was not this provider"),
        "{}",
        f.sentence()
    );
}

#[test]
fn an_agentflow_is_called_an_agentflow() {
    let mut run = good_run();
    run.flow_type = "AGENTFLOW".into();
    run.uses = vec!["e9".into()];
    let findings = judge_run("native", "infinito:native", &run, &read(), None);
    assert!(
        findings[0].sentence().contains("the managed agentflow `infinito:native` does not use the entry"),
        "{}",
        findings[0].sentence()
    );
}
