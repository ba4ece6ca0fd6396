//! Reporters render every verdict class apart and never leak a secret.

use std::time::{Duration, SystemTime};

use super::*;
use crate::config::{Family, Mode};
use crate::model::{CheckName, CheckResult, RunReport, Verdict};

fn result(name: &str, verdict: Verdict, reason: &str, evidence: &[&str]) -> CheckResult {
    let mut r = CheckResult::new(&CheckName::new(Family::Contract, "x"), verdict, reason);
    r.name = name.into();
    r.evidence = evidence.iter().map(|s| s.to_string()).collect();
    r.duration = Duration::from_millis(12);
    r
}

fn report() -> RunReport {
    RunReport {
        scenario: "demo".into(),
        suite: "suites/local.yaml".into(),
        mode: Mode::Host,
        started_at: SystemTime::UNIX_EPOCH,
        duration: Duration::from_secs(1),
        results: vec![
            result("contract::a::tools", Verdict::Passed, "", &["served: [add]"]),
            result(
                "contract::a::read",
                Verdict::Failed,
                "read tool `add` returned isError: true",
                &["result: {\"isError\":true}"],
            ),
            result(
                "contract::a::anonymous",
                Verdict::Unreachable,
                "still not ready",
                &["initialize: connection refused"],
            ),
            result("contract::a::foreign_bearer", Verdict::Skipped, "no other provider", &[]),
            result("contract::b::read", Verdict::KnownFailure, "ticket 7", &["observed: failed — boom"]),
            result("contract::b::tools", Verdict::StaleBaseline, "listed but passes", &[]),
        ],
        filtered_out: 2,
    }
}

#[test]
fn junit_keeps_verdict_classes_apart() {
    let xml = junit::render(&report());
    assert_eq!(xml.matches("<testcase ").count(), 6, "{xml}");
    assert!(xml.contains(r#"<failure message="read tool `add` returned isError: true" type="failed">"#), "{xml}");
    assert!(xml.contains(r#"<error message="still not ready" type="unreachable">"#), "{xml}");
    assert!(xml.contains(r#"<skipped message="no other provider" type="skipped">"#), "{xml}");
    assert!(xml.contains(r#"<skipped message="known failure: ticket 7" type="known failure">"#), "{xml}");
    assert!(xml.contains(r#"type="stale baseline""#), "{xml}");
    assert!(xml.contains("initialize: connection refused"), "evidence goes into the failure text: {xml}");
    assert!(xml.contains(r#"classname="cordon.contract""#), "{xml}");
}

#[test]
fn json_and_markdown_carry_counts_and_exit_code() {
    let json: serde_json::Value = serde_json::from_str(&json::render(&report())).unwrap();
    assert_eq!(json["exit_code"], 1);
    assert_eq!(json["counts"]["unreachable"], 1);
    assert_eq!(json["report"]["results"][1]["verdict"], "failed");
    let md = markdown::render(&report());
    assert!(md.contains("| 1 | 1 | 1 | 1 | 1 | 1 | 2 |"), "{md}");
    assert!(md.contains("### `contract::a::read` — failed"), "{md}");
}

#[test]
fn every_written_file_is_redacted() {
    let redactor = crate::secret::Redactor::new();
    let _secret = redactor.register("gitea-token", "s3cr3t-value-that-leaked".into());
    // Characters every format escapes: JSON (\" \\), XML (&<>'"), Markdown (|).
    let _escaped = redactor.register("odd-token", r#"a"b\c&d<e>f'g|h-odd-1234"#.into());
    let mut r = report();
    r.results[1].evidence.push("server echoed Authorization: Bearer s3cr3t-value-that-leaked".into());
    r.results[1].reason.push_str(" (s3cr3t-value-that-leaked)");
    r.results[1].evidence.push(r#"echoed a"b\c&d<e>f'g|h-odd-1234"#.into());
    let dir = tempfile::tempdir().unwrap();
    let outputs = crate::config::Outputs { dir: dir.path().to_path_buf(), ..Default::default() };
    let written = write_all(&r, &outputs, &redactor).unwrap();
    assert_eq!(written.len(), 3);
    for path in written {
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(!text.contains("s3cr3t-value-that-leaked"), "{} leaks the secret", path.display());
        assert!(
            !text.contains("f'g|h-odd") && !text.contains("h-odd-1234"),
            "{} leaks the escaped secret:\n{text}",
            path.display()
        );
        assert!(text.contains("«redacted:gitea-token»"), "{} lost the evidence", path.display());
    }
}

#[test]
fn markdown_says_when_the_engine_was_unstable() {
    let mut r = report();
    assert!(!markdown::render(&r).contains("engine instability observed"));
    r.results[0].transient = vec!["10.0.1.5:8000 connected once but not again".into()];
    assert!(
        markdown::render(&r)
            .contains("engine instability observed: a connect succeeded once and not again in `contract::a::tools`")
    );
}
