//! JUnit XML through quick-junit: one testsuite per family, one testcase per check.
//!
//! quick-junit escapes `<`, `&` and quotes; characters XML 1.0 cannot carry at all
//! (C0 controls, U+FFFE, U+FFFF) and those that would hide text (bidi controls) are made
//! visible escapes by [`sanitize`] first, so the file is always well-formed.

use std::collections::BTreeMap;

use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};

use super::failure::{self, EvidenceLevel};
use super::failure_text;
use crate::model::{RunReport, Verdict};
use crate::text::sanitize;

pub fn render(report: &RunReport) -> String {
    let mut junit = Report::new("cordon");
    junit.set_time(report.duration);
    let mut suites: BTreeMap<&str, TestSuite> = BTreeMap::new();
    for result in &report.results {
        let family = result.id.family.as_str();
        let reason = sanitize(&result.reason);
        let status = match result.verdict {
            Verdict::Passed => TestCaseStatus::success(),
            Verdict::Failed | Verdict::StaleBaseline => {
                non_success(NonSuccessKind::Failure, result.verdict, &reason, result)
            }
            Verdict::Unreachable => non_success(NonSuccessKind::Error, result.verdict, &reason, result),
            Verdict::Skipped | Verdict::KnownFailure => {
                let mut s = TestCaseStatus::skipped();
                s.set_type(result.verdict.as_str());
                s.set_message(match result.verdict {
                    Verdict::KnownFailure => format!("known failure: {reason}"),
                    _ => reason,
                });
                s.set_description(failure_text(result));
                s
            }
        };
        let mut case = TestCase::new(sanitize(&result.name), status);
        case.set_classname(format!("cordon.{family}"));
        case.set_time(result.duration);
        // A failure's text holds its proof; everything the check saw goes beside it.
        if !result.evidence.is_empty() && !matches!(result.verdict, Verdict::Skipped | Verdict::KnownFailure) {
            let lines: Vec<String> = result.evidence.iter().map(|l| sanitize(l)).collect();
            case.set_system_out(lines.join("\n"));
        }
        suites.entry(family).or_insert_with(|| TestSuite::new(family)).add_test_case(case);
    }
    // Every suite says which cordon, scenario, suite and engine judged it (CI dashboards
    // show suite properties; the report itself has none in the JUnit schema).
    let provenance = report.provenance.pairs(report.mode);
    for suite in suites.values_mut() {
        suite.add_properties(provenance.iter().map(|(k, v)| quick_junit::Property::new(*k, sanitize(v))));
    }
    junit.add_test_suites(suites.into_values());
    junit.to_string().expect("quick-junit serializes any report")
}

/// A failure or error: the one-line reason as its message, the broken rules and the
/// evidence that proves them as its text.
fn non_success(
    kind: NonSuccessKind,
    verdict: Verdict,
    message: &str,
    result: &crate::model::CheckResult,
) -> TestCaseStatus {
    let mut s = TestCaseStatus::non_success(kind);
    s.set_type(verdict.as_str());
    s.set_message(message);
    s.set_description(failure::text(result, EvidenceLevel::Proof, None));
    s
}
