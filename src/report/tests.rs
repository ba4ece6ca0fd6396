//! Reporters render every verdict class apart and never leak a secret.

use std::time::{Duration, SystemTime};

use super::*;
use crate::config::{Family, Mode};
use crate::model::{CheckName, CheckResult, Finding, FindingKind, RunReport, Verdict};
use crate::secret::Redactor;
use failure::EvidenceLevel;

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
        cost: Default::default(),
        provenance: Default::default(),
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
    let md = markdown::render(&report(), "report.html");
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
    let written = write_all(&r, &outputs, &redactor, None).unwrap();
    assert_eq!(written.len(), 4, "junit, json, markdown, html");
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

/// Names, reasons and evidence as a hostile server or file could make them.
const HOSTILE: &[&str] = &[
    "add\ntest FAKE ... ok",
    "x\r\ntest FAKE-CR ... ok\r",
    "\u{1b}[2K\u{1b}[1Gtest FAKE-ESC ... ok",
    "evil\u{202e}kcatta\u{2066}",
    "bad\u{fffe}xml\u{ffff}\u{fdd0}\u{1fffe}\u{0}\u{7}\u{85}\u{7f}",
    "```\n# Injected heading\n| forged | row | here |",
    "`````",
    "]]><!-- <script>alert(1)</script> &amp; &#0;",
    "a|b|c\\|d",
    "line\u{2028}separator",
];

fn hostile_report() -> RunReport {
    let mut r = report();
    r.scenario = HOSTILE[5].into();
    r.suite = HOSTILE[0].into();
    for (i, result) in r.results.iter_mut().enumerate() {
        let h = HOSTILE[i % HOSTILE.len()];
        result.name = format!("contract::{h}::{i}");
        result.reason = format!("tool {h} is not allowlisted");
        result.evidence = HOSTILE.iter().map(|h| format!("served: {h}")).collect();
        result.transient = vec![h.to_string()];
        result.id.client = Some(h.into());
        result.findings = vec![Finding::new(FindingKind::ToolsDisclosed, "{hostile}").fact("hostile", h).fact(h, h)];
    }
    r
}

fn raw_dangerous(text: &str) -> Vec<char> {
    text.chars().filter(|c| *c != '\n' && crate::text::is_dangerous(*c)).collect()
}

#[test]
fn junit_is_well_formed_and_shows_every_character() {
    let report = redacted(&hostile_report(), &Redactor::new());
    let xml = junit::render(&report);
    assert_eq!(raw_dangerous(&xml), [] as [char; 0], "{xml}");
    let doc = roxmltree::Document::parse(&xml).unwrap_or_else(|e| panic!("{e}\n{xml}"));
    let cases: Vec<_> = doc.descendants().filter(|n| n.has_tag_name("testcase")).collect();
    assert_eq!(cases.len(), 6);
    assert_eq!(cases[0].attribute("name"), Some("contract::add\\ntest FAKE ... ok::0"));
    // Even a report that skipped `redacted` renders well-formed XML.
    let xml = junit::render(&hostile_report());
    roxmltree::Document::parse(&xml).unwrap_or_else(|e| panic!("{e}\n{xml}"));
    assert_eq!(raw_dangerous(&xml), [] as [char; 0]);
}

#[test]
fn json_is_valid_with_no_raw_control_character() {
    for report in [hostile_report(), redacted(&hostile_report(), &Redactor::new())] {
        let text = json::render(&report);
        assert_eq!(raw_dangerous(&text), [] as [char; 0], "{text}");
        let value: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(value["report"]["results"][0]["name"], "contract::add\\ntest FAKE ... ok::0");
        let facts = &value["report"]["results"][1]["findings"][0]["facts"];
        assert_eq!(facts["x\\r\\ntest FAKE-CR ... ok\\r"], "x\\r\\ntest FAKE-CR ... ok\\r", "{facts}");
    }
}

/// Lines outside fenced blocks, and whether every fence closed.
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

/// `|` that split table cells: not backslash-escaped.
fn cell_separators(line: &str) -> usize {
    let bytes = line.as_bytes();
    (0..bytes.len()).filter(|&i| bytes[i] == b'|' && (i == 0 || bytes[i - 1] != b'\\')).count()
}

#[test]
fn markdown_keeps_names_in_spans_and_evidence_in_fences() {
    for report in [hostile_report(), redacted(&hostile_report(), &Redactor::new())] {
        let md = markdown::render(&report, "report.html");
        assert_eq!(raw_dangerous(&md), [] as [char; 0], "{md}");
        let (outside, closed) = outside_fences(&md);
        assert!(closed, "a fence is left open:\n{md}");
        let headings: Vec<_> = outside.iter().filter(|l| l.starts_with('#')).collect();
        assert_eq!(headings.len(), 2 + 4, "only our headings (title, Evidence, 4 troubled checks):\n{md}");
        assert!(headings.iter().all(|h| h.starts_with("# cordon:") || *h == &"## Evidence" || h.starts_with("### `")));
        for row in outside.iter().filter(|l| l.starts_with('|')) {
            assert!([4, 8].contains(&cell_separators(row)), "a cell was split: {row}\n{md}");
        }
        assert!(md.contains("### ````contract::```\\n# Injected heading\\n| forged"), "{md}");
    }
}

#[test]
fn console_prints_one_line_per_check_and_the_real_duration() {
    use libtest_mimic::FormatSetting;
    let style = console_style(FormatSetting::Pretty, EvidenceLevel::All);
    let text = console::render(&hostile_report(), 2, style);
    assert_eq!(raw_dangerous(&text), [] as [char; 0], "{text}");
    let test_lines: Vec<_> = text.lines().filter(|l| l.starts_with("test ")).collect();
    assert_eq!(test_lines.len(), 6 + 1, "six checks and the result line:\n{text}");
    assert!(!text.lines().any(|l| l.starts_with("test FAKE")), "{text}");
    assert!(text.contains("finished in 1.00s"), "the run's duration, not the replay's: {text}");
    assert!(text.contains("2 filtered out"), "{text}");

    let text = console::render(&report(), 0, style);
    assert!(text.contains("test                  contract::a::tools          ... ok\n"), "{text}");
    assert!(
        text.contains("test [skipped]        contract::a::foreign_bearer ... ignored (no other provider)"),
        "{text}"
    );
    assert!(text.contains("---- contract::a::read ----\nread tool `add` returned isError: true\n  result:"), "{text}");
    assert!(text.contains("test result: FAILED. 1 passed; 3 failed; 2 ignored; 0 measured; 0 filtered out"), "{text}");

    let json_style = console_style(FormatSetting::Json, EvidenceLevel::All);
    let text = console::render(&hostile_report(), 0, json_style);
    assert_eq!(raw_dangerous(&text), [] as [char; 0], "{text}");
    for line in text.lines() {
        let event: serde_json::Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
        if event["type"] == "suite" && event["event"] != "started" {
            assert_eq!(event["exec_time"], 1.0);
        }
    }
    let terse = console::render(&report(), 0, console_style(FormatSetting::Terse, EvidenceLevel::Proof));
    assert!(terse.contains("\n.FFiiF\n"), "{terse}");
}

fn console_style(format: libtest_mimic::FormatSetting, evidence: EvidenceLevel) -> console::Style {
    console::Style { format, color: false, evidence, width: None }
}

#[test]
fn by_default_a_failure_shows_its_reason_and_proof_and_the_summary_names_each_reason() {
    use libtest_mimic::FormatSetting;
    let mut r = report();
    let finding = Finding::new(FindingKind::ReadFailed, "read tool `{tool}` returned isError: true")
        .fact("tool", "add")
        .proven_by("result: {\"isError\":true}");
    r.results[1].findings = vec![finding];
    r.results[1].evidence = vec![
        "probed from client webui (c1) by setns".into(),
        "session: initialize → 200".into(),
        "result: {\"isError\":true}".into(),
    ];
    let text = console::render(&r, 0, console_style(FormatSetting::Pretty, EvidenceLevel::Proof));
    let block = "---- contract::a::read ----\nread tool `add` returned isError: true\n  result: {\"isError\":true}\n  \
                 probed from client webui (c1) by setns\n  (all 3 evidence line(s): report.json, `cordon explain contract::a::read`, or --verbose)\n\n";
    assert!(text.contains(block), "{text}");
    assert!(!text.contains("session: initialize"), "{text}");
    assert!(text.contains("\nfailures:\n    contract::a::read: read tool `add` returned isError: true\n"), "{text}");
    assert!(text.contains("    contract::a::anonymous: still not ready\n"), "{text}");
    let all = console::render(&r, 0, console_style(FormatSetting::Pretty, EvidenceLevel::All));
    assert!(all.contains("  session: initialize → 200\n"), "{all}");
}

#[test]
fn junit_gives_the_reason_as_message_the_proof_as_text_and_the_rest_beside() {
    let mut r = report();
    r.results[1].findings =
        vec![Finding::new(FindingKind::ReadFailed, "read tool `add` returned isError: true").proven_by("result: bad")];
    r.results[1].evidence = vec!["session: initialize → 200".into(), "result: bad".into()];
    let xml = junit::render(&r);
    let case = xml.split("<testcase ").find(|c| c.contains("contract::a::read")).unwrap();
    assert!(case.contains("returned isError: true\n  result: bad"), "{case}");
    assert!(case.contains("<system-out>session: initialize → 200\nresult: bad</system-out>"), "{case}");
}

#[test]
fn markdown_says_when_the_engine_was_unstable() {
    let mut r = report();
    assert!(!markdown::render(&r, "report.html").contains("engine instability observed"));
    r.results[0].transient = vec!["10.0.1.5:8000 connected once but not again".into()];
    assert!(markdown::render(&r, "report.html").contains("engine instability observed: 1 check(s)"));
}

#[test]
fn a_report_takes_the_owner_of_the_directory_it_is_written_under() {
    use std::os::unix::fs::MetadataExt;
    let dir = tempfile::tempdir().unwrap();
    let runner = 4242;
    let given = std::os::unix::fs::chown(dir.path(), Some(runner), Some(runner)).is_ok();
    let path = dir.path().join("results/family/junit.xml");
    super::write_redacted(&path, "<testsuites/>", &crate::secret::Redactor::new()).unwrap();
    if given {
        // Root (a container on a CI runner): the file and the directories made for it
        // are the workspace owner's, so the runner's next checkout can clean them.
        for p in [&path, &dir.path().join("results/family"), &dir.path().join("results")] {
            assert_eq!(std::fs::metadata(p).unwrap().uid(), runner, "{}", p.display());
        }
    }
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "<testsuites/>");
}

#[test]
fn every_report_records_which_cordon_scenario_suite_and_engine_judged() {
    let mut r = report();
    r.provenance = crate::model::Provenance {
        cordon_version: "0.1.0".into(),
        cordon_commit: "abc1234".into(),
        scenario_sha256: format!("sha256:{}", "1".repeat(64)),
        suite_sha256: format!("sha256:{}", "2".repeat(64)),
        engine: "Docker Engine 26.1.5 (API 1.45, linux/amd64)".into(),
    };
    let junit = super::junit::render(&r);
    for (k, v) in [
        ("cordon.version", "0.1.0"),
        ("cordon.commit", "abc1234"),
        ("engine", "Docker Engine 26.1.5 (API 1.45, linux/amd64)"),
        ("mode", "host"),
    ] {
        assert!(junit.contains(&format!("<property name=\"{k}\" value=\"{v}\"/>")), "{k}: {junit}");
    }
    assert!(junit.contains(&format!("<property name=\"scenario.sha256\" value=\"sha256:{}\"/>", "1".repeat(64))));
    let md = super::markdown::render(&r, "report.html");
    assert!(md.contains("Run by cordon.version `0.1.0`, cordon.commit `abc1234`, scenario.sha256 `sha256:111"), "{md}");
    let html = super::html::render(&r);
    assert!(
        html.contains("<footer><p>run by cordon.version 0.1.0, cordon.commit abc1234, scenario.sha256 sha256:111"),
        "{html}"
    );
    let json: serde_json::Value = serde_json::from_str(&serde_json::to_string(&r).unwrap()).unwrap();
    assert_eq!(json["provenance"]["cordon_commit"], "abc1234");
    assert_eq!(json["provenance"]["suite_sha256"], format!("sha256:{}", "2".repeat(64)));
}

#[test]
fn the_html_report_leads_with_what_failed_and_folds_what_passed() {
    let mut r = report();
    r.results[1].findings.push(
        crate::model::Finding::new(crate::model::FindingKind::ReadFailed, "read tool `add` returned isError: true")
            .proven_by("result: {\"isError\":true}"),
    );
    let html = super::html::render(&r);
    let order: Vec<&str> = html
        .split("<tr class=\"check\" ")
        .skip(1)
        .map(|row| row.split("data-verdict=\"").nth(1).unwrap().split('"').next().unwrap())
        .collect();
    assert_eq!(order, ["failed", "stale_baseline", "unreachable", "known_failure", "skipped", "passed"], "{html}");
    let row = |name: &str| html.split("<tr class=\"check\" ").find(|r| r.contains(name)).unwrap().to_string();
    let failed = row("contract::a::read");
    assert!(
        failed.contains("<pre class=\"proof\">") && failed.contains("result: {&quot;isError&quot;:true}"),
        "{failed}"
    );
    // An unreachable check without findings shows what it saw, unfolded.
    assert!(row("contract::a::anonymous").contains("<details open><summary>evidence (1 line(s))"), "{html}");
    let passed = row("contract::a::tools");
    assert!(
        passed.contains("<details><summary>evidence (1 line(s))</summary>") && !passed.contains("proof"),
        "{passed}"
    );
}
