//! JUnit XML through quick-junit: one testsuite per family, one testcase per check.

use std::collections::BTreeMap;

use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};

use super::failure_text;
use crate::model::{RunReport, Verdict};

pub fn render(report: &RunReport) -> String {
    let mut junit = Report::new("cordon");
    junit.set_time(report.duration);
    let mut suites: BTreeMap<&str, TestSuite> = BTreeMap::new();
    for result in &report.results {
        let family = result.family.as_str();
        let status = match result.verdict {
            Verdict::Passed => TestCaseStatus::success(),
            Verdict::Failed | Verdict::StaleBaseline => {
                non_success(NonSuccessKind::Failure, result.verdict, &result.reason, &failure_text(result))
            }
            Verdict::Unreachable => {
                non_success(NonSuccessKind::Error, result.verdict, &result.reason, &failure_text(result))
            }
            Verdict::Skipped | Verdict::KnownFailure => {
                let mut s = TestCaseStatus::skipped();
                s.set_type(result.verdict.as_str());
                s.set_message(match result.verdict {
                    Verdict::KnownFailure => format!("known failure: {}", result.reason),
                    _ => result.reason.clone(),
                });
                s.set_description(failure_text(result));
                s
            }
        };
        let mut case = TestCase::new(result.name.clone(), status);
        case.set_classname(format!("cordon.{family}"));
        case.set_time(result.duration);
        if !result.evidence.is_empty() && result.verdict == Verdict::Passed {
            case.set_system_out(result.evidence.join("\n"));
        }
        suites.entry(family).or_insert_with(|| TestSuite::new(family)).add_test_case(case);
    }
    junit.add_test_suites(suites.into_values());
    junit.to_string().expect("quick-junit serializes any report")
}

fn non_success(kind: NonSuccessKind, verdict: Verdict, message: &str, description: &str) -> TestCaseStatus {
    let mut s = TestCaseStatus::non_success(kind);
    s.set_type(verdict.as_str());
    s.set_message(message);
    s.set_description(description);
    s
}
