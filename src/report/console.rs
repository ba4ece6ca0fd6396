//! The libtest-style console. Arguments are libtest-mimic's (`--list`, a filter,
//! `--exact`, `--skip`, `--format pretty|terse|json`, `-q`, `--color`, `--logfile`), and
//! the output has libtest's shape, `test <name> ... ok|FAILED|ignored` lines included.
//! Finished results are printed here rather than replayed through libtest-mimic, whose
//! summary would time the replay ("finished in 0.00s") instead of the run.
//!
//! Every name and text is sanitized: one check is one line, and nothing a server sends
//! can start a line of its own such as `test FAKE ... ok`.

use std::io::{IsTerminal, Write};

use libtest_mimic::{Arguments, ColorSetting, FormatSetting};
use serde_json::json;

use super::failure::{self, EvidenceLevel};
use crate::model::{CheckName, CheckResult, RunReport, Verdict};
use crate::secret::Redactor;
use crate::text::sanitize;

/// libtest's selection, with several filters selecting every check any of them matches
/// (`filters`: every positional filter given; libtest-mimic keeps only the first).
pub fn is_selected(args: &Arguments, filters: &[String], name: &str) -> bool {
    let matches = |pattern: &str| if args.exact { name == pattern } else { name.contains(pattern) };
    let first = args.filter.iter().cloned().collect::<Vec<_>>();
    let filters = if filters.is_empty() { &first[..] } else { filters };
    if !filters.is_empty() && !filters.iter().any(|f| matches(f)) {
        return false;
    }
    !args.skip.iter().any(|s| matches(s))
}

/// Prints the selected planned check names as `cargo test -- --list` does (`name: test`,
/// then a count), or one JSON object per check with `--format json`. A reader that
/// stops early (`| head -1`) ends the listing quietly.
pub fn list(args: &Arguments, filters: &[String], planned: &[CheckName]) {
    let selected: Vec<&CheckName> = planned.iter().filter(|n| is_selected(args, filters, &n.to_string())).collect();
    let mut text = String::new();
    let json = args.format == Some(FormatSetting::Json);
    for n in &selected {
        let name = sanitize(&n.to_string());
        if json {
            text.push_str(
                &json!({"type": "test", "event": "discovered", "name": name, "family": n.family.as_str()}).to_string(),
            );
            text.push('\n');
        } else {
            text.push_str(&format!("{name}: test\n"));
        }
    }
    if !json && !args.quiet && args.format != Some(FormatSetting::Terse) {
        text.push_str(&format!("\n{} tests, 0 benchmarks\n", selected.len()));
    }
    let written = match &args.logfile {
        Some(path) => std::fs::write(path, text),
        None => std::io::stdout().lock().write_all(text.as_bytes()),
    };
    match written {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
        Err(e) => eprintln!("warning: cannot print the list: {e}"),
        Ok(()) => {}
    }
}

/// Prints finished results, with the run's real duration; `unselected` checks count as
/// filtered out.
pub fn print(
    args: &Arguments,
    evidence: EvidenceLevel,
    report: &RunReport,
    unselected: &[String],
    redactor: &Redactor,
) {
    let report = super::redacted(report, redactor);
    let style = Style::from_args(args, evidence);
    let text = redactor.redact(&render(&report, unselected.len(), style));
    let written = match &args.logfile {
        Some(path) => std::fs::write(path, text),
        None => std::io::stdout().lock().write_all(text.as_bytes()),
    };
    if let Err(e) = written {
        // The reports on disk still carry everything; a closed stdout is no reason to stop.
        eprintln!("warning: cannot print the results: {e}");
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Style {
    pub format: FormatSetting,
    pub color: bool,
    /// How much evidence a failure shows.
    pub evidence: EvidenceLevel,
    /// The terminal's width, when the console is one: evidence lines are cut to it.
    pub width: Option<usize>,
}

impl Style {
    pub fn from_args(args: &Arguments, evidence: EvidenceLevel) -> Style {
        let format = if args.quiet { FormatSetting::Terse } else { args.format.unwrap_or(FormatSetting::Pretty) };
        let tty = args.logfile.is_none() && std::io::stdout().is_terminal();
        let color = match args.color.unwrap_or(ColorSetting::Auto) {
            ColorSetting::Always => true,
            ColorSetting::Never => false,
            ColorSetting::Auto => tty && std::env::var_os("NO_COLOR").is_none(),
        };
        let width = if tty { Some(terminal_width()) } else { None };
        Style { format, color, evidence, width }
    }
}

/// The width of the terminal on stdout: `COLUMNS` when set, else what the terminal says,
/// else 100.
fn terminal_width() -> usize {
    if let Some(columns) = std::env::var("COLUMNS").ok().and_then(|c| c.parse().ok()) {
        return columns;
    }
    let mut size = nix::libc::winsize { ws_row: 0, ws_col: 0, ws_xpixel: 0, ws_ypixel: 0 };
    // SAFETY: TIOCGWINSZ writes one winsize into the struct we own; fd 1 is only read.
    let got = unsafe { nix::libc::ioctl(1, nix::libc::TIOCGWINSZ, &mut size) };
    if got == 0 && size.ws_col >= 20 { usize::from(size.ws_col) } else { 100 }
}

/// What libtest calls a test's outcome, and the `[kind]` it is listed under.
enum Outcome {
    Ok,
    Failed(String),
    Ignored(String),
}

fn outcome(r: &CheckResult, style: Style) -> Outcome {
    match r.verdict {
        Verdict::Passed => Outcome::Ok,
        Verdict::Failed | Verdict::Unreachable | Verdict::StaleBaseline => {
            Outcome::Failed(failure::text(r, style.evidence, style.width))
        }
        Verdict::Skipped => Outcome::Ignored(sanitize(&r.reason)),
        Verdict::KnownFailure => Outcome::Ignored(format!("known failure: {}", sanitize(&r.reason))),
    }
}

fn kind(r: &CheckResult) -> &'static str {
    match r.verdict {
        Verdict::Passed | Verdict::Failed => "",
        other => other.as_str(),
    }
}

/// Running totals of a console, and the failures to print at the end.
#[derive(Default)]
pub struct Tally {
    pub passed: usize,
    pub failed: usize,
    pub ignored: usize,
    pub failures: Vec<Failure>,
}

/// A failed check as the end of a run shows it.
pub struct Failure {
    pub name: String,
    /// What `---- <name> ----` heads: the reason and the evidence the style asks for.
    pub text: String,
    /// The reason on one line, for the closing list.
    pub reason: String,
}

/// How long a closing summary's line may be when the console is not a terminal.
const SUMMARY_WIDTH: usize = 240;

/// The line that opens a run.
pub fn header(planned: usize, style: Style) -> String {
    if style.format == FormatSetting::Json {
        let mut out = String::new();
        push_json(&mut out, json!({ "type": "suite", "event": "started", "test_count": planned }));
        return out;
    }
    let plural = if planned == 1 { "" } else { "s" };
    format!("\nrunning {planned} test{plural}\n")
}

fn paint(style: Style, word: &str, color: u8) -> String {
    if style.color { format!("\x1b[{color}m{word}\x1b[0m") } else { word.into() }
}

/// One finished check, as libtest prints a test (names padded to `name_width`).
pub fn line(r: &CheckResult, style: Style, name_width: usize, kind_width: usize, tally: &mut Tally) -> String {
    let name = sanitize(&r.name);
    let outcome = outcome(r, style);
    match &outcome {
        Outcome::Ok => tally.passed += 1,
        Outcome::Failed(text) => {
            tally.failed += 1;
            tally.failures.push(Failure { name: name.clone(), text: text.clone(), reason: failure::one_line(r) });
        }
        Outcome::Ignored(_) => tally.ignored += 1,
    }
    match style.format {
        FormatSetting::Pretty => {
            let kind = if kind(r).is_empty() { String::new() } else { format!("[{}] ", kind(r)) };
            let word = match &outcome {
                Outcome::Ok => paint(style, "ok", 32),
                Outcome::Failed(_) => paint(style, "FAILED", 31),
                Outcome::Ignored(reason) => paint(style, &format!("ignored ({reason})"), 33),
            };
            format!("test {kind:<kind_width$}{name:<name_width$} ... {word}\n")
        }
        FormatSetting::Terse => match outcome {
            Outcome::Ok => paint(style, ".", 32),
            Outcome::Failed(_) => paint(style, "F", 31),
            Outcome::Ignored(_) => paint(style, "i", 33),
        },
        FormatSetting::Json => {
            let mut out = String::new();
            push_json(&mut out, json!({ "type": "test", "event": "started", "name": name }));
            let word = match outcome {
                Outcome::Ok => "ok",
                Outcome::Failed(_) => "failed",
                Outcome::Ignored(_) => "ignored",
            };
            let mut event =
                json!({ "type": "test", "name": name, "event": word, "exec_time": r.duration.as_secs_f64() });
            match &outcome {
                Outcome::Failed(text) => event["stdout"] = json!(format!("Error: \"{text}\"\n")),
                Outcome::Ignored(reason) => event["message"] = json!(reason),
                Outcome::Ok => {}
            }
            push_json(&mut out, event);
            out
        }
    }
}

/// The failures, each with its reason and proof; their names with a one-line reason each
/// and the reach matrix (`matrix`, when the run has one), so the last screen of a log
/// says what broke; and the summary line, with the run's real duration.
pub fn tail(tally: &Tally, filtered_out: usize, seconds: f64, style: Style, matrix: Option<&str>) -> String {
    let mut out = String::new();
    if style.format == FormatSetting::Json {
        let event = if tally.failed > 0 { "failed" } else { "ok" };
        push_json(
            &mut out,
            json!({ "type": "suite", "event": event, "passed": tally.passed, "failed": tally.failed, "ignored": tally.ignored,
                    "measured": 0, "filtered_out": filtered_out, "exec_time": seconds }),
        );
        return out;
    }
    if style.format == FormatSetting::Terse {
        out.push('\n');
    }
    if !tally.failures.is_empty() {
        out.push_str("\nfailures:\n\n");
        for f in &tally.failures {
            out.push_str(&format!("---- {} ----\n{}\n\n", f.name, f.text));
        }
        out.push_str("\nfailures:\n");
        for f in &tally.failures {
            let line = format!("    {}: {}", f.name, f.reason);
            // A log has no width; a reason of many rules still ends within a few lines
            // (its block above lists each rule on a line of its own).
            let line = failure::fit(&line, style.width.unwrap_or(SUMMARY_WIDTH));
            out.push_str(&line);
            out.push('\n');
        }
    }
    if let Some(matrix) = matrix.filter(|m| !m.is_empty()) {
        out.push_str("\nreach matrix (rows: clients; columns: providers and the apps behind sidecars):\n");
        out.push_str(matrix.trim_end());
        out.push('\n');
    }
    let verdict = if tally.failed > 0 { paint(style, "FAILED", 31) } else { paint(style, "ok", 32) };
    out.push_str(&format!(
        "\ntest result: {verdict}. {} passed; {} failed; {} ignored; 0 measured; \
         {filtered_out} filtered out; finished in {seconds:.2}s\n\n",
        tally.passed, tally.failed, tally.ignored
    ));
    out
}

/// The reach matrix of a run as text, when it has one (clients and providers).
pub fn matrix_text(report: &RunReport) -> Option<String> {
    let matrix = crate::matrix::Matrix::from_report(report);
    (!matrix.is_empty()).then(|| matrix.to_text())
}

/// The kind column's width for these results.
pub fn kind_width(results: &[CheckResult]) -> usize {
    results.iter().map(|r| if kind(r).is_empty() { 0 } else { kind(r).len() + 3 }).max().unwrap_or(0)
}

/// The console text for a finished run, in plan order.
pub fn render(report: &RunReport, filtered_out: usize, style: Style) -> String {
    let results = &report.results;
    let mut out = header(results.len(), style);
    let name_width = results.iter().map(|r| sanitize(&r.name).chars().count()).max().unwrap_or(0);
    let kind_width = kind_width(results);
    let mut tally = Tally::default();
    for r in results {
        out.push_str(&line(r, style, name_width, kind_width, &mut tally));
    }
    let matrix = matrix_text(report);
    out.push_str(&tail(&tally, filtered_out, report.duration.as_secs_f64(), style, matrix.as_deref()));
    out
}

fn push_json(out: &mut String, value: serde_json::Value) {
    out.push_str(&value.to_string());
    out.push('\n');
}
