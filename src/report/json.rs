//! The JSON report: the result model as is, plus the verdict counts.

use crate::model::RunReport;

pub fn render(report: &RunReport) -> String {
    let value = serde_json::json!({
        "report": report,
        "counts": report.counts(),
        "exit_code": report.exit_code(),
    });
    serde_json::to_string_pretty(&value).expect("the result model always serializes")
}
