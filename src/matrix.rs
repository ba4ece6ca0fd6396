//! The reach matrix: clients as rows, providers (and the apps behind sidecars) as
//! columns, each cell what the run proved about that pair. Built from finished results
//! only, so every reporter (Markdown, HTML/SVG, `cordon explain`) shows the same picture.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::config::Family;
use crate::model::{CheckResult, FindingKind, RunReport, Verdict};

/// What one cell shows.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum Cell {
    /// Admitted, and route and session hold.
    Working,
    /// Admitted, but route or session failed.
    Broken { checks: Vec<String> },
    /// cordon could not look (the engine or a namespace did not answer): neither broken
    /// nor isolated, whatever the pair is.
    CouldNotJudge { checks: Vec<String> },
    /// Not admitted, and nothing reached it.
    Isolated,
    /// Not admitted, and it got through: where.
    Leak { doors: Vec<String> },
    /// Nothing judged this pair (filtered out, skipped, or still unreachable).
    NotJudged { why: String },
}

impl Cell {
    pub fn label(&self) -> &'static str {
        match self {
            Cell::Working => "working",
            Cell::Broken { .. } => "broken",
            Cell::CouldNotJudge { .. } => "could not be judged",
            Cell::Isolated => "isolated",
            Cell::Leak { .. } => "LEAK",
            Cell::NotJudged { .. } => "not judged",
        }
    }

    /// One line for a table cell or a tooltip.
    pub fn detail(&self) -> String {
        match self {
            Cell::Working => "admitted: route and session hold".into(),
            Cell::Broken { checks } => format!("admitted but broken: {}", checks.join(", ")),
            Cell::CouldNotJudge { checks } => {
                format!("could not be judged (cordon could not look): {}", checks.join(", "))
            }
            Cell::Isolated => "not admitted: isolated as required".into(),
            Cell::Leak { doors } => format!("not admitted but reached at {}", doors.join(", ")),
            Cell::NotJudged { why } => format!("not judged: {why}"),
        }
    }
}

/// A column: a provider, or the app behind a provider's sidecar.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Column {
    pub provider: String,
    pub app: bool,
    /// For a disabled provider: whether the run proved it dark.
    pub disabled: Option<Verdict>,
}

impl Column {
    pub fn title(&self) -> String {
        if self.app { format!("app:{}", self.provider) } else { self.provider.clone() }
    }

    /// A disabled provider has no pair checks: each of its cells shows what `disabled::`
    /// proved (it probes from every client). None for an enabled provider.
    pub fn disabled_label(&self) -> Option<&'static str> {
        self.disabled.map(|v| match v {
            Verdict::Passed => "dark",
            Verdict::Failed | Verdict::KnownFailure => "NOT dark",
            _ => "not judged",
        })
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct Matrix {
    pub clients: Vec<String>,
    pub columns: Vec<Column>,
    /// (client, column title) → cell.
    pub cells: BTreeMap<(String, String), Cell>,
}

impl Matrix {
    /// The matrix as plain text for a terminal: one row per client.
    pub fn to_text(&self) -> String {
        let titles: Vec<String> = self.columns.iter().map(Column::title).collect();
        let first = self.clients.iter().map(|c| c.chars().count()).max().unwrap_or(0).max("client".len());
        let widths: Vec<usize> = titles.iter().map(|t| t.chars().count().max(10)).collect();
        let mut out = format!("{:<first$}", "client");
        for (t, w) in titles.iter().zip(&widths) {
            out.push_str(&format!("  {t:<w$}"));
        }
        out.push('\n');
        for client in &self.clients {
            out.push_str(&format!("{client:<first$}"));
            for (col, w) in self.columns.iter().zip(&widths) {
                let label = match self.cell(client, col) {
                    Some(c) => c.label(),
                    None => col.disabled_label().unwrap_or("·"),
                };
                out.push_str(&format!("  {label:<w$}"));
            }
            out.push('\n');
        }
        let disabled: Vec<String> = self
            .columns
            .iter()
            .filter_map(|c| {
                c.disabled.map(|v| {
                    format!("{} (disabled): {}", c.title(), if v == Verdict::Passed { "dark" } else { v.as_str() })
                })
            })
            .collect();
        if !disabled.is_empty() {
            out.push_str(&disabled.join("; "));
            out.push('\n');
        }
        crate::text::sanitize_lines(&out)
    }

    pub fn cell(&self, client: &str, column: &Column) -> Option<&Cell> {
        self.cells.get(&(client.to_string(), column.title()))
    }

    pub fn is_empty(&self) -> bool {
        self.clients.is_empty() || self.columns.is_empty()
    }

    /// Builds the matrix from a run's results.
    pub fn from_report(report: &RunReport) -> Matrix {
        let mut clients = BTreeSet::new();
        let mut columns: BTreeMap<String, Column> = BTreeMap::new();
        let mut pairs: BTreeMap<(String, String), Vec<&CheckResult>> = BTreeMap::new();
        for r in &report.results {
            let Some(provider) = r.id.provider.clone() else { continue };
            let app = r.id.is_app();
            let column = Column { provider: provider.clone(), app, disabled: None };
            let title = column.title();
            let entry = columns.entry(title.clone()).or_insert(column);
            if r.id.family == Family::Disabled {
                entry.disabled = Some(r.verdict);
            }
            if let Some(client) = r.id.client.clone() {
                clients.insert(client.clone());
                pairs.entry((client, title)).or_default().push(r);
            }
        }
        let cells = pairs.into_iter().map(|(key, results)| (key, cell_of(&results))).collect();
        Matrix { clients: clients.into_iter().collect(), columns: columns.into_values().collect(), cells }
    }
}

fn cell_of(results: &[&CheckResult]) -> Cell {
    let reach: Vec<&&CheckResult> = results.iter().filter(|r| r.id.family == Family::Reach).collect();
    if !reach.is_empty() {
        let doors: Vec<String> = reach
            .iter()
            .flat_map(|r| r.findings.iter())
            .filter(|f| matches!(f.kind, FindingKind::LateralReach | FindingKind::PublishedPortReach))
            .filter_map(|f| f.facts.get("addr").cloned())
            .collect();
        if !doors.is_empty() {
            return Cell::Leak { doors };
        }
        return match reach.iter().find(|r| r.verdict != Verdict::Passed) {
            None => Cell::Isolated,
            Some(r) if matches!(r.verdict, Verdict::Failed | Verdict::KnownFailure) => {
                Cell::Leak { doors: vec![r.reason.clone()] }
            }
            Some(r) if r.verdict == Verdict::Unreachable => Cell::CouldNotJudge { checks: vec![r.name.clone()] },
            Some(r) => Cell::NotJudged { why: format!("{} {}", r.name, r.verdict.as_str()) },
        };
    }
    let admitted: Vec<&&CheckResult> =
        results.iter().filter(|r| matches!(r.id.family, Family::Route | Family::Session)).collect();
    if admitted.is_empty() {
        return Cell::NotJudged { why: "no route, session or reach check ran".into() };
    }
    let with = |verdicts: &[Verdict]| -> Vec<String> {
        admitted.iter().filter(|r| verdicts.contains(&r.verdict)).map(|r| r.name.clone()).collect()
    };
    let broken = with(&[Verdict::Failed, Verdict::KnownFailure]);
    if !broken.is_empty() {
        return Cell::Broken { checks: broken };
    }
    let unlooked = with(&[Verdict::Unreachable]);
    if !unlooked.is_empty() {
        return Cell::CouldNotJudge { checks: unlooked };
    }
    match admitted.iter().find(|r| r.verdict != Verdict::Passed) {
        None => Cell::Working,
        Some(r) => Cell::NotJudged { why: format!("{} {}", r.name, r.verdict.as_str()) },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Mode;
    use crate::model::{CheckName, Finding, Relation};
    use std::time::{Duration, SystemTime};

    fn result(family: Family, client: &str, relation: Relation, provider: &str, verdict: Verdict) -> CheckResult {
        CheckResult::new(&CheckName::pair(family, client, relation, provider), verdict, "")
    }

    fn report(results: Vec<CheckResult>) -> RunReport {
        RunReport {
            scenario: "s".into(),
            suite: "t".into(),
            mode: Mode::Compose,
            started_at: SystemTime::UNIX_EPOCH,
            duration: Duration::ZERO,
            results,
            filtered_out: 0,
            cost: Default::default(),
            provenance: Default::default(),
        }
    }

    #[test]
    fn cells_show_what_each_pair_proved() {
        let mut leak = result(Family::Reach, "flowise", Relation::NotAdmitted, "legacy", Verdict::Failed);
        leak.findings.push(Finding::new(FindingKind::LateralReach, "x").fact("addr", "10.0.6.4:8000"));
        let m = Matrix::from_report(&report(vec![
            result(Family::Route, "webui", Relation::Admitted, "legacy", Verdict::Passed),
            result(Family::Session, "webui", Relation::Admitted, "legacy", Verdict::Passed),
            leak,
            result(Family::Reach, "n8n", Relation::NotAdmitted, "legacy", Verdict::Passed),
            result(Family::Route, "webui", Relation::Admitted, "native", Verdict::Passed),
            result(Family::Session, "webui", Relation::Admitted, "native", Verdict::Failed),
            result(Family::Reach, "webui", Relation::AppBehind, "gitea", Verdict::Passed),
            CheckResult::new(&CheckName::of_provider(Family::Disabled, "wiki", None), Verdict::Passed, ""),
        ]));
        assert_eq!(m.clients, ["flowise", "n8n", "webui"]);
        let col = |t: &str| m.columns.iter().find(|c| c.title() == t).unwrap().clone();
        assert_eq!(m.cell("webui", &col("legacy")), Some(&Cell::Working));
        assert_eq!(m.cell("flowise", &col("legacy")), Some(&Cell::Leak { doors: vec!["10.0.6.4:8000".into()] }));
        assert_eq!(m.cell("n8n", &col("legacy")), Some(&Cell::Isolated));
        assert!(matches!(m.cell("webui", &col("native")), Some(Cell::Broken { .. })));
        assert_eq!(m.cell("webui", &col("app:gitea")), Some(&Cell::Isolated));
        assert_eq!(col("wiki").disabled, Some(Verdict::Passed));
        let text = m.to_text();
        let row = text.lines().find(|l| l.starts_with("flowise")).unwrap();
        assert!(row.contains("LEAK") && row.trim_end().ends_with("dark"), "{text}");
    }

    #[test]
    fn a_pair_cordon_could_not_look_at_is_neither_broken_nor_isolated() {
        let m = Matrix::from_report(&report(vec![
            result(Family::Route, "webui", Relation::Admitted, "legacy", Verdict::Unreachable),
            result(Family::Session, "webui", Relation::Admitted, "legacy", Verdict::Passed),
            result(Family::Reach, "n8n", Relation::NotAdmitted, "legacy", Verdict::Unreachable),
            // A failure is a failure, whatever else could not be looked at.
            result(Family::Route, "webui", Relation::Admitted, "native", Verdict::Unreachable),
            result(Family::Session, "webui", Relation::Admitted, "native", Verdict::Failed),
        ]));
        let col = |t: &str| m.columns.iter().find(|c| c.title() == t).unwrap().clone();
        assert_eq!(
            m.cell("webui", &col("legacy")),
            Some(&Cell::CouldNotJudge { checks: vec!["route::webui->legacy".into()] })
        );
        assert_eq!(m.cell("webui", &col("legacy")).unwrap().label(), "could not be judged");
        assert!(matches!(m.cell("n8n", &col("legacy")), Some(Cell::CouldNotJudge { .. })));
        assert!(matches!(m.cell("webui", &col("native")), Some(Cell::Broken { .. })));
    }
}
