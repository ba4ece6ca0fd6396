//! `--check`: is a checked-in scenario still what the metadata gives? A unified diff
//! (existing file → freshly generated) when not, so CI shows exactly what drifted.

use std::path::Path;

use crate::config::ConfigError;
use crate::config::error::read_file;

/// `None` when `path` holds exactly `generated`; otherwise the diff, lines made safe to
/// print.
pub fn drift(path: &Path, generated: &str) -> Result<Option<String>, ConfigError> {
    let existing = read_file(path)?;
    if existing == generated {
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
        let missing = drift(&dir.path().join("nope.yaml"), "").unwrap_err().to_string();
        assert!(missing.contains("nope.yaml") && missing.contains("cannot read"), "{missing}");
    }
}
