//! The call-allowlist judge on tables of answers: every way a gateway can fake a refusal.

use rstest::rstest;

use super::*;

const UNKNOWN: &str = "cordon_no_such_tool_abcdefghij";

fn result(is_error: bool, text: &str, structured: bool) -> CallAnswer {
    CallAnswer::Result { is_error, text: text.into(), structured, items: 1 }
}

fn rpc(code: i64, message: &str) -> CallAnswer {
    CallAnswer::RpcError { code, message: message.into() }
}

fn sdk_unknown(name: &str) -> CallAnswer {
    result(true, &format!("Unknown tool: {name}"), false)
}

fn session(calls: Vec<(&str, CallAnswer)>, reads: Option<(CallAnswer, CallAnswer)>) -> SessionCalls {
    SessionCalls {
        replica: "native_1".into(),
        bearer: "the provider's credential (native-token)".into(),
        era: Ok("the initialize handshake (2025-06-18)".into()),
        listed_outside: vec![],
        nonces: calls.iter().map(|_| None).collect(),
        calls: calls.into_iter().map(|(n, a)| (n.to_string(), a)).collect(),
        reads,
        upstream_control: None,
    }
}

fn denied() -> Vec<(String, String)> {
    vec![("delete_everything".into(), "in denied_tools".into())]
}

fn reason(a: &Attempt) -> String {
    match a {
        Attempt::Fail { findings, .. } => crate::model::reason_of(findings),
        other => format!("{other:?}"),
    }
}

#[rstest]
#[case::sdk_unknown(sdk_unknown("delete_everything"), "")]
#[case::jsonrpc_error(rpc(-32602, "Tool not found"), "")]
#[case::adapter_403(rpc(-32600, "unknown_tool"), "")]
#[case::http_403(CallAnswer::Http { status: 403, body: "nope".into() }, "")]
#[case::forbidden_words(result(true, "tool delete_everything is forbidden by policy", false), "not judged")]
#[case::policy_in_own_words(
    result(true, "Tool call refused by policy: 'delete_everything' is not on this client's allowlist", false),
    "not judged"
)]
#[case::ran(
    result(false, "deleted 3 rows", false),
    "answered a result with isError: false (deleted 3 rows): the tool ran"
)]
#[case::ran_but_said_error(result(true, "upstream answered 500 while deleting", false), "not judged")]
#[case::error_with_output(result(true, "Unknown tool", true), "structured output is a tool's output")]
#[case::not_a_call_result(
    CallAnswer::Failed(ErrorSeen { text: "protocol violation: tools/call result is not an object: \"ok\"".into(), not_ready: false }),
    "answered something that is not a refusal"
)]
#[case::forwarded_upstream(CallAnswer::Http { status: 502, body: "upstream_error".into() }, "went past the policy")]
#[case::busy(CallAnswer::Http { status: 503, body: "concurrency_limit".into() }, "not ready")]
#[case::rate_limited(CallAnswer::Http { status: 429, body: "slow down".into() }, "not ready")]
fn denied_calls_are_judged(#[case] answer: CallAnswer, #[case] fails_with: &str) {
    let s = session(vec![(UNKNOWN, sdk_unknown(UNKNOWN)), ("delete_everything", answer)], None);
    let a = judge(&denied(), &[s], None, vec![]);
    if fails_with.is_empty() {
        assert!(a.is_pass(), "{a:?}");
    } else if fails_with == "not ready" {
        assert!(matches!(a, Attempt::NotReady { .. }), "a busy provider says nothing yet: {a:?}");
    } else if fails_with == "not judged" {
        // Words are no evidence either way: neither a pass nor a failure.
        let Attempt::Skip { reason } = &a else { panic!("{a:?}") };
        assert!(
            reason.starts_with("not judged: ") && reason.contains("nothing shows whether the tool ran"),
            "{reason}"
        );
        assert!(reason.contains("tools/call delete_everything → a result with isError: true ("), "{reason}");
    } else {
        let r = reason(&a);
        assert!(r.contains(fails_with) && r.contains("`delete_everything`"), "{r}");
        assert!(r.starts_with("native_1, the provider's credential (native-token), the initialize handshake"), "{r}");
    }
}

#[test]
fn a_refusal_worded_like_the_control_counts_whatever_its_words() {
    let odd = |name: &str| result(true, &format!("E42 {name}"), false);
    let s = session(vec![(UNKNOWN, odd(UNKNOWN)), ("delete_everything", odd("delete_everything"))], None);
    assert!(judge(&denied(), &[s], None, vec![]).is_pass());
}

#[test]
fn a_provider_that_runs_a_name_that_cannot_exist_fails() {
    let s =
        session(vec![(UNKNOWN, result(false, "ok", false)), ("delete_everything", rpc(-32602, "unknown tool"))], None);
    assert!(reason(&judge(&denied(), &[s], None, vec![])).contains("to a name that cannot exist: it runs any name"));
}

#[test]
fn a_refusal_that_changed_the_read_fails() {
    let five = result(false, "5", true);
    let changed = result(false, "0", true);
    let calls = vec![(UNKNOWN, sdk_unknown(UNKNOWN)), ("delete_everything", sdk_unknown("delete_everything"))];
    assert!(judge(&denied(), &[session(calls.clone(), Some((five.clone(), five.clone())))], None, vec![]).is_pass());
    let r = reason(&judge(&denied(), &[session(calls, Some((five, changed)))], None, vec![]));
    assert!(r.contains("a call that was refused changed the provider"), "{r}");
}

/// The probe asks the read again until it serves a result before the calls and while it
/// differs after them, so what reaches the judge lasted: an error that turned into a
/// result (a denied call created what the read reads) fails as a result that turned into
/// an error (it deleted it) does.
#[test]
fn a_lasting_change_either_way_fails() {
    let five = result(false, "5", true);
    let missing = rpc(-32602, "no such item");
    let calls = vec![(UNKNOWN, sdk_unknown(UNKNOWN)), ("delete_everything", sdk_unknown("delete_everything"))];
    for (before, after) in [(missing.clone(), five.clone()), (five.clone(), missing)] {
        let r = reason(&judge(&denied(), &[session(calls.clone(), Some((before, after)))], None, vec![]));
        assert!(r.contains("a call that was refused changed the provider"), "{r}");
    }
    // A server error before the calls, through every ask (an upstream timing out on a busy
    // host), is no baseline: not a change, and said.
    let a = judge(&denied(), &[session(calls, Some((rpc(-32001, "request_timeout"), five)))], None, vec![]);
    assert!(a.is_pass(), "{a:?}");
    assert!(
        a.evidence().iter().any(|l| l.contains("failed on the server's side") && l.contains("not judged")),
        "{a:?}"
    );
}

#[test]
fn nothing_to_deny_is_skipped_and_names_served_outside_the_allowlist_are_denied() {
    let s = session(vec![(UNKNOWN, sdk_unknown(UNKNOWN))], None);
    assert!(matches!(judge(&[], &[s], None, vec![]), Attempt::Skip { .. }));
    let mut s = session(vec![(UNKNOWN, sdk_unknown(UNKNOWN)), ("hidden", result(false, "ran", false))], None);
    s.listed_outside = vec!["hidden".into()];
    let a = judge(&[], &[s], None, vec![]);
    assert!(reason(&a).contains("tools/call `hidden` answered a result with isError: false"), "{a:?}");
}

#[test]
fn no_session_waits_or_cannot_be_judged() {
    let mut s = session(vec![], None);
    s.era = Err(ErrorSeen { text: "cannot connect".into(), not_ready: true });
    assert!(matches!(judge(&denied(), &[s.clone()], None, vec![]), Attempt::NotReady { .. }));
    s.era = Err(ErrorSeen { text: "405".into(), not_ready: false });
    assert!(reason(&judge(&denied(), &[s], None, vec![])).contains("cannot be judged"));
}

#[test]
fn the_scenario_names_every_denied_name_once() {
    let mut p = crate::checks::kit::testing::provider_for_tests("p", &["get"]);
    p.tools.mutating = vec!["drop".into()];
    p.boundary.denied_tools = vec!["drop".into(), "wipe".into()];
    p.boundary.specification = Some(crate::config::Specification {
        file: "tools.json".into(),
        tools: ["get", "list", "wipe"]
            .iter()
            .map(|n| crate::config::SpecifiedTool {
                name: n.to_string(),
                mutating: false,
                input_schema: None,
                path: None,
            })
            .collect(),
    });
    let names: Vec<String> = denied_names(&p).into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["drop", "wipe", "list"]);
    p.tools.mutating_enabled = true;
    p.boundary.denied_tools.clear();
    let names: Vec<String> = denied_names(&p).into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["get", "list", "wipe"][1..]);
}

/// An error in the server's own words is judged by what the provider shows: the read
/// changed, so the tool ran, whatever the words; the read unchanged proves nothing.
#[rstest]
#[case::refusal_words_after_a_run("delete_everything is forbidden", "3 rows", "0 rows", Some("changed the provider"))]
#[case::own_words_and_the_read_unchanged("policy says no", "3 rows", "3 rows", None)]
fn own_words_are_judged_by_the_read(
    #[case] words: &str,
    #[case] before: &str,
    #[case] after: &str,
    #[case] fails_with: Option<&str>,
) {
    let reads = Some((result(false, before, false), result(false, after, false)));
    let s = session(vec![(UNKNOWN, sdk_unknown(UNKNOWN)), ("delete_everything", result(true, words, false))], reads);
    let a = judge(&denied(), &[s], None, vec![]);
    match fails_with {
        Some(why) => assert!(reason(&a).contains(why), "{a:?}"),
        None => {
            let Attempt::Skip { reason } = &a else { panic!("{a:?}") };
            assert!(reason.contains("the deterministic read answered the same before and after"), "{reason}");
        }
    }
}

/// A session that called `delete_everything` answered `answer`, carrying nonce "n-denied",
/// after the allowed control call `get_item` carried "n-control".
fn with_nonces(answer: CallAnswer) -> SessionCalls {
    let mut s = session(vec![(UNKNOWN, sdk_unknown(UNKNOWN)), ("delete_everything", answer)], None);
    s.nonces = vec![None, Some("n-denied".into())];
    s.upstream_control = Some(("get_item".into(), "n-control".into(), result(false, "{}", true)));
    s
}

fn app_log(seen: &[&str]) -> UpstreamLog {
    UpstreamLog {
        app: "gitea".into(),
        containers: vec!["gitea_1".into()],
        seen: seen.iter().map(|n| (n.to_string(), "gitea_1".to_string())).collect(),
        unread: vec![],
        in_path: ["delete_everything".to_string()].into(),
    }
}

const OWN_WORDS: &str = "Tool call refused by policy: 'delete_everything' is not on this client's allowlist";

/// What the app received decides, never the words: a refusal in the gateway's own words
/// passes when the app logged the control and not the call; any answer fails when the
/// call's nonce reached the app; without the control in the log nothing is proven.
#[rstest]
#[case::own_words_never_forwarded(result(true, OWN_WORDS, false), &["n-control"], "pass")]
#[case::own_words_forwarded(result(true, OWN_WORDS, false), &["n-control", "n-denied"], "the upstream app gitea received it (gitea_1's log holds the call's nonce): the tool ran")]
#[case::says_unknown_but_forwarded(rpc(-32600, "unknown_tool"), &["n-control", "n-denied"], "answered JSON-RPC error -32600")]
#[case::ran_and_forwarded(result(false, "deleted", false), &["n-control", "n-denied"], "answered a result with isError: false (deleted): the tool ran")]
#[case::forwarded_without_the_control_in_the_log(result(true, OWN_WORDS, false), &["n-denied"], "the tool ran")]
#[case::app_logs_nothing(result(true, OWN_WORDS, false), &[], "not judged")]
#[case::refused_the_usual_way(rpc(-32600, "unknown_tool"), &["n-control"], "pass")]
#[case::a_5xx_of_its_own_never_forwarded(CallAnswer::Http { status: 500, body: "policy".into() }, &["n-control"], "pass")]
#[case::a_5xx_after_forwarding(CallAnswer::Http { status: 502, body: "upstream_error".into() }, &["n-control", "n-denied"], "went past the policy")]
fn the_app_log_judges_a_refusal(#[case] answer: CallAnswer, #[case] seen: &[&str], #[case] expected: &str) {
    let log = app_log(seen);
    let a = judge(&denied(), &[with_nonces(answer)], Some(&log), vec![]);
    match expected {
        "pass" => {
            assert!(a.is_pass(), "{a:?}");
            assert!(
                a.evidence()
                    .iter()
                    .any(|l| l.contains("the allowed control call `get_item`") && l.contains("is in gitea_1's log")),
                "{a:?}"
            );
        }
        "not judged" => {
            let Attempt::Skip { reason } = &a else { panic!("{a:?}") };
            assert!(reason.contains("app gitea's log holds not even the allowed control call's nonce"), "{reason}");
        }
        why => assert!(reason(&a).contains(why), "{a:?}"),
    }
}

#[test]
fn a_nonce_only_in_a_body_proves_no_refusal_by_its_absence() {
    let mut log = app_log(&["n-control"]);
    log.in_path.clear();
    let a = judge(&denied(), &[with_nonces(result(true, OWN_WORDS, false))], Some(&log), vec![]);
    let Attempt::Skip { reason: why } = &a else { panic!("{a:?}") };
    assert!(why.contains("carries a string argument in its path"), "{why}");
    let log = UpstreamLog { in_path: Default::default(), ..app_log(&["n-control", "n-denied"]) };
    let a = judge(&denied(), &[with_nonces(result(true, OWN_WORDS, false))], Some(&log), vec![]);
    assert!(reason(&a).contains("received it"), "a nonce seen anywhere is still a run: {a:?}");
}

/// A log not read whole, or a replica whose control is not in any log: a missing nonce
/// proves nothing, so an answer in the gateway's own words is not judged.
#[test]
fn an_unread_log_or_an_unseen_replica_proves_no_refusal() {
    let own_words = || with_nonces(result(true, OWN_WORDS, false));
    let mut unread = app_log(&["n-control"]);
    unread.unread.push("gitea_2: its last 4000 lines are over 8 MiB, the newest not read".into());
    let a = judge(&denied(), &[own_words()], Some(&unread), vec![]);
    let Attempt::Skip { reason: why } = &a else { panic!("{a:?}") };
    assert!(why.contains("not every log of app gitea was read whole (gitea_2"), "{why}");

    let mut second = own_words();
    second.replica = "native_2".into();
    second.upstream_control = Some(("get_item".into(), "n-control-2".into(), result(false, "{}", true)));
    let a = judge(&denied(), &[own_words(), second], Some(&app_log(&["n-control"])), vec![]);
    let Attempt::Skip { reason: why } = &a else { panic!("{a:?}") };
    assert!(why.contains("not even the allowed control call's nonce (of every replica)"), "{why}");
}

#[test]
fn without_an_app_the_own_words_say_why_nothing_is_proven() {
    let a = judge(
        &denied(),
        &[session(vec![(UNKNOWN, sdk_unknown(UNKNOWN)), ("delete_everything", result(true, OWN_WORDS, false))], None)],
        None,
        vec![],
    );
    let Attempt::Skip { reason } = &a else { panic!("{a:?}") };
    assert!(reason.contains("no app behind the provider whose log would show a forwarded call"), "{reason}");
}
