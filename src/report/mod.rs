//! Reporters: each reads a finished [`RunReport`] and writes one format. None of them
//! probes, retries or decides; every byte they emit passes through the redactor.
pub mod console;
pub mod json;
pub mod junit;
pub mod markdown;

use std::path::{Path, PathBuf};

use crate::config::Outputs;
use crate::model::{CheckResult, RunReport};
use crate::secret::Redactor;

/// The failure text of one check: the reason, then one evidence line each.
pub fn failure_text(result: &CheckResult) -> String {
    let mut text = result.reason.clone();
    for line in &result.evidence {
        text.push_str("\n  ");
        text.push_str(line);
    }
    text
}

pub fn write_redacted(path: &Path, text: &str, redactor: &Redactor) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(path, redactor.redact(text))
}

/// A copy of the report with every text redacted. Redacting before rendering matters:
/// JSON, XML and Markdown escape characters, and an escaped secret no longer matches.
pub fn redacted(report: &RunReport, redactor: &Redactor) -> RunReport {
    let mut copy = report.clone();
    copy.scenario = redactor.redact(&copy.scenario);
    copy.suite = redactor.redact(&copy.suite);
    for r in &mut copy.results {
        r.name = redactor.redact(&r.name);
        r.reason = redactor.redact(&r.reason);
        for line in &mut r.evidence {
            *line = redactor.redact(line);
        }
    }
    copy
}

/// Writes JUnit, JSON and Markdown; returns the paths written.
pub fn write_all(report: &RunReport, outputs: &Outputs, redactor: &Redactor) -> std::io::Result<Vec<PathBuf>> {
    let report = &redacted(report, redactor);
    let files = [
        (outputs.junit_path(), junit::render(report)),
        (outputs.json_path(), json::render(report)),
        (outputs.markdown_path(), markdown::render(report)),
    ];
    let mut written = Vec::new();
    for (path, text) in files {
        write_redacted(&path, &text, redactor)
            .map_err(|e| std::io::Error::new(e.kind(), format!("cannot write {}: {e}", path.display())))?;
        written.push(path);
    }
    Ok(written)
}

#[cfg(test)]
mod tests;
