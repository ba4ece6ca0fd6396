//! `judge_runs` on tables of runs: one session per replica, judged together.

use rstest::rstest;
use serde_json::json;

use super::*;
use crate::config::Expectation;

fn run(replica: &str) -> SessionRun {
    SessionRun {
        replica: replica.into(),
        connected: None,
        first: None,
        era: Some(Era::Stateless2026),
        hops: vec![],
        failed: None,
        tools: Some(vec![]),
        read: None,
    }
}

fn failed(replica: &str, step: SessionStep, not_ready: bool) -> SessionRun {
    SessionRun { failed: Some((step, ErrorSeen { text: "connection refused".into(), not_ready })), ..run(replica) }
}

fn answered(replica: &str, text: &str, is_error: bool) -> SessionRun {
    let result = ToolResult { is_error, text: vec![text.into()], structured: None, raw: json!({"content": []}) };
    SessionRun { read: Some(result), ..run(replica) }
}

fn read() -> ReadSpec {
    ReadSpec { tool: "add".into(), arguments: json!({"a": 2, "b": 3}), expect: Expectation::TextContains("5".into()) }
}

enum Expect {
    Pass,
    NotReady(&'static str),
    Fail(FindingKind, &'static str),
}

#[rstest]
#[case::every_replica_reads("all good", vec![answered("r1", "5", false), answered("r2", "5", false)], true, Expect::Pass)]
#[case::no_read_to_judge("no read spec", vec![run("r1")], false, Expect::Pass)]
#[case::a_replica_not_ready_yet("retry", vec![answered("r1", "5", false), failed("r2", SessionStep::Handshake, true)], true, Expect::NotReady("r2: the handshake failed"))]
#[case::a_replica_whose_session_fails("fail", vec![answered("r1", "5", false), failed("r2", SessionStep::Handshake, false)], true, Expect::Fail(FindingKind::SessionFailed, "r2: the handshake failed: connection refused"))]
#[case::a_failed_call_is_a_read_failure("call", vec![failed("r1", SessionStep::Call("add".into()), false)], true, Expect::Fail(FindingKind::ReadFailed, "r1: tools/call add failed"))]
#[case::a_wrong_answer_at_one_replica("wrong", vec![answered("r1", "5", false), answered("r2", "6", false)], true, Expect::Fail(FindingKind::ReadFailed, "r2: read tool `add` returned no text containing \"5\""))]
#[case::an_error_result("isError", vec![answered("r1", "5", true)], true, Expect::Fail(FindingKind::ReadFailed, "r1: read tool `add` returned isError: true"))]
#[case::a_failure_outranks_not_ready("both", vec![failed("r1", SessionStep::Handshake, true), failed("r2", SessionStep::ListTools, false)], true, Expect::Fail(FindingKind::SessionFailed, "r2: tools/list failed"))]
fn judge_runs_table(
    #[case] _what: &str,
    #[case] runs: Vec<SessionRun>,
    #[case] with_read: bool,
    #[case] expect: Expect,
) {
    let spec = read();
    let attempt = judge_runs(&runs, with_read.then_some(&spec), vec![]);
    for r in &runs {
        assert!(
            attempt.evidence().iter().any(|e| e.starts_with(&format!("{}: era:", r.replica))),
            "every replica's era is in the evidence: {attempt:?}"
        );
    }
    match (expect, &attempt) {
        (Expect::Pass, Attempt::Pass { .. }) => {}
        (Expect::NotReady(text), Attempt::NotReady { reason, .. }) => assert!(reason.contains(text), "{reason}"),
        (Expect::Fail(kind, text), Attempt::Fail { findings, .. }) => {
            assert_eq!(findings.len(), 1, "{findings:?}");
            assert_eq!(findings[0].kind, kind);
            assert!(findings[0].sentence().starts_with(text), "{}", findings[0].sentence());
            assert!(findings[0].facts.contains_key("replica"), "{:?}", findings[0].facts);
        }
        (_, other) => panic!("unexpected verdict {other:?}"),
    }
}
