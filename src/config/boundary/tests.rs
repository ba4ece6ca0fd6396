//! The boundary keys: a good scenario resolves them; every mistake is one error at its
//! file, line, column and key.

use rstest::rstest;
use serde_json::json;

use crate::config::{ProviderLimits, Scenario};
use crate::secret::Redactor;

const GOOD: &str = r#"name: boundary
credentials:
  native-token: { file: t }
  native-token-old: { file: t }
  wiki-token: { file: t }
providers:
  native:
    url: http://native:8000/mcp
    credential: native-token
    allowed_consumers: [webui]
    tools: { allowlist: [add, echo] }
    denied_tools: [delete_everything]
    strict_arguments: true
    limits: { request_bytes: 64KiB, response_bytes: 1048576, timeout_seconds: 30, concurrent_requests: 4, page_size: 50, result_items: 100, stream_seconds: 60 }
    retired: [native-token-old]
    specification: specs/tools.json
  wiki:
    url: http://wiki:8000/mcp
    credential: wiki-token
    tools: { allowlist: [] }
clients:
  webui:
    credentials: { native: native-token }
  flowise:
    revoked: { wiki: wiki-token }
"#;

const SPEC: &str = r#"{"add": {"description": "a"}, "echo": {"input_schema": {}}, "drop_all": {"mutating": true}}"#;

fn load(text: &str, spec: &str) -> Result<Scenario, Vec<String>> {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("t"), "a-credential-value\n").unwrap();
    std::fs::create_dir(dir.path().join("specs")).unwrap();
    std::fs::write(dir.path().join("specs/tools.json"), spec).unwrap();
    let path = dir.path().join("scenario.yaml");
    std::fs::write(&path, text).unwrap();
    Scenario::load(&path, &Redactor::new())
        .map_err(|e| e.0.iter().map(|e| format!("{}:{}: {}: {}", e.line, e.column, e.key, e.message)).collect())
}

#[test]
fn every_key_resolves() {
    let s = load(GOOD, SPEC).unwrap();
    let b = &s.provider("native").unwrap().boundary;
    assert_eq!(b.denied_tools, ["delete_everything"]);
    assert!(b.strict_arguments);
    assert_eq!(
        b.limits,
        Some(ProviderLimits {
            request_bytes: Some(65536),
            response_bytes: Some(1048576),
            timeout_seconds: Some(30),
            concurrent_requests: Some(4),
            page_size: Some(50),
            result_items: Some(100),
            stream_seconds: Some(60),
        })
    );
    assert_eq!(b.retired, ["native-token-old"]);
    let spec = b.specification.as_ref().unwrap();
    assert!(spec.file.ends_with("specs/tools.json"), "{:?}", spec.file);
    let names: Vec<(&str, bool)> = spec.tools.iter().map(|t| (t.name.as_str(), t.mutating)).collect();
    assert_eq!(names, [("add", false), ("drop_all", true), ("echo", false)]);
    let flowise = s.clients.iter().find(|c| c.id == "flowise").unwrap();
    assert_eq!(flowise.revoked["wiki"], "wiki-token");
    // Absent keys: nothing to enforce, and nothing invented.
    assert_eq!(s.provider("wiki").unwrap().boundary, Default::default());
}

#[test]
fn limits_are_each_optional_and_a_tools_list_result_is_a_specification() {
    let text = GOOD.replace(
        "limits: { request_bytes: 64KiB, response_bytes: 1048576, timeout_seconds: 30, concurrent_requests: 4, page_size: 50, result_items: 100, stream_seconds: 60 }",
        "limits: { page_size: 2 }",
    );
    let spec = json!({"tools": [{"name": "add"}, {"name": "echo"}, {"name": "x", "mutating": true}]}).to_string();
    let s = load(&text, &spec).unwrap();
    let b = &s.provider("native").unwrap().boundary;
    assert_eq!(b.limits, Some(ProviderLimits { page_size: Some(2), ..Default::default() }));
    assert_eq!(b.specification.as_ref().unwrap().tools.len(), 3);
}

#[rstest]
#[case::unknown_limit(
    "page_size: 50",
    "page_sise: 50",
    "14:",
    "providers.native.limits.page_sise: unknown field `page_sise`"
)]
#[case::zero_page_size(
    "page_size: 50",
    "page_size: 0",
    "14:",
    "providers.native.limits.page_size: expected a whole number from 1 to 100000, got 0"
)]
#[case::quoted_timeout(
    "timeout_seconds: 30",
    "timeout_seconds: \"30\"",
    "14:",
    "providers.native.limits.timeout_seconds: expected a whole number from 1 to 3600, got the text `30`"
)]
#[case::request_too_big(
    "request_bytes: 64KiB",
    "request_bytes: 1GiB",
    "14:",
    "providers.native.limits.request_bytes: 1073741824 bytes is out of range: from 1 to 67108864"
)]
#[case::zero_response(
    "response_bytes: 1048576",
    "response_bytes: 0",
    "14:",
    "providers.native.limits.response_bytes: 0 bytes is out of range"
)]
#[case::parallel_too_many(
    "concurrent_requests: 4",
    "concurrent_requests: 1000",
    "14:",
    "providers.native.limits.concurrent_requests: expected a whole number from 1 to 64"
)]
#[case::empty_limits(
    "limits: { request_bytes: 64KiB, response_bytes: 1048576, timeout_seconds: 30, concurrent_requests: 4, page_size: 50, result_items: 100, stream_seconds: 60 }",
    "limits: {}",
    "14:13:",
    "providers.native.limits: names no limit"
)]
#[case::denied_and_allowed(
    "denied_tools: [delete_everything]",
    "denied_tools: [delete_everything, echo]",
    "12:",
    "providers.native.denied_tools[1]: `echo` is in `tools.allowlist` too"
)]
#[case::denied_twice(
    "denied_tools: [delete_everything]",
    "denied_tools: [delete_everything, delete_everything]",
    "12:",
    "providers.native.denied_tools[1]: `delete_everything` is listed twice"
)]
#[case::quoted_strict(
    "strict_arguments: true",
    "strict_arguments: \"yes\"",
    "13:",
    "providers.native.strict_arguments: expected a boolean, got the text `yes`"
)]
#[case::retired_dangling(
    "retired: [native-token-old]",
    "retired: [native-token-older]",
    "15:15:",
    "providers.native.retired[0]: credential `native-token-older` is not defined under `credentials` (defined: native-token, native-token-old, wiki-token)"
)]
#[case::retired_current(
    "retired: [native-token-old]",
    "retired: [native-token]",
    "15:",
    "providers.native.retired[0]: `native-token` is the provider's current credential"
)]
#[case::retired_still_held(
    "credentials: { native: native-token }",
    "credentials: { native: native-token-old }",
    "23:",
    "clients.webui.credentials.native: `native-token-old` is retired for provider `native`"
)]
#[case::spec_missing(
    "specification: specs/tools.json",
    "specification: specs/nope.json",
    "16:",
    "providers.native.specification: cannot read the specification `"
)]
#[case::revoked_unknown_provider(
    "revoked: { wiki: wiki-token }",
    "revoked: { wik: wiki-token }",
    "25:",
    "clients.flowise.revoked.wik: `wik` is not a provider of this scenario (providers: native, wiki)"
)]
#[case::revoked_dangling(
    "revoked: { wiki: wiki-token }",
    "revoked: { wiki: wiki-tok }",
    "25:",
    "clients.flowise.revoked.wiki: credential `wiki-tok` is not defined"
)]
fn mistakes_point_at_the_key(#[case] from: &str, #[case] to: &str, #[case] at: &str, #[case] expected: &str) {
    assert!(GOOD.contains(from), "test setup: {from:?} not in the scenario");
    let errors = load(&GOOD.replacen(from, to, 1), SPEC).unwrap_err();
    let hit = errors.iter().find(|e| e.contains(expected));
    assert!(hit.is_some_and(|h| h.starts_with(at)), "no error at {at} containing {expected:?} in {errors:#?}");
}

#[test]
fn a_removed_consumer_is_one_the_provider_no_longer_admits() {
    let text = GOOD.replace("allowed_consumers: [webui]", "allowed_consumers: [webui, flowise]");
    let errors = load(&text.replace("revoked: { wiki: wiki-token }", "revoked: { native: native-token-old }"), SPEC)
        .unwrap_err();
    assert!(
        errors.iter().any(|e| e.contains(
            "clients.flowise.revoked.native: provider `native` still admits this client (`allowed_consumers`)"
        )),
        "{errors:#?}"
    );
    // A disabled provider admits nobody: the consumers it lists are its former ones.
    let disabled = GOOD.replace(
        "    tools: { allowlist: [] }\n",
        "    tools: { allowlist: [] }\n    disabled: true\n    allowed_consumers: [flowise]\n",
    );
    assert!(load(&disabled, SPEC).is_ok(), "{:?}", load(&disabled, SPEC).err());
    let held = GOOD.replace(
        "revoked: { wiki: wiki-token }",
        "credentials: { wiki: wiki-token }\n    revoked: { wiki: wiki-token }",
    );
    let errors = load(&held, SPEC).unwrap_err();
    assert!(
        errors
            .iter()
            .any(|e| e.contains("clients.flowise.revoked.wiki: the client still holds `wiki-token` for `wiki`")),
        "{errors:#?}"
    );
}

#[rstest]
#[case::not_json("{add", "is not JSON")]
#[case::a_list("[1, 2]", "is not a tool specification")]
#[case::tool_not_object(r#"{"add": 1, "echo": {}}"#, "`add` is not")]
#[case::mutating_text(r#"{"add": {"mutating": "yes"}, "echo": {}}"#, "marks a tool `mutating: \"yes\"`")]
#[case::nameless_in_list(r#"{"tools": [{"name": "add"}, {"description": "x"}]}"#, "has a tool without a name")]
#[case::lacks_allowlisted(r#"{"add": {}}"#, "does not define the allowlisted tool(s) echo")]
fn bad_specifications_name_the_file(#[case] spec: &str, #[case] expected: &str) {
    let errors = load(GOOD, spec).unwrap_err();
    let hit = errors.iter().find(|e| e.contains("providers.native.specification: ") && e.contains(expected));
    assert!(hit.is_some_and(|h| h.starts_with("16:")), "{errors:#?}");
}
