//! A failure as a person reads it first: the reason, one line per broken rule, then only
//! the evidence that proves it (the exchanges or connects that broke the rule, five at
//! most) and where the probe ran. Everything else a check saw stays in report.json, the
//! HTML report and `cordon explain`; `--verbose` asks for all of it here too.
//!
//! Shared by the console (under `---- <check> ----`) and JUnit (a `<failure>`'s text).

use crate::model::{CheckResult, Verdict, told_once};
use crate::text::sanitize;

/// How much of a check's evidence a failure shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum EvidenceLevel {
    /// The reason, the evidence that proves it and where the probe ran.
    #[default]
    Proof,
    /// The reason and every line of evidence, in the order the check recorded them.
    All,
}

/// Broken rules shown one a line before the rest are counted.
const MAX_RULES: usize = 5;
/// Proving lines shown before the rest are counted ("and N more like it").
const MAX_PROOF: usize = 5;

/// Where evidence lines that say where a check probed from begin (`probed from webui …`).
const PROBED_FROM: &str = "probed from ";

/// The lines of a failure's text, without the check's name. `width` cuts each evidence
/// line to a terminal's width (see [`fit`]).
pub fn lines(r: &CheckResult, level: EvidenceLevel, width: Option<usize>) -> Vec<String> {
    let cut = |line: &str| match width {
        Some(w) => fit(&sanitize(line), w.saturating_sub(2)),
        None => sanitize(line),
    };
    let mut out = Vec::new();
    if level == EvidenceLevel::All {
        out.push(sanitize(&r.reason));
        out.extend(r.evidence.iter().map(|l| format!("  {}", cut(l))));
        return out;
    }
    out.extend(rules(r));
    let proof = proof(r);
    let shown = proof.len().min(MAX_PROOF);
    out.extend(proof[..shown].iter().map(|l| format!("  {}", cut(l))));
    if proof.len() > shown {
        out.push(format!("  … and {} more like it", proof.len() - shown));
    }
    let places: Vec<&String> = r.evidence.iter().filter(|l| l.starts_with(PROBED_FROM)).collect();
    if let Some(first) = places.first() {
        let more = match places.len() {
            1 => String::new(),
            n => format!(" (and {} more position(s))", n - 1),
        };
        out.push(format!("  {}{more}", cut(first)));
    }
    if r.evidence.len() > places.len().min(1) + shown {
        out.push(format!(
            "  (all {} evidence line(s): report.json, `cordon explain {}`, or --verbose)",
            r.evidence.len(),
            r.name
        ));
    }
    out
}

/// The failure's text as one string (the lines joined), for JUnit and the console.
pub fn text(r: &CheckResult, level: EvidenceLevel, width: Option<usize>) -> String {
    lines(r, level, width).join("\n")
}

/// The reason on one line, for a list of failures: every broken rule, `; `-separated.
pub fn one_line(r: &CheckResult) -> String {
    sanitize(&r.reason)
}

/// One line per broken rule (each finding's sentence); a result with no findings (not
/// ready at the deadline, a stale baseline) has its reason as its one line.
fn rules(r: &CheckResult) -> Vec<String> {
    if r.findings.is_empty() || r.verdict != Verdict::Failed {
        return vec![sanitize(&r.reason)];
    }
    let mut out: Vec<String> = Vec::new();
    // Bearers that got the same answer at the same entry point: one line.
    for f in &told_once(&r.findings, "bearer", "bearer_short") {
        let line = sanitize(&f.sentence());
        if !out.contains(&line) {
            out.push(line);
        }
    }
    if out.len() > MAX_RULES + 1 {
        let more = out.len() - MAX_RULES;
        out.truncate(MAX_RULES);
        out.push(format!("… and {more} more broken rule(s) (the one-line reason in the summary below names them all)"));
    }
    out
}

/// The evidence that proves the failure: what its findings name as their proof, the
/// first line of each finding first (so the lines shown cover every broken rule before
/// a second example of one); for a check not ready at the deadline, its last evidence.
fn proof(r: &CheckResult) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let told = told_once(&r.findings, "bearer", "bearer_short");
    let deepest = told.iter().map(|f| f.proof.len()).max().unwrap_or(0);
    for i in 0..deepest {
        for line in told.iter().filter_map(|f| f.proof.get(i)) {
            if !out.contains(line) {
                out.push(line.clone());
            }
        }
    }
    if out.is_empty() && r.verdict == Verdict::Unreachable {
        out = r.evidence.iter().filter(|l| !l.starts_with(PROBED_FROM)).cloned().collect();
        let skip = out.len().saturating_sub(MAX_PROOF);
        out.drain(..skip);
    }
    out
}

/// `line` cut to `width` characters, at a word's end: a value that looks like a token is
/// left out whole rather than cut part-way, and "…" says something was cut. What a line
/// starts with (the ask, the status, the rule) stays; the body, last, goes first.
pub fn fit(line: &str, width: usize) -> String {
    if line.chars().count() <= width {
        return line.to_string();
    }
    let room = width.saturating_sub(1);
    let chars: Vec<char> = line.chars().collect();
    // The last place within `room` where a word ends: before a space or a separator.
    let mut cut = 0;
    for i in 1..=room.min(chars.len()) {
        let ends_word = chars.get(i).is_none_or(|c| c.is_whitespace() || ",;()[]{}\"'".contains(*c));
        if ends_word {
            cut = i;
        }
    }
    let kept: String = chars[..cut].iter().collect();
    format!("{}…", kept.trim_end())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Family;
    use crate::model::{CheckName, Finding, FindingKind};

    fn failed(findings: Vec<Finding>, evidence: &[&str]) -> CheckResult {
        let name = CheckName::of_provider(Family::Contract, "native", Some("foreign_bearer"));
        let mut r = CheckResult::new(&name, Verdict::Failed, crate::model::reason_of(&findings));
        r.findings = findings;
        r.evidence = evidence.iter().map(|s| s.to_string()).collect();
        r
    }

    #[test]
    fn a_failure_shows_its_rules_their_proof_and_where_it_ran() {
        let r = failed(
            vec![
                Finding::new(FindingKind::NotRefused, "{bearer} was not refused: {entry} answered 200")
                    .fact("bearer", "no bearer")
                    .fact("entry", "POST initialize")
                    .proven_by("no bearer, POST initialize → 200"),
            ],
            &[
                "probed from client webui (c1) by setns",
                "valid bearer, POST initialize → 200",
                "no bearer, GET sse → 405",
                "no bearer, POST initialize → 200",
            ],
        );
        assert_eq!(
            lines(&r, EvidenceLevel::Proof, None),
            [
                "no bearer was not refused: POST initialize answered 200",
                "  no bearer, POST initialize → 200",
                "  probed from client webui (c1) by setns",
                "  (all 4 evidence line(s): report.json, `cordon explain contract::native::foreign_bearer`, or --verbose)",
            ]
        );
        let all = lines(&r, EvidenceLevel::All, None);
        assert_eq!(all.len(), 5, "{all:#?}");
        assert_eq!(all[2], "  valid bearer, POST initialize → 200");
    }

    #[test]
    fn many_proving_lines_and_rules_are_counted_not_listed() {
        let findings: Vec<Finding> = (0..9)
            .map(|i| {
                Finding::new(FindingKind::LateralReach, "{addr} answered")
                    .fact("addr", format!("10.0.0.{i}:80"))
                    .proven_by(format!("connect 10.0.0.{i}:80: open"))
            })
            .collect();
        let r = failed(findings, &[]);
        let got = lines(&r, EvidenceLevel::Proof, None);
        assert_eq!(got.len(), 12, "{got:#?}");
        assert_eq!(got[5], "… and 4 more broken rule(s) (the one-line reason in the summary below names them all)");
        assert_eq!(got[11], "  … and 4 more like it");
    }

    #[test]
    fn a_line_is_cut_at_a_word_never_inside_a_token() {
        let token = "eyJhbGciOiJIUzI1NiJ9abcdefghijklmnopqrstuvwxyz0123456789";
        let line = format!("POST initialize → 200, body {{\"token\": \"{token}\"}}");
        let cut = fit(&line, 50);
        assert!(cut.chars().count() <= 50, "{cut}");
        assert!(cut.starts_with("POST initialize → 200"), "{cut}");
        assert!(!cut.contains("eyJ"), "a token was cut part-way: {cut}");
        assert!(cut.ends_with('…'), "{cut}");
        assert_eq!(fit("short", 50), "short");
    }
}
