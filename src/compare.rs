//! Night over night (`--compare PATH`): what changed since earlier runs — new failures,
//! fixed, still failing, and checks whose verdict keeps flipping (flaky) over the last N
//! runs. A pure function of reports: [`load`] reads earlier runs, [`since`] compares them
//! with this one, and the reporters render the result ([`crate::report::since`]).
//!
//! Only checks of both runs are judged "fixed" or "still failing": a check this run did
//! not plan (a filter, a removed provider) is listed apart, never counted as fixed.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Serialize;

use crate::model::{RunReport, Verdict};

mod load;
pub use load::{Earlier, load};

/// Reads the earlier runs `request` names. Under `--compare` the path must exist: a
/// mistyped one would compare with nothing, night after night, and say only "first night".
pub fn load_for(request: &CompareRequest, json_name: &str) -> Result<Earlier, String> {
    if !request.first_night && std::fs::symlink_metadata(&request.path).is_err() {
        return Err(format!(
            "--compare {0}: no such file or directory (on the first night of a history that does not exist yet, use --compare-init {0})",
            request.path.display()
        ));
    }
    load(&request.path, json_name, request.window)
}

/// Runs looked at for flakiness (this one included) unless `--flaky-window` says otherwise:
/// a week of nightly runs.
pub const DEFAULT_WINDOW: usize = 7;

/// What `--compare` asked for.
#[derive(Debug, Clone)]
pub struct CompareRequest {
    pub path: PathBuf,
    /// `--compare-init`: a path that does not exist yet is a first night, not a mistake.
    pub first_night: bool,
    /// Runs, this one included, among which a flip of verdict counts toward flakiness.
    pub window: usize,
}

/// The "since last run" section every reporter shows.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Since {
    /// What `--compare` named.
    pub compared_with: String,
    /// The run compared with (the newest earlier one); `None` when there was none yet.
    pub previous: Option<PreviousRun>,
    /// Why there is nothing (or less) to compare: a first night, a report skipped; and
    /// what else changed between the two runs (cordon, the scenario, the suite, the engine).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// Which inputs differ from the previous run's (`cordon`, `scenario`, `suite`,
    /// `engine`): a change of verdict may be theirs, not the platform's.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub changed_inputs: Vec<String>,
    pub new_failures: Vec<Change>,
    pub fixed: Vec<Change>,
    pub still_failing: Vec<Change>,
    /// Any other change of verdict (e.g. passed → unreachable, failed → known failure).
    pub other_changes: Vec<Change>,
    pub flaky: Vec<Flaky>,
    /// Runs the flaky column looked at, this one included.
    pub runs_looked_at: usize,
    /// Checks of the previous run this run has not (filtered out, or no longer planned).
    pub not_in_this_run: Vec<String>,
    /// Checks this run has and the previous had not.
    pub new_checks: Vec<String>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct PreviousRun {
    pub path: String,
    /// Seconds since the epoch, as report.json writes `started_at`.
    pub started_at: u64,
    /// `started_at` as the history directory names it (UTC).
    pub stamp: String,
    pub scenario: String,
    pub suite: String,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Change {
    pub check: String,
    /// The verdict in the previous run; `None` for a check it did not have.
    pub before: Option<Verdict>,
    pub now: Verdict,
    /// This run's reason (for a fixed check, the previous run's).
    pub reason: String,
    /// The check is also flaky (see [`Since::flaky`]).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub flaky: bool,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Flaky {
    pub check: String,
    /// Oldest first, this run last; `None` where a run did not have the check.
    pub verdicts: Vec<Option<Verdict>>,
    /// Times the outcome changed between two runs that both had the check (at least
    /// [`FLAKY_FLIPS`]).
    pub flips: usize,
}

impl Flaky {
    /// `p F p F p`: one letter per run, oldest first (`.` where the run lacked it).
    pub fn trail(&self) -> String {
        self.verdicts.iter().map(|v| v.map_or(".", letter)).collect::<Vec<_>>().join(" ")
    }
}

/// One letter per verdict for the flaky trail.
pub fn letter(v: Verdict) -> &'static str {
    match v {
        Verdict::Passed => "p",
        Verdict::Failed => "F",
        Verdict::StaleBaseline => "S",
        Verdict::KnownFailure => "k",
        Verdict::Unreachable => "u",
        Verdict::Skipped => "s",
    }
}

/// What a verdict says about the deployment, for telling changes apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Holds,
    Broken,
    Known,
    Unknown,
}

fn outcome(v: Verdict) -> Option<Outcome> {
    match v {
        Verdict::Passed => Some(Outcome::Holds),
        Verdict::Failed | Verdict::StaleBaseline => Some(Outcome::Broken),
        Verdict::KnownFailure => Some(Outcome::Known),
        Verdict::Unreachable => Some(Outcome::Unknown),
        // Not applicable says nothing either way.
        Verdict::Skipped => None,
    }
}

impl Since {
    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.new_failures.is_empty()
            && self.fixed.is_empty()
            && self.still_failing.is_empty()
            && self.other_changes.is_empty()
            && self.flaky.is_empty()
    }

    /// "1 new failure, 1 fixed, 0 still failing, 0 flaky over 7 runs".
    pub fn headline(&self) -> String {
        format!(
            "{} new failure(s), {} fixed, {} still failing, {} other change(s), {} flaky over {} run(s)",
            self.new_failures.len(),
            self.fixed.len(),
            self.still_failing.len(),
            self.other_changes.len(),
            self.flaky.len(),
            self.runs_looked_at
        )
    }
}

/// `cordon compare BEFORE AFTER`: two saved runs (`report.json` files), compared as
/// `--compare` compares a run with the night before; an error names the file.
pub fn offline(before: &std::path::Path, after: &std::path::Path) -> Result<Since, String> {
    let read = |path: &std::path::Path| {
        if !path.is_file() {
            return Err(format!("{}: not a report.json file", path.display()));
        }
        load(path, "report.json", 2).and_then(|e| {
            e.runs.into_iter().next().map(|(_, r)| r).ok_or_else(|| format!("{}: no run in it", path.display()))
        })
    };
    let (earlier, later) = (read(before)?, read(after)?);
    let earlier = Earlier {
        compared_with: before.display().to_string(),
        runs: vec![(before.to_path_buf(), earlier)],
        notes: vec![],
    };
    Ok(since(&earlier, &later))
}

/// Compares `current` with `earlier` (oldest first; the last is the previous run).
pub fn since(earlier: &Earlier, current: &RunReport) -> Since {
    let mut out = Since {
        compared_with: earlier.compared_with.clone(),
        previous: None,
        notes: earlier.notes.clone(),
        changed_inputs: vec![],
        new_failures: vec![],
        fixed: vec![],
        still_failing: vec![],
        other_changes: vec![],
        flaky: vec![],
        runs_looked_at: earlier.runs.len() + 1,
        not_in_this_run: vec![],
        new_checks: vec![],
    };
    let Some((previous_path, previous)) = earlier.runs.last() else { return out };
    out.previous = Some(PreviousRun {
        path: previous_path.display().to_string(),
        started_at: unix_seconds(previous),
        stamp: crate::history::stamp(previous.started_at),
        scenario: previous.scenario.clone(),
        suite: previous.suite.clone(),
    });
    if previous.scenario != current.scenario {
        out.notes.push(format!(
            "the previous run was of scenario `{}`, this one of `{}`: changes may be the scenario's",
            previous.scenario, current.scenario
        ));
    }
    for (input, was, now) in changed_inputs(&previous.provenance, &current.provenance) {
        out.notes.push(format!(
            "{input} changed since the previous run ({was} → {now}): a change of verdict may be the {input}'s, not the platform's"
        ));
        out.changed_inputs.push(input.to_string());
    }
    let before: BTreeMap<&str, &crate::model::CheckResult> =
        previous.results.iter().map(|r| (r.name.as_str(), r)).collect();
    let now: BTreeMap<&str, &crate::model::CheckResult> =
        current.results.iter().map(|r| (r.name.as_str(), r)).collect();
    out.flaky = flaky(earlier, current);
    let is_flaky = |name: &str| out.flaky.iter().any(|f| f.check == name);
    for r in &current.results {
        let was = before.get(r.name.as_str());
        let change = |reason: &str| Change {
            check: r.name.clone(),
            before: was.map(|w| w.verdict),
            now: r.verdict,
            reason: reason.to_string(),
            flaky: is_flaky(&r.name),
        };
        let (then, now) = (was.and_then(|w| outcome(w.verdict)), outcome(r.verdict));
        match (then, now) {
            (Some(Outcome::Broken), Some(Outcome::Broken)) => out.still_failing.push(change(&r.reason)),
            (_, Some(Outcome::Broken)) => out.new_failures.push(change(&r.reason)),
            (Some(Outcome::Broken), Some(Outcome::Holds)) => {
                out.fixed.push(change(&was.map(|w| w.reason.clone()).unwrap_or_default()))
            }
            _ if was.is_some_and(|w| w.verdict != r.verdict) => out.other_changes.push(change(&r.reason)),
            _ => {}
        }
        if was.is_none() {
            out.new_checks.push(r.name.clone());
        }
    }
    out.not_in_this_run = before.keys().filter(|n| !now.contains_key(*n)).map(|n| n.to_string()).collect();
    out
}

/// Inputs of a run that differ between two reports: (input, before, now). An input one
/// of them did not record (an older report) is not called changed.
fn changed_inputs(
    before: &crate::model::Provenance,
    now: &crate::model::Provenance,
) -> Vec<(&'static str, String, String)> {
    let cordon = |p: &crate::model::Provenance| {
        if p.cordon_version.is_empty() {
            String::new()
        } else {
            format!("{} (commit {})", p.cordon_version, p.cordon_commit)
        }
    };
    let pairs = [
        ("cordon", cordon(before), cordon(now)),
        ("scenario", before.scenario_sha256.clone(), now.scenario_sha256.clone()),
        ("suite", before.suite_sha256.clone(), now.suite_sha256.clone()),
        ("engine", before.engine.clone(), now.engine.clone()),
    ];
    pairs.into_iter().filter(|(_, a, b)| !a.is_empty() && !b.is_empty() && a != b).collect()
}

/// Changes of outcome, among the runs looked at, from which a check is called flaky. A
/// break and its fix are two changes, and news (a new failure, then a fix), not noise; a
/// third change makes it a pattern.
pub const FLAKY_FLIPS: usize = 3;

/// Checks whose outcome changed [`FLAKY_FLIPS`] times or more among the runs looked at.
fn flaky(earlier: &Earlier, current: &RunReport) -> Vec<Flaky> {
    let runs: Vec<&RunReport> = earlier.runs.iter().map(|(_, r)| r).chain(std::iter::once(current)).collect();
    let mut out = Vec::new();
    for r in &current.results {
        let verdicts: Vec<Option<Verdict>> =
            runs.iter().map(|run| run.results.iter().find(|x| x.name == r.name).map(|x| x.verdict)).collect();
        let outcomes: Vec<Outcome> = verdicts.iter().flatten().filter_map(|v| outcome(*v)).collect();
        let flips = outcomes.windows(2).filter(|w| w[0] != w[1]).count();
        if flips >= FLAKY_FLIPS {
            out.push(Flaky { check: r.name.clone(), verdicts, flips });
        }
    }
    out
}

fn unix_seconds(r: &RunReport) -> u64 {
    r.started_at.duration_since(std::time::SystemTime::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}

#[cfg(test)]
mod tests;
