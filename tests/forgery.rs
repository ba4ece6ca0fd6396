//! Outputs that cannot be forged and never leak: cordon against servers whose tool names
//! and results try to forge console lines, break JUnit XML and inject Markdown, and that
//! echo bearers back raw, base64- and hex-encoded and cut short, or answer in raw gzip.

mod support;

use std::io::{Read, Write};
use std::net::TcpStream;

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE};
use support::harness::{ADD_READ, Fixture, HOST_SUITE, ProviderYaml, Run};
use support::peers::{Peer, Sdk};
use support::stack::random_token;

/// Every form of `secret` the redactor promises to mask; built here, independently.
fn forms(secret: &str) -> Vec<String> {
    let bytes = secret.as_bytes();
    let mut out = vec![secret.to_string(), hex::encode(bytes), hex::encode_upper(bytes)];
    for offset in 0..3 {
        out.push(STANDARD.encode(&bytes[offset..]));
        out.push(URL_SAFE.encode(&bytes[offset..]));
    }
    out
}

/// The first run of 8 characters of a form of `secret` in `text`.
fn leak(text: &str, secret: &str) -> Option<String> {
    forms(secret)
        .iter()
        .flat_map(|f| f.as_bytes().windows(8).map(|w| String::from_utf8_lossy(w).into_owned()))
        .find(|run| text.contains(run.as_str()))
}

/// The wrong bearers cordon sent to an `echo-secrets` peer, as the peer recorded them.
fn seen_bearers(peer: &Peer, token: &str) -> Vec<String> {
    let mut stream = TcpStream::connect(peer.origin().trim_start_matches("http://")).expect("connect to the peer");
    let request = format!("GET /seen-bearers HTTP/1.0\r\nAuthorization: Bearer {token}\r\n\r\n");
    stream.write_all(request.as_bytes()).unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    let (head, body) = answer.split_once("\r\n\r\n").expect("an HTTP answer");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    body.lines().map(str::to_string).collect()
}

/// Lines outside fenced code blocks, and whether every fence closed.
fn outside_fences(md: &str) -> (Vec<&str>, bool) {
    let mut open: Option<usize> = None;
    let mut outside = Vec::new();
    for line in md.lines() {
        let ticks = line.len() - line.trim_start_matches('`').len();
        match open {
            None if ticks >= 3 => open = Some(ticks),
            None => outside.push(line),
            Some(n) if ticks >= n && line.trim_start_matches('`').trim().is_empty() => open = None,
            Some(_) => {}
        }
    }
    (outside, open.is_none())
}

/// The run, every secret involved (tokens and the wrong bearers cordon sent), and the
/// fixture directory holding the reports.
fn run_against_hostile_servers(suite: &str, extra: &[&str]) -> (Run, Vec<String>, Fixture) {
    let (names_token, echo_token) = (random_token(), random_token());
    let names = Peer::start(Sdk::V1, "forged-names", &names_token, None);
    let echo = Peer::start(Sdk::V1, "echo-secrets", &echo_token, None);
    let fixture = Fixture::new();
    let provider =
        |id, url| ProviderYaml { id, url, sse: false, credential: id, allowlist: &["add", "echo"], extra: ADD_READ };
    fixture.scenario(
        &[("names", &names_token), ("echo", &echo_token)],
        &[provider("names", &names.url), provider("echo", &echo.url)],
    );
    let run = fixture.run(suite, extra);
    let mut secrets = vec![names_token, echo_token.clone()];
    let wrong = seen_bearers(&echo, &echo_token);
    assert!(!wrong.is_empty(), "cordon sent no wrong bearer:\n{}", run.stdout);
    secrets.extend(wrong);
    (run, secrets, fixture)
}

#[test]
fn hostile_names_and_echoed_secrets_neither_forge_nor_leak() {
    let (run, secrets, _fixture) = run_against_hostile_servers(HOST_SUITE, &[]);
    assert_eq!(run.code, 1, "the hostile servers fail their checks:\n{}\n{}", run.stdout, run.stderr);

    let read =
        |name: &str| std::fs::read_to_string(run.results_dir.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
    let outputs = [
        ("junit.xml", read("junit.xml")),
        ("report.json", read("report.json")),
        ("summary.md", read("summary.md")),
        ("stdout", run.stdout.clone()),
        ("stderr", run.stderr.clone()),
    ];
    for (name, text) in &outputs {
        let raw: Vec<char> = text.chars().filter(|c| *c != '\n' && cordon::text::is_dangerous(*c)).collect();
        assert!(raw.is_empty(), "{name} holds raw {raw:?}:\n{text}");
        for secret in &secrets {
            assert_eq!(leak(text, secret), None, "{name} leaks a secret:\n{text}");
        }
    }

    let junit = &outputs[0].1;
    let doc =
        roxmltree::Document::parse(junit).unwrap_or_else(|e| panic!("junit.xml is not well-formed: {e}\n{junit}"));
    let cases: Vec<&str> =
        doc.descendants().filter(|n| n.has_tag_name("testcase")).filter_map(|n| n.attribute("name")).collect();
    assert_eq!(cases.len(), 16, "{cases:?}");
    assert!(!cases.iter().any(|c| c.contains("FAKE")), "{cases:?}");

    let report: serde_json::Value = serde_json::from_str(&outputs[1].1).expect("report.json parses");
    let checks: Vec<String> = report["report"]["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap().to_string())
        .collect();

    let md = &outputs[2].1;
    let (outside, closed) = outside_fences(md);
    assert!(closed, "a fence is left open:\n{md}");
    for line in outside.iter().filter(|l| l.starts_with('#')) {
        assert!(
            line.starts_with("# cordon:") || *line == "## Evidence" || line.starts_with("### `"),
            "injected heading {line:?}:\n{md}"
        );
    }

    for line in run.stdout.lines().filter(|l| l.starts_with("test ")) {
        let real = line.starts_with("test result: ") || checks.iter().any(|c| line.contains(&format!(" {c} ")));
        assert!(real, "forged console line {line:?}:\n{}", run.stdout);
    }
    assert!(!run.stdout.contains("finished in 0.00s"), "{}", run.stdout);

    // Not vacuous: the hostile text reached the evidence, escaped, and the echoes masked.
    let evidence = serde_json::to_string(&report["report"]["results"]).unwrap();
    assert!(evidence.contains(r"add\\ntest FAKE-NL ... ok"), "{evidence}");
    assert!(evidence.contains(r"evil\\u{202e}txt.exe"), "{evidence}");
    assert!(evidence.contains("«redacted:echo»"), "the echoed token was masked: {evidence}");
    assert!(evidence.contains("bytes of binary data, starting 1f8b08"), "gzip summarised: {evidence}");
}

#[test]
fn every_console_format_and_the_waiting_notes_stay_clean() {
    // A deadline, so the unready read prints `waiting:` notes to stderr.
    let suite = HOST_SUITE.replace("deadline: 0s", "deadline: 6s");
    for format in [["--format", "json"], ["--format", "terse"]] {
        let (run, secrets, _fixture) = run_against_hostile_servers(&suite, &format);
        assert_eq!(run.code, 1, "{}", run.stderr);
        assert!(run.stderr.contains("waiting: contract::echo::read"), "{}\n{}", run.stdout, run.stderr);
        for (name, text) in [("stdout", &run.stdout), ("stderr", &run.stderr)] {
            let raw: Vec<char> = text.chars().filter(|c| *c != '\n' && cordon::text::is_dangerous(*c)).collect();
            assert!(raw.is_empty(), "{format:?} {name} holds raw {raw:?}:\n{text}");
            for secret in &secrets {
                assert_eq!(leak(text, secret), None, "{format:?} {name} leaks a secret:\n{text}");
            }
        }
        if format[1] == "json" {
            for line in run.stdout.lines().filter(|l| l.starts_with('{')) {
                serde_json::from_str::<serde_json::Value>(line).unwrap_or_else(|e| panic!("{e}: {line}"));
            }
        }
    }
}
