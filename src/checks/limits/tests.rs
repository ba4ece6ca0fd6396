//! The limits judge on tables of observations.

use super::*;

fn served(items: usize) -> Timed {
    Timed {
        answer: CallAnswer::Result { is_error: false, text: "{}".into(), structured: true, items },
        millis: 5,
        bytes: Some(120),
    }
}

fn answer(a: CallAnswer) -> Timed {
    Timed { answer: a, millis: 5, bytes: None }
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

fn good() -> LimitsSeen {
    LimitsSeen {
        replica: "gitea-mcp_1".into(),
        era: Ok("the initialize handshake (2025-06-18)".into()),
        pages: Some(Ok(vec![page(2), page(1)])),
        read: Some(served(1)),
        oversize: Some((65537, answer(CallAnswer::Http { status: 413, body: "request_too_large".into() }), served(1))),
        burst: Some((
            vec![served(1), served(1), answer(CallAnswer::Http { status: 503, body: "busy".into() })],
            served(1),
        )),
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
    let a = judge(&limits(), &[good()], vec![]);
    assert!(a.is_pass(), "{a:?}");
    assert!(a.evidence().iter().any(|l| l.contains("stream_seconds 300: not waited out")));
    assert!(a.evidence().iter().any(|l| {
        l.contains("3 parallel requests (concurrent_requests + 1): 2 served, 1 refused, 0 without an answer")
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
        (Box::new(|s| s.read.as_mut().unwrap().millis = 16_000), "the read took 16.0s, longer than timeout_seconds 15"),
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
        let a = judge(&limits(), &[s], vec![]);
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
    assert!(matches!(judge(&limits(), &[s], vec![]), Attempt::NotReady { .. }));
    let mut s = good();
    s.burst.as_mut().unwrap().1 = answer(CallAnswer::Http { status: 503, body: "busy".into() });
    assert!(matches!(judge(&limits(), &[s], vec![]), Attempt::NotReady { .. }), "busy is not broken");
    let mut s = good();
    s.era = Err(ErrorSeen { text: "timed out".into(), not_ready: true });
    assert!(matches!(judge(&limits(), &[s], vec![]), Attempt::NotReady { .. }));
}

#[test]
fn one_page_that_fits_says_paging_was_not_exercised() {
    let mut s = good();
    s.pages = Some(Ok(vec![page(1)]));
    let a = judge(&limits(), &[s], vec![]);
    assert!(a.evidence().iter().any(|l| l.contains("paging itself is not exercised")), "{a:?}");
}
