//! Contract checks against real MCP servers (official Python SDK 1.x and 2.x) on loopback,
//! and one negative control per check: each must fail for its stated reason while the
//! unrelated checks stay green.

mod support;

use std::time::{Duration, Instant};

use support::harness::{ADD_READ, Fixture, HOST_SUITE, ProviderYaml};
use support::peers::{Peer, Sdk};

/// Random letters and digits: a token sharing a run of 8 characters with ordinary
/// output (a provider id, a check name) would be redacted out of it.
static GOOD_TOKEN: std::sync::LazyLock<String> = std::sync::LazyLock::new(support::stack::random_token);
static BAD_TOKEN: std::sync::LazyLock<String> = std::sync::LazyLock::new(support::stack::random_token);

/// A scenario with the peer under test (`bad`) beside a good provider, whose valid token
/// serves as the foreign bearer.
fn run_against(
    kind: &str,
    sdk: Sdk,
    allowlist: &[&str],
    extra: &str,
    suite: &str,
) -> (support::harness::Run, Duration) {
    let reference = Peer::start(Sdk::V1, "stateful-json", &GOOD_TOKEN, None);
    let peer = Peer::start(sdk, kind, &BAD_TOKEN, Some(&GOOD_TOKEN));
    let fixture = Fixture::new();
    let bad_url = peer.url.clone();
    let good_url = reference.url.clone();
    fixture.scenario(
        &[("good", &GOOD_TOKEN), ("bad", &BAD_TOKEN)],
        &[
            ProviderYaml {
                id: "good",
                url: &good_url,
                sse: false,
                credential: "good",
                allowlist: &["add", "echo"],
                extra: ADD_READ,
            },
            ProviderYaml { id: "bad", url: &bad_url, sse: false, credential: "bad", allowlist, extra },
        ],
    );
    let started = Instant::now();
    let run = fixture.run(suite, &[]);
    let took = started.elapsed();
    for aspect in ["tools", "read", "anonymous", "wrong_bearer", "foreign_bearer"] {
        run.expect(&format!("contract::good::{aspect}"), "passed", "");
    }
    (run, took)
}

#[test]
fn every_transport_and_era_of_both_sdks_passes() {
    let peers = [
        ("v1-stateful-sse", Sdk::V1, "stateful-sse", "Stateful"),
        ("v1-stateful-json", Sdk::V1, "stateful-json", "Stateful"),
        ("v1-stateless", Sdk::V1, "stateless", "Stateful"),
        ("v1-legacy-sse", Sdk::V1, "legacy-sse", "LegacySse"),
        ("v2-stateful-sse", Sdk::V2, "stateful-sse", "Stateless2026"),
        ("v2-stateless", Sdk::V2, "stateless", "Stateless2026"),
        ("v2-legacy-sse", Sdk::V2, "legacy-sse", "LegacySse"),
    ];
    let tokens: Vec<(String, String)> =
        peers.iter().map(|(id, ..)| (id.to_string(), support::stack::random_token())).collect();
    let running: Vec<(String, Peer)> = peers
        .iter()
        .zip(&tokens)
        .map(|((id, sdk, kind, _), (_, token))| (id.to_string(), Peer::start(*sdk, kind, token, None)))
        .collect();
    let fixture = Fixture::new();
    let token_refs: Vec<(&str, &str)> = tokens.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
    // Every peer refuses a name it does not serve on tools/call (contract::<p>::call_allowlist).
    let extra = format!("    denied_tools: [delete_everything]\n{ADD_READ}");
    let providers: Vec<ProviderYaml> = running
        .iter()
        .map(|(id, peer)| ProviderYaml {
            id,
            url: &peer.url,
            sse: peer.url.ends_with("/sse"),
            credential: id,
            allowlist: &["add", "echo"],
            extra: &extra,
        })
        .collect();
    fixture.scenario(&token_refs, &providers);
    let run = fixture.run(HOST_SUITE, &[]);
    // The SDKs are not the platform's adapters: no strict arguments, no limits declared.
    run.assert_passed_or_skipped(&[("::arguments", "strict_arguments"), ("::limits", "no `limits`")]);
    assert_eq!(run.verdicts().len(), peers.len() * 8);
    for (id, _, _, era) in peers {
        let (_, _, evidence) = run.check(&format!("contract::{id}::tools"));
        assert!(evidence.contains(&format!("era: {era}")), "{id} should speak {era}:\n{evidence}");
    }
}

#[test]
fn a_server_accepting_any_bearer_fails_every_refusal_check() {
    let (run, _) = run_against("any-bearer", Sdk::V1, &["add", "echo"], ADD_READ, HOST_SUITE);
    run.expect("contract::bad::anonymous", "failed", "no bearer was not refused");
    run.expect("contract::bad::wrong_bearer", "failed", "a wrong bearer was not refused");
    run.expect("contract::bad::foreign_bearer", "failed", "another provider's valid bearer");
    run.expect("contract::bad::tools", "passed", "");
    assert_eq!(run.code, 1);
}

#[test]
fn a_server_accepting_a_foreign_bearer_fails_foreign_bearer_only() {
    let (run, _) = run_against("foreign-bearer", Sdk::V1, &["add", "echo"], ADD_READ, HOST_SUITE);
    run.expect("contract::bad::foreign_bearer", "failed", "another provider's valid bearer (");
    run.expect("contract::bad::anonymous", "passed", "");
    run.expect("contract::bad::wrong_bearer", "passed", "");
}

#[test]
fn a_redirect_to_a_login_page_is_not_a_refusal() {
    let (run, _) = run_against("redirect-login", Sdk::V1, &["add", "echo"], ADD_READ, HOST_SUITE);
    run.expect("contract::bad::anonymous", "failed", "redirecting to http://127.0.0.1:");
    run.expect("contract::bad::wrong_bearer", "failed", "a redirect is not a refusal");
    run.expect("contract::bad::tools", "passed", "");
}

#[test]
fn a_200_html_page_is_not_a_refusal() {
    let (run, _) = run_against("html-200", Sdk::V1, &["add", "echo"], ADD_READ, HOST_SUITE);
    run.expect("contract::bad::anonymous", "failed", "HTML page");
    run.expect("contract::bad::tools", "passed", "");
}

#[test]
fn an_extra_mutating_tool_fails_the_tools_contract() {
    let extra = "      mutating: [delete_everything]\n".to_string() + ADD_READ;
    let (run, _) = run_against("extra-tool", Sdk::V1, &["add", "echo"], &extra, HOST_SUITE);
    run.expect("contract::bad::tools", "failed", "serves tool(s) outside the allowlist: delete_everything");
    run.expect("contract::bad::tools", "failed", "mutating tool(s) served");
    run.expect("contract::bad::read", "passed", "");
}

#[test]
fn a_subset_of_the_allowlist_fails_the_tools_contract() {
    let (run, _) = run_against("stateful-json", Sdk::V2, &["add", "echo", "multiply"], ADD_READ, HOST_SUITE);
    run.expect("contract::bad::tools", "failed", "does not serve allowlisted tool(s): multiply");
}

#[test]
fn a_pinned_schema_hash_that_differs_fails() {
    let extra = "      schema_sha256: 0000000000000000000000000000000000000000000000000000000000000000\n".to_string()
        + ADD_READ;
    let (run, _) = run_against("stateful-json", Sdk::V1, &["add", "echo"], &extra, HOST_SUITE);
    run.expect("contract::bad::tools", "failed", "differs from the pinned 0000");
}

#[test]
fn a_read_returning_is_error_fails_the_read_contract() {
    let (run, _) = run_against("read-error", Sdk::V1, &["add", "echo"], ADD_READ, HOST_SUITE);
    run.expect("contract::bad::read", "failed", "returned isError: true");
    run.expect("contract::bad::tools", "passed", "");
}

#[test]
fn a_server_that_never_answers_is_unreachable_within_the_timeout() {
    let suite = HOST_SUITE.replace("read: 5s", "read: 2s");
    let (run, _) = run_against("never-answers", Sdk::V1, &["add", "echo"], ADD_READ, &suite);
    let (verdict, reason, _) = run.check("contract::bad::tools");
    assert_eq!(verdict, "unreachable", "{reason}");
    let results = run.report["report"]["results"].as_array().unwrap().clone();
    let took = results.iter().find(|r| r["name"] == "contract::bad::tools").unwrap()["duration"].as_f64().unwrap();
    assert!(took < 3.0, "a 2 s read timeout must end the check within 3 s, took {took}");
    assert_eq!(run.code, 3, "unreachable is an infrastructure error");
}

#[test]
fn a_gigabyte_body_is_stopped_at_the_size_cap() {
    let (run, took) = run_against("huge-body", Sdk::V1, &["add", "echo"], ADD_READ, HOST_SUITE);
    run.expect("contract::bad::tools", "failed", "1048576");
    assert!(took < Duration::from_secs(20), "took {took:?}");
}

#[test]
fn an_endless_sse_stream_is_stopped_at_the_duration_cap() {
    let suite = HOST_SUITE.replace("sse_max_duration: 5s", "sse_max_duration: 2s");
    let (run, _) = run_against("endless-sse", Sdk::V1, &["add", "echo"], ADD_READ, &suite);
    run.expect("contract::bad::tools", "failed", "2s");
    let results = run.report["report"]["results"].as_array().unwrap().clone();
    let took = results.iter().find(|r| r["name"] == "contract::bad::tools").unwrap()["duration"].as_f64().unwrap();
    assert!(took < 4.0, "a 2 s SSE cap must end the check within 4 s, took {took}");
}

#[test]
fn cycling_cursors_are_detected() {
    let (run, _) = run_against("cursor-cycle", Sdk::V1, &["add", "echo"], ADD_READ, HOST_SUITE);
    run.expect("contract::bad::tools", "failed", "page-");
    run.expect("contract::bad::anonymous", "passed", "");
}

#[test]
fn legitimate_pagination_is_followed() {
    let (run, _) = run_against("paged", Sdk::V1, &["add", "echo"], ADD_READ, HOST_SUITE);
    run.expect("contract::bad::tools", "passed", "");
}

/// `cordon probe URL` with the two bearers in the environment; returns (exit code, stdout).
fn probe(url: &str, bearer: &str, foreign: &str, extra: &[&str], results: &std::path::Path) -> (Option<i32>, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_cordon"))
        .args(["probe", url, "--bearer-env", "PROBE_TOKEN", "--foreign-bearer-env", "PROBE_FOREIGN"])
        .args(["--expect-tools", "add,echo", "--results", results.to_str().unwrap()])
        .args(extra)
        .env("PROBE_TOKEN", bearer)
        .env("PROBE_FOREIGN", foreign)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    (out.status.code(), format!("{stdout}\n{}", String::from_utf8_lossy(&out.stderr)))
}

#[test]
fn probe_checks_one_endpoint_without_a_scenario() {
    let peer = Peer::start(Sdk::V2, "stateless", &GOOD_TOKEN, None);
    let other = Peer::start(Sdk::V1, "foreign-bearer", &BAD_TOKEN, Some(&GOOD_TOKEN));
    let fixture = Fixture::new();
    let results = fixture.path("results");
    let read = ["--read", "add", "--read-args", r#"{"a":2,"b":3}"#, "--expect-text", "5"];
    let (code, output) = probe(&peer.url, &GOOD_TOKEN, &BAD_TOKEN, &read, &results);
    assert_eq!(code, Some(0), "{output}");
    for aspect in ["tools", "read", "anonymous", "wrong_bearer", "foreign_bearer"] {
        assert!(console_line(&output, &format!("contract::probe::{aspect}")).ends_with("... ok"), "{output}");
    }
    assert!(results.join("junit.xml").exists());

    // The same probe against a server that honours the foreign bearer fails exactly there.
    let (code, output) = probe(&other.url, &BAD_TOKEN, &GOOD_TOKEN, &[], &results);
    assert_eq!(code, Some(1), "{output}");
    assert!(console_line(&output, "contract::probe::foreign_bearer").ends_with("... FAILED"), "{output}");
}

#[test]
fn the_baseline_holds_known_failures_and_catches_stale_entries() {
    let known = format!(
        "{HOST_SUITE}known_failures:\n  - {{ check: 'contract::bad::read', finding: {{ kind: read_failed }}, reason: 'upstream bug 41' }}\n"
    );
    let (run, _) = run_against("read-error", Sdk::V1, &["add", "echo"], ADD_READ, &known);
    run.expect("contract::bad::read", "known_failure", "upstream bug 41");
    assert_eq!(run.code, 0, "{}", run.stdout);

    let stale = format!(
        "{HOST_SUITE}known_failures:\n  - {{ check: 'contract::good::read', finding: {{ kind: read_failed }}, reason: 'fixed long ago' }}\n"
    );
    let (run, _) = run_against(
        "stateful-json",
        Sdk::V1,
        &["add", "echo"],
        ADD_READ,
        &stale.replace("contract::good::read", "contract::bad::read"),
    );
    run.expect("contract::bad::read", "stale_baseline", "but it passes");
    assert_eq!(run.code, 1);
}

/// The libtest console line of one check (names are padded to a common width).
fn console_line<'a>(stdout: &'a str, name: &str) -> &'a str {
    stdout
        .lines()
        .find(|l| l.starts_with("test ") && l.split_whitespace().any(|w| w == name))
        .unwrap_or_else(|| panic!("no console line for {name}:\n{stdout}"))
}
