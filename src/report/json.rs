//! The JSON report: the result model as is, plus the verdict counts. Every string, key
//! or value, is sanitized: serde_json escapes C0 controls but leaves C1, bidi controls
//! and non-characters raw.

use serde_json::Value;

use crate::model::RunReport;
use crate::text::sanitize;

#[cfg(test)]
pub fn render(report: &RunReport) -> String {
    render_since(report, None)
}

/// The report, and what changed since earlier runs (`since`, with `--compare`).
pub fn render_since(report: &RunReport, since: Option<&crate::compare::Since>) -> String {
    let mut value = serde_json::json!({
        "report": report,
        "counts": report.counts(),
        "exit_code": report.ending().exit_code(),
    });
    if let Some(since) = since {
        value["since"] = serde_json::to_value(since).expect("the comparison always serializes");
    }
    sanitize_strings(&mut value);
    serde_json::to_string_pretty(&value).expect("the result model always serializes")
}

fn sanitize_strings(value: &mut Value) {
    match value {
        Value::String(s) => *s = sanitize(s),
        Value::Array(items) => items.iter_mut().for_each(sanitize_strings),
        Value::Object(map) => {
            let entries = std::mem::take(map);
            for (key, mut v) in entries {
                sanitize_strings(&mut v);
                map.insert(sanitize(&key), v);
            }
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}
