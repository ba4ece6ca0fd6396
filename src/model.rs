//! The result model every reporter reads: checks, verdicts, typed findings, evidence.
//!
//! A check's verdict rests on [`Finding`]s: typed values (a stable [`FindingKind`] code,
//! the facts it rests on, and the sentence a reporter shows). Judges build them from
//! observations; reporters render them, each with its own escaping, and never decide.

use std::fmt;
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

use crate::exit::Ending;

mod finding;
pub use finding::{Finding, FindingKind, phrase, reason_of, told_once};

/// How cordon reaches the deployment: from its own namespace, or into the containers of
/// a compose project or a swarm stack.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// Probes run from cordon's own network namespace against the scenario's URLs.
    Host,
    Compose,
    Swarm,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Family {
    Route,
    Reach,
    Session,
    Contract,
    Disabled,
    Sidecar,
    Openwebui,
    Credentials,
    Secrets,
    Flowise,
    N8n,
}

impl Family {
    pub const ALL: [Family; 11] = [
        Family::Route,
        Family::Reach,
        Family::Session,
        Family::Contract,
        Family::Disabled,
        Family::Sidecar,
        Family::Openwebui,
        Family::Credentials,
        Family::Secrets,
        Family::Flowise,
        Family::N8n,
    ];

    /// The family a name starts with (`route`, `n8n`, …).
    pub fn from_name(name: &str) -> Option<Family> {
        Family::ALL.into_iter().find(|f| f.as_str() == name)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Family::Route => "route",
            Family::Reach => "reach",
            Family::Session => "session",
            Family::Contract => "contract",
            Family::Disabled => "disabled",
            Family::Sidecar => "sidecar",
            Family::Openwebui => "openwebui",
            Family::Credentials => "credentials",
            Family::Secrets => "secrets",
            Family::Flowise => "flowise",
            Family::N8n => "n8n",
        }
    }

    /// The families each mode can run; the rest need a mode that enters namespaces.
    pub fn supported_in(self, mode: Mode) -> bool {
        match mode {
            Mode::Host => matches!(self, Family::Contract | Family::Credentials),
            Mode::Compose => true,
            Mode::Swarm => !matches!(self, Family::Openwebui | Family::Flowise | Family::N8n),
        }
    }
}

/// How the client of a pair check stands to its provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Relation {
    /// The provider admits the client: `<client>-><provider>`.
    Admitted,
    /// The provider does not admit the client: `<client>-/-><provider>`.
    NotAdmitted,
    /// The app behind the provider's adapter sidecar, which no client may reach:
    /// `<client>-/->app:<provider>`.
    AppBehind,
}

impl Relation {
    pub fn arrow(self) -> &'static str {
        match self {
            Relation::Admitted => "->",
            Relation::NotAdmitted => "-/->",
            Relation::AppBehind => "-/->app:",
        }
    }
}

/// A check's identity: `family::subject[::aspect]` as a name, stable and filterable, and
/// the client, provider and relation a pair check is about, so reporters place it, the
/// baseline matches it and `explain` describes it from these fields, never from the name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct CheckName {
    pub family: Family,
    /// The subject as the name shows it (`webui->gitea`, `gitea`, `logs`). Reports from
    /// before it was recorded read back with it empty.
    #[serde(default)]
    pub subject: String,
    /// `tools` of `contract::gitea::tools`; `last_group_removed`, `oidc` of
    /// `openwebui::access::last_group_removed::oidc`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub aspect: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub relation: Option<Relation>,
}

impl CheckName {
    pub fn new(family: Family, subject: impl Into<String>) -> Self {
        Self { family, subject: subject.into(), aspect: vec![], client: None, provider: None, relation: None }
    }

    /// `family::<provider>[::aspect]`.
    pub fn of_provider(family: Family, provider: &str, aspect: Option<&str>) -> Self {
        Self {
            aspect: aspect.map(str::to_string).into_iter().collect(),
            provider: Some(provider.to_string()),
            ..Self::new(family, provider)
        }
    }

    /// `family::<subject>[::aspect…]` of a client application (Open WebUI, Flowise, n8n),
    /// about `provider` when it is one provider's check.
    pub fn of_client(family: Family, client: &str, subject: &str, aspect: &[&str], provider: Option<&str>) -> Self {
        Self {
            aspect: aspect.iter().map(|a| a.to_string()).collect(),
            client: Some(client.to_string()),
            provider: provider.map(str::to_string),
            ..Self::new(family, subject)
        }
    }

    #[cfg(test)]
    pub fn with_aspect(family: Family, subject: impl Into<String>, aspect: impl Into<String>) -> Self {
        let subject = subject.into();
        Self { provider: Some(subject.clone()), aspect: vec![aspect.into()], ..Self::new(family, subject) }
    }

    /// `family::<client><arrow><provider>`, e.g. `route::webui->gitea`, `reach::n8n-/->gitea`.
    pub fn pair(family: Family, client: &str, relation: Relation, provider: &str) -> Self {
        Self {
            client: Some(client.to_string()),
            provider: Some(provider.to_string()),
            relation: Some(relation),
            ..Self::new(family, format!("{client}{}{provider}", relation.arrow()))
        }
    }

    /// The check is about the app behind a provider's sidecar, not the provider.
    pub fn is_app(&self) -> bool {
        self.relation == Some(Relation::AppBehind)
    }

    /// The name's segments, in order: family, subject, aspect.
    pub fn segments(&self) -> Vec<&str> {
        let mut out = vec![self.family.as_str(), self.subject.as_str()];
        out.extend(self.aspect.iter().map(String::as_str));
        out
    }

    /// The identity of a name a person typed (`cordon explain reach::webui-/->app:gitea`):
    /// the one place text becomes an identity; cordon's own results carry theirs.
    pub fn parse(text: &str) -> Option<CheckName> {
        let mut parts = text.split("::");
        let family = Family::from_name(parts.next()?)?;
        let subject = parts.next().filter(|s| !s.is_empty())?;
        let aspect: Vec<String> = parts.map(str::to_string).collect();
        let pair = [Relation::AppBehind, Relation::NotAdmitted, Relation::Admitted]
            .into_iter()
            .find_map(|r| subject.split_once(r.arrow()).map(|(c, p)| (r, c, p)))
            .filter(|(_, c, p)| !c.is_empty() && !p.is_empty());
        Some(match pair {
            Some((relation, client, provider)) if aspect.is_empty() => {
                CheckName::pair(family, client, relation, provider)
            }
            _ => CheckName { aspect, ..CheckName::new(family, subject) },
        })
    }
}

impl fmt::Display for CheckName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}::{}", self.family.as_str(), self.subject)?;
        for aspect in &self.aspect {
            write!(f, "::{aspect}")?;
        }
        Ok(())
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
        Attempt::Fail { findings: vec![Finding::unclassified(reason.into())], evidence }
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

    /// Puts `line` first in the evidence (where the check probed from, say).
    pub fn lead_with(&mut self, line: String) {
        if let Attempt::Pass { evidence } | Attempt::Fail { evidence, .. } | Attempt::NotReady { evidence, .. } = self {
            evidence.insert(0, line);
        }
    }

    /// A not-ready attempt's reason, for an observation that crosses as data.
    pub fn into_reason(self) -> String {
        match self {
            Attempt::NotReady { reason, .. } => reason,
            other => format!("{other:?}"),
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

/// One attempt's verdict, with what it saw that did not repeat (a connect the engine let
/// through for a moment): recorded beside the verdict, never judged.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub attempt: Attempt,
    pub transient: Vec<String>,
}

impl From<Attempt> for Outcome {
    fn from(attempt: Attempt) -> Self {
        Outcome { attempt, transient: vec![] }
    }
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
    /// The identity rendered (`route::webui->gitea`): what people read and runs compare.
    pub name: String,
    #[serde(flatten)]
    pub id: CheckName,
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
            id: name.clone(),
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
    /// Which cordon judged, from which scenario and suite, against which engine (absent
    /// from older reports).
    #[serde(default)]
    pub provenance: Provenance,
}

/// Which cordon, scenario, suite and engine a run was: a change of verdict between two
/// nights may be any of them, not the platform.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Provenance {
    /// cordon's version (`0.1.0`).
    pub cordon_version: String,
    /// The commit cordon was built from.
    pub cordon_commit: String,
    /// `sha256:<hex>` of the scenario file's text; empty when there was no file (`probe`).
    pub scenario_sha256: String,
    /// `sha256:<hex>` of the suite's text (a built-in suite's too).
    pub suite_sha256: String,
    /// The engine, as it names itself; empty when no engine was reached (host mode).
    pub engine: String,
}

impl Provenance {
    /// This build of cordon, and the scenario and suite it read.
    pub fn of(scenario_sha256: &str, suite_sha256: &str, engine: Option<String>) -> Provenance {
        Provenance {
            cordon_version: env!("CARGO_PKG_VERSION").to_string(),
            cordon_commit: env!("CORDON_COMMIT").to_string(),
            scenario_sha256: scenario_sha256.to_string(),
            suite_sha256: suite_sha256.to_string(),
            engine: engine.unwrap_or_default(),
        }
    }

    /// `name = value` pairs, in the order every report shows them (empty ones left out).
    pub fn pairs(&self, mode: Mode) -> Vec<(&'static str, String)> {
        let mode = match mode {
            Mode::Host => "host",
            Mode::Compose => "compose",
            Mode::Swarm => "swarm",
        };
        [
            ("cordon.version", self.cordon_version.clone()),
            ("cordon.commit", self.cordon_commit.clone()),
            ("scenario.sha256", self.scenario_sha256.clone()),
            ("suite.sha256", self.suite_sha256.clone()),
            ("engine", self.engine.clone()),
            ("mode", mode.to_string()),
        ]
        .into_iter()
        .filter(|(_, v)| !v.is_empty())
        .collect()
    }

    /// `cordon 0.1.0 (commit abc), scenario sha256:…, …` for one line of a report.
    pub fn line(&self, mode: Mode) -> String {
        self.pairs(mode).iter().map(|(k, v)| format!("{k} {v}")).collect::<Vec<_>>().join(", ")
    }
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
    pub fn ending(&self) -> Ending {
        let c = self.counts();
        if c.failed > 0 || c.stale_baseline > 0 {
            Ending::ChecksFailed
        } else if c.unreachable > 0 {
            Ending::Infrastructure
        } else {
            Ending::Passed
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
            provenance: Default::default(),
        }
    }

    #[test]
    fn check_names_are_stable() {
        assert_eq!(CheckName::with_aspect(Family::Contract, "gitea", "tools").to_string(), "contract::gitea::tools");
        let pair = CheckName::pair(Family::Route, "openwebui", Relation::Admitted, "gitea");
        assert_eq!(pair.to_string(), "route::openwebui->gitea");
        assert_eq!((pair.client.as_deref(), pair.provider.as_deref()), (Some("openwebui"), Some("gitea")));
        let app = CheckName::pair(Family::Reach, "webui", Relation::AppBehind, "gitea");
        assert_eq!(app.to_string(), "reach::webui-/->app:gitea");
        assert!(app.is_app());
    }

    #[test]
    fn a_typed_name_reads_back_as_the_identity_it_shows() {
        for name in [
            CheckName::pair(Family::Route, "webui", Relation::Admitted, "gitea"),
            CheckName::pair(Family::Reach, "n8n", Relation::NotAdmitted, "gitea"),
            CheckName::pair(Family::Reach, "webui", Relation::AppBehind, "gitea"),
            CheckName::of_provider(Family::Disabled, "wiki", None),
            CheckName::new(Family::Secrets, "logs"),
        ] {
            let back = CheckName::parse(&name.to_string()).unwrap();
            assert_eq!(
                (back.to_string(), back.relation, back.is_app()),
                (name.to_string(), name.relation, name.is_app())
            );
        }
        let aspect = CheckName::parse("contract::native::tools").unwrap();
        assert_eq!((aspect.subject.as_str(), aspect.aspect.as_slice()), ("native", &["tools".to_string()][..]));
        let oidc = CheckName::parse("openwebui::access::last_group_removed::oidc").unwrap();
        assert_eq!(oidc.segments(), ["openwebui", "access", "last_group_removed", "oidc"]);
        assert!(CheckName::parse("nope::x").is_none());
        assert!(CheckName::parse("route::").is_none());
    }

    #[test]
    fn a_result_carries_its_identity_in_json_and_reads_older_reports() {
        let r = CheckResult::new(
            &CheckName::pair(Family::Reach, "n8n", Relation::NotAdmitted, "gitea"),
            Verdict::Passed,
            "",
        );
        let json = serde_json::to_value(&r).unwrap();
        assert_eq!((json["name"].as_str(), json["family"].as_str()), (Some("reach::n8n-/->gitea"), Some("reach")));
        assert_eq!((json["client"].as_str(), json["relation"].as_str()), (Some("n8n"), Some("not_admitted")));
        let older = serde_json::json!({"name": "route::a->b", "family": "route", "client": "a", "provider": "b",
            "verdict": "passed", "reason": "", "evidence": [], "attempts": 1, "duration": 0.1});
        let back: CheckResult = serde_json::from_value(older).unwrap();
        assert_eq!((back.name.as_str(), back.id.client.as_deref()), ("route::a->b", Some("a")));
    }

    #[test]
    fn exit_codes_follow_verdict_classes() {
        assert_eq!(report(&[Verdict::Passed, Verdict::Skipped, Verdict::KnownFailure]).ending(), Ending::Passed);
        assert_eq!(report(&[Verdict::Passed, Verdict::Unreachable]).ending(), Ending::Infrastructure);
        assert_eq!(report(&[Verdict::Unreachable, Verdict::Failed]).ending(), Ending::ChecksFailed);
        assert_eq!(report(&[Verdict::StaleBaseline]).ending(), Ending::ChecksFailed);
    }

    #[test]
    fn finding_kinds_have_stable_codes() {
        assert_eq!(FindingKind::LateralReach.as_str(), "lateral_reach");
        assert_eq!(FindingKind::CannotBeJudged.as_str(), "cannot_be_judged");
        let f = Finding::new(FindingKind::LateralReach, "x").fact("addr", "10.0.0.1:80");
        assert_eq!(serde_json::to_value(&f).unwrap()["facts"]["addr"], "10.0.0.1:80");
    }
}
