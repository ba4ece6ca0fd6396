//! GitHub Actions' job summary: when `GITHUB_STEP_SUMMARY` names a file, the Markdown
//! summary cordon just wrote is appended to it, so the job page shows the verdicts and
//! the reach matrix without a step of its own. In a container the variable must be passed
//! and its file mounted (examples/ci/github-actions.yml does both).

use std::io::Write;
use std::path::{Path, PathBuf};

pub const VARIABLE: &str = "GITHUB_STEP_SUMMARY";

/// Appends `summary` (summary.md, already redacted) to the job summary, if one is set.
pub fn append(summary: &Path) -> Result<Option<PathBuf>, String> {
    let Some(target) = std::env::var_os(VARIABLE).filter(|v| !v.is_empty()).map(PathBuf::from) else {
        return Ok(None);
    };
    append_to(summary, &target).map(|()| Some(target))
}

fn append_to(summary: &Path, target: &Path) -> Result<(), String> {
    let text = std::fs::read(summary).map_err(|e| format!("cannot read {}: {e}", summary.display()))?;
    let mut file = std::fs::OpenOptions::new().append(true).open(target).map_err(|e| {
        format!(
            "{VARIABLE}={}: cannot append the summary: {e} (in a container, mount that file and pass the variable)",
            target.display()
        )
    })?;
    // A step may have written to the summary already: start on a line of our own.
    file.write_all(b"\n")
        .and_then(|()| file.write_all(&text))
        .map_err(|e| format!("{VARIABLE}={}: {e}", target.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_summary_is_appended_not_overwritten() {
        let dir = tempfile::tempdir().unwrap();
        let summary = dir.path().join("summary.md");
        std::fs::write(&summary, "# cordon: ✅ all checks hold\n").unwrap();
        let target = dir.path().join("step_summary");
        std::fs::write(&target, "earlier step\n").unwrap();
        append_to(&summary, &target).unwrap();
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "earlier step\n\n# cordon: ✅ all checks hold\n");
    }

    #[test]
    fn a_summary_file_that_is_not_there_says_how_to_fix_it() {
        let dir = tempfile::tempdir().unwrap();
        let summary = dir.path().join("summary.md");
        std::fs::write(&summary, "x").unwrap();
        let e = append_to(&summary, &dir.path().join("no/such/file")).unwrap_err();
        assert!(e.starts_with("GITHUB_STEP_SUMMARY=") && e.contains("mount that file"), "{e}");
    }
}
