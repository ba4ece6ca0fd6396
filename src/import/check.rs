//! `--check`: is a checked-in scenario still what the metadata gives? A unified diff
//! (existing file → freshly generated) when not, so CI shows exactly what drifted.

use std::path::Path;

use crate::config::ConfigError;
use crate::config::error::read_file;

/// `None` when `path` holds exactly `generated`; otherwise the diff, lines made safe to
/// print.
pub fn drift(path: &Path, generated: &str) -> Result<Option<String>, ConfigError> {
    let existing = read_file(path)?;
    if existing == generated || same_meaning(&existing, generated) {
        return Ok(None);
    }
    let shown = path.display().to_string();
    let diff = similar::TextDiff::from_lines(existing.as_str(), generated)
        .unified_diff()
        .context_radius(3)
        .header(&shown, "generated from the role metadata")
        .to_string();
    let safe: Vec<String> = diff.lines().map(crate::text::sanitize).collect();
    Ok(Some(safe.join("\n")))
}

/// Whether two scenarios say the same: the same mappings, and lists with the same items
/// in any order (every list of a scenario is a set: tools, consumers, networks, ports).
/// Comments and layout are not compared.
fn same_meaning(a: &str, b: &str) -> bool {
    let parse = |t: &str| serde_saphyr::from_str::<serde_json::Value>(t).ok().map(unordered);
    matches!((parse(a), parse(b)), (Some(x), Some(y)) if x == y)
}

fn unordered(v: serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match v {
        Value::Array(items) => {
            let mut items: Vec<Value> = items.into_iter().map(unordered).collect();
            items.sort_by_key(|i| i.to_string());
            Value::Array(items)
        }
        Value::Object(map) => Value::Object(map.into_iter().map(|(k, v)| (k, unordered(v))).collect()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_changed_line_is_shown_in_context() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.yaml");
        std::fs::write(&path, "a: 1\nb: 2\nc: 3\n").unwrap();
        assert_eq!(drift(&path, "a: 1\nb: 2\nc: 3\n").unwrap(), None);
        let diff = drift(&path, "a: 1\nb: 5\nc: 3\n").unwrap().unwrap();
        assert!(diff.contains("-b: 2") && diff.contains("+b: 5") && diff.contains(" a: 1"), "{diff}");
        assert!(diff.contains("generated from the role metadata"), "{diff}");
        // Reordered lists and mappings, other comments: the same scenario.
        std::fs::write(&path, "# mine\nb: [y, x]\na: { d: 1, c: [2, 1] }\n").unwrap();
        assert_eq!(drift(&path, "a:\n  c: [1, 2]\n  d: 1\nb:\n  - x\n  - y\n").unwrap(), None);
        assert!(drift(&path, "a: { d: 1, c: [1, 3] }\nb: [x, y]\n").unwrap().is_some(), "a changed item is drift");
        let missing = drift(&dir.path().join("nope.yaml"), "").unwrap_err().to_string();
        assert!(missing.contains("nope.yaml") && missing.contains("cannot read"), "{missing}");
    }
}
