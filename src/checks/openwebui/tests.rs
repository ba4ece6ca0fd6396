//! The judges of the `openwebui` family on tables of observations: every class of drift
//! the negative controls produce, and their look-alikes that must pass.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::json;

use super::judge::*;
use super::probes::{Phase, judge_phases};
use super::restart::{RestartSeen, judge_restart};
use crate::config::Expectation;
use crate::model::FindingKind;
use crate::openwebui::observe::*;

fn desired() -> Desired {
    let want = |p: &str| WantedConnection {
        provider: p.into(),
        url: format!("http://{p}:8000/mcp"),
        credential: Some(format!("{p}-token")),
        group: format!("roles/{p}/mcp"),
    };
    Desired {
        connections: vec![want("files"), want("native")],
        forbidden: BTreeMap::from([("wiki".to_string(), "is disabled".to_string())]),
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

fn groups() -> Vec<GroupSeen> {
    ["files", "native", "wiki"]
        .iter()
        .map(|p| GroupSeen { id: format!("g-{p}"), name: format!("roles/{p}/mcp") })
        .collect()
}

fn grant(group: &str) -> GrantSeen {
    GrantSeen { principal_type: "group".into(), principal_id: group.into(), permission: "read".into() }
}

fn conn(p: &str) -> ConnectionSeen {
    ConnectionSeen {
        id: Some(p.into()),
        kind: "mcp".into(),
        url: format!("http://{p}:8000/mcp"),
        path: String::new(),
        auth_type: "bearer".into(),
        key: KeySeen::Credential(format!("{p}-token")),
        enabled: true,
        grants: vec![grant(&format!("g-{p}"))],
    }
}

fn view(connections: Vec<ConnectionSeen>) -> AdminView {
    AdminView { connections, groups: groups(), ..Default::default() }
}

fn good() -> AdminView {
    view(vec![conn("files"), conn("native")])
}

fn messages(findings: &[crate::model::Finding]) -> String {
    findings.iter().map(|f| f.message.clone()).collect::<Vec<_>>().join("\n")
}

#[test]
fn the_declared_connections_pass_in_any_order() {
    assert!(judge_connections(&good(), &desired()).is_empty());
    assert!(judge_connections(&view(vec![conn("native"), conn("files")]), &desired()).is_empty());
}

#[test]
fn every_connection_drift_is_named() {
    type Change = Box<dyn Fn(&mut ConnectionSeen)>;
    let cases: Vec<(&str, Change, &str)> = vec![
        ("url", Box::new(|c| c.url = "http://elsewhere:8000/mcp".into()), "URL http://elsewhere:8000/mcp instead of"),
        ("auth", Box::new(|c| c.auth_type = "none".into()), "auth_type `none` instead of bearer"),
        ("type", Box::new(|c| c.kind = "openapi".into()), "type `openapi` instead of mcp"),
        (
            "foreign key",
            Box::new(|c| c.key = KeySeen::Credential("files-token".into())),
            "holds the key of credential `files-token` (the pair webui->files)",
        ),
        ("unknown key", Box::new(|c| c.key = KeySeen::Unknown), "none of the scenario's credentials"),
        ("no key", Box::new(|c| c.key = KeySeen::None), "holds no key instead of credential `native-token`"),
        ("disabled", Box::new(|c| c.enabled = false), "it is disabled"),
        ("wrong group", Box::new(|c| c.grants = vec![grant("g-files")]), "granted to [group `roles/files/mcp` (read)]"),
        (
            "public",
            Box::new(|c| {
                c.grants = vec![GrantSeen {
                    principal_type: "user".into(),
                    principal_id: "*".into(),
                    permission: "read".into(),
                }]
            }),
            "granted to [every user (read)]",
        ),
        (
            "two grants",
            Box::new(|c| c.grants.push(grant("g-wiki"))),
            "group `roles/wiki/mcp` (read)] instead of exactly",
        ),
        ("no grant", Box::new(|c| c.grants.clear()), "granted to [] instead of exactly group `roles/native/mcp`"),
        ("unknown group", Box::new(|c| c.grants = vec![grant("g-gone")]), "unknown group g-gone"),
    ];
    for (label, change, expected) in cases {
        let mut native = conn("native");
        change(&mut native);
        let findings = judge_connections(&view(vec![conn("files"), native]), &desired());
        assert_eq!(findings.len(), 1, "{label}: {}", messages(&findings));
        assert_eq!(findings[0].kind, FindingKind::ConnectionDrift, "{label}");
        assert!(findings[0].message.contains(expected), "{label}: {}", findings[0].message);
        assert!(findings[0].message.starts_with("connection `native`:"), "{label}");
    }
}

#[test]
fn missing_duplicate_stale_and_unmanaged_connections() {
    let missing = judge_connections(&view(vec![conn("files")]), &desired());
    assert!(messages(&missing).contains("no connection for provider `native`"), "{}", messages(&missing));

    let twice = judge_connections(&view(vec![conn("files"), conn("native"), conn("native")]), &desired());
    assert!(messages(&twice).contains("2 connections carry the id `native`"));

    let stale = judge_connections(&view(vec![conn("files"), conn("native"), conn("wiki")]), &desired());
    assert_eq!(stale.len(), 1);
    assert!(
        stale[0].message.contains("a connection `wiki` exists for provider `wiki`, which is disabled"),
        "{}",
        stale[0].message
    );

    let mut sneaky = conn("native");
    sneaky.id = Some("native-copy".into());
    let unmanaged = judge_connections(&view(vec![conn("files"), conn("native"), sneaky]), &desired());
    assert_eq!(unmanaged[0].kind, FindingKind::UnmanagedConnection);
    assert!(unmanaged[0].message.contains("`native-copy` reaches provider `native`"));

    // Elsewhere: listed in the evidence, not a failure.
    let mut other = conn("native");
    other.id = Some("search".into());
    other.url = "http://search.example:9000/mcp".into();
    let harmless = view(vec![conn("files"), conn("native"), other]);
    assert!(judge_connections(&harmless, &desired()).is_empty());
    assert!(harmless.evidence().iter().any(|l| l.contains("search")));

    // Another spelling of the provider's place (an alias, an address): told by where its
    // name leads from Open WebUI, not by the text.
    for url in ["http://tools-backend:8000/mcp", "http://10.0.1.5:8000/mcp", "http://native.:8000/mcp"] {
        let mut alias = conn("native");
        alias.id = Some("helper".into());
        alias.url = url.into();
        let mut v = view(vec![conn("files"), conn("native"), alias]);
        let to = |service: Option<&str>| Destination {
            addr: "10.0.1.5:8000".parse().unwrap(),
            container: "stack_native_1".into(),
            service: service.map(str::to_string),
            network: "net-native".into(),
        };
        v.destinations = BTreeMap::from([(2, vec![to(Some("native"))])]);
        let found = judge_connections(&v, &desired());
        assert_eq!(found.len(), 1, "{url}: {found:?}");
        assert!(
            found[0].message.contains("`helper` reaches provider `native`")
                && found[0]
                    .message
                    .contains("resolves from Open WebUI to 10.0.1.5:8000 (`stack_native_1` on `net-native`)"),
            "{}",
            found[0].message
        );
        // An address no provider's container owns leads nowhere of the scenario's.
        v.destinations = BTreeMap::from([(2, vec![to(None)])]);
        assert!(judge_connections(&v, &desired()).is_empty(), "{url}");
    }
}

#[test]
fn a_group_that_is_missing_or_ambiguous_is_drift() {
    let mut v = good();
    v.groups.retain(|g| g.name != "roles/native/mcp");
    assert!(messages(&judge_connections(&v, &desired())).contains("group `roles/native/mcp` does not exist"));
    let mut v = good();
    v.groups.push(GroupSeen { id: "g-twin".into(), name: "roles/native/mcp".into() });
    assert!(messages(&judge_connections(&v, &desired())).contains("2 groups are named `roles/native/mcp`"));
}

#[test]
fn a_key_is_compared_never_kept() {
    let r = crate::secret::Redactor::new();
    let credentials =
        BTreeMap::from([("native-token".to_string(), r.register("native-token", "s3cret-native-value".into()))]);
    let raw = json!({"type": "mcp", "url": "http://native:8000/mcp", "path": "", "auth_type": "bearer",
        "key": "s3cret-native-value", "config": {"enable": true, "access_grants": []}, "info": {"id": "native"}});
    let c = ConnectionSeen::from_json(&raw, &credentials);
    assert_eq!(c.key, KeySeen::Credential("native-token".into()));
    assert!(!format!("{c:?} {}", c.describe(&[])).contains("s3cret"));
    let other = ConnectionSeen::from_json(&json!({"key": "something else"}), &credentials);
    assert_eq!(other.key, KeySeen::Unknown);
    assert_eq!(ConnectionSeen::from_json(&json!({"key": ""}), &credentials).key, KeySeen::None);
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
    assert!(extra[0].message.contains("extra [delete], missing []"));
    let subset = judge_reach("native", &specs(200, Some(&["add"]), ""), &allow);
    assert!(subset[0].message.contains("missing [echo]"));
    let gone = judge_reach("native", &specs(404, None, "Tool not found"), &allow);
    assert!(gone[0].message.contains("has no connection `native` it can use (specs answered 404: Tool not found)"));
    let refused = judge_reach("native", &specs(502, None, "Unable to load tools"), &allow);
    assert_eq!(refused[0].kind, FindingKind::SessionFailed);
    assert!(refused[0].message.contains("specs answered 502: Unable to load tools"));
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
    assert!(hidden[0].message.contains("`native` is not usable (not listed, /specs 404)"));
    let leaked =
        judge_view(&user(&["native", "files"], &[("native", 200), ("files", 200)]), &set(&["native"]), "after: ");
    assert_eq!(leaked.len(), 1);
    assert!(
        leaked[0].message.starts_with("after: user u: `files` is usable (listed, /specs 200)"),
        "{}",
        leaked[0].message
    );
    let specs_only = judge_view(&user(&[], &[("files", 200)]), &set(&[]), "");
    assert!(specs_only[0].message.contains("`files` is usable (/specs 200)"));
}

#[test]
fn before_a_removal_only_the_removed_groups_server_matters() {
    let before =
        Phase { when: String::new(), view: user(&["files", "native"], &[]), expected: set(&["files"]), exact: false };
    let after =
        Phase { when: "after: ".into(), view: user(&["files"], &[("files", 200)]), expected: set(&[]), exact: true };
    let findings = judge_phases(&[before.clone(), after]);
    assert_eq!(findings.len(), 1, "{}", messages(&findings));
    assert!(findings[0].message.starts_with("after: user u: `files` is usable"));
    let missing = Phase { view: user(&[], &[]), ..before };
    assert!(messages(&judge_phases(&[missing])).contains("`files` is not usable"));
}

fn chat(reply: Option<&str>, error: Option<&str>) -> ChatSeen {
    ChatSeen {
        user: "u".into(),
        tool: "native_echo".into(),
        reply: reply.map(str::to_string),
        done: reply.is_some(),
        waited_ms: 10,
        error: error.map(str::to_string),
    }
}

#[test]
fn a_tool_call_passes_only_when_the_result_came_back_to_the_model() {
    let text = Expectation::TextContains("cordon-native-read".into());
    assert!(
        judge_tool_call("native", &chat(Some("cordon-model: tool result: cordon-native-read"), None), &text).is_empty()
    );
    let json = Expectation::JsonSubset(json!({"status": "ok", "provider": "files"}));
    let pretty = "cordon-model: tool result: {   \"provider\": \"files\",   \"status\": \"ok\" }";
    assert!(judge_tool_call("files", &chat(Some(pretty), None), &json).is_empty());
    let cases = [
        (
            chat(Some("cordon-model: tool native_echo was not offered (offered: [])"), None),
            "did not offer `native_echo`",
        ),
        (chat(Some("cordon-model: no tool result came back"), None), "never got the result of `native_echo` back"),
        (chat(Some("cordon-model: tool result: something else"), None), "does not meet the read's expectation"),
        (chat(None, Some("the reply was not done within 60s")), "no reply to a chat asking for `native_echo`"),
    ];
    for (seen, expected) in cases {
        let f = judge_tool_call("native", &seen, &text);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].kind, FindingKind::ToolCallFailed);
        assert!(f[0].message.contains(expected), "{}", f[0].message);
    }
    // The tool's output in Open WebUI's own tool block is not the model's reply.
    let not_echoed = chat(Some("cordon-model: ok"), None);
    assert!(!judge_tool_call("native", &not_echoed, &text).is_empty());
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
    assert_eq!(desired.forbidden.get("wiki").map(String::as_str), Some("is disabled"));
    assert_eq!(desired.group_of("native"), Some("roles/native/mcp"));
    assert_eq!(desired.connections[0].credential.as_deref(), Some("files-token"));
}
