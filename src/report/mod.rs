//! Reporters: each reads a finished [`RunReport`] and writes one format. None of them
//! probes, retries or decides; every byte they emit passes through the redactor, and
//! every string they take from the report through [`crate::text::sanitize`] and then
//! their own sink's escaping (XML, JSON, Markdown, the console's line structure).
pub mod console;
pub mod escape;
pub mod failure;
pub mod html;
pub mod job_summary;
pub mod json;
pub mod junit;
pub mod live;
pub mod markdown;
pub mod since;

use std::path::{Path, PathBuf};

use crate::compare::Since;
use crate::config::Outputs;
use crate::model::{CheckResult, RunReport};
use crate::secret::Redactor;
use crate::text::sanitize;

/// The failure text of one check: the reason, then one indented evidence line each.
/// Each part is sanitized, so the only line breaks are these.
pub fn failure_text(result: &CheckResult) -> String {
    let mut text = sanitize(&result.reason);
    for line in &result.evidence {
        text.push_str("\n  ");
        text.push_str(&sanitize(line));
    }
    text
}

pub fn write_redacted(path: &Path, text: &str, redactor: &Redactor) -> std::io::Result<()> {
    let base = path.ancestors().skip(1).find(|a| a.is_dir()).map(Path::to_path_buf);
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(path, redactor.redact(text))?;
    if let Some(base) = base {
        owned_like(&base, path);
    }
    Ok(())
}

/// What cordon writes (the file, and the directories made for it under `base`) takes the
/// owner of `base`: run as root in a container on a CI runner, it would otherwise leave
/// root-owned reports in the workspace that the runner's next checkout cannot clean.
/// Best effort: where cordon may not give files away (not root), they stay its own.
fn owned_like(base: &Path, path: &Path) {
    use std::os::unix::fs::MetadataExt;
    let Ok(owner) = std::fs::metadata(base) else { return };
    let mine = std::fs::metadata(path).map(|m| (m.uid(), m.gid())).ok();
    if mine == Some((owner.uid(), owner.gid())) {
        return;
    }
    let made = path.ancestors().take_while(|a| *a != base).filter(|a| !a.as_os_str().is_empty());
    for p in made {
        // lchown: a link in the way is given away itself, never what it points at.
        let _ = std::os::unix::fs::lchown(p, Some(owner.uid()), Some(owner.gid()));
    }
}

/// One string for any sink: redacted, then with every control, bidi and non-character
/// shown as a visible escape, so it stays on one line and cannot forge or hide output.
pub fn clean(text: &str, redactor: &Redactor) -> String {
    sanitize(&redactor.redact(text))
}

/// A copy of the report with every text redacted and sanitized, whatever its origin
/// (network, scenario file, our own messages). Redacting before rendering matters:
/// JSON, XML and Markdown escape characters, and an escaped secret no longer matches.
/// Each reporter still sanitizes what it writes, so a report that skipped this step
/// cannot forge a line either.
pub fn redacted(report: &RunReport, redactor: &Redactor) -> RunReport {
    let scrub = |s: &mut String| *s = clean(s, redactor);
    let mut copy = report.clone();
    scrub(&mut copy.scenario);
    scrub(&mut copy.suite);
    copy.results = copy.results.iter().map(|r| redacted_result(r, redactor)).collect();
    copy
}

/// A copy of one result with every text redacted and sanitized, as [`redacted`] does.
pub fn redacted_result(result: &CheckResult, redactor: &Redactor) -> CheckResult {
    let scrub = |s: &mut String| *s = clean(s, redactor);
    let mut r = result.clone();
    scrub(&mut r.name);
    scrub(&mut r.reason);
    scrub(&mut r.id.subject);
    r.id.aspect.iter_mut().chain(r.id.client.iter_mut()).chain(r.id.provider.iter_mut()).for_each(scrub);
    r.evidence.iter_mut().chain(r.transient.iter_mut()).for_each(scrub);
    r.findings = std::mem::take(&mut r.findings).into_iter().map(|f| f.scrubbed(|s| clean(s, redactor))).collect();
    r
}

/// Writes JUnit, JSON, Markdown and the HTML report, each with the "since last run"
/// section when `--compare` asked for one; returns the paths written.
pub fn write_all(
    report: &RunReport,
    outputs: &Outputs,
    redactor: &Redactor,
    since: Option<&Since>,
) -> std::io::Result<Vec<PathBuf>> {
    let report = &redacted(report, redactor);
    let files = [
        (outputs.junit_path(), junit::render(report)),
        (outputs.json_path(), json::render_since(report, since)),
        (outputs.markdown_path(), markdown::render_since(report, &outputs.html, since)),
        (outputs.html_path(), html::render_since(report, since)),
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
