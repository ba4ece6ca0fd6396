//! The connections' judgement on tables: every class of drift the negative controls
//! produce (the key, the headers Open WebUI sends, URLs, grants, unmanaged connections by
//! URL, by address and by the credential they send), and the look-alikes that must pass
//! (a connection saved through the admin UI, the declared bearer in a custom header).

use std::collections::BTreeMap;

use serde_json::json;

use super::connections::judge_connections;
use super::tests::{conn, desired, good, grant, messages, view};
use crate::apps::openwebui::observe::*;
use crate::model::FindingKind;

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
        assert!(findings[0].sentence().contains(expected), "{label}: {}", findings[0].sentence());
        assert!(findings[0].sentence().starts_with("connection `native`:"), "{label}");
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
        stale[0].sentence().contains("a connection `wiki` exists for provider `wiki`, which is disabled"),
        "{}",
        stale[0].sentence()
    );

    let mut sneaky = conn("native");
    sneaky.id = Some("native-copy".into());
    let unmanaged = judge_connections(&view(vec![conn("files"), conn("native"), sneaky]), &desired());
    assert_eq!(unmanaged[0].kind, FindingKind::UnmanagedConnection);
    assert!(unmanaged[0].sentence().contains("`native-copy` reaches provider `native`"));

    // Elsewhere, with no credential of the scenario: listed in the evidence, not a failure.
    let mut other = conn("native");
    other.id = Some("search".into());
    other.url = "http://search.example:9000/mcp".into();
    other.key = KeySeen::Unknown;
    let harmless = view(vec![conn("files"), conn("native"), other]);
    assert!(judge_connections(&harmless, &desired()).is_empty());
    assert!(harmless.evidence().iter().any(|l| l.contains("search")));

    // Another spelling of the provider's place (an alias, an address): told by where its
    // name leads from Open WebUI, not by the text.
    for url in ["http://tools-backend:8000/mcp", "http://10.0.1.5:8000/mcp", "http://native.:8000/mcp"] {
        let mut alias = conn("native");
        alias.id = Some("helper".into());
        alias.url = url.into();
        alias.key = KeySeen::None;
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
            found[0].sentence().contains("`helper` reaches provider `native`")
                && found[0]
                    .sentence()
                    .contains("resolves from Open WebUI to 10.0.1.5:8000 (`stack_native_1` on `net-native`)"),
            "{}",
            found[0].sentence()
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

fn header(name: &str, scheme: Option<&str>, value: KeySeen) -> HeaderSeen {
    HeaderSeen { name: name.into(), scheme: scheme.map(str::to_string), value }
}

fn files_key() -> KeySeen {
    KeySeen::Credential("files-token".into())
}

fn native_key() -> KeySeen {
    KeySeen::Credential("native-token".into())
}

/// What Open WebUI sends, not the key field alone: a custom header that replaces the key
/// (any spelling of `authorization`), and any other header carrying a credential.
#[test]
fn the_headers_open_webui_sends_are_judged_not_only_the_key() {
    let cases: Vec<(&str, Vec<HeaderSeen>, &str, &str)> = vec![
        (
            "another pair's bearer replaces the key",
            vec![header("authorization", Some("Bearer"), files_key())],
            "its custom header `authorization` replaces the key: Open WebUI sends credential `files-token` (the pair webui->files) as Bearer instead of credential `native-token`",
            "authorization",
        ),
        (
            "upper case",
            vec![header("AUTHORIZATION", Some("Bearer"), KeySeen::Unknown)],
            "its custom header `AUTHORIZATION` replaces the key: Open WebUI sends a value that is none of the scenario's credentials",
            "AUTHORIZATION",
        ),
        (
            "an empty Authorization",
            vec![header("Authorization", None, KeySeen::None)],
            "Open WebUI sends an empty Authorization",
            "Authorization",
        ),
        (
            "the right credential, not as a bearer",
            vec![header("Authorization", Some("Basic"), native_key())],
            "sends credential `native-token` (the pair webui->native) as Basic",
            "Authorization",
        ),
        (
            "another pair's key in X-Api-Key",
            vec![header("X-Api-Key", None, files_key())],
            "its custom header `X-Api-Key` sends credential `files-token` (the pair webui->files)",
            "X-Api-Key",
        ),
        (
            "an undeclared credential",
            vec![header("x-auth-token", None, KeySeen::Unknown)],
            "its custom header `x-auth-token` sends a value that is none of the scenario's credentials",
            "x-auth-token",
        ),
        (
            "another pair's key in a header with a harmless name",
            vec![header("X-Tenant", None, files_key())],
            "its custom header `X-Tenant` sends credential `files-token`",
            "X-Tenant",
        ),
    ];
    for (label, headers, expected, name) in cases {
        let mut native = conn("native");
        native.headers = headers;
        let findings = judge_connections(&view(vec![conn("files"), native]), &desired());
        assert_eq!(findings.len(), 1, "{label}: {}", messages(&findings));
        let f = &findings[0];
        assert_eq!(f.kind, FindingKind::ConnectionDrift, "{label}");
        assert!(
            f.sentence().starts_with("connection `native`: ") && f.sentence().contains(expected),
            "{label}: {}",
            f.sentence()
        );
        assert_eq!(f.facts.get("header").map(String::as_str), Some(name), "{label}");
        assert_eq!(f.facts.get("connection").map(String::as_str), Some("native"), "{label}");
    }
}

#[test]
fn the_declared_bearer_may_come_from_a_header_and_harmless_headers_pass() {
    type Change = Box<dyn Fn(&mut ConnectionSeen)>;
    let passes: Vec<(&str, Change)> = vec![
        ("a harmless header", Box::new(|c| c.headers = vec![header("X-Trace", None, KeySeen::Unknown)])),
        (
            "its own credential again in X-Api-Key",
            Box::new(|c| c.headers = vec![header("X-Api-Key", None, native_key())]),
        ),
        (
            "the declared bearer through a custom header, key empty, auth none",
            Box::new(|c| {
                c.auth_type = "none".into();
                c.key = KeySeen::None;
                c.headers = vec![header("Authorization", Some("Bearer"), native_key())];
            }),
        ),
        (
            "the declared bearer through a custom header, same key",
            Box::new(|c| c.headers = vec![header("authorization", Some("bearer"), native_key())]),
        ),
        ("headers Open WebUI ignores", Box::new(|c| c.headers_ignored = Some("`headers` is a string".into()))),
    ];
    for (label, change) in passes {
        let mut native = conn("native");
        change(&mut native);
        let findings = judge_connections(&view(vec![conn("files"), native]), &desired());
        assert!(findings.is_empty(), "{label}: {}", messages(&findings));
    }
    // Replaced but still held: another pair's secret has no place in the key field.
    let mut native = conn("native");
    native.key = files_key();
    native.headers = vec![header("Authorization", Some("Bearer"), native_key())];
    let text = messages(&judge_connections(&view(vec![conn("files"), native]), &desired()));
    assert!(
        text.contains("it holds the key of credential `files-token` (the pair webui->files), not the one declared for this pair (not sent: custom header `Authorization` replaces it)"),
        "{text}"
    );
    // auth none and nothing in the headers: no bearer at all.
    let mut native = conn("native");
    native.auth_type = "none".into();
    let text = messages(&judge_connections(&view(vec![conn("files"), native]), &desired()));
    assert!(text.contains("auth_type `none` instead of bearer (Open WebUI sends no bearer)"), "{text}");
    let mut native = conn("native");
    native.auth_type = "session".into();
    let text = messages(&judge_connections(&view(vec![conn("files"), native]), &desired()));
    assert!(text.contains("sends each user's own token"), "{text}");
}

/// Open WebUI's admin UI saves `path: "openapi.json"` for every type; an MCP connection
/// ignores it.
#[test]
fn a_connection_saved_through_the_admin_ui_passes() {
    let mut native = conn("native");
    native.path = "openapi.json".into();
    let v = view(vec![conn("files"), native.clone()]);
    assert!(judge_connections(&v, &desired()).is_empty(), "{}", messages(&judge_connections(&v, &desired())));
    assert!(
        native
            .describe(&[])
            .contains("at http://native:8000/mcp (path `openapi.json`, which Open WebUI ignores for MCP)"),
        "{}",
        native.describe(&[])
    );
    // An OpenAPI server does use it.
    let mut openapi = native;
    openapi.kind = "openapi".into();
    assert_eq!(openapi.target_url(), "http://native:8000/mcp/openapi.json");
    let raw = json!({"type": "mcp", "url": "http://native:8000/mcp", "spec_type": "url", "spec": "",
        "path": "openapi.json", "key": "", "config": {"enable": true, "function_name_filter_list": "",
        "access_grants": []}, "info": {"id": "native", "name": "native", "description": ""}});
    let seen = ConnectionSeen::from_json(&raw, &BTreeMap::new());
    assert_eq!((seen.auth_type.as_str(), seen.target_url().as_str()), ("bearer", "http://native:8000/mcp"));
}

/// An unmanaged connection that sends a scenario credential leaks it, wherever it goes.
#[test]
fn an_unmanaged_connection_that_sends_a_credential_elsewhere_fails() {
    let mut leak = conn("native");
    leak.id = Some("search".into());
    leak.url = "http://search.example:9000/mcp".into();
    let findings = judge_connections(&view(vec![conn("files"), conn("native"), leak.clone()]), &desired());
    assert_eq!(findings.len(), 1, "{}", messages(&findings));
    assert_eq!(findings[0].kind, FindingKind::UnmanagedConnection);
    assert!(
        findings[0].sentence().contains(
            "unmanaged connection `search` sends the key of credential `native-token` (the pair webui->native) to http://search.example:9000/mcp, which is no provider of the scenario"
        ),
        "{}",
        findings[0].sentence()
    );
    assert_eq!(findings[0].facts.get("credential").map(String::as_str), Some("native-token"));
    leak.key = KeySeen::None;
    leak.headers = vec![header("X-Api-Key", None, files_key())];
    let text = messages(&judge_connections(&view(vec![conn("files"), conn("native"), leak.clone()]), &desired()));
    assert!(text.contains("sends in header `X-Api-Key` credential `files-token` (the pair webui->files)"), "{text}");
    leak.headers = vec![header("X-Api-Key", None, KeySeen::Unknown)];
    assert!(judge_connections(&view(vec![conn("files"), conn("native"), leak]), &desired()).is_empty());
}

/// The IP address of a provider's container is that provider, whatever the URL's text.
#[test]
fn an_unmanaged_connection_by_address_names_the_host_and_address() {
    let mut by_ip = conn("native");
    by_ip.id = Some("helper".into());
    by_ip.url = "http://10.0.1.50:8000/mcp".into();
    by_ip.key = KeySeen::None;
    let mut v = view(vec![conn("files"), conn("native"), by_ip]);
    v.destinations = BTreeMap::from([(
        2,
        vec![Destination {
            addr: "10.0.1.50:8000".parse().unwrap(),
            container: "stack_native_1".into(),
            service: Some("native".into()),
            network: "net-native".into(),
        }],
    )]);
    let f = judge_connections(&v, &desired());
    assert_eq!(f.len(), 1, "{}", messages(&f));
    assert!(
        f[0].sentence().contains(
            "unmanaged connection `helper` reaches provider `native` at http://10.0.1.50:8000/mcp, which resolves from Open WebUI to 10.0.1.50:8000 (`stack_native_1` on `net-native`)"
        ),
        "{}",
        f[0].sentence()
    );
    assert_eq!(f[0].facts.get("host").map(String::as_str), Some("10.0.1.50"));
    assert_eq!(f[0].facts.get("addr").map(String::as_str), Some("10.0.1.50:8000"));
}

/// Credentials in the URL: userinfo (sent as Basic, replacing the key) and a query
/// parameter (in every log the URL reaches), for a managed and an unmanaged connection.
#[test]
fn credentials_in_the_url_fail_naming_where_they_are() {
    let r = crate::secret::Redactor::new();
    let credentials = BTreeMap::from([
        ("files-token".to_string(), r.register("files-token", "filesSecretValue0123".into())),
        ("native-token".to_string(), r.register("native-token", "nativeSecretValue0123".into())),
    ]);
    let raw = |url: &str, id: &str| {
        json!({"type": "mcp", "url": url, "path": "", "auth_type": "bearer", "key": "nativeSecretValue0123",
            "config": {"enable": true, "access_grants": [{"principal_type": "group", "principal_id": "g-native", "permission": "read"}]},
            "info": {"id": id}})
    };
    let with_userinfo =
        ConnectionSeen::from_json(&raw("http://x:filesSecretValue0123@native:8000/mcp", "native"), &credentials);
    assert_eq!(with_userinfo.url, "http://native:8000/mcp", "the observation keeps no credential");
    let text = messages(&judge_connections(&view(vec![conn("files"), with_userinfo.clone()]), &desired()));
    assert!(
        text.contains("connection `native`: its URL carries userinfo, which Open WebUI's HTTP client sends as Basic in place of the key: credential `files-token` (the pair webui->files)"),
        "{text}"
    );
    assert!(!format!("{with_userinfo:?} {}", with_userinfo.describe(&[])).contains("SecretValue"));
    let with_query = ConnectionSeen::from_json(
        &raw("http://native:8000/mcp?access_token=nativeSecretValue0123", "native"),
        &credentials,
    );
    let text = messages(&judge_connections(&view(vec![conn("files"), with_query]), &desired()));
    assert!(
        text.contains("its URL carries credential `native-token` (the pair webui->native) in the query parameter `access_token` (credentials go in headers only)"),
        "{text}"
    );
    let mut elsewhere =
        ConnectionSeen::from_json(&raw("http://search.example/mcp?token=filesSecretValue0123", "search"), &credentials);
    elsewhere.key = KeySeen::None;
    let text = messages(&judge_connections(&view(vec![conn("files"), conn("native"), elsewhere]), &desired()));
    assert!(
        text.contains("unmanaged connection `search` sends in its URL query `token` credential `files-token` (the pair webui->files)"),
        "{text}"
    );
}
