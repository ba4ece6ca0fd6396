//! The suite file: which check families run, how, with which deadlines and baseline.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use serde_saphyr::Spanned;

use super::duration::{HumanDuration, HumanSize};
use super::error::{ConfigError, ConfigErrors, parse_yaml, read_file};
use crate::mcp::Limits;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// Probes run from cordon's own network namespace against the scenario's URLs.
    Host,
    Compose,
    Swarm,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Family {
    Route,
    Reach,
    Session,
    Contract,
    Disabled,
    Sidecar,
    Openwebui,
}

impl Family {
    pub fn as_str(self) -> &'static str {
        match self {
            Family::Route => "route",
            Family::Reach => "reach",
            Family::Session => "session",
            Family::Contract => "contract",
            Family::Disabled => "disabled",
            Family::Sidecar => "sidecar",
            Family::Openwebui => "openwebui",
        }
    }

    /// The families each mode can run; the rest need a mode that enters namespaces.
    pub fn supported_in(self, mode: Mode) -> bool {
        match mode {
            Mode::Host => matches!(self, Family::Contract),
            Mode::Compose | Mode::Swarm => !matches!(self, Family::Openwebui),
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SuiteFile {
    mode: Spanned<Mode>,
    families: Vec<Spanned<Family>>,
    #[serde(default)]
    timeouts: TimeoutsFile,
    #[serde(default)]
    limits: LimitsFile,
    concurrency: Option<Spanned<usize>>,
    #[serde(default)]
    known_failures: Vec<Spanned<KnownFailureFile>>,
    #[serde(default)]
    outputs: OutputsFile,
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
    max_response_bytes: Option<HumanSize>,
    max_pages: Option<usize>,
    max_tools: Option<usize>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct KnownFailureFile {
    check: String,
    reason: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct OutputsFile {
    dir: Option<PathBuf>,
    junit: Option<String>,
    json: Option<String>,
    markdown: Option<String>,
    #[serde(default)]
    timestamped: bool,
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
    /// Swarm: node (hostname or id) → engine URL; tasks there are probed through carriers.
    pub engines: std::collections::BTreeMap<String, String>,
}

#[derive(Debug, Clone)]
pub struct KnownFailure {
    pub check: String,
    pub reason: String,
    /// `file:line:column`, for the error when the entry names no check.
    pub origin: ConfigError,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outputs {
    pub dir: PathBuf,
    pub junit: String,
    pub json: String,
    pub markdown: String,
    /// Also copy every report into `<dir>/history/<UTC time>/`, so one night's report
    /// is not overwritten by the next.
    pub timestamped: bool,
}

impl Default for Outputs {
    fn default() -> Self {
        Self {
            dir: PathBuf::from("results"),
            junit: "junit.xml".into(),
            json: "report.json".into(),
            markdown: "summary.md".into(),
            timestamped: false,
        }
    }
}

impl Outputs {
    pub fn junit_path(&self) -> PathBuf {
        self.dir.join(&self.junit)
    }
    pub fn json_path(&self) -> PathBuf {
        self.dir.join(&self.json)
    }
    pub fn markdown_path(&self) -> PathBuf {
        self.dir.join(&self.markdown)
    }
}

pub const DEFAULT_CONCURRENCY: usize = 4;
pub const DEFAULT_DEADLINE: Duration = Duration::from_secs(60);
pub const DEFAULT_RETRY_INTERVAL: Duration = Duration::from_secs(1);

impl Suite {
    pub fn load(path: &Path) -> Result<Suite, ConfigErrors> {
        let text = read_file(path)?;
        let raw: SuiteFile = parse_yaml(path, &text)?;
        Self::resolve(path, raw)
    }

    fn resolve(path: &Path, raw: SuiteFile) -> Result<Suite, ConfigErrors> {
        let mut errors = Vec::new();
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
        let concurrency = match &raw.concurrency {
            Some(c) if c.value == 0 => {
                errors.push(ConfigError::at(path, &c.referenced, "concurrency", "must be at least 1"));
                1
            }
            Some(c) => c.value,
            None => DEFAULT_CONCURRENCY,
        };
        let mut known_failures: Vec<KnownFailure> = Vec::new();
        for (i, kf) in raw.known_failures.iter().enumerate() {
            let key = format!("known_failures[{i}]");
            if kf.value.reason.trim().is_empty() {
                errors.push(ConfigError::at(
                    path,
                    &kf.referenced,
                    format!("{key}.reason"),
                    "a known failure needs a reason",
                ));
            }
            if known_failures.iter().any(|k| k.check == kf.value.check) {
                errors.push(ConfigError::at(
                    path,
                    &kf.referenced,
                    format!("{key}.check"),
                    format!("`{}` is listed twice", kf.value.check),
                ));
            }
            known_failures.push(KnownFailure {
                check: kf.value.check.clone(),
                reason: kf.value.reason.clone(),
                origin: ConfigError::at(path, &kf.referenced, format!("{key}.check"), String::new()),
            });
        }
        let defaults = Limits::default();
        let t = &raw.timeouts;
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
        let limits = Limits {
            connect_timeout: t.connect.as_ref().map_or(defaults.connect_timeout, |d| d.value.0),
            read_timeout: t.read.as_ref().map_or(defaults.read_timeout, |d| d.value.0),
            max_response_bytes: raw.limits.max_response_bytes.map_or(defaults.max_response_bytes, |s| s.0),
            sse_max_duration: t.sse_max_duration.as_ref().map_or(defaults.sse_max_duration, |d| d.value.0),
            max_pages: raw.limits.max_pages.unwrap_or(defaults.max_pages),
            exchange_timeout: t.exchange.as_ref().map_or(defaults.exchange_timeout, |d| d.value.0),
            max_tools: raw.limits.max_tools.unwrap_or(defaults.max_tools),
        };
        let o = raw.outputs;
        let base = Outputs::default();
        let outputs = Outputs {
            dir: o.dir.unwrap_or(base.dir),
            junit: o.junit.unwrap_or(base.junit),
            json: o.json.unwrap_or(base.json),
            markdown: o.markdown.unwrap_or(base.markdown),
            timestamped: o.timestamped,
        };
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
            engines: raw.engines,
        })
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
            engines: Default::default(),
        }
    }
}
