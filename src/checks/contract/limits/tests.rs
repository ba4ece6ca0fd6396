//! The limits judge on tables of observations.

use super::*;

fn served(items: usize) -> Timed {
    Timed {
        answer: CallAnswer::Result { is_error: false, text: "{}".into(), structured: true, items },
        millis: 5,
        bytes: Some(120),
        again_millis: None,
    }
}

fn answer(a: CallAnswer) -> Timed {
    Timed { answer: a, millis: 5, bytes: None, again_millis: None }
}

fn limits() -> ProviderLimits {
    ProviderLimits {
        request_bytes: Some(65536),
        response_bytes: Some(1 << 20),
        timeout_seconds: Some(15),
        concurrent_requests: Some(2),
        page_size: Some(2),
        result_items: Some(100),
        stream_seconds: Some(300),
    }
}

fn page(items: usize) -> PageSeen {
    PageSeen { items, bytes: 300 }
}

fn timed(a: CallAnswer, millis: u64) -> Timed {
    Timed { answer: a, millis, bytes: None, again_millis: None }
}

/// Cut by the server at timeout_seconds (15 s), a moment late.
fn cut() -> Timed {
    timed(CallAnswer::RpcError { code: -32001, message: "request_timeout".into() }, 15_300)
}

fn busy() -> Timed {
    timed(CallAnswer::Http { status: 503, body: "busy".into() }, 3)
}

fn probes() -> LimitProbes {
    let call = |tool: &str| Some(ProbeCall { tool: tool.into(), arguments: serde_json::json!({}) });
    LimitProbes { slow: call("search_items"), large: call("search_items") }
}

/// Every limit pushed past its bound and holding: the slow call cut at the limit, its
/// burst with one call turned away at once, the large call cut to result_items.
fn good() -> LimitsSeen {
    LimitsSeen {
        burst: Some((vec![cut(), cut(), busy()], served(1))),
        burst_of_slow: true,
        large: Some(Timed { bytes: Some(1500), ..served(100) }),
        slow: Some(cut()),
        ..quick()
    }
}

/// What a scenario without `limit_probes` shows: quick calls only.
fn quick() -> LimitsSeen {
    LimitsSeen {
        replica: "gitea-mcp_1".into(),
        era: Ok("the initialize handshake (2025-06-18)".into()),
        pages: Some(Ok(vec![page(2), page(1)])),
        read: Some(served(1)),
        oversize: Some((65537, answer(CallAnswer::Http { status: 413, body: "request_too_large".into() }), served(1))),
        burst: Some((vec![served(1), served(1), served(1)], served(1))),
        burst_of_slow: false,
        large: None,
        slow: None,
    }
}

fn reason(a: &Attempt) -> String {
    match a {
        Attempt::Fail { findings, .. } => crate::model::reason_of(findings),
        other => format!("{other:?}"),
    }
}

#[test]
fn a_provider_that_holds_every_limit_passes() {
    let a = judge(&limits(), &probes(), &[good()], vec![]);
    assert!(a.is_pass(), "{a:?}");
    assert!(a.evidence().iter().any(|l| l.contains("stream_seconds 300: not waited out")));
    assert!(a.evidence().iter().any(|l| l.contains(
        "held past their bound: request_bytes, page_size, response_bytes, result_items, timeout_seconds, concurrent_requests"
    )));
    assert!(a.evidence().iter().any(|l| {
        l.contains("3 parallel requests (concurrent_requests + 1): 0 served, 3 refused, 0 without an answer")
    }));
}

#[test]
fn each_broken_limit_fails_for_its_reason() {
    type Breaks = Box<dyn Fn(&mut LimitsSeen)>;
    let cases: Vec<(Breaks, &str)> = vec![
        (
            Box::new(|s| s.oversize.as_mut().unwrap().1 = served(1)),
            "a request of 65537 bytes (request_bytes + 1) was served: request_bytes is not enforced",
        ),
        (
            Box::new(|s| {
                s.oversize.as_mut().unwrap().1 =
                    answer(CallAnswer::Failed(ErrorSeen { text: "connection reset".into(), not_ready: true }))
            }),
            "got no answer to judge: connection reset: a refusal is 413 or a JSON-RPC error",
        ),
        (
            Box::new(|s| {
                s.oversize.as_mut().unwrap().2 =
                    answer(CallAnswer::Failed(ErrorSeen { text: "refused".into(), not_ready: true }))
            }),
            "after one request over request_bytes the provider no longer serves",
        ),
        (Box::new(|s| s.pages = Some(Ok(vec![page(20)]))), "tools/list page 1 held 20 tools, over page_size 2"),
        (
            Box::new(|s| s.pages = Some(Ok(vec![PageSeen { items: 1, bytes: 2 << 20 }]))),
            "tools/list page 1 was 2097152 bytes, over response_bytes 1048576",
        ),
        (Box::new(|s| s.read = Some(served(500))), "the read's result held 500 items, over result_items 100"),
        (Box::new(|s| s.read.as_mut().unwrap().millis = 16_100), "the read took 16.1s, longer than timeout_seconds 15"),
        (
            Box::new(|s| {
                s.burst.as_mut().unwrap().0[2] =
                    answer(CallAnswer::Failed(ErrorSeen { text: "connection reset".into(), not_ready: true }))
            }),
            "1 of 3 parallel requests (concurrent_requests 2 + 1) got no answer",
        ),
        (
            Box::new(|s| s.burst.as_mut().unwrap().1 = answer(CallAnswer::Http { status: 502, body: "".into() })),
            "after 3 parallel requests the provider no longer serves",
        ),
    ];
    for (breaks, expected) in cases {
        let mut s = good();
        breaks(&mut s);
        let a = judge(&limits(), &probes(), &[s], vec![]);
        let r = reason(&a);
        assert!(r.contains(expected) && r.starts_with("gitea-mcp_1: "), "want {expected:?}, got {r}");
        match &a {
            Attempt::Fail { findings, .. } => assert_eq!(findings[0].kind, FindingKind::LimitNotEnforced),
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn a_provider_not_answering_at_all_is_not_ready() {
    let mut s = good();
    let gone = answer(CallAnswer::Failed(ErrorSeen { text: "connect refused".into(), not_ready: true }));
    s.oversize = Some((65537, gone.clone(), gone));
    s.burst = None;
    assert!(matches!(judge(&limits(), &probes(), &[s], vec![]), Attempt::NotReady { .. }));
    let mut s = good();
    s.burst.as_mut().unwrap().1 = answer(CallAnswer::Http { status: 503, body: "busy".into() });
    assert!(matches!(judge(&limits(), &probes(), &[s], vec![]), Attempt::NotReady { .. }), "busy is not broken");
    let mut s = good();
    s.era = Err(ErrorSeen { text: "timed out".into(), not_ready: true });
    assert!(matches!(judge(&limits(), &probes(), &[s], vec![]), Attempt::NotReady { .. }));
}

#[test]
fn one_page_that_fits_says_paging_was_not_exercised() {
    let mut s = good();
    s.pages = Some(Ok(vec![page(1)]));
    let a = judge(&limits(), &probes(), &[s], vec![]);
    let Attempt::Skip { reason } = &a else { panic!("{a:?}") };
    assert!(reason.contains("page_size (the listing holds 1 tool(s), no more than one page)"), "{reason}");
}

/// A server that holds request_bytes and page_size but lacks the rest passes the quick
/// calls as well as one that has them: the check is not judged in full, and says which
/// limits nothing pushed past and why, never a pass.
#[test]
fn limits_nothing_pushed_past_are_not_judged() {
    let a = judge(&limits(), &LimitProbes::default(), &[quick()], vec![]);
    let Attempt::Skip { reason } = &a else { panic!("{a:?}") };
    assert!(
        reason.starts_with("not judged in full: response_bytes (the scenario names no `limit_probes.large`"),
        "{reason}"
    );
    for limit in [
        "result_items (",
        "timeout_seconds (the scenario names no `limit_probes.slow`",
        "concurrent_requests (none of the 3 parallel calls was turned away",
    ] {
        assert!(reason.contains(limit), "{limit}: {reason}");
    }
    assert!(reason.ends_with("held past their bound: request_bytes, page_size"), "{reason}");
    let mut one_page = quick();
    one_page.pages = Some(Ok(vec![page(1)]));
    let Attempt::Skip { reason } = judge(&limits(), &LimitProbes::default(), &[one_page], vec![]) else { panic!() };
    assert!(reason.contains("page_size (the listing holds 1 tool(s), no more than one page)"), "{reason}");
}

/// The probes push each limit past its bound; a server without the limit fails.
#[test]
fn a_limit_pushed_past_its_bound_fails_where_it_is_missing() {
    type Breaks = Box<dyn Fn(&mut LimitsSeen)>;
    let cases: Vec<(Breaks, &str)> = vec![
        (
            Box::new(|s| {
                s.slow = Some(timed(
                    CallAnswer::Result { is_error: false, text: "{}".into(), structured: false, items: 1 },
                    17_000,
                ))
            }),
            "the slow call took 17.0s, longer than timeout_seconds 15",
        ),
        (
            Box::new(|s| {
                s.slow =
                    Some(timed(CallAnswer::Failed(ErrorSeen { text: "timed out".into(), not_ready: true }), 20_000))
            }),
            "the slow call was cut only after 20.0s (no answer to judge: timed out), past timeout_seconds 15",
        ),
        (
            Box::new(|s| s.burst.as_mut().unwrap().0 = vec![cut(), cut(), cut()]),
            "all 3 parallel slow calls (concurrent_requests 2 + 1) were let in at once, each taking 15300-15300 ms",
        ),
        (
            Box::new(|s| s.large = Some(Timed { bytes: Some(9000), ..served(1000) })),
            "the large call's result held 1000 items, over result_items 100",
        ),
        (
            Box::new(|s| s.large = Some(Timed { bytes: Some(2 << 20), ..served(10) })),
            "the large call's reply was 2097152 bytes, over response_bytes 1048576",
        ),
    ];
    for (breaks, expected) in cases {
        let mut s = good();
        breaks(&mut s);
        let r = reason(&judge(&limits(), &probes(), &[s], vec![]));
        assert!(r.contains(expected), "want {expected:?}, got {r}");
    }
}

/// A limit held another way: the call over it queued (it took half as long again), the
/// large call refused, the slow call cut early.
#[test]
fn a_limit_held_another_way_passes() {
    let mut s = good();
    let ran = |millis| Timed { millis, ..served(1) };
    s.burst.as_mut().unwrap().0 = vec![ran(1000), ran(1000), ran(1600)];
    s.large = Some(timed(CallAnswer::RpcError { code: -32000, message: "response_too_large".into() }, 4));
    s.slow = Some(timed(CallAnswer::RpcError { code: -32001, message: "timeout".into() }, 9_000));
    let a = judge(&limits(), &probes(), &[s], vec![]);
    assert!(a.is_pass(), "{a:?}");
}

/// cordon measures from its side: an answer a second after timeout_seconds is what a
/// server whose timer starts when the request arrives gives on a busy host; later is not.
#[test]
fn an_answer_within_a_second_of_the_limit_is_the_way_back() {
    let mut s = good();
    s.read.as_mut().unwrap().millis = 15_900;
    assert!(judge(&limits(), &probes(), &[s], vec![]).is_pass());
}

/// A quick call served late is asked again once (the probe does it): a busy host is late
/// now and then, and the second time is the one judged, the late one kept in the
/// evidence; a server that does not cut its calls is late the second time too, and fails.
/// What the first answer held is judged whatever the second took.
#[test]
fn a_late_quick_call_is_timed_by_its_second_answer() {
    let mut s = good();
    s.read = Some(Timed { millis: 21_000, again_millis: Some(20), ..served(1) });
    let a = judge(&limits(), &probes(), &[s.clone()], vec![]);
    assert!(a.is_pass(), "{a:?}");
    let evidence = a.evidence().join("\n");
    assert!(
        evidence.contains("the read → ")
            && evidence.contains("in 21000 ms")
            && evidence.contains("the same call asked again was served in 20 ms"),
        "{evidence}"
    );
    s.read = Some(Timed { millis: 21_000, again_millis: Some(20_500), ..served(1) });
    let r = reason(&judge(&limits(), &probes(), &[s.clone()], vec![]));
    assert!(r.contains("the read took 20.5s, longer than timeout_seconds 15"), "{r}");
    s.read = Some(Timed { millis: 21_000, again_millis: Some(20), ..served(101) });
    let r = reason(&judge(&limits(), &probes(), &[s], vec![]));
    assert!(r.contains("result_items"), "{r}");
}

/// With a burst of the slow call and no call of its own, the burst's quickest call let in
/// judges the timeout: served late fails, cut in time holds, and a queued call (it waited
/// for another) is not the one judged.
#[test]
fn the_burst_of_the_slow_call_judges_the_timeout() {
    let late =
        |millis| timed(CallAnswer::Result { is_error: false, text: "{}".into(), structured: false, items: 1 }, millis);
    let mut s = good();
    s.slow = None;
    assert!(judge(&limits(), &probes(), &[s.clone()], vec![]).is_pass());
    s.burst.as_mut().unwrap().0 = vec![late(17_000), late(17_100), busy()];
    let r = reason(&judge(&limits(), &probes(), &[s.clone()], vec![]));
    assert!(r.contains("the slow call took 17.0s, longer than timeout_seconds 15"), "{r}");
    s.burst.as_mut().unwrap().0 = vec![cut(), timed(cut().answer, 30_600), cut()];
    let a = judge(&limits(), &probes(), &[s], vec![]);
    assert!(a.is_pass(), "queued, then cut at the limit: {a:?}");
}

/// A burst refused outright (or all busy) ran nothing: no verdict on the limit from it,
/// never "all let in at once".
#[test]
fn a_burst_turned_away_whole_shows_nothing() {
    let refused = || timed(CallAnswer::RpcError { code: -32600, message: "no".into() }, 4);
    let mut s = good();
    s.burst.as_mut().unwrap().0 = vec![refused(), refused(), refused()];
    let Attempt::Skip { reason } = judge(&limits(), &probes(), &[s.clone()], vec![]) else { panic!() };
    assert!(
        reason.contains("concurrent_requests (every one of the 3 parallel calls was turned away at once)"),
        "{reason}"
    );
    s.burst.as_mut().unwrap().0 = vec![busy(), busy(), busy()];
    assert!(matches!(judge(&limits(), &probes(), &[s], vec![]), Attempt::NotReady { .. }));
}
