//! Negative controls against a hostile MCP server (`cordon-fixture hostile --mode M`), in
//! host mode beside a good reference provider (the official Python SDK 1.x): for every
//! mode, each contract check's verdict and reason, the exit code, cordon's wall time and
//! peak RSS, and that no output carries a secret in any form or a raw control character.
//! The `good*`, `big-list` and same-origin redirect modes are correct servers and must
//! pass everything.

mod support;

use std::process::Command;
use std::time::Duration;

use rstest::rstest;
use serde_json::Value;
use support::harness::{ADD_READ, Fixture, ProviderYaml};
use support::hostile::{Gate, Hostile, Measured, run_measured, scan_outputs};
use support::peers::{Peer, Sdk};

/// Random letters: no run of eight characters is shared with anything cordon prints.
const GOOD_TOKEN: &str = "gQ7vN2xK4mW9pL3rT8bYcs";
const BAD_TOKEN: &str = "hZ5bC1yF6jD0sV4nE2uXqa";
/// RSS budget for cordon against any server (issue 9).
const MAX_RSS_KIB: i64 = 100 * 1024;

/// Three runs at a time: the wall-time bounds hold on a loaded two-core machine.
static GATE: Gate = Gate::new(3);

/// Host mode, one attempt per check (deadline 0): every attempt is cut at deadline +
/// exchange limit, so every run ends within 5 s + 1 s.
const SUITE: &str = "mode: host\nfamilies: [contract]\ntimeouts: { connect: 2s, read: 2s, exchange: 5s, deadline: 0s, sse_max_duration: 3s }\nlimits: { max_response_bytes: 4MiB }\nconcurrency: 16\n";
const RUN_BOUND: Duration = Duration::from_secs(5 + 1);

/// The expected verdict of one check, with a fragment its reason must hold.
#[derive(Clone, Copy, Debug)]
enum V {
    P,
    F(&'static str),
    U(&'static str),
}
use V::{F, P, U};

const ASPECTS: [&str; 5] = ["tools", "read", "anonymous", "wrong_bearer", "foreign_bearer"];

/// How the scenario declares the hostile provider.
#[derive(Clone, Copy)]
enum Declared {
    Streamable,
    Legacy,
    /// A legacy server's `/sse` URL declared as `streamable_http`.
    LegacyAsStreamable,
    /// With `mutating: [delete_everything]`.
    WithMutating,
    /// With `denied_tools: [delete_everything]`.
    WithDenied,
}

pub struct Outcome {
    run: Measured,
    report: Value,
    results: std::path::PathBuf,
    _fixture: Fixture,
}

impl Outcome {
    fn check(&self, name: &str) -> (String, String, String) {
        let results = self.report["report"]["results"].as_array().cloned().unwrap_or_default();
        let Some(r) = results.iter().find(|r| r["name"] == name) else {
            panic!("no check {name} in the report\nstdout:\n{}\nstderr:\n{}", self.run.stdout, self.run.stderr)
        };
        let evidence = r["evidence"]
            .as_array()
            .map(|a| a.iter().filter_map(|l| l.as_str()).collect::<Vec<_>>().join("\n"))
            .unwrap_or_default();
        (r["verdict"].as_str().unwrap_or("").into(), r["reason"].as_str().unwrap_or("").into(), evidence)
    }
}

/// Runs cordon against `mode` beside the reference provider, measured.
fn run_mode(mode: &str, declared: Declared, suite: &str) -> Outcome {
    run_with_token(mode, declared, suite, BAD_TOKEN)
}

/// [`run_mode`] with the hostile provider's own bearer (the scenario's credential `bad`).
fn run_with_token(mode: &str, declared: Declared, suite: &str, bad_token: &str) -> Outcome {
    let _pass = GATE.enter();
    let reference = Peer::start(Sdk::V1, "stateful-json", GOOD_TOKEN, None);
    let hostile = Hostile::start(mode, bad_token, GOOD_TOKEN);
    let fixture = Fixture::new();
    let (path, sse) = match declared {
        Declared::Legacy => ("/sse", true),
        Declared::LegacyAsStreamable => ("/sse", false),
        _ => ("/mcp", false),
    };
    let bad_url = hostile.url(path);
    let extra = match declared {
        Declared::WithMutating => format!("      mutating: [delete_everything]\n{ADD_READ}"),
        Declared::WithDenied => format!("    denied_tools: [delete_everything]\n{ADD_READ}"),
        _ => ADD_READ.to_string(),
    };
    fixture.scenario(
        &[("good", GOOD_TOKEN), ("bad", bad_token)],
        &[
            ProviderYaml {
                id: "good",
                url: &reference.url,
                sse: false,
                credential: "good",
                allowlist: &["add", "echo"],
                extra: ADD_READ,
            },
            ProviderYaml {
                id: "bad",
                url: &bad_url,
                sse,
                credential: "bad",
                allowlist: &["add", "echo"],
                extra: &extra,
            },
        ],
    );
    let suite_path = fixture.write("suite.yaml", suite);
    let results = fixture.path("results");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_cordon"));
    cmd.args(["run", "--suite"]).arg(&suite_path).args(["--scenario", "scenario.yaml", "--results"]).arg(&results);
    cmd.current_dir(fixture.dir.path());
    let run = run_measured(cmd, Duration::from_secs(120));
    let report = std::fs::read_to_string(results.join("report.json"))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or(Value::Null);
    Outcome { run, report, results, _fixture: fixture }
}

#[rstest]
// Correct servers: every check passes.
#[case::good("good", Declared::Streamable, [P, P, P, P, P], 0)]
#[case::good_modern("good-modern", Declared::Streamable, [P, P, P, P, P], 0)]
#[case::good_legacy("good-legacy", Declared::Legacy, [P, P, P, P, P], 0)]
#[case::redirect_307_slash("redirect-307-slash", Declared::Streamable, [P, P, P, P, P], 0)]
#[case::redirect_308("redirect-308", Declared::Streamable, [P, P, P, P, P], 0)]
#[case::big_list("big-list", Declared::Streamable, [P, P, P, P, P], 0)]
// Refusal (issue 10 items 1–7).
#[case::any_bearer("any-bearer", Declared::Streamable, [P, P, F("no bearer was not refused"), F("a wrong bearer was not refused"), F("another provider's valid bearer")], 1)]
#[case::foreign_bearer("foreign-bearer", Declared::Streamable, [P, P, P, P, F("another provider's valid bearer")], 1)]
#[case::session_unbound("session-unbound", Declared::Streamable, [P, P, F("the session is not bound to its bearer"), F("the session is not bound to its bearer"), F("the session is not bound to its bearer")], 1)]
#[case::refusal_hands_session("refusal-hands-session", Declared::Streamable, [P, P, F("the id a refusal handed out serves requests"), F("the id a refusal handed out serves requests"), F("the id a refusal handed out serves requests")], 1)]
#[case::plain_jsonrpc_open("plain-jsonrpc-open", Declared::Streamable, [P, P, F("(plain JSON-RPC, no session): answered 200 with a result"), F("(plain JSON-RPC, no session): answered 200 with a result"), F("(plain JSON-RPC, no session): answered 200 with a result")], 1)]
#[case::modern_open("modern-open", Declared::Streamable, [P, P, F("(2026-07-28 headers, no session): answered 200"), F("(2026-07-28 headers, no session): answered 200"), F("(2026-07-28 headers, no session): answered 200")], 1)]
#[case::bare_names_401("bare-names-401", Declared::Streamable, [P, P, F("disclosed tool name(s) add"), F("disclosed tool name(s) add"), F("disclosed tool name(s) add")], 1)]
#[case::gzip_401("gzip-401", Declared::Streamable, [P, P, F("disclosed"), F("disclosed"), F("disclosed")], 1)]
#[case::deflate_401("deflate-401", Declared::Streamable, [P, P, F("disclosed"), F("disclosed"), F("disclosed")], 1)]
#[case::br_401("br-401", Declared::Streamable, [P, P, F("disclosed"), F("disclosed"), F("disclosed")], 1)]
#[case::zstd_401("zstd-401", Declared::Streamable, [P, P, F("a refusal that cannot be read is not proof of one"), F("cannot be read"), F("cannot be read")], 1)]
#[case::sse_late_disclosure("sse-late-disclosure", Declared::Streamable, [P, P, F("disclosed"), F("disclosed"), F("disclosed")], 1)]
#[case::disclosing_503("disclosing-503", Declared::Streamable, [P, P, F("answered 503 and disclosed"), F("answered 503 and disclosed"), F("answered 503 and disclosed")], 1)]
#[case::legacy_as_streamable("legacy-as-streamable", Declared::LegacyAsStreamable, [F("405"), F("405"), F("cannot be judged"), F("cannot be judged"), F("is `transport` right?")], 1)]
#[case::redirect_cross_origin("redirect-cross-origin", Declared::Streamable, [F("redirect"), F("redirect"), F("a redirect is not a refusal"), F("a redirect is not a refusal"), F("a redirect is not a refusal")], 1)]
#[case::redirect_302_login("redirect-302-login", Declared::Streamable, [P, P, F("redirecting to /login"), F("a redirect is not a refusal"), F("a redirect is not a refusal")], 1)]
#[case::html_200("html-200", Declared::Streamable, [P, P, F("HTML page"), F("HTML page"), F("HTML page")], 1)]
#[case::jsonrpc_error_200("jsonrpc-error-200", Declared::Streamable, [P, P, F("refusal: jsonrpc_error"), F("refusal: jsonrpc_error"), F("refusal: jsonrpc_error")], 1)]
#[case::result_in_401("result-in-401", Declared::Streamable, [P, P, F("disclosed"), F("disclosed"), F("disclosed")], 1)]
#[case::sse_get_opens("sse-get-opens", Declared::Streamable, [P, P, F("opened an event stream"), F("opened an event stream"), F("opened an event stream")], 1)]
// Sessions of every era, near-miss and misplaced credentials (issue 14 items 1–3).
#[case::session_unbound_modern("session-unbound-modern", Declared::Streamable, [P, P, F("with the session id of the valid initialize-handshake session): answered 200"), F("the session is not bound to its bearer"), F("the session is not bound to its bearer")], 1)]
#[case::prefix_bearer("prefix-bearer", Declared::Streamable, [P, P, P, F("a near miss of the valid credential (first half kept, new tail) was not refused"), P], 1)]
#[case::appended_bearer("appended-bearer", Declared::Streamable, [P, P, P, F("a near miss of the valid credential (suffix appended) was not refused"), P], 1)]
#[case::truncated_bearer("truncated-bearer", Declared::Streamable, [P, P, P, F("a near miss of the valid credential (cut by one) was not refused"), P], 1)]
#[case::case_insensitive_bearer("case-insensitive-bearer", Declared::Streamable, [P, P, P, F("a near miss of the valid credential (case swapped) was not refused"), P], 1)]
#[case::query_token("query-token", Declared::Streamable, [P, P, F("the valid credential in the URL query parameter `api_key` (no Authorization header) was not refused"), P, P], 1)]
// Tools (issue 10 item 8) and listings.
#[case::eras_differ("eras-differ", Declared::WithMutating, [F("the eras serve different tools: only through initialize [delete_everything]"), P, P, P, P], 1)]
#[case::paged_100k("paged-100k", Declared::Streamable, [F("tool cap"), P, P, P, P], 1)]
#[case::cursor_cycle("cursor-cycle", Declared::Streamable, [F("cursor cycle"), P, P, P, P], 1)]
#[case::endless_pings("endless-pings", Declared::Streamable, [F("duration cap of 3s"), P, P, P, P], 1)]
#[case::huge_body("huge-body", Declared::Streamable, [F("size cap of 4194304 bytes"), P, P, P, P], 1)]
// Outputs (issue 9).
#[case::hostile_names("hostile-names", Declared::Streamable, [F("outside the allowlist"), P, P, P, P], 1)]
#[case::echo_secret("echo-secret", Declared::Streamable, [P, P, P, P, P], 0)]
#[case::not_http("not-http", Declared::Streamable, [F("not HTTP"), F("it sent: SSH-2.0-OpenSSH_9.6 hostile"), F("not HTTP"), F("not HTTP"), F("it sent: SSH-2.0")], 1)]
#[case::gzip_text_plain("gzip-text-plain", Declared::Streamable, [F("not an mcp reply"), P, P, P, P], 1)]
// Hangs (issue 9): each ends at the exchange limit, unreachable.
// With a 0 s deadline a refusal check gets one attempt, which the dripping listing of its
// valid session holds until the run's hard stop.
#[case::drip_json("drip-json", Declared::Streamable, [U(""), P, U("hard stop"), U("hard stop"), U("hard stop")], 3)]
#[case::drip_legacy("drip-legacy", Declared::Legacy, [U(""), U(""), U("hard stop"), U("hard stop"), U("hard stop")], 3)]
#[case::drip_headers("drip-headers", Declared::Streamable, [U(""), U(""), U(""), U(""), U("")], 3)]
#[case::silent("silent", Declared::Streamable, [U(""), U(""), U(""), U(""), U("")], 3)]
// Every body drips, refusals included: a fallback exchange must not start after the deadline.
#[case::drip_all("drip-all", Declared::Streamable, [U(""), U(""), U(""), U(""), U("")], 3)]
fn every_hostile_mode_is_judged_for_its_reason(
    #[case] mode: &str,
    #[case] declared: Declared,
    #[case] expected: [V; 5],
    #[case] exit: i32,
) {
    let out = run_mode(mode, declared, SUITE);
    let run = &out.run;
    let mut problems = Vec::new();
    for aspect in ASPECTS {
        let (verdict, reason, evidence) = out.check(&format!("contract::good::{aspect}"));
        if verdict != "passed" {
            problems.push(format!("contract::good::{aspect} (the reference) is {verdict}: {reason}\n{evidence}"));
        }
    }
    for (aspect, want) in ASPECTS.iter().zip(expected) {
        let name = format!("contract::bad::{aspect}");
        let (verdict, reason, evidence) = out.check(&name);
        eprintln!("OBSERVED {mode} | {name} | {verdict} | {reason}");
        let (want_verdict, fragment) = match want {
            P => ("passed", ""),
            F(f) => ("failed", f),
            U(f) => ("unreachable", f),
        };
        if verdict != want_verdict || !reason.contains(fragment) {
            problems.push(format!(
                "{name}: {verdict} ({reason}), want {want_verdict} with {fragment:?}\nevidence:\n{evidence}"
            ));
        }
    }
    eprintln!(
        "MEASURED {mode} | exit {} | wall {:.2}s | rss {} KiB",
        run.code,
        run.wall.as_secs_f64(),
        run.max_rss_kib
    );
    if run.code != exit {
        problems.push(format!("exit {} (want {exit})", run.code));
    }
    if run.wall > RUN_BOUND {
        problems.push(format!("cordon took {:.1}s, over the bound {RUN_BOUND:?}", run.wall.as_secs_f64()));
    }
    if run.max_rss_kib > MAX_RSS_KIB {
        problems.push(format!("cordon peaked at {} KiB RSS, over {MAX_RSS_KIB} KiB", run.max_rss_kib));
    }
    let console = format!("{}{}", run.stdout, run.stderr);
    let leaks = scan_outputs(&console, &out.results, &[("valid", BAD_TOKEN), ("reference", GOOD_TOKEN)]);
    problems.extend(leaks.into_iter().map(|l| format!("OUTPUT {l}")));
    assert!(
        problems.is_empty(),
        "{mode}:\n{}\n--- stdout:\n{}\n--- stderr:\n{}",
        problems.join("\n"),
        run.stdout,
        run.stderr
    );
}

/// Issue 10, class 6: two correct providers that hold the same secret. Each refuses every
/// bearer but its own, yet the other's valid bearer opens it: both foreign-bearer checks
/// fail, naming the other provider; everything else passes.
#[test]
fn a_secret_shared_by_two_providers_fails_naming_the_other() {
    let out = run_with_token("good", Declared::Streamable, SUITE, GOOD_TOKEN);
    let mut problems = Vec::new();
    for (provider, other) in [("good", "bad"), ("bad", "good")] {
        for aspect in ASPECTS {
            let name = format!("contract::{provider}::{aspect}");
            let (verdict, reason, evidence) = out.check(&name);
            eprintln!("OBSERVED shared-secret | {name} | {verdict} | {reason}");
            let want = if aspect == "foreign_bearer" {
                verdict == "failed" && reason.contains(&format!("provider {other} holds the same secret"))
            } else {
                verdict == "passed"
            };
            if !want {
                problems.push(format!("{name}: {verdict} ({reason})\n{evidence}"));
            }
        }
    }
    if out.run.code != 1 {
        problems.push(format!("exit {} (want 1)", out.run.code));
    }
    let console = format!("{}{}", out.run.stdout, out.run.stderr);
    problems.extend(
        scan_outputs(&console, &out.results, &[("shared", GOOD_TOKEN)]).into_iter().map(|l| format!("OUTPUT {l}")),
    );
    assert!(problems.is_empty(), "{}\n--- stdout:\n{}", problems.join("\n"), out.run.stdout);
}

/// The run's deadline: with a provider that never answers (or drips forever) and a 15 s
/// deadline, the run ends by deadline + one exchange limit + 1 s, those checks unreachable.
#[rstest]
#[case::silent("silent", &ASPECTS)]
#[case::drip_headers("drip-headers", &ASPECTS)]
// Only the listing drips: the other checks get their answers within the deadline.
#[case::drip_json("drip-json", &["tools"])]
fn a_provider_that_never_answers_ends_the_run_by_the_deadline(#[case] mode: &str, #[case] stuck: &[&str]) {
    let suite = "mode: host\nfamilies: [contract]\ntimeouts: { connect: 2s, read: 2s, exchange: 5s, deadline: 15s, retry_interval: 500ms, sse_max_duration: 3s }\n";
    let out = run_mode(mode, Declared::Streamable, suite);
    let bound = Duration::from_secs(15 + 5 + 1);
    eprintln!(
        "MEASURED deadline {mode} | exit {} | wall {:.2}s | rss {} KiB",
        out.run.code,
        out.run.wall.as_secs_f64(),
        out.run.max_rss_kib
    );
    for aspect in ASPECTS {
        let (verdict, reason, _) = out.check(&format!("contract::bad::{aspect}"));
        eprintln!("OBSERVED deadline {mode} | contract::bad::{aspect} | {verdict} | {reason}");
        if stuck.contains(&aspect) {
            assert_eq!(verdict, "unreachable", "{aspect}: {reason}");
            assert!(reason.contains("15s deadline"), "{aspect}: {reason}");
        } else {
            assert_eq!(verdict, "passed", "{aspect}: {reason}");
        }
    }
    assert_eq!(out.run.code, 3, "{}", out.run.stdout);
    assert!(out.run.wall <= bound, "took {:?}, over {bound:?}", out.run.wall);
    assert!(out.run.wall >= Duration::from_secs(15), "retried until the deadline, took {:?}", out.run.wall);
}

/// Issue 14 item 5: with a 0 s deadline and the default exchange limit (15 s), a server
/// that drips every body (its refusals and the `server/discover` reply included, so the
/// fallback to `initialize` comes after the deadline) or a legacy server that drips every
/// message POST holds the run no longer than the deadline plus one exchange limit plus 1 s.
#[rstest]
#[case::drip_all("drip-all", Declared::Streamable)]
#[case::drip_legacy("drip-legacy", Declared::Legacy)]
fn a_dripping_server_holds_the_run_one_exchange_limit_at_most(#[case] mode: &str, #[case] declared: Declared) {
    let suite = "mode: host\nfamilies: [contract]\ntimeouts: { connect: 2s, deadline: 0s }\n";
    let out = run_mode(mode, declared, suite);
    let bound = Duration::from_secs(15 + 1);
    eprintln!("MEASURED default-limits {mode} | exit {} | wall {:.2}s", out.run.code, out.run.wall.as_secs_f64());
    for aspect in ASPECTS {
        let (verdict, reason, _) = out.check(&format!("contract::bad::{aspect}"));
        assert_eq!(verdict, "unreachable", "{aspect}: {reason}");
    }
    assert_eq!(out.run.code, 3, "{}", out.run.stdout);
    assert!(out.run.wall <= bound, "took {:?}, over the deadline plus one exchange limit plus 1 s", out.run.wall);
}

/// Issue 29 item 6, one clock for the run: two dripping servers, four slots and more
/// checks than slots. The checks that queued behind the first four start with what is
/// left of the run, not an exchange limit of their own: the run still ends by the
/// deadline plus one exchange limit plus 1 s (it took 30 s when the second wave got 15 s).
#[test]
fn checks_queued_behind_dripping_servers_share_the_run_s_hard_stop() {
    let _pass = GATE.enter();
    let first = Hostile::start("drip-all", BAD_TOKEN, GOOD_TOKEN);
    let second = Hostile::start("drip-all", GOOD_TOKEN, BAD_TOKEN);
    let fixture = Fixture::new();
    let (url1, url2) = (first.url("/mcp"), second.url("/mcp"));
    fixture.scenario(
        &[("one", BAD_TOKEN), ("two", GOOD_TOKEN)],
        &[
            ProviderYaml {
                id: "one",
                url: &url1,
                sse: false,
                credential: "one",
                allowlist: &["add", "echo"],
                extra: ADD_READ,
            },
            ProviderYaml {
                id: "two",
                url: &url2,
                sse: false,
                credential: "two",
                allowlist: &["add", "echo"],
                extra: ADD_READ,
            },
        ],
    );
    let suite = fixture.write(
        "suite.yaml",
        "mode: host\nfamilies: [contract]\ntimeouts: { connect: 2s, deadline: 0s }\nconcurrency: 4\n",
    );
    let results = fixture.path("results");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_cordon"));
    cmd.args(["run", "--suite"]).arg(&suite).args(["--scenario", "scenario.yaml", "--results"]).arg(&results);
    cmd.current_dir(fixture.dir.path());
    let run = run_measured(cmd, Duration::from_secs(120));
    let bound = Duration::from_secs(15 + 1);
    eprintln!("MEASURED two drip servers, 4 slots | exit {} | wall {:.2}s", run.code, run.wall.as_secs_f64());
    assert_eq!(run.code, 3, "{}", run.stdout);
    assert!(
        run.wall <= bound,
        "took {:?}, over the deadline plus one exchange limit plus 1 s\n{}",
        run.wall,
        run.stdout
    );
    let report: Value = serde_json::from_str(&std::fs::read_to_string(results.join("report.json")).unwrap()).unwrap();
    let waited = report["report"]["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["reason"].as_str().is_some_and(|t| t.contains("so it did not run")))
        .count();
    assert!(waited > 0, "more checks than slots, yet none waited past the hard stop:\n{}", run.stdout);
}

/// Ctrl-C (issue 25: one `tokio::signal` listener for the whole run): a run held by a
/// dripping server ends at once as interrupted, exit 130, with no panic, and a second
/// Ctrl-C is not needed.
#[test]
fn ctrl_c_ends_a_held_run_as_interrupted() {
    let _pass = GATE.enter();
    let server = Hostile::start("drip-all", BAD_TOKEN, GOOD_TOKEN);
    let fixture = Fixture::new();
    let url = server.url("/mcp");
    fixture.scenario(
        &[("one", BAD_TOKEN)],
        &[ProviderYaml {
            id: "one",
            url: &url,
            sse: false,
            credential: "one",
            allowlist: &["add", "echo"],
            extra: ADD_READ,
        }],
    );
    let suite =
        fixture.write("suite.yaml", "mode: host\nfamilies: [contract]\ntimeouts: { connect: 2s, deadline: 0s }\n");
    let child = Command::new(env!("CARGO_BIN_EXE_cordon"))
        .args(["run", "--suite"])
        .arg(&suite)
        .args(["--scenario", "scenario.yaml", "--results", "results"])
        .current_dir(fixture.dir.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The drip holds every check for its whole exchange limit (15 s): well past this.
    std::thread::sleep(Duration::from_secs(2));
    let pressed = std::time::Instant::now();
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), nix::sys::signal::Signal::SIGINT).unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprintln!("MEASURED Ctrl-C to exit: {:.2}s", pressed.elapsed().as_secs_f64());
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(pressed.elapsed() < Duration::from_secs(5), "Ctrl-C took {:?}", pressed.elapsed());
    assert!(!stderr.contains("panicked"), "{stderr}");
}

/// Issue 15: a gateway that filters only tools/list. `delete_everything` is never listed
/// and the scenario denies it; every way of running it anyway that shows fails
/// `contract::bad::call_allowlist` for its reason, and a correct server passes. An error
/// in the server's own words shows nothing either way (issue 29): refused by policy or
/// run and failed upstream, the check is not judged and says why, never passed or failed
/// on the words.
#[rstest]
#[case::good("good", "passed", "")]
#[case::hidden_tool(
    "hidden-tool",
    "failed",
    "tools/call `delete_everything` answered a result with isError: false (deleted 3 records): the tool ran"
)]
#[case::hidden_tool_error("hidden-tool-error", "skipped", "not judged: a name this provider must not run was answered")]
#[case::good_own_words("good-own-words", "skipped", "(Tool call refused by policy: 'delete_everything' is not on")]
#[case::hidden_tool_odd_result(
    "hidden-tool-odd-result",
    "failed",
    "answered something that is not a refusal: protocol violation: tools/call result is not an object"
)]
#[case::hidden_tool_lies("hidden-tool-lies", "failed", "a call that was refused changed the provider")]
fn a_gateway_that_runs_a_tool_it_does_not_list_fails_call_allowlist(
    #[case] mode: &str,
    #[case] want: &str,
    #[case] reason: &str,
) {
    let out = run_mode(mode, Declared::WithDenied, SUITE);
    let mut problems = Vec::new();
    for aspect in ASPECTS {
        let (verdict, why, evidence) = out.check(&format!("contract::good::{aspect}"));
        if verdict != "passed" {
            problems.push(format!("contract::good::{aspect} (the reference) is {verdict}: {why}\n{evidence}"));
        }
    }
    let (verdict, why, evidence) = out.check("contract::bad::call_allowlist");
    eprintln!("OBSERVED {mode} | contract::bad::call_allowlist | {verdict} | {why}");
    if verdict != want || !why.contains(reason) {
        problems.push(format!("call_allowlist: {verdict} ({why}), want {want} with {reason:?}\nevidence:\n{evidence}"));
    }
    let code = if want == "failed" { 1 } else { 0 };
    if out.run.code != code {
        problems.push(format!("exit {} (want {code})", out.run.code));
    }
    let console = format!("{}{}", out.run.stdout, out.run.stderr);
    problems.extend(
        scan_outputs(&console, &out.results, &[("valid", BAD_TOKEN), ("reference", GOOD_TOKEN)])
            .into_iter()
            .map(|l| format!("OUTPUT {l}")),
    );
    assert!(problems.is_empty(), "{mode}:\n{}\n--- stdout:\n{}", problems.join("\n"), out.run.stdout);
}
