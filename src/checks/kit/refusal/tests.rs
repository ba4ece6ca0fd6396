//! One row per class of broken refusal: each must fail for its own reason, and each
//! correct shape must pass.

use super::*;
use crate::mcp::RpcFacts;
use crate::mcp::{BodyFacts, SessionSource};
use rstest::rstest;

fn ex(ask: Ask, status: u16) -> Exchange {
    Exchange {
        ask,
        method: "POST".into(),
        url: "http://10.0.1.5:8000/mcp".into(),
        status,
        content_type: Some("application/json".into()),
        content_encoding: None,
        location: None,
        www_authenticate: None,
        session_id: None,
        hops: vec![],
        body: BodyFacts { ended: true, ..Default::default() },
    }
}

fn result_body() -> BodyFacts {
    BodyFacts { ended: true, messages: vec![RpcFacts { result: true, error_code: None }], ..Default::default() }
}

fn error_body() -> BodyFacts {
    BodyFacts {
        ended: true,
        messages: vec![RpcFacts { result: false, error_code: Some(-32001) }],
        ..Default::default()
    }
}

fn asks() -> Vec<Ask> {
    vec![
        Ask::new(EntryPoint::Initialize),
        Ask::new(EntryPoint::Discover).modern(),
        Ask::new(EntryPoint::ToolsList),
        Ask::new(EntryPoint::ToolsList).modern(),
        Ask::new(EntryPoint::ToolsCall).calling("add", json!({})),
        Ask::new(EntryPoint::ToolsCall).calling("add", json!({})).modern(),
        Ask::new(EntryPoint::SseGet),
        Ask::new(EntryPoint::ToolsList).with_session("s1", SessionSource::Valid),
        Ask::new(EntryPoint::ToolsList)
            .with_session("h1", SessionSource::ValidHandshake)
            .negotiated(Some("2025-06-18")),
        Ask::new(EntryPoint::SseGet).with_session("h1", SessionSource::ValidHandshake),
        Ask::new(EntryPoint::Delete).with_session("h1", SessionSource::ValidHandshake),
    ]
}

/// A replica where the valid bearer works and every bad request gets 401.
fn healthy() -> ReplicaRefusal {
    let control = asks()
        .into_iter()
        .filter(|a| a.session.is_none())
        .map(|a| {
            let mut e = ex(a.clone(), 200);
            e.body = result_body();
            Try { ask: a, outcome: Ok(e) }
        })
        .collect();
    let probes = asks().into_iter().map(|a| Try { ask: a.clone(), outcome: Ok(ex(a, 401)) }).collect();
    ReplicaRefusal {
        replica: "native_1 at 10.0.1.5 on net-native".into(),
        valid: Ok(ValidSession {
            handshake: None,
            era: Era::Stateful { protocol_version: "2025-06-18".into() },
            session_id: true,
            served: vec!["add".into(), "echo".into()],
        }),
        control,
        probes: vec![("no bearer".into(), probes)],
    }
}

/// `healthy()` with the bad bearer's answer at `ask` replaced.
fn with_answer(matches: impl Fn(&Ask) -> bool, answer: impl Fn(Ask) -> Exchange) -> ReplicaRefusal {
    let mut o = healthy();
    for t in &mut o.probes[0].1 {
        if matches(&t.ask) {
            t.outcome = Ok(answer(t.ask.clone()));
        }
    }
    o
}

fn rule() -> RefusalRule {
    RefusalRule { refusal: Refusal::HttpStatus, bearer_label: "no bearer".into(), ..Default::default() }
}

fn kinds(a: &Attempt) -> Vec<FindingKind> {
    match a {
        Attempt::Fail { findings, .. } => findings.iter().map(|f| f.kind).collect(),
        _ => vec![],
    }
}

fn served(ask: Ask, status: u16) -> Exchange {
    let mut e = ex(ask, status);
    e.body = result_body();
    e
}

#[test]
fn refused_everywhere_passes() {
    assert!(judge(&[healthy()], &rule()).is_pass(), "{:?}", judge(&[healthy()], &rule()));
}

#[rstest]
#[case::session_not_bound(
    |a: &Ask| a.session.is_some(), |a| served(a, 200), FindingKind::SessionNotBound)]
#[case::plain_jsonrpc_served(
    |a: &Ask| a.entry == EntryPoint::ToolsList && !a.modern && a.session.is_none(), |a| served(a, 200), FindingKind::SessionGranted)]
#[case::modern_call_served(
    |a: &Ask| a.entry == EntryPoint::ToolsCall && a.modern, |a| served(a, 200), FindingKind::SessionGranted)]
#[case::a_401_with_a_result(
    |a: &Ask| a.entry == EntryPoint::Initialize, |a| served(a, 401), FindingKind::SessionGranted)]
#[case::bare_names_in_a_401(
    |a: &Ask| a.entry == EntryPoint::Discover,
    |a| { let mut e = ex(a, 401); e.body.names = ["add".to_string()].into(); e },
    FindingKind::ToolsDisclosed)]
#[case::disclosure_in_a_503(
    |a: &Ask| a.entry == EntryPoint::Initialize,
    |a| { let mut e = ex(a, 503); e.body.inventory = true; e },
    FindingKind::ToolsDisclosed)]
#[case::undecodable(
    |a: &Ask| a.entry == EntryPoint::Initialize,
    |a| { let mut e = ex(a, 401); e.content_encoding = Some("zstd".into()); e.body.undecodable = Some("zstd".into()); e },
    FindingKind::Undecodable)]
#[case::login_redirect(
    |a: &Ask| a.entry == EntryPoint::Initialize,
    |a| { let mut e = ex(a, 302); e.location = Some("http://idp/login".into()); e },
    FindingKind::Redirected)]
#[case::html_200(
    |a: &Ask| a.entry == EntryPoint::Initialize,
    |a| { let mut e = ex(a, 200); e.content_type = Some("text/html; charset=utf-8".into()); e },
    FindingKind::NotRefused)]
#[case::event_stream_opened(
    |a: &Ask| a.entry == EntryPoint::SseGet,
    |a| { let mut e = ex(a, 200); e.content_type = Some("text/event-stream".into()); e },
    FindingKind::SessionGranted)]
#[case::session_id_issued(
    |a: &Ask| a.entry == EntryPoint::Initialize,
    |a| { let mut e = ex(a, 200); e.session_id = Some("x".into()); e },
    FindingKind::SessionGranted)]
#[case::jsonrpc_error_where_not_allowed(
    |a: &Ask| a.entry == EntryPoint::Initialize, |a| { let mut e = ex(a, 200); e.body = error_body(); e }, FindingKind::NotRefused)]
#[case::handshake_session_not_bound(
    |a: &Ask| a.session_from == Some(SessionSource::ValidHandshake) && a.entry == EntryPoint::ToolsList,
    |a| served(a, 200), FindingKind::SessionNotBound)]
#[case::handshake_stream_opened(
    |a: &Ask| a.session.is_some() && a.entry == EntryPoint::SseGet,
    |a| { let mut e = ex(a, 200); e.content_type = Some("text/event-stream".into()); e },
    FindingKind::SessionNotBound)]
#[case::delete_by_a_stranger(
    |a: &Ask| a.entry == EntryPoint::Delete, |a| { let mut e = ex(a, 200); e.content_type = None; e },
    FindingKind::SessionNotBound)]
#[case::delete_accepted(
    |a: &Ask| a.entry == EntryPoint::Delete, |a| { let mut e = ex(a, 204); e.content_type = None; e },
    FindingKind::SessionNotBound)]
#[case::a_400_where_the_valid_bearer_gets_200(
    |a: &Ask| a.entry == EntryPoint::Initialize, |a| ex(a, 400), FindingKind::NotRefused)]
fn each_class_of_broken_refusal_fails_for_its_reason(
    #[case] at: fn(&Ask) -> bool,
    #[case] answer: fn(Ask) -> Exchange,
    #[case] kind: FindingKind,
) {
    let attempt = judge(&[with_answer(at, answer)], &rule());
    assert!(kinds(&attempt).contains(&kind), "expected {kind:?}, got {attempt:?}");
}

#[test]
fn an_id_a_refusal_handed_out_must_not_serve() {
    let mut o = healthy();
    let ask = Ask::new(EntryPoint::ToolsList).with_session("r1", SessionSource::HandedOut);
    o.probes[0].1.push(Try { ask: ask.clone(), outcome: Ok(served(ask, 200)) });
    assert_eq!(kinds(&judge(&[o], &rule())), vec![FindingKind::RefusalSessionServes]);
}

/// A borrowed session that serves the listing is judged as the session class it is,
/// the disclosure named with it (seen on a server whose session ids ignore the bearer).
#[rstest]
#[case::valid_session(SessionSource::Valid, FindingKind::SessionNotBound, "the session is not bound to its bearer")]
#[case::handed_out(SessionSource::HandedOut, FindingKind::RefusalSessionServes, "the id a refusal handed out serves")]
fn a_borrowed_session_that_lists_tools_is_its_session_class(
    #[case] from: SessionSource,
    #[case] kind: FindingKind,
    #[case] says: &str,
) {
    let mut o = healthy();
    let ask = Ask::new(EntryPoint::ToolsList).with_session("r1", from);
    let mut e = served(ask.clone(), 200);
    e.body.inventory = true;
    e.body.names = ["add".to_string()].into();
    o.probes[0].1.push(Try { ask, outcome: Ok(e) });
    let attempt = judge(&[o], &rule());
    assert_eq!(kinds(&attempt), vec![kind]);
    let Attempt::Fail { findings, .. } = attempt else { unreachable!() };
    assert!(
        findings[0].sentence().contains(says) && findings[0].sentence().contains("disclosing tool name(s) add"),
        "{}",
        findings[0].sentence()
    );
}

#[test]
fn a_jsonrpc_error_is_a_refusal_where_the_scenario_says_so() {
    let o = with_answer(
        |a| a.entry == EntryPoint::Initialize,
        |a| {
            let mut e = ex(a, 200);
            e.body = error_body();
            e
        },
    );
    let rule = RefusalRule { refusal: Refusal::JsonrpcError, ..rule() };
    assert!(judge(std::slice::from_ref(&o), &rule).is_pass());
    // ... but not one that comes with a session id.
    let mut o = o;
    if let Ok(e) = &mut o.probes[0].1[0].outcome {
        e.session_id = Some("s".into());
    }
    assert_eq!(kinds(&judge(&[o], &rule)), vec![FindingKind::SessionGranted]);
}

#[test]
fn an_entry_point_that_turns_everyone_away_is_neutral() {
    let mut o = with_answer(|a| a.entry == EntryPoint::ToolsList && a.session.is_none() && !a.modern, |a| ex(a, 400));
    for c in &mut o.control {
        if c.ask.entry == EntryPoint::ToolsList && !c.ask.modern {
            c.outcome = Ok(ex(c.ask.clone(), 400));
        }
    }
    assert!(judge(&[o], &rule()).is_pass());
}

#[test]
fn when_the_valid_bearer_gets_no_session_the_refusals_cannot_be_judged() {
    let mut o = healthy();
    o.valid = Err(ErrorSeen { text: "initialize at http://x/sse got 405 Method Not Allowed".into(), not_ready: false });
    for c in &mut o.control {
        c.outcome = Ok(ex(c.ask.clone(), 405));
    }
    for t in &mut o.probes[0].1 {
        t.outcome = Ok(ex(t.ask.clone(), 405));
    }
    let attempt = judge(&[o], &rule());
    assert_eq!(kinds(&attempt), vec![FindingKind::CannotBeJudged]);
    let Attempt::Fail { findings, .. } = attempt else { unreachable!() };
    assert!(findings[0].sentence().contains("the valid bearer gets the same answer"), "{}", findings[0].sentence());
    assert!(findings[0].sentence().contains("is `transport` right?"));
}

#[test]
fn a_legacy_message_post_accepted_is_not_refused() {
    let mut o = healthy();
    let ask = Ask::new(EntryPoint::ToolsList).at_message_url("http://10.0.1.5:8000/messages/?session_id=1");
    o.probes[0].1.push(Try { ask: ask.clone(), outcome: Ok(ex(ask, 202)) });
    assert_eq!(kinds(&judge(&[o], &rule())), vec![FindingKind::NotRefused]);
}

#[test]
fn a_5xx_without_disclosure_is_not_ready_and_an_sse_404_is_refused() {
    let o = with_answer(|a| a.entry == EntryPoint::Initialize, |a| ex(a, 503));
    assert!(matches!(judge(&[o], &rule()), Attempt::NotReady { .. }));
    let o = with_answer(|a| a.entry == EntryPoint::SseGet, |a| ex(a, 404));
    assert!(judge(&[o], &rule()).is_pass());
}

#[test]
fn one_open_replica_of_two_fails_and_is_named() {
    let mut open = with_answer(|a| a.entry == EntryPoint::Initialize, |a| served(a, 200));
    open.replica = "native_2 at 10.0.1.6 on net-native".into();
    let attempt = judge(&[healthy(), open], &rule());
    let Attempt::Fail { findings, .. } = attempt else { panic!("{attempt:?}") };
    assert!(findings[0].sentence().starts_with("native_2 at 10.0.1.6"), "{}", findings[0].sentence());
    assert_eq!(findings[0].facts["replica"], "native_2 at 10.0.1.6 on net-native");
}

#[test]
fn a_shared_secret_fails_and_names_the_provider() {
    let rule = RefusalRule { shared_with: vec!["wiki".into()], ..rule() };
    let attempt = judge(&[healthy()], &rule);
    assert_eq!(kinds(&attempt), vec![FindingKind::SharedSecret]);
}

#[test]
fn a_connection_error_is_not_ready_but_garbage_is_not_a_refusal() {
    let mut o = healthy();
    o.probes[0].1[0].outcome = Err(ErrorSeen { text: "cannot connect".into(), not_ready: true });
    assert!(matches!(judge(&[o], &rule()), Attempt::NotReady { .. }));
    let mut o = healthy();
    o.probes[0].1[0].outcome = Err(ErrorSeen { text: "answered something that is not HTTP".into(), not_ready: false });
    assert_eq!(kinds(&judge(&[o], &rule())), vec![FindingKind::NotRefused]);
}

/// Near misses are one edit from the valid credential, never equal to it, and each is a
/// different value: a prefix, suffix, length or case comparison lets one of them in.
#[rstest]
#[case::letters_and_digits("gQ7vN2xK4mW9pL3rT8bYcs")]
#[case::digits_only("12345678901234")]
#[case::ends_in_z("abcdefghZ")]
#[case::punctuation("tok-en_v4lue.~")]
fn near_misses_are_one_edit_away(#[case] valid: &str) {
    let misses = near_misses(valid);
    let hows: Vec<&str> = misses.iter().map(|(h, _)| *h).collect();
    for (how, value) in &misses {
        assert_ne!(value, valid, "{how}");
    }
    let values: BTreeSet<&String> = misses.iter().map(|(_, v)| v).collect();
    assert_eq!(values.len(), misses.len(), "{misses:?}");
    let find = |how: &str| misses.iter().find(|(h, _)| *h == how).map(|(_, v)| v.as_str());
    assert_eq!(find("suffix appended").unwrap(), format!("{valid}0"));
    assert_eq!(find("cut by one").unwrap(), &valid[..valid.len() - 1]);
    let last = find("last character changed").unwrap();
    assert_eq!(&last[..last.len() - 1], &valid[..valid.len() - 1]);
    let half = find("first half kept, new tail").unwrap();
    assert!(half.starts_with(&valid[..valid.len() / 2]) && half.len() == valid.len());
    // A credential with no letter has no case to swap.
    assert_eq!(hows.contains(&"case swapped"), valid.chars().any(|c| c.is_ascii_alphabetic()), "{hows:?}");
}

#[test]
fn each_bearer_keeps_its_own_finding_and_the_console_tells_alike_ones_once() {
    // Three bearers all served at initialize and tools/list alike; one of them also at
    // the SSE GET, which is a different outcome and keeps its own line.
    let mut o = with_answer(|a| matches!(a.entry, EntryPoint::Initialize | EntryPoint::ToolsList), |a| served(a, 200));
    let tries = o.probes[0].1.clone();
    o.probes.push(("a wrong bearer".into(), tries.clone()));
    let mut third = tries;
    for t in third.iter_mut().filter(|t| t.ask.entry == EntryPoint::SseGet && t.ask.session.is_none()) {
        let mut e = ex(t.ask.clone(), 200);
        e.content_type = Some("text/event-stream".into());
        t.outcome = Ok(e);
    }
    o.probes.push(("a near miss".into(), third));
    let mut rule = rule();
    rule.short_names.insert("a near miss".into(), "near miss".into());
    let attempt = judge(&[o], &rule);
    let Attempt::Fail { findings, .. } = attempt else { panic!("{attempt:?}") };
    // The reason names every bearer that was not refused, each in full.
    let reason = crate::model::reason_of(&findings);
    for bearer in ["no bearer", "a wrong bearer", "a near miss"] {
        assert!(reason.contains(&format!("{bearer} was not refused: ")), "{reason}");
    }
    // The console tells one line per outcome.
    let told: Vec<String> =
        crate::model::told_once(&findings, "bearer", "bearer_short").iter().map(Finding::sentence).collect();
    assert!(told.len() < findings.len(), "{told:#?}");
    assert!(
        told.iter().any(|s| s.starts_with("no bearer was not refused: ")
            && s.ends_with(" (and the same for 2 more: a wrong bearer; near miss)")),
        "{told:#?}"
    );
    assert!(told.iter().any(|s| s.starts_with("a near miss was not refused: ")), "the SSE GET outcome: {told:#?}");
    let first = crate::model::told_once(&findings, "bearer", "bearer_short").remove(0);
    assert!(first.proof.len() >= 3, "each bearer's exchange goes with the line: {:#?}", first.proof);
}

#[test]
fn a_proving_line_leads_with_the_status_and_ends_with_the_body() {
    let mut e = served(Ask::new(EntryPoint::Initialize), 200);
    e.body.excerpt = r#"{"result":{"tools":[]}}"#.into();
    let line = e.proof("a wrong bearer, ");
    assert!(line.starts_with("200 ← a wrong bearer, initialize"), "{line}");
    assert!(line.ends_with(r#"body {"result":{"tools":[]}}"#), "{line}");
    let cut = crate::report::failure::fit(&line, 40);
    assert!(cut.starts_with("200 ← a wrong bearer"), "{cut}");
}

#[test]
fn a_bearer_cordon_presented_itself_is_said_to_be_cordons() {
    let mut o = with_answer(|a| a.entry == EntryPoint::Initialize, |a| served(a, 200));
    o.probes[0].0 = "another provider's valid bearer (legacy-token, of provider legacy)".into();
    let foreign = RefusalRule { presented_by_cordon: true, ..rule() };
    let Attempt::Fail { findings, .. } = judge(&[o.clone()], &foreign) else { panic!() };
    let sentence = findings[0].sentence();
    assert!(sentence.contains("of provider legacy) was not refused: "), "{sentence}");
    assert!(
        sentence.ends_with(
            "(cordon presented that bearer itself, as a client holding the wrong provider's credential would)"
        ),
        "{sentence}"
    );
    // A bearer a client could hold (none, a wrong one) says nothing of the kind.
    let Attempt::Fail { findings, .. } = judge(&[o], &rule()) else { panic!() };
    assert!(!findings[0].sentence().contains("cordon presented"), "{}", findings[0].sentence());
}
