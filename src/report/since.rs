//! The "since last run" section (`--compare`) for the console, summary.md and
//! report.html; report.json carries [`Since`] as it is. Each renderer escapes for its own
//! sink, as the rest of its report does.

use std::fmt::Write as _;

use crate::compare::{Change, Since};
use crate::text::sanitize;

fn from(change: &Change) -> String {
    change.before.map_or("new check".to_string(), |v| v.as_str().to_string())
}

fn where_from(s: &Since) -> String {
    match &s.previous {
        Some(p) => format!("{} ({})", p.stamp, p.path),
        None => s.compared_with.clone(),
    }
}

/// Lines for the console summary.
pub fn console(s: &Since) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "since last run, {}: {}", sanitize(&where_from(s)), s.headline());
    for note in &s.notes {
        let _ = writeln!(out, "  note: {}", sanitize(note));
    }
    let lists = [("new failure", &s.new_failures), ("fixed", &s.fixed), ("still failing", &s.still_failing)];
    for (label, changes) in lists {
        for c in changes {
            let flaky = if c.flaky { " (flaky)" } else { "" };
            let _ = writeln!(out, "  {label:<13} {}{flaky}: {}", sanitize(&c.check), sanitize(&c.reason));
        }
    }
    for c in &s.other_changes {
        let _ = writeln!(out, "  {:<13} {}: {} → {}", "changed", sanitize(&c.check), from(c), c.now.as_str());
    }
    for f in &s.flaky {
        let _ =
            writeln!(out, "  {:<13} {}: {} (oldest first, {} flips)", "flaky", sanitize(&f.check), f.trail(), f.flips);
    }
    if !s.not_in_this_run.is_empty() {
        let _ = writeln!(out, "  {} check(s) of the previous run are not in this one", s.not_in_this_run.len());
    }
    out
}

/// The section of summary.md.
pub fn markdown(s: &Since) -> String {
    use super::escape::{code_span, text};
    let mut md = String::new();
    let _ = writeln!(md, "## Since last run\n");
    let _ = writeln!(md, "Compared with {}: {}.\n", code_span(&where_from(s)), text(&s.headline()));
    for note in &s.notes {
        let _ = writeln!(md, "- note: {}", text(note));
    }
    if !s.notes.is_empty() {
        let _ = writeln!(md);
    }
    let rows: Vec<(&str, &Change)> = [
        ("🆕 new failure", &s.new_failures),
        ("✅ fixed", &s.fixed),
        ("❌ still failing", &s.still_failing),
        ("↔️ changed", &s.other_changes),
    ]
    .into_iter()
    .flat_map(|(label, changes)| changes.iter().map(move |c| (label, c)))
    .collect();
    if !rows.is_empty() {
        let _ = writeln!(md, "| change | check | before → now | reason |");
        let _ = writeln!(md, "|---|---|---|---|");
        for (label, c) in rows {
            let flaky = if c.flaky { " (flaky)" } else { "" };
            let _ = writeln!(
                md,
                "| {label}{flaky} | {} | {} → {} | {} |",
                code_span(&c.check).replace('|', "\\|"),
                text(&from(c)),
                text(c.now.as_str()),
                text(&c.reason)
            );
        }
        let _ = writeln!(md);
    }
    if !s.flaky.is_empty() {
        let _ = writeln!(
            md,
            "Flaky over the last {} runs (oldest first; p passed, F failed, k known failure, u unreachable, s skipped, . absent):\n",
            s.runs_looked_at
        );
        for f in &s.flaky {
            let _ = writeln!(md, "- {}: {} ({} flips)", code_span(&f.check), code_span(&f.trail()), f.flips);
        }
        let _ = writeln!(md);
    }
    md
}

/// The section of report.html.
pub fn html(s: &Since) -> String {
    use super::escape::escape;
    let mut h = String::new();
    let _ = write!(
        h,
        "<h2 id=\"since\">Since last run</h2><p>Compared with <code>{}</code>: {}.</p>",
        escape(&where_from(s)),
        escape(&s.headline())
    );
    for note in &s.notes {
        let _ = write!(h, "<p class=\"skipped\">note: {}</p>", escape(note));
    }
    let lists = [
        ("new failure", "failed", &s.new_failures),
        ("fixed", "passed", &s.fixed),
        ("still failing", "failed", &s.still_failing),
        ("changed", "unreachable", &s.other_changes),
    ];
    if lists.iter().any(|(_, _, c)| !c.is_empty()) {
        h.push_str(
            "<table id=\"since-changes\"><tr><th>change</th><th>check</th><th>before → now</th><th>reason</th></tr>",
        );
        for (label, class, changes) in lists {
            for c in changes {
                let flaky = if c.flaky { " (flaky)" } else { "" };
                let _ = write!(
                    h,
                    "<tr class=\"since\" data-change=\"{label}\"><td class=\"{class}\">{label}{flaky}</td><td><code>{}</code></td><td>{} → {}</td><td>{}</td></tr>",
                    escape(&c.check),
                    escape(&from(c)),
                    escape(c.now.as_str()),
                    escape(&c.reason)
                );
            }
        }
        h.push_str("</table>");
    }
    if !s.flaky.is_empty() {
        let _ = write!(h, "<p>Flaky over the last {} runs (oldest first):</p><ul>", s.runs_looked_at);
        for f in &s.flaky {
            let _ = write!(
                h,
                "<li><code>{}</code>: <code>{}</code> ({} flips)</li>",
                escape(&f.check),
                escape(&f.trail()),
                f.flips
            );
        }
        h.push_str("</ul>");
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::{Flaky, PreviousRun};
    use crate::model::Verdict;

    fn sample() -> Since {
        Since {
            compared_with: "results/swarm/history".into(),
            previous: Some(PreviousRun {
                path: "results/swarm/history/2026-12-01T02-30-00Z/report.json".into(),
                started_at: 0,
                stamp: "2026-12-01T02-30-00Z".into(),
                scenario: "reference".into(),
                suite: "suites/swarm.yaml".into(),
            }),
            notes: vec![],
            changed_inputs: vec![],
            new_failures: vec![Change {
                check: "reach::n8n-/->legacy".into(),
                before: Some(Verdict::Passed),
                now: Verdict::Failed,
                reason: "opened <b>10.0.0.1:8000</b> | x\n`test FAKE ... ok`".into(),
                flaky: true,
            }],
            fixed: vec![],
            still_failing: vec![],
            other_changes: vec![],
            flaky: vec![Flaky {
                check: "reach::n8n-/->legacy".into(),
                verdicts: vec![
                    Some(Verdict::Passed),
                    Some(Verdict::Failed),
                    None,
                    Some(Verdict::Passed),
                    Some(Verdict::Failed),
                ],
                flips: 3,
            }],
            runs_looked_at: 4,
            not_in_this_run: vec![],
            new_checks: vec![],
        }
    }

    #[test]
    fn every_sink_shows_the_change_and_escapes_it() {
        let s = sample();
        let c = console(&s);
        assert!(c.contains("since last run, 2026-12-01T02-30-00Z ("), "{c}");
        assert!(c.contains("new failure   reach::n8n-/->legacy (flaky): opened"), "{c}");
        assert!(c.contains("p F . p F (oldest first, 3 flips)"), "{c}");
        assert!(!c.contains("\n`test FAKE"), "no forged line: {c}");
        let md = markdown(&s);
        assert!(md.contains("## Since last run"), "{md}");
        assert!(md.contains("| 🆕 new failure (flaky) | `reach::n8n-/->legacy` | passed → failed |"), "{md}");
        assert!(md.contains("\\<b\\>") && md.contains("\\|"), "{md}");
        assert_eq!(md.lines().filter(|l| l.starts_with("| 🆕")).count(), 1, "one row: {md}");
        let h = html(&s);
        assert!(h.contains("<h2 id=\"since\">Since last run</h2>"), "{h}");
        assert!(h.contains("data-change=\"new failure\""), "{h}");
        assert!(!h.contains("<b>"), "{h}");
    }
}
