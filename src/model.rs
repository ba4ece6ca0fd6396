//! The result model every reporter reads: checks, verdicts, evidence.

use std::fmt;
use std::time::{Duration, SystemTime};

use serde::Serialize;

use crate::config::{Family, Mode};
use crate::exit;

/// `family::subject[::aspect]`, stable and filterable.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct CheckName {
    pub family: Family,
    pub subject: String,
    pub aspect: Option<String>,
}

impl CheckName {
    pub fn new(family: Family, subject: impl Into<String>) -> Self {
        Self { family, subject: subject.into(), aspect: None }
    }

    pub fn with_aspect(family: Family, subject: impl Into<String>, aspect: impl Into<String>) -> Self {
        Self { family, subject: subject.into(), aspect: Some(aspect.into()) }
    }
}

impl fmt::Display for CheckName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}::{}", self.family.as_str(), self.subject)?;
        if let Some(aspect) = &self.aspect {
            write!(f, "::{aspect}")?;
        }
        Ok(())
    }
}

/// What one execution of a check concluded. Only `NotReady` is ever retried.
#[derive(Debug, Clone, PartialEq)]
pub enum Attempt {
    Pass { evidence: Vec<String> },
    Fail { reason: String, evidence: Vec<String> },
    NotReady { reason: String, evidence: Vec<String> },
    Skip { reason: String },
}

impl Attempt {
    pub fn fail(reason: impl Into<String>, evidence: Vec<String>) -> Self {
        Attempt::Fail { reason: reason.into(), evidence }
    }

    pub fn not_ready(reason: impl Into<String>, evidence: Vec<String>) -> Self {
        Attempt::NotReady { reason: reason.into(), evidence }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Passed,
    /// The deployment violates its contract. Final, never retried.
    Failed,
    /// No answer (or only "starting" answers) until the deadline: an infrastructure error.
    Unreachable,
    Skipped,
    /// Fails, and the suite's baseline says so with a reason.
    KnownFailure,
    /// Listed in the baseline but passes: the baseline must be updated.
    StaleBaseline,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Passed => "passed",
            Verdict::Failed => "failed",
            Verdict::Unreachable => "unreachable",
            Verdict::Skipped => "skipped",
            Verdict::KnownFailure => "known failure",
            Verdict::StaleBaseline => "stale baseline",
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct CheckResult {
    pub name: String,
    pub family: Family,
    pub verdict: Verdict,
    /// Why it failed, was skipped or is known to fail; empty when it passed.
    pub reason: String,
    pub evidence: Vec<String>,
    pub attempts: u32,
    #[serde(serialize_with = "as_seconds")]
    pub duration: Duration,
}

fn as_seconds<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64((d.as_secs_f64() * 1000.0).round() / 1000.0)
}

#[derive(Debug, Clone, Serialize)]
pub struct RunReport {
    pub scenario: String,
    pub suite: String,
    pub mode: Mode,
    #[serde(serialize_with = "as_unix_seconds")]
    pub started_at: SystemTime,
    #[serde(serialize_with = "as_seconds")]
    pub duration: Duration,
    pub results: Vec<CheckResult>,
    /// Checks planned but left out by the name filter.
    pub filtered_out: usize,
}

fn as_unix_seconds<S: serde::Serializer>(t: &SystemTime, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u64(t.duration_since(SystemTime::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0))
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    pub passed: usize,
    pub failed: usize,
    pub unreachable: usize,
    pub skipped: usize,
    pub known_failures: usize,
    pub stale_baseline: usize,
}

impl RunReport {
    pub fn counts(&self) -> Counts {
        let mut c = Counts::default();
        for r in &self.results {
            match r.verdict {
                Verdict::Passed => c.passed += 1,
                Verdict::Failed => c.failed += 1,
                Verdict::Unreachable => c.unreachable += 1,
                Verdict::Skipped => c.skipped += 1,
                Verdict::KnownFailure => c.known_failures += 1,
                Verdict::StaleBaseline => c.stale_baseline += 1,
            }
        }
        c
    }

    /// A contract violation outranks an infrastructure error: it is actionable now,
    /// whatever else could not be reached.
    pub fn exit_code(&self) -> i32 {
        let c = self.counts();
        if c.failed > 0 || c.stale_baseline > 0 {
            exit::CHECK_FAILED
        } else if c.unreachable > 0 {
            exit::INFRASTRUCTURE
        } else {
            exit::OK
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(verdict: Verdict) -> CheckResult {
        CheckResult {
            name: "contract::a::tools".into(),
            family: Family::Contract,
            verdict,
            reason: String::new(),
            evidence: vec![],
            attempts: 1,
            duration: Duration::ZERO,
        }
    }

    fn report(verdicts: &[Verdict]) -> RunReport {
        RunReport {
            scenario: "s".into(),
            suite: "t".into(),
            mode: Mode::Host,
            started_at: SystemTime::now(),
            duration: Duration::ZERO,
            results: verdicts.iter().map(|v| result(*v)).collect(),
            filtered_out: 0,
        }
    }

    #[test]
    fn check_names_are_stable() {
        assert_eq!(CheckName::with_aspect(Family::Contract, "gitea", "tools").to_string(), "contract::gitea::tools");
        assert_eq!(CheckName::new(Family::Route, "openwebui->gitea").to_string(), "route::openwebui->gitea");
    }

    #[test]
    fn exit_codes_follow_verdict_classes() {
        assert_eq!(report(&[Verdict::Passed, Verdict::Skipped, Verdict::KnownFailure]).exit_code(), exit::OK);
        assert_eq!(report(&[Verdict::Passed, Verdict::Unreachable]).exit_code(), exit::INFRASTRUCTURE);
        assert_eq!(report(&[Verdict::Unreachable, Verdict::Failed]).exit_code(), exit::CHECK_FAILED);
        assert_eq!(report(&[Verdict::StaleBaseline]).exit_code(), exit::CHECK_FAILED);
    }
}
