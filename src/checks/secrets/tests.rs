//! Secrets in logs and URLs, on tables: every form is found and named, never shown.

use rstest::rstest;

use super::*;

const TOKEN: &str = "pQ4wZ8kR2mX7vB3n";

fn scanner() -> Scanner {
    let r = Redactor::new();
    let mut credentials = BTreeMap::new();
    credentials.insert("native-token".to_string(), r.register("native-token", TOKEN.into()));
    credentials.insert("other-token".to_string(), r.register("other-token", "Zz8yYx7wWv6uUt5s".into()));
    Scanner::new(&credentials)
}

fn b64(s: &str) -> String {
    base64::Engine::encode(&base64::engine::general_purpose::STANDARD, s)
}

#[rstest]
#[case::raw(format!("mcp 10.0.1.9 POST /mcp auth=Bearer {TOKEN}"), Some("as written"))]
#[case::base64(format!("auth header {}", b64(&format!("Bearer {TOKEN}"))), Some("base64"))]
#[case::hex(format!("token={}", hex::encode(TOKEN)), Some("hex"))]
#[case::cut_short(format!("token prefix {}", &TOKEN[..9]), Some("as written"))]
#[case::clean("mcp 10.0.1.9 POST /mcp -> 200 rpc=tools/list".to_string(), None)]
fn every_form_is_found_and_named(#[case] line: String, #[case] form: Option<&str>) {
    let found = scanner().find(&line);
    match form {
        Some(f) => assert_eq!(found, [("native-token".to_string(), f)], "{line}"),
        None => assert!(found.is_empty(), "{found:?}"),
    }
}

#[test]
fn a_log_finding_names_container_stream_and_line_never_the_value() {
    let hits: Vec<LogHit> = (1..=7)
        .map(|n| LogHit {
            stream: LogStream::Stderr,
            line: n * 10,
            credential: "native-token".into(),
            form: "base64",
            in_query: false,
        })
        .collect();
    let seen = LogSeen {
        container: "ref_native_1".into(),
        whose: LogOwner::Running,
        read: Ok(LogRead { stdout_lines: 0, stderr_lines: 80, console_lines: 0, bytes: 4000, cut: false }),
        hits,
    };
    let (findings, evidence) = judge_log(&seen);
    assert_eq!(findings.len(), 1);
    assert_eq!(
        findings[0].sentence(),
        "container ref_native_1 logged credential native-token: stderr line 10 (base64), stderr line 20 (base64), stderr line 30 (base64), stderr line 40 (base64), stderr line 50 (base64) and 2 more line(s)"
    );
    assert_eq!(findings[0].facts["line"], "10");
    assert!(evidence.contains("80 stderr line(s) read"), "{evidence}");
    let clean = LogSeen { container: "c".into(), whose: LogOwner::Running, read: Ok(LogRead::default()), hits: vec![] };
    let (f, e) = judge_log(&clean);
    assert!(f.is_empty() && e.ends_with("no credential"), "{e}");
}

#[test]
fn credentials_in_urls_are_found_by_part() {
    let s = scanner();
    let path = format!("http://native:8000/{TOKEN}/mcp");
    assert_eq!(in_url(&path, &s), [("native-token".to_string(), "as written", "path")]);
    let query = format!("https://native/mcp?key={}", b64(TOKEN));
    assert_eq!(in_url(&query, &s), [("native-token".to_string(), "base64", "query")]);
    assert!(in_url("http://native:8000/mcp", &s).is_empty());
    let env = vec![
        ("NATIVE_TOKEN".to_string(), TOKEN.to_string()),
        ("TOOL_SERVER_CONNECTIONS".to_string(), format!(r#"[{{"url":"{path}","key":"x"}}]"#)),
    ];
    let findings = urls_in_environment("webui_1", &env, &s);
    assert_eq!(findings.len(), 1, "a credential as a variable's own value is not a URL: {findings:?}");
    assert_eq!(
        findings[0].sentence(),
        "container webui_1: a URL in its environment variable TOOL_SERVER_CONNECTIONS carries credential native-token in its path (as written)"
    );
    assert!(!findings[0].sentence().contains(TOKEN));
}

#[test]
fn urls_are_cut_out_of_text() {
    assert_eq!(
        urls_in_text(r#"[{"url":"http://a:1/mcp","u2":"https://b/x?y=1"}] http://c"#),
        ["http://a:1/mcp", "https://b/x?y=1", "http://c"]
    );
}

#[test]
fn a_credential_in_a_logged_query_string_says_where_it_may_come_from() {
    assert!(has_credential_query("mcp 10.0.0.9 GET /mcp?access_token=abc -> 401"));
    assert!(has_credential_query("GET /sse?x=1&api_key=abc"));
    assert!(!has_credential_query("GET /mcp?session_id=abc"));
    let hit = LogHit {
        stream: LogStream::Stdout,
        line: 3,
        credential: "native-token".into(),
        form: "as written",
        in_query: true,
    };
    let seen = LogSeen {
        container: "proxy_1".into(),
        whose: LogOwner::Running,
        read: Ok(LogRead::default()),
        hits: vec![hit],
    };
    let (findings, _) = judge_log(&seen);
    assert!(
        findings[0].sentence().contains("1 of these lines hold it in a URL query string (cordon's refusal checks send"),
        "{}",
        findings[0].sentence()
    );
}

#[test]
fn a_stopped_container_and_an_old_task_are_named_as_such() {
    let hit = |credential: &str| LogHit {
        stream: LogStream::Stdout,
        line: 1,
        credential: credential.into(),
        form: "as written",
        in_query: false,
    };
    let log = |name: &str, whose: LogOwner, hits: Vec<LogHit>| LogSeen {
        container: name.into(),
        whose,
        read: Ok(LogRead::default()),
        hits,
    };
    let (f, _) = judge_log(&log("p_migrate_1", LogOwner::Stopped, vec![hit("native-token")]));
    assert_eq!(
        f[0].sentence(),
        "container p_migrate_1 (not running) logged credential native-token: stdout line 1 (as written)"
    );
    let (f, _) = judge_log(&log("s_worker.1.abc", LogOwner::OldTask, vec![hit("wiki-token")]));
    assert_eq!(
        f[0].sentence(),
        "old task s_worker.1.abc (no longer running) logged credential wiki-token: stdout line 1 (as written)"
    );
}
