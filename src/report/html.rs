//! A self-contained HTML report: the reach matrix as inline SVG and every check with its
//! evidence, filterable by family and verdict. No fetches: styles and the small filter
//! script are inline, and a Content-Security-Policy forbids everything else.

use std::fmt::Write as _;

use crate::exit::Ending;
use crate::matrix::{Cell, Matrix};
use crate::model::{RunReport, Verdict};

pub use super::escape::escape;

const CELL: u32 = 96;
/// The fill of a pair cordon could not look at: its own colour, never broken's orange.
pub const COULD_NOT_JUDGE: &str = "#fff59d";
const ROW_HEAD: u32 = 140;
const COL_HEAD: u32 = 56;

fn colors(cell: Option<&Cell>) -> (&'static str, &'static str) {
    match cell {
        Some(Cell::Working) => ("#2e7d32", "#ffffff"),
        Some(Cell::Broken { .. }) => ("#ef6c00", "#ffffff"),
        Some(Cell::CouldNotJudge { .. }) => (COULD_NOT_JUDGE, "#4e342e"),
        Some(Cell::Isolated) => ("#cfd8dc", "#263238"),
        Some(Cell::Leak { .. }) => ("#c62828", "#ffffff"),
        Some(Cell::NotJudged { .. }) | None => ("#f5f5f5", "#757575"),
    }
}

/// The matrix as an SVG picture; every cell carries `data-client`, `data-column` and
/// `data-state` so a browser test can read it back.
pub fn matrix_svg(m: &Matrix) -> String {
    let width = ROW_HEAD + CELL * m.columns.len() as u32 + 10;
    let height = COL_HEAD + CELL * m.clients.len() as u32 + 10;
    let mut svg = String::new();
    let _ = write!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" id="reach-matrix" role="img" aria-label="reach matrix" width="{width}" height="{height}" viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">"#
    );
    for (i, col) in m.columns.iter().enumerate() {
        let x = ROW_HEAD + CELL * i as u32 + CELL / 2;
        let mark = match col.disabled {
            Some(Verdict::Passed) => " (disabled: dark)",
            Some(Verdict::Failed | Verdict::KnownFailure) => " (disabled: NOT dark)",
            Some(_) => " (disabled: not judged)",
            None => "",
        };
        let _ = write!(
            svg,
            r#"<text class="col-head" x="{x}" y="{}" text-anchor="middle" font-weight="bold">{}</text>"#,
            COL_HEAD - 30,
            escape(&col.title())
        );
        if !mark.is_empty() {
            let fill = if mark.contains("NOT") { "#c62828" } else { "#455a64" };
            let _ = write!(
                svg,
                r#"<text x="{x}" y="{}" text-anchor="middle" fill="{fill}">{}</text>"#,
                COL_HEAD - 12,
                escape(mark.trim())
            );
        }
    }
    for (r, client) in m.clients.iter().enumerate() {
        let y = COL_HEAD + CELL * r as u32;
        let _ = write!(
            svg,
            r#"<text class="row-head" x="{}" y="{}" text-anchor="end" font-weight="bold">{}</text>"#,
            ROW_HEAD - 10,
            y + CELL / 2 + 4,
            escape(client)
        );
        for (i, col) in m.columns.iter().enumerate() {
            let x = ROW_HEAD + CELL * i as u32;
            let cell = m.cell(client, col);
            let (mut fill, mut ink) = colors(cell);
            let mut state = cell.map(Cell::label).unwrap_or("none");
            let mut detail = cell.map(Cell::detail).unwrap_or_else(|| "no check for this pair".into());
            // A disabled provider has no pair checks: its column shows what disabled:: proved.
            if cell.is_none()
                && let Some(label) = col.disabled_label()
            {
                (detail, fill, ink) = match label {
                    "dark" => ("disabled: dark from every client".into(), "#eceff1", "#455a64"),
                    "NOT dark" => ("disabled, but still answering: see disabled::".into(), "#c62828", "#ffffff"),
                    _ => ("disabled: not judged".into(), "#f5f5f5", "#757575"),
                };
                state = label;
            }
            let _ = write!(
                svg,
                r##"<g class="cell" data-client="{}" data-column="{}" data-state="{}"><title>{} → {}: {}</title><rect x="{}" y="{}" width="{}" height="{}" rx="6" fill="{fill}" stroke="#ffffff" stroke-width="3"/><text x="{}" y="{}" text-anchor="middle" fill="{ink}" font-weight="bold">{}</text>"##,
                escape(client),
                escape(&col.title()),
                state,
                escape(client),
                escape(&col.title()),
                escape(&detail),
                x + 2,
                y + 2,
                CELL - 4,
                CELL - 4,
                x + CELL / 2,
                y + CELL / 2,
                escape(state)
            );
            if let Some(Cell::Leak { doors }) = cell {
                let first = doors.first().map(String::as_str).unwrap_or("");
                let shown: String = first.chars().take(22).collect();
                let _ = write!(
                    svg,
                    r#"<text x="{}" y="{}" text-anchor="middle" fill="{ink}" font-size="10">{}</text>"#,
                    x + CELL / 2,
                    y + CELL / 2 + 16,
                    escape(&shown)
                );
            }
            svg.push_str("</g>");
        }
    }
    svg.push_str("</svg>");
    svg
}

const STYLE: &str = "body{font-family:sans-serif;margin:2em;color:#263238}\
table{border-collapse:collapse;width:100%}td,th{border:1px solid #cfd8dc;padding:4px 8px;vertical-align:top;text-align:left}\
.passed{color:#2e7d32}.failed,.stale_baseline{color:#c62828;font-weight:bold}.unreachable{color:#ef6c00}\
.skipped,.known_failure{color:#607d8b}pre{white-space:pre-wrap;margin:0;font-size:12px}\
.legend span{display:inline-block;padding:2px 8px;margin-right:6px;border-radius:4px}";

const SCRIPT: &str = "function applyFilters(){var f=document.getElementById('family').value;\
var v=document.getElementById('verdict').value;document.querySelectorAll('tr.check').forEach(function(r){\
var ok=(f===''||r.dataset.family===f)&&(v===''||r.dataset.verdict===v);r.style.display=ok?'':'none';});}";

/// The whole report as one HTML document.
#[cfg(test)]
pub fn render(report: &RunReport) -> String {
    render_since(report, None)
}

/// [`render`], with the "since last run" section (`--compare`) above the matrix.
pub fn render_since(report: &RunReport, since: Option<&crate::compare::Since>) -> String {
    let matrix = Matrix::from_report(report);
    let c = report.counts();
    let mut html = String::new();
    html.push_str("<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">");
    html.push_str("<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">");
    let _ = write!(
        html,
        "<title>cordon: {}</title><style>{STYLE}</style><script>{SCRIPT}</script></head><body>",
        escape(&report.scenario)
    );
    let status = match report.ending() {
        Ending::Passed => "all checks hold",
        Ending::ChecksFailed => "contract violated",
        Ending::Infrastructure | Ending::Usage | Ending::Interrupted => "infrastructure error",
    };
    let _ = write!(
        html,
        "<h1>cordon: {status}</h1><p>Scenario <code>{}</code>, suite <code>{}</code>, mode {:?}, {:.1}s: {} passed, {} failed, {} unreachable, {} skipped, {} known failure(s), {} stale baseline.</p>",
        escape(&report.scenario),
        escape(&report.suite),
        report.mode,
        report.duration.as_secs_f64(),
        c.passed,
        c.failed,
        c.unreachable,
        c.skipped,
        c.known_failures,
        c.stale_baseline
    );
    let unstable = report.instability();
    if !unstable.is_empty() {
        let _ = write!(
            html,
            "<p class=\"unreachable\">engine instability observed in {} check(s): a connect got through once and never again.</p>",
            unstable.len()
        );
    }
    if let Some(since) = since {
        html.push_str(&super::since::html(since));
    }
    if !matrix.is_empty() {
        html.push_str("<h2>Reach matrix</h2><p class=\"legend\"><span style=\"background:#2e7d32;color:#fff\">working</span><span style=\"background:#ef6c00;color:#fff\">broken</span><span style=\"background:#cfd8dc\">isolated</span><span style=\"background:#c62828;color:#fff\">LEAK</span><span style=\"background:#fff59d\">could not be judged (cordon could not look)</span><span style=\"background:#f5f5f5\">not judged</span></p>");
        html.push_str(&matrix_svg(&matrix));
    }
    let mut families: Vec<&str> = report.results.iter().map(|r| r.id.family.as_str()).collect();
    families.sort();
    families.dedup();
    html.push_str("<h2>Checks</h2><p><label>family <select id=\"family\" onchange=\"applyFilters()\"><option value=\"\">all</option>");
    for f in families {
        let _ = write!(html, "<option>{f}</option>");
    }
    html.push_str("</select></label> <label>verdict <select id=\"verdict\" onchange=\"applyFilters()\"><option value=\"\">all</option>");
    for v in ["passed", "failed", "unreachable", "skipped", "known_failure", "stale_baseline"] {
        let _ = write!(html, "<option>{v}</option>");
    }
    html.push_str("</select></label></p><table><tr><th>check</th><th>verdict</th><th>reason and evidence</th></tr>");
    // What needs a person first: failed, then unreachable, then the rest; a failure shows
    // the evidence that proves it, and everything else it saw (and a pass's) folds away.
    let mut ordered: Vec<&crate::model::CheckResult> = report.results.iter().collect();
    ordered.sort_by_key(|r| rank(r.verdict));
    for r in ordered {
        let verdict =
            serde_json::to_value(r.verdict).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default();
        let _ = write!(
            html,
            "<tr class=\"check\" data-family=\"{}\" data-verdict=\"{verdict}\"><td><code>{}</code></td><td class=\"{verdict}\">{}</td><td>{}",
            r.id.family.as_str(),
            escape(&r.name),
            r.verdict.as_str(),
            escape(&r.reason)
        );
        let needs_a_person = rank(r.verdict) < 2;
        if needs_a_person && !r.findings.is_empty() {
            let proof = super::failure::text(r, super::failure::EvidenceLevel::Proof, None);
            let _ = write!(html, "<pre class=\"proof\">{}</pre>", escape(&proof));
        }
        let lines: Vec<&String> = r.evidence.iter().chain(r.transient.iter()).collect();
        if !lines.is_empty() {
            let open = if needs_a_person && r.findings.is_empty() { " open" } else { "" };
            let _ = write!(html, "<details{open}><summary>evidence ({} line(s))</summary><pre>", lines.len());
            for line in lines {
                let _ = writeln!(html, "{}", escape(line));
            }
            html.push_str("</pre></details>");
        }
        html.push_str("</td></tr>");
    }
    html.push_str("</table>");
    let _ = write!(html, "<footer><p>{}</p></footer>", escape(&provenance_footer(report)));
    html.push_str("</body></html>\n");
    html
}

/// The order of the checks table: what broke, what could not be looked at, then the rest.
fn rank(v: Verdict) -> u8 {
    match v {
        Verdict::Failed | Verdict::StaleBaseline => 0,
        Verdict::Unreachable => 1,
        Verdict::KnownFailure => 2,
        Verdict::Skipped => 3,
        Verdict::Passed => 4,
    }
}

/// Which cordon, scenario, suite and engine the run was: the footer of the page.
fn provenance_footer(report: &RunReport) -> String {
    match report.provenance.line(report.mode) {
        line if line.is_empty() => "run by a cordon that recorded no provenance".into(),
        line => format!("run by {line}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Family, Mode};
    use crate::model::{CheckName, CheckResult, Finding, FindingKind};
    use std::time::{Duration, SystemTime};

    #[test]
    fn escaped_and_self_contained() {
        let mut leak = CheckResult::new(
            &CheckName::pair(Family::Reach, "flowise", crate::model::Relation::NotAdmitted, "legacy"),
            Verdict::Failed,
            "x</td><script>alert(1)</script>",
        );
        leak.findings.push(Finding::new(FindingKind::LateralReach, "x").fact("addr", "10.0.6.4:8000"));
        leak.evidence.push("tool \u{202e}evil\n<b>".into());
        let report = RunReport {
            scenario: "ref".into(),
            suite: "s".into(),
            mode: Mode::Compose,
            started_at: SystemTime::UNIX_EPOCH,
            duration: Duration::from_secs(1),
            results: vec![leak],
            filtered_out: 0,
            cost: Default::default(),
            provenance: Default::default(),
        };
        let html = render(&report);
        assert!(!html.contains("<script>alert"), "{html}");
        assert!(!html.contains('\u{202e}'));
        assert!(html.contains(r#"data-client="flowise" data-column="legacy" data-state="LEAK""#), "{html}");
        assert!(html.contains("10.0.6.4:8000"));
        assert!(!html.contains("src=") && !html.contains("href="), "no resources to fetch");
        assert!(html.contains("Content-Security-Policy"));
    }
}
