//! Property tests: the SSE and JSON-RPC parsers take whatever a server sends, in any
//! chunking, without panicking, and answer the same however the bytes were split.

use proptest::prelude::*;
use serde_json::Value;

use super::jsonrpc::{match_reply, reply_id};
use super::sse::{SseEvent, SseParser};

fn feed(chunks: &[&[u8]]) -> Vec<SseEvent> {
    let mut parser = SseParser::new();
    chunks.iter().flat_map(|c| parser.feed(c)).collect()
}

/// Bytes shaped like an event stream (fields, line ends of every kind, a BOM, invalid
/// UTF-8), so most cases reach the dispatch paths rather than only the junk path.
fn stream_bytes() -> impl Strategy<Value = Vec<u8>> {
    let piece = prop_oneof![
        Just(b"data: ".to_vec()),
        Just(b"data:".to_vec()),
        Just(b"event: endpoint".to_vec()),
        Just(b"id: 7".to_vec()),
        Just(b"id: a\0b".to_vec()),
        Just(b": ping".to_vec()),
        Just(b"retry: 10".to_vec()),
        Just(b"\n".to_vec()),
        Just(b"\r".to_vec()),
        Just(b"\r\n".to_vec()),
        Just(b"\xEF\xBB\xBF".to_vec()),
        Just(b"\xEF\xBB".to_vec()),
        Just(b"\xff\xfe".to_vec()),
        proptest::collection::vec(any::<u8>(), 0..12),
    ];
    proptest::collection::vec(piece, 0..40).prop_map(|pieces| pieces.concat())
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        (0u64..5).prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        prop_oneof![Just("2.0".to_string()), Just("3".to_string()), ".{0,8}"].prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        let key = prop_oneof![
            Just("jsonrpc".to_string()),
            Just("id".to_string()),
            Just("method".to_string()),
            Just("result".to_string()),
            Just("error".to_string()),
            Just("code".to_string()),
            Just("message".to_string()),
            Just("data".to_string()),
            "[a-z]{1,6}",
        ];
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            proptest::collection::btree_map(key, inner, 0..6).prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn sse_never_panics_and_ignores_chunk_boundaries(bytes in stream_bytes(), cuts in proptest::collection::vec(any::<prop::sample::Index>(), 0..6)) {
        let whole = feed(&[&bytes]);
        let mut points: Vec<usize> = cuts.iter().map(|c| c.index(bytes.len() + 1)).collect();
        points.sort_unstable();
        let mut chunks = Vec::new();
        let mut from = 0;
        for p in points {
            chunks.push(&bytes[from..p]);
            from = p;
        }
        chunks.push(&bytes[from..]);
        prop_assert_eq!(feed(&chunks), whole);
    }

    #[test]
    fn sse_dispatches_one_event_per_data_block_at_most(bytes in stream_bytes()) {
        let events = feed(&[&bytes]);
        // Each event needs its own `data` field and a line end to dispatch it.
        let data_fields = bytes.windows(4).filter(|w| *w == b"data").count();
        let line_ends = bytes.iter().filter(|b| matches!(b, b'\n' | b'\r')).count();
        prop_assert!(events.len() <= data_fields.min(line_ends), "{} events, {} data fields", events.len(), data_fields);
        for e in &events {
            prop_assert!(!e.event.is_empty());
            prop_assert!(e.id.as_deref().is_none_or(|id| !id.contains('\0')));
        }
    }

    #[test]
    fn match_reply_never_panics_and_never_takes_a_request(msg in json_value(), id in 0u64..5) {
        let reply = match_reply(&msg, id);
        if let Value::Object(m) = &msg {
            if m.contains_key("method") {
                prop_assert_eq!(reply, None);
            } else if let Some(Ok(_)) = reply {
                prop_assert_eq!(reply_id(&msg), Some(id), "a result is ours only when it carries our id");
            }
        }
    }

    #[test]
    fn a_batch_answers_as_its_first_reply(items in proptest::collection::vec(json_value(), 0..5), id in 0u64..5) {
        let first = items.iter().find_map(|m| match_reply(m, id));
        prop_assert_eq!(match_reply(&Value::Array(items), id), first);
    }
}
