//! A Markdown summary for a CI job summary page.

use std::fmt::Write;

use crate::model::{RunReport, Verdict};

pub fn render(report: &RunReport) -> String {
    let c = report.counts();
    let mut md = String::new();
    let status = match report.exit_code() {
        0 => "✅ all checks hold",
        1 => "❌ contract violated",
        _ => "⚠️ infrastructure error",
    };
    let _ = writeln!(md, "# cordon: {status}\n");
    let _ = writeln!(
        md,
        "Scenario `{}`, suite `{}`, mode `{:?}`, {:.1}s.\n",
        report.scenario,
        report.suite,
        report.mode,
        report.duration.as_secs_f64()
    );
    let _ =
        writeln!(md, "| passed | failed | unreachable | skipped | known failures | stale baseline | filtered out |");
    let _ = writeln!(md, "|---|---|---|---|---|---|---|");
    let _ = writeln!(
        md,
        "| {} | {} | {} | {} | {} | {} | {} |\n",
        c.passed, c.failed, c.unreachable, c.skipped, c.known_failures, c.stale_baseline, report.filtered_out
    );
    let unstable = report.instability();
    if !unstable.is_empty() {
        let names: Vec<String> = unstable.iter().map(|r| format!("`{}`", r.name)).collect();
        let _ = writeln!(
            md,
            "⚠️ engine instability observed: a connect succeeded once and not again in {} (transient, not judged).\n",
            names.join(", ")
        );
    }
    let _ = writeln!(md, "| check | verdict | reason |");
    let _ = writeln!(md, "|---|---|---|");
    for r in &report.results {
        let mark = match r.verdict {
            Verdict::Passed => "✅",
            Verdict::Failed | Verdict::StaleBaseline => "❌",
            Verdict::Unreachable => "⚠️",
            Verdict::Skipped | Verdict::KnownFailure => "➖",
        };
        let _ = writeln!(md, "| `{}` | {mark} {} | {} |", r.name, r.verdict.as_str(), cell(&r.reason));
    }
    let troubled: Vec<_> =
        report.results.iter().filter(|r| !matches!(r.verdict, Verdict::Passed | Verdict::Skipped)).collect();
    if !troubled.is_empty() {
        let _ = writeln!(md, "\n## Evidence\n");
        for r in troubled {
            let _ = writeln!(md, "### `{}` — {}\n", r.name, r.verdict.as_str());
            let _ = writeln!(md, "{}\n", r.reason);
            let _ = writeln!(md, "```");
            for line in &r.evidence {
                let _ = writeln!(md, "{line}");
            }
            let _ = writeln!(md, "```\n");
        }
    }
    md
}

fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}
