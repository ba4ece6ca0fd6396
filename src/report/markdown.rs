//! A Markdown summary for a CI job summary page.
//!
//! Nothing from the report reaches the page as Markdown: names are code spans whose
//! backtick fence is longer than any run in the name, reasons are text with every
//! character that Markdown or GitHub gives a meaning backslash-escaped, table cells
//! escape `|`, and evidence sits in a fenced block whose fence is longer than any
//! backtick run inside. All of it is sanitized first, so no line break can end a cell,
//! a span or a block early.

use std::fmt::Write;

use super::escape::longest_backtick_run;
pub use super::escape::{code_span, text};
use crate::exit::Ending;
use crate::matrix::Matrix;
use crate::model::{RunReport, Verdict};
use crate::text::sanitize;

/// The summary; `html` is the HTML report's name, which the matrix section links.
#[cfg(test)]
pub fn render(report: &RunReport, html: &str) -> String {
    render_since(report, html, None)
}

/// [`render`], with the "since last run" section (`--compare`) below the counts.
pub fn render_since(report: &RunReport, html: &str, since: Option<&crate::compare::Since>) -> String {
    let c = report.counts();
    let mut md = String::new();
    let status = match report.ending() {
        Ending::Passed => "✅ all checks hold",
        Ending::ChecksFailed => "❌ contract violated",
        Ending::Infrastructure | Ending::Usage | Ending::Interrupted => "⚠️ infrastructure error",
    };
    let _ = writeln!(md, "# cordon: {status}\n");
    let _ = writeln!(
        md,
        "Scenario {}, suite {}, mode `{:?}`, {:.1}s.\n",
        code_span(&report.scenario),
        code_span(&report.suite),
        report.mode,
        report.duration.as_secs_f64()
    );
    let provenance = report.provenance.pairs(report.mode);
    if !provenance.is_empty() {
        let shown: Vec<String> = provenance.iter().map(|(k, v)| format!("{k} {}", code_span(v))).collect();
        let _ = writeln!(md, "Run by {}.\n", shown.join(", "));
    }
    let _ =
        writeln!(md, "| passed | failed | unreachable | skipped | known failures | stale baseline | filtered out |");
    let _ = writeln!(md, "|---|---|---|---|---|---|---|");
    let _ = writeln!(
        md,
        "| {} | {} | {} | {} | {} | {} | {} |\n",
        c.passed, c.failed, c.unreachable, c.skipped, c.known_failures, c.stale_baseline, report.filtered_out
    );
    if let Some(since) = since {
        md.push_str(&super::since::markdown(since));
    }
    if !report.instability().is_empty() {
        let _ = writeln!(
            md,
            "⚠️ engine instability observed: {} check(s) saw a connect get through once and never again (recorded, not judged).\n",
            report.instability().len()
        );
    }
    md.push_str(&matrix_section(report, html));
    let _ = writeln!(md, "| check | verdict | reason |");
    let _ = writeln!(md, "|---|---|---|");
    for r in &report.results {
        let mark = match r.verdict {
            Verdict::Passed => "✅",
            Verdict::Failed | Verdict::StaleBaseline => "❌",
            Verdict::Unreachable => "⚠️",
            Verdict::Skipped | Verdict::KnownFailure => "➖",
        };
        let _ = writeln!(md, "| {} | {mark} {} | {} |", cell(&code_span(&r.name)), r.verdict.as_str(), text(&r.reason));
    }
    md.push_str(&evidence_section(report));
    md
}

/// The reach matrix as a table: clients by row, providers by column.
fn matrix_section(report: &RunReport, html: &str) -> String {
    let mut md = String::new();
    let matrix = Matrix::from_report(report);
    if !matrix.is_empty() {
        let _ = writeln!(md, "## Reach matrix\n");
        let _ = writeln!(md, "Clients by row, providers by column; the picture is in [{0}]({0}).\n", text(html));
        let heads: Vec<String> = matrix
            .columns
            .iter()
            .map(|c| {
                let mark = match c.disabled {
                    Some(Verdict::Passed) => " (disabled, dark)",
                    Some(Verdict::Failed | Verdict::KnownFailure) => " (disabled, NOT dark)",
                    Some(_) => " (disabled)",
                    None => "",
                };
                cell(&format!("{}{}", code_span(&c.title()), text(mark)))
            })
            .collect();
        let _ = writeln!(md, "| client | {} |", heads.join(" | "));
        let _ = writeln!(md, "|---|{}", "---|".repeat(heads.len()));
        for client in &matrix.clients {
            let cells: Vec<String> = matrix
                .columns
                .iter()
                .map(|col| match matrix.cell(client, col) {
                    Some(c @ crate::matrix::Cell::Leak { doors }) => {
                        format!("🔴 {} {}", c.label(), text(&doors.join(", ")))
                    }
                    Some(c @ crate::matrix::Cell::Working) => format!("🟢 {}", c.label()),
                    Some(c @ crate::matrix::Cell::Broken { .. }) => format!("🟠 {}", c.label()),
                    Some(c @ crate::matrix::Cell::CouldNotJudge { .. }) => format!("🟡 {}", c.label()),
                    Some(c @ crate::matrix::Cell::Isolated) => format!("⚪ {}", c.label()),
                    Some(c) => format!("➖ {}", c.label()),
                    None => "·".into(),
                })
                .collect();
            let _ = writeln!(md, "| {} | {} |", cell(&code_span(client)), cells.join(" | "));
        }
        let _ = writeln!(md);
    }
    md
}

/// The evidence of every check that did not pass or skip.
fn evidence_section(report: &RunReport) -> String {
    let mut md = String::new();
    let troubled: Vec<_> =
        report.results.iter().filter(|r| !matches!(r.verdict, Verdict::Passed | Verdict::Skipped)).collect();
    if !troubled.is_empty() {
        let _ = writeln!(md, "\n## Evidence\n");
        for r in troubled {
            let _ = writeln!(md, "### {} — {}\n", code_span(&r.name), r.verdict.as_str());
            let _ = writeln!(md, "Reason: {}\n", text(&r.reason));
            let lines: Vec<String> = r.evidence.iter().map(|l| sanitize(l)).collect();
            let fence = fence_for(&lines.join("\n"));
            let _ = writeln!(md, "{fence}text");
            for line in &lines {
                let _ = writeln!(md, "{line}");
            }
            let _ = writeln!(md, "{fence}\n");
        }
    }
    md
}

/// Inline Markdown for a table cell: a `|` splits cells even inside a code span
/// unless escaped.
fn cell(inline: &str) -> String {
    inline.replace('|', "\\|")
}

/// A code fence longer than any backtick run in `content`, so no line of it closes
/// the block.
pub fn fence_for(content: &str) -> String {
    "`".repeat((longest_backtick_run(content) + 1).max(3))
}
