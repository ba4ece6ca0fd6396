//! The judges of the `openwebui` family on tables of observations: every class of drift
//! the negative controls produce, and their look-alikes that must pass.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::json;

use super::judge::*;
use super::probes::{Phase, When, judge_phases};
use super::restart::{RestartSeen, judge_restart};
use super::tool_call::{Asked, judge_tool_call};
use crate::apps::clientapp::{nonce, prompt, with_nonce};
use crate::apps::openwebui::chat::{CallSeen, ChatSeen};
use crate::apps::openwebui::observe::*;
use crate::config::Expectation;
use crate::model::FindingKind;

pub(super) fn desired() -> Desired {
    let want = |p: &str| WantedConnection {
        provider: p.into(),
        url: format!("http://{p}:8000/mcp"),
        credential: Some(format!("{p}-token")),
        group: format!("roles/{p}/mcp"),
    };
    Desired {
        connections: vec![want("files"), want("native")],
        forbidden: BTreeMap::from([("wiki".to_string(), Forbidden::Disabled)]),
        provider_urls: ["files", "native", "wiki"]
            .iter()
            .map(|p| (p.to_string(), format!("http://{p}:8000/mcp")))
            .collect(),
        provider_services: ["files", "native", "wiki"].iter().map(|p| (p.to_string(), p.to_string())).collect(),
        credential_owners: BTreeMap::from([
            ("files-token".to_string(), "the pair webui->files".to_string()),
            ("native-token".to_string(), "the pair webui->native".to_string()),
        ]),
    }
}

pub(super) fn groups() -> Vec<GroupSeen> {
    ["files", "native", "wiki"]
        .iter()
        .map(|p| GroupSeen { id: format!("g-{p}"), name: format!("roles/{p}/mcp") })
        .collect()
}

pub(super) fn grant(group: &str) -> GrantSeen {
    GrantSeen { principal_type: "group".into(), principal_id: group.into(), permission: "read".into() }
}

pub(super) fn conn(p: &str) -> ConnectionSeen {
    ConnectionSeen {
        id: Some(p.into()),
        kind: "mcp".into(),
        url: format!("http://{p}:8000/mcp"),
        path: String::new(),
        auth_type: "bearer".into(),
        key: KeySeen::Credential(format!("{p}-token")),
        headers: vec![],
        headers_ignored: None,
        url_userinfo: None,
        url_query: vec![],
        enabled: true,
        grants: vec![grant(&format!("g-{p}"))],
    }
}

pub(super) fn view(connections: Vec<ConnectionSeen>) -> AdminView {
    AdminView { connections, groups: groups(), ..Default::default() }
}

pub(super) fn good() -> AdminView {
    view(vec![conn("files"), conn("native")])
}

pub(super) fn messages(findings: &[crate::model::Finding]) -> String {
    findings.iter().map(|f| f.sentence()).collect::<Vec<_>>().join("\n")
}

#[test]
fn reach_wants_exactly_the_allowlist() {
    let allow = vec!["add".to_string(), "echo".to_string()];
    let specs = |status, tools: Option<&[&str]>, detail: &str| SpecsSeen {
        status,
        tools: tools.map(|t| t.iter().map(|s| s.to_string()).collect()),
        detail: detail.into(),
    };
    assert!(judge_reach("native", &specs(200, Some(&["echo", "add"]), ""), &allow).is_empty());
    let extra = judge_reach("native", &specs(200, Some(&["add", "echo", "delete"]), ""), &allow);
    assert_eq!(extra[0].kind, FindingKind::ToolsMismatch);
    assert!(extra[0].sentence().contains("extra [delete], missing []"));
    let subset = judge_reach("native", &specs(200, Some(&["add"]), ""), &allow);
    assert!(subset[0].sentence().contains("missing [echo]"));
    let gone = judge_reach("native", &specs(404, None, "Tool not found"), &allow);
    assert!(gone[0].sentence().contains("has no connection `native` it can use (specs answered 404: Tool not found)"));
    let refused = judge_reach("native", &specs(502, None, "Unable to load tools"), &allow);
    assert_eq!(refused[0].kind, FindingKind::SessionFailed);
    assert!(refused[0].sentence().contains("specs answered 502: Unable to load tools"));
}

fn user(listed: &[&str], specs: &[(&str, u16)]) -> UserView {
    UserView {
        user: "user u".into(),
        listed: listed.iter().map(|s| s.to_string()).collect(),
        specs: specs.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
    }
}

fn set(ids: &[&str]) -> BTreeSet<String> {
    ids.iter().map(|s| s.to_string()).collect()
}

#[test]
fn a_user_sees_exactly_what_its_groups_grant() {
    assert!(judge_view(&user(&["native"], &[("native", 200), ("files", 404)]), &set(&["native"]), "").is_empty());
    // A 502 is still access: Open WebUI let the user try.
    assert!(judge_view(&user(&["native"], &[("native", 502), ("files", 404)]), &set(&["native"]), "").is_empty());
    let hidden = judge_view(&user(&[], &[("native", 404), ("files", 404)]), &set(&["native"]), "");
    assert!(hidden[0].sentence().contains("`native` is not usable (not listed, /specs 404)"));
    let leaked =
        judge_view(&user(&["native", "files"], &[("native", 200), ("files", 200)]), &set(&["native"]), "after: ");
    assert_eq!(leaked.len(), 1);
    assert!(
        leaked[0].sentence().starts_with("after: user u: `files` is usable (listed, /specs 200)"),
        "{}",
        leaked[0].sentence()
    );
    let specs_only = judge_view(&user(&[], &[("files", 200)]), &set(&[]), "");
    assert!(specs_only[0].sentence().contains("`files` is usable (/specs 200)"));
}

#[test]
fn before_a_removal_only_the_removed_groups_server_matters() {
    let before =
        Phase { when: When::default(), view: user(&["files", "native"], &[]), expected: set(&["files"]), exact: false };
    let when = When::new("after `{group}`, its last group, was removed: ").fact("group", "roles/files/mcp");
    assert_eq!(when.text(), "after `roles/files/mcp`, its last group, was removed: ");
    let after = Phase { when, view: user(&["files"], &[("files", 200)]), expected: set(&[]), exact: true };
    let findings = judge_phases(&[before.clone(), after]);
    assert_eq!(findings.len(), 1, "{}", messages(&findings));
    assert!(
        findings[0]
            .sentence()
            .starts_with("after `roles/files/mcp`, its last group, was removed: user u: `files` is usable"),
        "{}",
        findings[0].sentence()
    );
    assert_eq!(findings[0].facts.get("group").map(String::as_str), Some("roles/files/mcp"));
    let missing = Phase { view: user(&[], &[]), ..before };
    assert!(messages(&judge_phases(&[missing])).contains("`files` is not usable"));
}

fn asked(nonce: Option<&str>, expect: Expectation) -> Asked {
    Asked { function: "native_echo".into(), tool: "echo".into(), nonce: nonce.map(str::to_string), expect }
}

fn specs(status: u16, tools: &[&str]) -> SpecsSeen {
    SpecsSeen {
        status,
        tools: (status == 200).then(|| tools.iter().map(|t| t.to_string()).collect()),
        detail: if status == 200 { String::new() } else { "Unable to load tools".into() },
    }
}

/// A chat as Open WebUI 0.12.4 records a call of `native_echo` whose result echoes `echoed`.
fn called(arguments: &str, result: Option<&str>, reply: &str) -> ChatSeen {
    let mut seen = ChatSeen::new("user u in `roles/native/mcp`", "native_echo");
    seen.offered = Some(specs(200, &["add", "echo"]));
    seen.calls =
        vec![CallSeen { name: "native_echo".into(), arguments: arguments.into(), result: result.map(str::to_string) }];
    seen.reply = Some(reply.into());
    seen.done = true;
    seen
}

#[test]
fn a_tool_call_passes_only_on_open_webuis_record_of_the_call_and_its_result() {
    let n = "cordon-nonce-00aa";
    let text = Expectation::TextContains("cordon-native-read".into());
    let args = r#"{"text":"cordon-native-read cordon-nonce-00aa"}"#;
    let echoed = "cordon-native-read cordon-nonce-00aa";
    assert!(judge_tool_call("native", &called(args, Some(echoed), echoed), &asked(Some(n), text.clone())).is_empty());
    // A read without a nonce argument: the record and the expectation, also as JSON.
    let json = Expectation::JsonSubset(json!({"status": "ok", "provider": "files"}));
    let status = r#"{   "provider": "files",   "status": "ok" }"#;
    let mut files = called("{}", Some(status), &format!("```json {status} ```"));
    files.tool = "files_status".into();
    files.calls[0].name = "files_status".into();
    let files_asked =
        Asked { function: "files_status".into(), tool: "status".into(), nonce: None, expect: json.clone() };
    files.offered = Some(specs(200, &["status"]));
    assert!(judge_tool_call("files", &files, &files_asked).is_empty());

    let mut fabricated = called(args, Some(echoed), echoed);
    fabricated.calls.clear();
    fabricated.reply = Some(format!(
        "<details type=\"tool_calls\" name=\"native_echo\" result=\"{echoed}\"></details> cordon-model: tool result: {echoed}"
    ));
    let mut other_tool = called(args, Some(echoed), echoed);
    other_tool.calls[0].name = "native_add".into();
    let mut not_offered = called(args, None, "");
    not_offered.offered = Some(specs(502, &[]));
    let mut no_access = called(args, None, "");
    no_access.offered = Some(specs(404, &[]));
    let mut tool_missing = called(args, None, "");
    tool_missing.offered = Some(specs(200, &["add"]));
    let mut no_reply = called(args, None, "");
    no_reply.reply = None;
    no_reply.error = Some("the reply was not done within 60s".into());
    let cases: Vec<(&str, ChatSeen, Option<&str>, &str, &str)> = vec![
        (
            "a model that writes the answer itself",
            fabricated,
            Some(n),
            "call",
            "the model never called `native_echo`: Open WebUI recorded no tool call, so nothing ran at the provider",
        ),
        ("another tool", other_tool, Some(n), "call", "Open WebUI recorded calls of [native_add] only"),
        (
            "the nonce dropped from the arguments",
            called(r#"{"text":"cordon-native-read"}"#, Some("cordon-native-read"), "cordon-native-read"),
            Some(n),
            "arguments",
            "with other arguments than asked ({\"text\":\"cordon-native-read\"}): the nonce is not in them",
        ),
        (
            "no result recorded",
            called(args, None, echoed),
            Some(n),
            "result",
            "Open WebUI recorded no result of its call of `native_echo`",
        ),
        (
            "a result not made by this call",
            called(args, Some("cordon-native-read"), echoed),
            Some(n),
            "result",
            "does not carry the nonce sent in its arguments",
        ),
        (
            "a wrong result",
            called(r#"{"text":"x"}"#, Some("something else"), "something else"),
            None,
            "result",
            "the result of `native_echo` that Open WebUI recorded does not meet the read's expectation: \"something else\"",
        ),
        (
            "the model never got it back",
            called(args, Some(echoed), "I did not get the tool's result back."),
            Some(n),
            "reply",
            "the model never got the result of `native_echo` back: its reply was \"I did not get the tool's result back.\"",
        ),
        (
            "not reachable",
            not_offered,
            Some(n),
            "offered",
            "Open WebUI did not offer `native_echo` to the model: for user u in `roles/native/mcp`, /specs answered 502: Unable to load tools",
        ),
        (
            "no access",
            no_access,
            Some(n),
            "offered",
            "did not offer `native_echo` to the model: for user u in `roles/native/mcp`, /specs answered 404",
        ),
        ("a server without the tool", tool_missing, Some(n), "offered", "its tools are [add]"),
        ("no reply", no_reply, Some(n), "reply", "no reply to a chat asking for `native_echo`"),
    ];
    for (label, seen, nonce, step, expected) in cases {
        let f = judge_tool_call("native", &seen, &asked(nonce, text.clone()));
        assert_eq!(f.len(), 1, "{label}");
        assert_eq!(f[0].kind, FindingKind::ToolCallFailed, "{label}");
        assert_eq!(f[0].facts.get("step").map(String::as_str), Some(step), "{label}: {}", f[0].sentence());
        assert!(f[0].sentence().contains(expected), "{label}: {}", f[0].sentence());
    }
    // Without a nonce the reply must meet the expectation itself.
    let vague = called("{}", Some(status), "done!");
    let mut vague_files = vague.clone();
    vague_files.calls[0].name = "files_status".into();
    vague_files.offered = Some(specs(200, &["status"]));
    let f = judge_tool_call("files", &vague_files, &files_asked);
    assert!(f[0].sentence().contains("the model never got the result of `files_status` back"), "{}", f[0].sentence());
}

#[test]
fn the_nonce_goes_into_the_echoed_argument_and_the_prompt_is_plain_language() {
    let args = json!({"text": "cordon-native-read", "n": 1});
    let with = with_nonce(&args, "text", "cordon-nonce-1");
    assert_eq!(with, json!({"text": "cordon-native-read cordon-nonce-1", "n": 1}));
    let p = prompt("native_echo", &with);
    assert!(p.starts_with("Call the tool `native_echo` once, with exactly these arguments: {"), "{p}");
    assert!(p.contains("cordon-nonce-1") && p.contains("quoted verbatim"), "{p}");
    assert!(nonce().starts_with("cordon-nonce-") && nonce() != nonce());
}

fn restart(after: AdminView, views_after: Vec<UserView>) -> RestartSeen {
    let expected = set(&["native"]);
    RestartSeen {
        before: good(),
        drifted: view(vec![conn("native")]),
        drift: vec!["dropped connection `files`".into()],
        after,
        views_before: vec![(user(&["native"], &[("native", 200), ("files", 404)]), expected.clone())],
        views_after: views_after.into_iter().map(|v| (v, expected.clone())).collect(),
    }
}

#[test]
fn a_restart_must_bring_back_the_declared_state() {
    let same_view = user(&["native"], &[("native", 200), ("files", 404)]);
    assert!(judge_restart(&restart(good(), vec![same_view.clone()]), &desired()).is_empty());

    let mut rogue = conn("native");
    rogue.id = Some("cordon-eph-x-rogue".into());
    rogue.url = "http://cordon-rogue.invalid/mcp".into();
    let persisted = restart(view(vec![conn("native"), rogue]), vec![same_view.clone()]);
    let findings = judge_restart(&persisted, &desired());
    assert!(findings.iter().all(|f| f.kind == FindingKind::RestartDrift));
    let text = messages(&findings);
    assert!(text.contains("after the restart: no connection for provider `files`"), "{text}");
    assert!(text.contains("cordon-eph-x-rogue"), "{text}");

    let widened = user(&["native", "files"], &[("native", 200), ("files", 200)]);
    let text = messages(&judge_restart(&restart(good(), vec![widened]), &desired()));
    assert!(text.contains("after the restart: user u: `files` is usable"), "{text}");
    assert!(text.contains("sees [files, native] after the restart, [native] before the drift"), "{text}");

    // What `openwebui::connections` fails, the restart fails too, even when the restart
    // brings it back exactly: an unmanaged connection to a provider's address, a header
    // that replaces the key.
    let mut by_ip = conn("native");
    by_ip.id = Some("helper".into());
    by_ip.url = "http://10.0.1.50:8000/mcp".into();
    by_ip.key = KeySeen::None;
    let mut with_ip = view(vec![conn("files"), conn("native"), by_ip]);
    let mut seen = restart(with_ip.clone(), vec![same_view.clone()]);
    seen.before = with_ip.clone();
    with_ip.destinations = BTreeMap::from([(
        2,
        vec![Destination {
            addr: "10.0.1.50:8000".parse().unwrap(),
            container: "stack_native_1".into(),
            service: Some("native".into()),
            network: "net-native".into(),
        }],
    )]);
    seen.after = with_ip;
    let findings = judge_restart(&seen, &desired());
    assert_eq!(findings.len(), 1, "{}", messages(&findings));
    assert_eq!(findings[0].kind, FindingKind::RestartDrift);
    assert!(
        findings[0].sentence().starts_with("after the restart: unmanaged connection `helper` reaches provider `native` at http://10.0.1.50:8000/mcp, which resolves from Open WebUI to 10.0.1.50:8000"),
        "{}",
        findings[0].sentence()
    );
    assert_eq!(findings[0].facts.get("addr").map(String::as_str), Some("10.0.1.50:8000"));
    let mut replaced = conn("native");
    replaced.headers = vec![HeaderSeen {
        name: "authorization".into(),
        scheme: Some("Bearer".into()),
        value: KeySeen::Credential("files-token".into()),
    }];
    let both = view(vec![conn("files"), replaced]);
    let mut seen = restart(both.clone(), vec![same_view.clone()]);
    seen.before = both;
    let text = messages(&judge_restart(&seen, &desired()));
    assert!(
        text.contains("after the restart: connection `native`: its custom header `authorization` replaces the key"),
        "{text}"
    );

    let mut no_drift = restart(good(), vec![same_view]);
    no_drift.drifted = good();
    let findings = judge_restart(&no_drift, &desired());
    assert_eq!(findings[0].kind, FindingKind::CannotBeJudged);
}

#[test]
fn the_plan_names_every_check_as_the_issue_does() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("t"), "a-credential-value\n").unwrap();
    let scenario = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docker/openwebui/scenario.yaml"),
    )
    .unwrap();
    // The reference scenario with file credentials instead of the stack's environment.
    let scenario = scenario
        .lines()
        .map(|l| match l.split_once("{ env: ") {
            Some((head, _)) if head.trim_end().ends_with(':') => format!("{head}{{ file: t }}"),
            _ => l.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n");
    let path = dir.path().join("scenario.yaml");
    std::fs::write(&path, scenario).unwrap();
    let scenario = crate::config::Scenario::load(&path, &crate::secret::Redactor::new()).unwrap();
    let suite = crate::config::Suite::load(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docker/openwebui/suite.yaml"),
    )
    .unwrap();
    let names: Vec<String> = super::plan(&scenario, &suite).iter().map(|c| c.name().to_string()).collect();
    assert_eq!(
        names,
        [
            "openwebui::connections",
            "openwebui::reach::files",
            "openwebui::reach::native",
            "openwebui::tool_call::files",
            "openwebui::tool_call::native",
            "openwebui::restart_convergence",
            "openwebui::access::one_of_several",
            "openwebui::access::no_group",
            "openwebui::access::wrong_app",
            "openwebui::access::last_group_removed",
            "openwebui::access::last_group_removed::oidc",
        ]
    );
    let desired = Desired::of(&scenario, "webui");
    assert_eq!(desired.connections.len(), 2);
    assert_eq!(desired.forbidden.get("wiki"), Some(&Forbidden::Disabled));
    assert_eq!(desired.group_of("native"), Some("roles/native/mcp"));
    assert_eq!(desired.connections[0].credential.as_deref(), Some("files-token"));
}
