//! The result model every reporter reads: checks, verdicts, typed findings, evidence.
//!
//! A check's verdict rests on [`Finding`]s: typed values (a stable [`FindingKind`] code,
//! the facts it rests on, and the sentence a reporter shows). Judges build them from
//! observations; reporters render them, each with its own escaping, and never decide.

use std::collections::BTreeMap;
use std::fmt;
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

use crate::config::{Family, Mode};
use crate::exit;

/// `family::subject[::aspect]`, stable and filterable. A pair check also knows its
/// client and provider, so reporters can place it without parsing the name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct CheckName {
    pub family: Family,
    pub subject: String,
    pub aspect: Option<String>,
    pub client: Option<String>,
    pub provider: Option<String>,
}

impl CheckName {
    pub fn new(family: Family, subject: impl Into<String>) -> Self {
        Self { family, subject: subject.into(), aspect: None, client: None, provider: None }
    }

    /// `family::<provider>[::aspect]`.
    pub fn of_provider(family: Family, provider: &str, aspect: Option<&str>) -> Self {
        Self {
            family,
            subject: provider.to_string(),
            aspect: aspect.map(str::to_string),
            client: None,
            provider: Some(provider.to_string()),
        }
    }

    #[cfg(test)]
    pub fn with_aspect(family: Family, subject: impl Into<String>, aspect: impl Into<String>) -> Self {
        let subject = subject.into();
        Self { family, provider: Some(subject.clone()), subject, aspect: Some(aspect.into()), client: None }
    }

    /// `family::<client><arrow><provider>`, e.g. `route::webui->gitea`, `reach::n8n-/->gitea`.
    pub fn pair(family: Family, client: &str, arrow: &str, provider: &str) -> Self {
        Self {
            family,
            subject: format!("{client}{arrow}{provider}"),
            aspect: None,
            client: Some(client.to_string()),
            provider: Some(provider.to_string()),
        }
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

/// Stable codes for every rule a check can find broken. Reporters and tests key on
/// these; the message beside them is for people.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FindingKind {
    // route / session resolution
    NameDoesNotResolve,
    OnlyWildcard,
    ForeignAddress,
    AmbiguousName,
    HostsFilePin,
    ProviderNotAccepting,
    // reach
    LateralReach,
    PublishedPortReach,
    // session / contract
    SessionFailed,
    ReadFailed,
    ToolsMismatch,
    MutatingToolServed,
    SchemaPinMismatch,
    ErasDisagree,
    // refusal
    NotRefused,
    ToolsDisclosed,
    SessionGranted,
    SessionNotBound,
    RefusalSessionServes,
    Redirected,
    Undecodable,
    SharedSecret,
    CannotBeJudged,
    // disabled
    StillRouted,
    StillAccepting,
    StillListening,
    CredentialAlive,
    // sidecar
    UndeclaredNetwork,
    AddressOutsideDeclared,
    MissingDeclaredNetwork,
    ViewsDisagree,
    Hardening,
    // the boundary behind the handshake
    DeniedToolRan,
    ArgumentAccepted,
    LimitNotEnforced,
    CredentialHeld,
    SecretInLog,
    SecretInUrl,
    Egress,
    // open webui
    ConnectionDrift,
    UnmanagedConnection,
    AccessDrift,
    ToolCallFailed,
    RestartDrift,
    // flowise / n8n
    RegistryDrift,
    SecretInPlain,
    SsrfGuardOff,
    WorkflowDrift,
    // anything a family has not classified yet
    Other,
}

impl FindingKind {
    pub fn as_str(self) -> String {
        serde_json::to_value(self).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default()
    }
}

/// One broken rule, with the facts it rests on (addresses, ports, statuses, names).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    pub kind: FindingKind,
    /// The sentence a reporter shows, built from the facts.
    pub message: String,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub facts: BTreeMap<String, String>,
}

impl Finding {
    pub fn new(kind: FindingKind, message: impl Into<String>) -> Self {
        Self { kind, message: message.into(), facts: BTreeMap::new() }
    }

    /// Adds one fact (e.g. `addr`, `port`, `container`, `network`, `entry`, `status`).
    pub fn fact(mut self, key: &str, value: impl ToString) -> Self {
        self.facts.insert(key.to_string(), value.to_string());
        self
    }
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// What one execution of a check concluded. Only `NotReady` is ever retried.
#[derive(Debug, Clone, PartialEq)]
pub enum Attempt {
    Pass { evidence: Vec<String> },
    Fail { findings: Vec<Finding>, evidence: Vec<String> },
    NotReady { reason: String, evidence: Vec<String> },
    Skip { reason: String },
}

impl Attempt {
    /// A failure with one unclassified finding.
    pub fn fail(reason: impl Into<String>, evidence: Vec<String>) -> Self {
        Attempt::Fail { findings: vec![Finding::new(FindingKind::Other, reason)], evidence }
    }

    pub fn failed(findings: Vec<Finding>, evidence: Vec<String>) -> Self {
        debug_assert!(!findings.is_empty(), "a failure rests on at least one finding");
        Attempt::Fail { findings, evidence }
    }

    pub fn not_ready(reason: impl Into<String>, evidence: Vec<String>) -> Self {
        Attempt::NotReady { reason: reason.into(), evidence }
    }

    /// Pass when nothing was found, otherwise fail with the findings.
    pub fn from_findings(findings: Vec<Finding>, evidence: Vec<String>) -> Self {
        if findings.is_empty() { Attempt::Pass { evidence } } else { Attempt::Fail { findings, evidence } }
    }

    /// The verdict of findings and not-ready reasons gathered together: findings fail the
    /// check, else anything not ready makes it wait, else it passes.
    pub fn settle(findings: Vec<Finding>, not_ready: Vec<String>, evidence: Vec<String>) -> Self {
        if !findings.is_empty() {
            Attempt::Fail { findings, evidence }
        } else if !not_ready.is_empty() {
            Attempt::not_ready(not_ready.join("; "), evidence)
        } else {
            Attempt::Pass { evidence }
        }
    }

    pub fn evidence(&self) -> &[String] {
        match self {
            Attempt::Pass { evidence } | Attempt::Fail { evidence, .. } | Attempt::NotReady { evidence, .. } => {
                evidence
            }
            Attempt::Skip { .. } => &[],
        }
    }

    #[cfg(test)]
    pub fn is_pass(&self) -> bool {
        matches!(self, Attempt::Pass { .. })
    }
}

/// The findings of a failure, as one line.
pub fn reason_of(findings: &[Finding]) -> String {
    findings.iter().map(|f| f.message.as_str()).collect::<Vec<_>>().join("; ")
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
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

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CheckResult {
    pub name: String,
    pub family: Family,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    pub verdict: Verdict,
    /// Why it failed, was skipped or is known to fail; empty when it passed.
    pub reason: String,
    /// The broken rules behind a failure (or a known failure), typed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub findings: Vec<Finding>,
    pub evidence: Vec<String>,
    /// Observations that did not repeat (e.g. a connect the engine let through for a
    /// moment): recorded, not judged.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub transient: Vec<String>,
    pub attempts: u32,
    /// The check's own time: its attempts, not the time it waited for a slot.
    #[serde(serialize_with = "as_seconds", deserialize_with = "from_seconds")]
    pub duration: Duration,
    /// Time spent waiting for a concurrency slot, apart.
    #[serde(default, serialize_with = "as_seconds", deserialize_with = "from_seconds")]
    pub queued: Duration,
}

impl CheckResult {
    /// A result with no evidence yet, for `name`.
    pub fn new(name: &CheckName, verdict: Verdict, reason: impl Into<String>) -> Self {
        CheckResult {
            name: name.to_string(),
            family: name.family,
            client: name.client.clone(),
            provider: name.provider.clone(),
            verdict,
            reason: reason.into(),
            findings: vec![],
            evidence: vec![],
            transient: vec![],
            attempts: 1,
            duration: Duration::ZERO,
            queued: Duration::ZERO,
        }
    }
}

fn as_seconds<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64((d.as_secs_f64() * 1000.0).round() / 1000.0)
}

fn from_seconds<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    let s = f64::deserialize(d)?;
    Duration::try_from_secs_f64(s).map_err(serde::de::Error::custom)
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunReport {
    pub scenario: String,
    pub suite: String,
    pub mode: Mode,
    #[serde(serialize_with = "as_unix_seconds", deserialize_with = "from_unix_seconds")]
    pub started_at: SystemTime,
    #[serde(serialize_with = "as_seconds", deserialize_with = "from_seconds")]
    pub duration: Duration,
    pub results: Vec<CheckResult>,
    /// Checks planned but left out by the name filter.
    pub filtered_out: usize,
    /// What the run asked of the engine and the kernel (absent from older reports).
    #[serde(default)]
    pub cost: crate::cost::Cost,
}

fn as_unix_seconds<S: serde::Serializer>(t: &SystemTime, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u64(t.duration_since(SystemTime::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0))
}

fn from_unix_seconds<'de, D: serde::Deserializer<'de>>(d: D) -> Result<SystemTime, D::Error> {
    Ok(SystemTime::UNIX_EPOCH + Duration::from_secs(u64::deserialize(d)?))
}

impl RunReport {
    /// Reads back the `report` part of a `report.json` cordon wrote.
    pub fn from_json(text: &str) -> Result<RunReport, String> {
        let value: serde_json::Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
        serde_json::from_value(value["report"].clone()).map_err(|e| e.to_string())
    }
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

    /// Checks that saw something the engine did not repeat: worth a line in every
    /// summary ("engine instability observed"), never a verdict.
    pub fn instability(&self) -> Vec<&CheckResult> {
        self.results.iter().filter(|r| !r.transient.is_empty()).collect()
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
        CheckResult::new(&CheckName::with_aspect(Family::Contract, "a", "tools"), verdict, "")
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
            cost: Default::default(),
        }
    }

    #[test]
    fn check_names_are_stable() {
        assert_eq!(CheckName::with_aspect(Family::Contract, "gitea", "tools").to_string(), "contract::gitea::tools");
        let pair = CheckName::pair(Family::Route, "openwebui", "->", "gitea");
        assert_eq!(pair.to_string(), "route::openwebui->gitea");
        assert_eq!((pair.client.as_deref(), pair.provider.as_deref()), (Some("openwebui"), Some("gitea")));
    }

    #[test]
    fn exit_codes_follow_verdict_classes() {
        assert_eq!(report(&[Verdict::Passed, Verdict::Skipped, Verdict::KnownFailure]).exit_code(), exit::OK);
        assert_eq!(report(&[Verdict::Passed, Verdict::Unreachable]).exit_code(), exit::INFRASTRUCTURE);
        assert_eq!(report(&[Verdict::Unreachable, Verdict::Failed]).exit_code(), exit::CHECK_FAILED);
        assert_eq!(report(&[Verdict::StaleBaseline]).exit_code(), exit::CHECK_FAILED);
    }

    #[test]
    fn finding_kinds_have_stable_codes() {
        assert_eq!(FindingKind::LateralReach.as_str(), "lateral_reach");
        assert_eq!(FindingKind::CannotBeJudged.as_str(), "cannot_be_judged");
        let f = Finding::new(FindingKind::LateralReach, "x").fact("addr", "10.0.0.1:80");
        assert_eq!(serde_json::to_value(&f).unwrap()["facts"]["addr"], "10.0.0.1:80");
    }
}
