//! The suite file: which check families run, how, with which deadlines and baseline.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use serde_saphyr::Spanned;

use super::check_pattern::CheckPattern;
use super::duration::{HumanDuration, HumanSize};
use super::error::{ConfigError, ConfigErrors, parse_yaml, read_file};
use super::outputs::{DIR_KEY, Outputs};
use super::strict::{Flag, Whole};
use crate::mcp::Limits;
pub use crate::model::{Family, Mode};
use crate::model::{Finding, FindingKind};

/// The suites shipped with cordon, built into the binary: a release binary run outside
/// the checkout still finds `--suite suites/compose.yaml`. A file at that path wins.
pub const BUILT_IN: [(&str, &str); 3] = [
    ("suites/compose.yaml", include_str!("../../suites/compose.yaml")),
    ("suites/swarm.yaml", include_str!("../../suites/swarm.yaml")),
    ("suites/local.yaml", include_str!("../../suites/local.yaml")),
];

/// Most bytes one response (and one listing's pages together) may be allowed to hold:
/// the cap bounds cordon's memory, so it is bounded too.
pub const MAX_RESPONSE_BYTES_LIMIT: u64 = 256 << 20;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SuiteFile {
    mode: Spanned<Mode>,
    families: Vec<Spanned<Family>>,
    #[serde(default)]
    timeouts: TimeoutsFile,
    #[serde(default)]
    limits: LimitsFile,
    /// Checks (hence namespaces, one OS thread each) at once.
    concurrency: Option<Whole<usize, 1, 4096>>,
    #[serde(default)]
    known_failures: Vec<Spanned<KnownFailureFile>>,
    #[serde(default)]
    outputs: OutputsFile,
    /// Checks that disrupt the deployment (a container restart) may run.
    #[serde(default)]
    disruptive: Flag,
    /// Swarm: node (hostname or id) → the engine that serves it (`unix://…`, `tcp://…`).
    #[serde(default)]
    engines: std::collections::BTreeMap<String, String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct TimeoutsFile {
    connect: Option<Spanned<HumanDuration>>,
    read: Option<Spanned<HumanDuration>>,
    deadline: Option<Spanned<HumanDuration>>,
    retry_interval: Option<Spanned<HumanDuration>>,
    sse_max_duration: Option<Spanned<HumanDuration>>,
    exchange: Option<Spanned<HumanDuration>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct LimitsFile {
    max_response_bytes: Option<Spanned<HumanSize>>,
    max_pages: Option<Whole<usize, 1, 10_000>>,
    max_tools: Option<Whole<usize, 1, 1_000_000>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct KnownFailureFile {
    check: String,
    /// Required: the finding the baseline accepts, not the whole check.
    finding: Option<FindingMatchFile>,
    reason: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FindingMatchFile {
    kind: String,
    #[serde(default)]
    facts: std::collections::BTreeMap<String, String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct OutputsFile {
    dir: Option<Spanned<PathBuf>>,
    junit: Option<Spanned<String>>,
    json: Option<Spanned<String>>,
    markdown: Option<Spanned<String>>,
    html: Option<Spanned<String>>,
    #[serde(default)]
    timestamped: Flag,
}

#[derive(Debug, Clone)]
pub struct Suite {
    pub file: PathBuf,
    pub mode: Mode,
    pub families: Vec<Family>,
    pub limits: Limits,
    /// No retry of an unreachable check starts later than this after the run began.
    pub deadline: Duration,
    pub retry_interval: Duration,
    pub concurrency: usize,
    pub known_failures: Vec<KnownFailure>,
    pub outputs: Outputs,
    /// Checks that disrupt the deployment (restarting a container) may run; otherwise
    /// they are skipped, saying so.
    pub disruptive: bool,
    /// Swarm: node (hostname or id) → engine URL; tasks there are probed through carriers.
    pub engines: std::collections::BTreeMap<String, String>,
    /// `sha256:<hex>` of the text it was read from (a built-in suite's too).
    pub sha256: String,
}

/// One known failure: a finding of one check, accepted with a reason. It matches a
/// finding (its kind, and the facts it names), never the check as a whole: a different
/// finding on the same check still fails the run.
#[derive(Debug, Clone)]
pub struct KnownFailure {
    /// The check's exact name, or a pattern (`sidecar::*::hardening`).
    pub check: CheckPattern,
    pub finding: FindingMatch,
    pub reason: String,
    /// `file:line:column`, for the error when the entry names no check.
    pub origin: ConfigError,
}

impl KnownFailure {
    /// `file:line:column` of the entry.
    pub fn location(&self) -> String {
        let o = &self.origin;
        format!("{}:{}:{}", o.file.display(), o.line, o.column)
    }
}

/// The finding a known failure accepts: its kind, and facts that must hold as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FindingMatch {
    pub kind: FindingKind,
    pub facts: std::collections::BTreeMap<String, String>,
}

impl FindingMatch {
    pub fn matches(&self, finding: &Finding) -> bool {
        finding.kind == self.kind && self.facts.iter().all(|(k, v)| finding.facts.get(k) == Some(v))
    }
}

impl std::fmt::Display for FindingMatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.kind.as_str())?;
        for (k, v) in &self.facts {
            write!(f, " {k}={v:?}")?;
        }
        Ok(())
    }
}

/// The finding of a known failure entry, or why it names none.
fn known_finding(entry: &KnownFailureFile) -> Result<FindingMatch, String> {
    let Some(finding) = &entry.finding else {
        return Err(format!(
            "a known failure accepts one finding of `{}`, not the whole check: add `finding: {{ kind: <kind> }}` (and `facts:` to narrow it) with the `kind` its failure shows in report.json",
            entry.check
        ));
    };
    let kind = serde_json::from_value::<FindingKind>(serde_json::Value::String(finding.kind.clone())).map_err(|_| {
        format!(
            "`{}` is not a finding kind (kinds are the `kind` values of findings in report.json, e.g. lateral_reach, not_refused, hardening)",
            crate::text::sanitize(&finding.kind)
        )
    })?;
    Ok(FindingMatch { kind, facts: finding.facts.clone() })
}

pub const DEFAULT_CONCURRENCY: usize = 256;
pub const DEFAULT_DEADLINE: Duration = Duration::from_secs(60);
pub const DEFAULT_RETRY_INTERVAL: Duration = Duration::from_secs(1);

impl Suite {
    pub fn load(path: &Path) -> Result<Suite, ConfigErrors> {
        let text = read_file(path)?;
        Self::from_text(path, &text)
    }

    /// [`Suite::load`], except that a missing file named like a built-in suite
    /// (`suites/compose.yaml`) is read from the copy built into the binary.
    pub fn load_or_built_in(path: &Path) -> Result<Suite, ConfigErrors> {
        let built_in = BUILT_IN.iter().find(|(name, _)| Path::new(name) == path);
        match built_in {
            Some((name, text)) if std::fs::symlink_metadata(path).is_err() => {
                let label = PathBuf::from(format!("{name} (built in)"));
                Self::from_text(&label, text)
            }
            _ => Self::load(path),
        }
    }

    pub fn from_text(path: &Path, text: &str) -> Result<Suite, ConfigErrors> {
        let raw: SuiteFile = parse_yaml(path, text)?;
        let mut suite = Self::resolve(path, raw)?;
        suite.sha256 = crate::text::sha256_of(text.as_bytes());
        Ok(suite)
    }

    fn resolve(path: &Path, raw: SuiteFile) -> Result<Suite, ConfigErrors> {
        let mut errors = Vec::new();
        let mode = raw.mode.value;
        let families = Self::families(path, &raw, &mut errors);
        let concurrency = raw.concurrency.map_or(DEFAULT_CONCURRENCY, |c| c.0);
        let known_failures = Self::known_failures(path, &raw.known_failures, &mut errors);
        let limits = Self::limits(path, &raw.timeouts, &raw.limits, &mut errors);
        let t = &raw.timeouts;
        let outputs = Self::outputs(path, raw.outputs, &mut errors);
        if !errors.is_empty() {
            return Err(ConfigErrors(errors));
        }
        Ok(Suite {
            file: path.to_path_buf(),
            mode,
            families,
            limits,
            deadline: t.deadline.as_ref().map_or(DEFAULT_DEADLINE, |d| d.value.0),
            retry_interval: t.retry_interval.as_ref().map_or(DEFAULT_RETRY_INTERVAL, |d| d.value.0),
            concurrency,
            known_failures,
            outputs,
            disruptive: raw.disruptive.0,
            engines: raw.engines,
            sha256: String::new(),
        })
    }

    /// The families, each once and each able to run in the suite's mode.
    fn families(path: &Path, raw: &SuiteFile, errors: &mut Vec<ConfigError>) -> Vec<Family> {
        let mode = raw.mode.value;
        let mut families = Vec::new();
        for (i, family) in raw.families.iter().enumerate() {
            if !family.value.supported_in(mode) {
                errors.push(ConfigError::at(
                    path,
                    &family.referenced,
                    format!("families[{i}]"),
                    format!("family `{}` cannot run in {mode:?} mode in this version of cordon", family.value.as_str()),
                ));
            } else if families.contains(&family.value) {
                errors.push(ConfigError::at(
                    path,
                    &family.referenced,
                    format!("families[{i}]"),
                    format!("family `{}` is listed twice", family.value.as_str()),
                ));
            } else {
                families.push(family.value);
            }
        }
        if raw.families.is_empty() {
            errors.push(ConfigError::at(
                path,
                &raw.mode.referenced,
                "families",
                "no check family is listed: the suite would prove nothing",
            ));
        }
        families
    }

    /// The baseline: each entry a check or a pattern, the finding it accepts and a reason.
    fn known_failures(
        path: &Path,
        raw: &[Spanned<KnownFailureFile>],
        errors: &mut Vec<ConfigError>,
    ) -> Vec<KnownFailure> {
        let mut known_failures: Vec<KnownFailure> = Vec::new();
        for (i, kf) in raw.iter().enumerate() {
            let key = format!("known_failures[{i}]");
            if kf.value.reason.trim().is_empty() {
                errors.push(ConfigError::at(
                    path,
                    &kf.referenced,
                    format!("{key}.reason"),
                    "a known failure needs a reason",
                ));
            }
            let check = match CheckPattern::parse(&kf.value.check) {
                Ok(c) => c,
                Err(message) => {
                    errors.push(ConfigError::at(path, &kf.referenced, format!("{key}.check"), message));
                    continue;
                }
            };
            let finding = match known_finding(&kf.value) {
                Ok(f) => f,
                Err(message) => {
                    errors.push(ConfigError::at(path, &kf.referenced, format!("{key}.finding"), message));
                    continue;
                }
            };
            if known_failures.iter().any(|k| k.check == check && k.finding == finding) {
                errors.push(ConfigError::at(
                    path,
                    &kf.referenced,
                    format!("{key}.check"),
                    format!("`{}` with finding {finding} is listed twice", kf.value.check),
                ));
            }
            known_failures.push(KnownFailure {
                check,
                finding,
                reason: kf.value.reason.clone(),
                origin: ConfigError::at(path, &kf.referenced, format!("{key}.check"), String::new()),
            });
        }
        known_failures
    }

    /// Timeouts and size limits, none of them zero (a zero timeout makes every connect
    /// fail, and isolation checks would then pass without proving anything).
    fn limits(path: &Path, t: &TimeoutsFile, limits_file: &LimitsFile, errors: &mut Vec<ConfigError>) -> Limits {
        let defaults = Limits::default();
        // A zero timeout makes every connect fail, and isolation checks would then pass
        // without proving anything.
        for (key, value) in [
            ("connect", &t.connect),
            ("read", &t.read),
            ("retry_interval", &t.retry_interval),
            ("sse_max_duration", &t.sse_max_duration),
            ("exchange", &t.exchange),
        ] {
            if let Some(v) = value.as_ref().filter(|v| v.value.0.is_zero()) {
                errors.push(ConfigError::at(
                    path,
                    &v.referenced,
                    format!("timeouts.{key}"),
                    "must be longer than zero",
                ));
            }
        }
        if let Some(size) = &limits_file.max_response_bytes
            && !(1..=MAX_RESPONSE_BYTES_LIMIT).contains(&size.value.0)
        {
            errors.push(ConfigError::at(
                path,
                &size.referenced,
                "limits.max_response_bytes",
                format!(
                    "must be from 1 byte to {}MiB, got {}: it caps every response, and cordon's memory with it",
                    MAX_RESPONSE_BYTES_LIMIT >> 20,
                    size.value.0
                ),
            ));
        }
        Limits {
            connect_timeout: t.connect.as_ref().map_or(defaults.connect_timeout, |d| d.value.0),
            read_timeout: t.read.as_ref().map_or(defaults.read_timeout, |d| d.value.0),
            max_response_bytes: limits_file
                .max_response_bytes
                .as_ref()
                .map_or(defaults.max_response_bytes, |s| s.value.0),
            sse_max_duration: t.sse_max_duration.as_ref().map_or(defaults.sse_max_duration, |d| d.value.0),
            max_pages: limits_file.max_pages.map_or(defaults.max_pages, |n| n.0),
            exchange_timeout: t.exchange.as_ref().map_or(defaults.exchange_timeout, |d| d.value.0),
            max_tools: limits_file.max_tools.map_or(defaults.max_tools, |n| n.0),
        }
    }

    fn outputs(path: &Path, o: OutputsFile, errors: &mut Vec<ConfigError>) -> Outputs {
        let mut outputs = Outputs::default();
        let mut locations: Vec<(&'static str, serde_saphyr::Location)> = Vec::new();
        if let Some(dir) = o.dir {
            locations.push((DIR_KEY, dir.referenced));
            outputs.dir = dir.value;
        }
        for (key, value, slot) in [
            ("outputs.junit", o.junit, &mut outputs.junit),
            ("outputs.json", o.json, &mut outputs.json),
            ("outputs.markdown", o.markdown, &mut outputs.markdown),
            ("outputs.html", o.html, &mut outputs.html),
        ] {
            if let Some(v) = value {
                locations.push((key, v.referenced));
                *slot = v.value;
            }
        }
        outputs.timestamped = o.timestamped.0;
        for (key, at) in &locations {
            outputs.origins.insert(key, format!("{}:{}:{}", path.display(), at.line(), at.column()));
        }
        for (key, problem) in outputs.name_problems() {
            let name = outputs.files().into_iter().find(|(k, ..)| *k == key).map(|(_, n, _)| n.to_string());
            let problem = format!("`{}` {problem}", super::strict::echo(&name.unwrap_or_default()));
            errors.push(match locations.iter().find(|(k, _)| *k == key) {
                Some((_, at)) => ConfigError::at(path, at, key, problem),
                None => ConfigError { key: key.into(), ..ConfigError::whole_file(path, problem) },
            });
        }
        outputs
    }

    /// A suite for `cordon probe`: host mode, contract checks, no file behind it.
    pub fn for_probe(limits: Limits, deadline: Duration) -> Suite {
        Suite {
            file: PathBuf::from("<probe>"),
            mode: Mode::Host,
            families: vec![Family::Contract],
            limits,
            deadline,
            retry_interval: DEFAULT_RETRY_INTERVAL,
            concurrency: DEFAULT_CONCURRENCY,
            known_failures: Vec::new(),
            outputs: Outputs::default(),
            disruptive: false,
            engines: Default::default(),
            sha256: String::new(),
        }
    }
}
