//! `secrets::logs`: "Bearer values and secret path segments MUST be redacted from
//! application logs, reverse-proxy logs, task output … and exception messages", and "a
//! URL path component selected by `key_credential` MUST be hidden behind an internal
//! header-authenticated proxy". So:
//! - no credential of the scenario, in any form the redactor knows (as written,
//!   percent-encoded, JSON-escaped, base64 in either alphabet and any alignment, hex;
//!   any run of 8 or more characters of one), appears in the log (`docker logs`, the last
//!   [`LOG_TAIL_LINES`] lines — fewer when they exceed [`LOG_MAX_BYTES`], so the window
//!   is always the log's end) of any running container of the deployment;
//! - no credential is part of a provider URL in the scenario, nor of any URL in a
//!   container's environment (Open WebUI's connections, a client's endpoint setting).
//!
//! A finding names the container, the stream and the line number (or the provider, the
//! variable and the URL part), the credential's label and the form: never the value.
//!
//! A freshly deployed stack may have logged nothing yet, and then its logs prove
//! nothing: before reading them, the check opens a session with each provider's own
//! credential at every replica (as `contract::<p>::tools` does), so every provider has
//! just handled its bearer.

use std::collections::BTreeMap;
use std::sync::Arc;

use futures_util::future::{BoxFuture, join_all};

use super::kit::sessions::{SessionPlan, SessionsPlan};
use crate::check::Spec;
use crate::check::{Check, Probe, RunContext, named};
use crate::config::Suite;
use crate::config::{Family, Scenario};
use crate::engine::Engine;
use crate::engine::Target;
use crate::engine::logs::{LogOf, LogRead, LogStream};
use crate::mcp::EraChoice;
use crate::model::{Attempt, CheckName, Finding, FindingKind};
use crate::secret::{MIN_SECRET_LEN, Redactor, Secret, named_forms};

/// Lines read from the end of each container's log.
pub const LOG_TAIL_LINES: usize = 20_000;
/// Bytes read at most per container's log.
pub const LOG_MAX_BYTES: u64 = 16 << 20;
/// Fewest lines read from a log whose lines are so long that more overflow the budget.
const LOG_MIN_TAIL: usize = 100;
/// Lines named per container and credential; the rest are counted.
const LINES_NAMED: usize = 5;

pub fn plan(_scenario: &Scenario) -> Vec<Arc<dyn Check>> {
    vec![named(CheckName::new(Family::Secrets, "logs"), LogsCheck)]
}

struct LogsCheck;

/// Finds credentials in text: the scenario's credentials only (not what cordon made up).
pub struct Scanner {
    redactor: Redactor,
    values: BTreeMap<String, Secret>,
}

impl Scanner {
    pub fn new(credentials: &BTreeMap<String, Secret>) -> Self {
        let redactor = Redactor::new();
        for (id, secret) in credentials {
            redactor.register(id, secret.expose().to_string());
        }
        Scanner { redactor, values: credentials.clone() }
    }

    /// (credential id, form) for every credential some form of which has a run of at
    /// least eight characters in `text`.
    pub fn find(&self, text: &str) -> Vec<(String, &'static str)> {
        self.redactor
            .found_in(text)
            .into_iter()
            .map(|id| {
                let form = self.values.get(&id).map_or("as written", |s| form_in(s.expose(), text));
                (id, form)
            })
            .collect()
    }
}

/// Which form of `value` has a run of at least eight characters in `text`.
fn form_in(value: &str, text: &str) -> &'static str {
    let text = text.as_bytes();
    named_forms(value)
        .into_iter()
        .find(|(_, form)| form.windows(MIN_SECRET_LEN).any(|w| text.windows(MIN_SECRET_LEN).any(|t| t == w)))
        .map_or("as written", |(name, _)| name)
}

/// One line of a log that holds a credential.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogHit {
    pub stream: LogStream,
    pub line: usize,
    pub credential: String,
    pub form: &'static str,
    /// The line carries a URL query parameter named like a credential (`access_token=`,
    /// `token=`, `api_key=`): where cordon's own refusal checks put the valid one.
    pub in_query: bool,
}

/// Whether a log line carries a credential-named URL query parameter.
pub fn has_credential_query(line: &str) -> bool {
    super::kit::presented::QUERY_CREDENTIAL_PARAMS
        .iter()
        .any(|p| line.contains(&format!("?{p}=")) || line.contains(&format!("&{p}=")))
}

/// What one log showed.
#[derive(Clone, Debug)]
pub struct LogSeen {
    /// The container's name, or the swarm service's.
    pub container: String,
    pub whose: LogOwner,
    pub read: Result<LogRead, String>,
    pub hits: Vec<LogHit>,
}

/// Whose log a [`LogSeen`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogOwner {
    Running,
    /// A container of the project that is not running: a one-shot init or migration that
    /// exited, one that crashed, one created and never started.
    Stopped,
    /// A swarm task that no longer runs (failed, replaced, shut down) but keeps its
    /// container on its node.
    OldTask,
}

impl LogOwner {
    /// How a finding opens, before "logged credential …".
    fn template(self) -> &'static str {
        match self {
            LogOwner::Running => "container {container} ",
            LogOwner::Stopped => "container {container} (not running) ",
            LogOwner::OldTask => "old task {container} (no longer running) ",
        }
    }
}

impl Probe for LogsCheck {
    fn run<'a>(&'a self, ctx: &'a RunContext) -> BoxFuture<'a, Attempt> {
        Box::pin(async move {
            let scanner = Scanner::new(&ctx.scenario.credentials);
            let mut findings = urls_in_scenario(&ctx.scenario, &scanner);
            let mut evidence = vec![format!(
                "{} credential(s) looked for, in every form the redactor knows; provider URLs: {}",
                ctx.scenario.credentials.len(),
                ctx.scenario.providers.len()
            )];
            let Some(deployment) = &ctx.deployment else {
                return Attempt::from_findings(findings, evidence);
            };
            match sessions_everywhere(ctx).await {
                Ok(lines) => evidence.extend(lines),
                Err(attempt) => return attempt,
            }
            let topology = deployment.topology();
            // Every container of the deployment, running or not: a one-shot container that
            // printed a bearer and exited leaked it as surely as a running one.
            let targets: Vec<(&Target, LogOwner)> = topology
                .services
                .values()
                .flatten()
                .map(|t| (t, LogOwner::Running))
                .chain(topology.stopped.iter().map(|t| (t, LogOwner::Stopped)))
                .collect();
            let scanner = &scanner;
            let reads = join_all(targets.iter().map(|(t, whose)| async move {
                let engine = deployment.engine_of(t)?;
                let env = engine.environment(&t.id).await.map_err(|e| e.to_string())?;
                let seen = read_log(&engine, LogOf::Container(&t.id), &t.name, *whose, scanner).await;
                Ok::<_, String>((env, seen))
            }))
            .await;
            let mut not_ready = Vec::new();
            let mut seen_all = Vec::new();
            for ((target, _), read) in targets.iter().zip(reads) {
                match read {
                    Ok((env, seen)) => {
                        findings.extend(urls_in_environment(&target.name, &env, scanner));
                        seen_all.push(seen);
                    }
                    Err(e) => not_ready.push(format!("{}: {e}", target.name)),
                }
            }
            // Swarm: every task that no longer runs but keeps its container (failed,
            // replaced, shut down), on any node an engine of the suite serves.
            if let Some(view) = &topology.swarm {
                for task in &view.facts.old_tasks {
                    let name = old_task_name(&view.facts, task);
                    let seen = match deployment.engine_of_node(&task.node_id) {
                        Ok(engine) => {
                            read_log(&engine, LogOf::Container(&task.container_id), &name, LogOwner::OldTask, scanner)
                                .await
                        }
                        Err(e) => LogSeen { container: name, whose: LogOwner::OldTask, read: Err(e), hits: vec![] },
                    };
                    seen_all.push(seen);
                }
            }
            for seen in &seen_all {
                let (f, e) = judge_log(seen);
                findings.extend(f);
                evidence.push(e);
            }
            Attempt::settle(findings, not_ready, evidence)
        })
    }
}

/// Reads one log, the last lines that fit in the byte budget (fewer lines while they do
/// not), and scans it.
async fn read_log(engine: &Engine, of: LogOf<'_>, name: &str, whose: LogOwner, scanner: &Scanner) -> LogSeen {
    let mut tail = LOG_TAIL_LINES;
    loop {
        let mut hits = Vec::new();
        let read = engine
            .log_lines(of, tail, LOG_MAX_BYTES, |stream, line, text| {
                for (credential, form) in scanner.find(text) {
                    let in_query = has_credential_query(text);
                    hits.push(LogHit { stream, line, credential, form, in_query });
                }
            })
            .await
            .map_err(|e| e.to_string());
        if read.as_ref().is_ok_and(|r| r.cut) && tail > LOG_MIN_TAIL {
            tail /= 4;
            continue;
        }
        return LogSeen { container: name.to_string(), whose, read, hits };
    }
}

/// The name the engine gives an old task's container: `<service>.<slot>.<task id>`
/// (a global service's tasks have the node's id for a slot).
fn old_task_name(facts: &crate::engine::swarm::StackFacts, task: &crate::engine::swarm::RunningTask) -> String {
    let full =
        facts.services.iter().find(|s| s.name == task.service).map_or(task.service.as_str(), |s| s.full_name.as_str());
    let slot = task.slot.map_or_else(|| task.node_id.clone(), |s| s.to_string());
    format!("{full}.{slot}.{}", task.id)
}

/// A session with each enabled provider's own credential at every replica, listing its
/// tools: the traffic whose logging the check then reads. One evidence line each.
async fn sessions_everywhere(ctx: &RunContext) -> Result<Vec<String>, Attempt> {
    let mut lines = Vec::new();
    for provider in ctx.scenario.providers.iter().filter(|p| !p.disabled) {
        let vantages = super::kit::vantage::contract_vantages(ctx, provider)?;
        let secret = ctx.scenario.secret(&provider.credential).clone();
        let (runs, from) = super::kit::vantage::observe_everywhere(ctx, &vantages, |endpoints| SessionsPlan {
            sessions: endpoints
                .iter()
                .map(|(replica, endpoint)| SessionPlan {
                    replica: replica.clone(),
                    endpoint: endpoint.clone(),
                    secret: secret.clone(),
                    limits: ctx.suite.limits.clone(),
                    era: EraChoice::Auto,
                    list: true,
                    read: None,
                })
                .collect(),
        })
        .await?;
        for run in runs {
            match &run.failed {
                Some((_, e)) if e.not_ready => {
                    return Err(Attempt::not_ready(
                        format!("{}: no session to log yet: {}", run.replica, e.text),
                        vec![],
                    ));
                }
                Some((step, e)) => lines
                    .push(format!("{} ({from}): {step} failed, so it may have logged less: {}", run.replica, e.text)),
                None => lines.push(format!(
                    "{} ({from}): a session with {}, so its log has a bearer to hide",
                    run.replica,
                    secret.label()
                )),
            }
        }
    }
    Ok(lines)
}

/// Pure: findings and one evidence line for one container's log.
pub fn judge_log(seen: &LogSeen) -> (Vec<Finding>, String) {
    let read = match &seen.read {
        Ok(r) => r,
        Err(e) => return (vec![], format!("{}: the log could not be read: {e}", seen.container)),
    };
    let mut line = format!(
        "{}: {} stdout and {} stderr line(s) read ({} bytes{})",
        seen.container,
        read.stdout_lines + read.console_lines,
        read.stderr_lines,
        read.bytes,
        if read.cut { format!(", cut at {LOG_MAX_BYTES}") } else { String::new() }
    );
    let mut by_credential: BTreeMap<&str, Vec<&LogHit>> = BTreeMap::new();
    for hit in &seen.hits {
        by_credential.entry(&hit.credential).or_default().push(hit);
    }
    if by_credential.is_empty() {
        line.push_str(", no credential");
    }
    let findings = by_credential
        .into_iter()
        .map(|(credential, hits)| {
            let named: Vec<String> =
                hits.iter().take(LINES_NAMED).map(|h| format!("{} line {} ({})", h.stream, h.line, h.form)).collect();
            let logged = "logged credential {credential}: {lines}";
            let mut f = Finding::new(FindingKind::SecretInLog, logged)
                .prefixed(seen.whose.template())
                .fact("container", &seen.container)
                .fact("credential", credential)
                .fact("stream", hits[0].stream)
                .fact("line", hits[0].line)
                .fact("lines", named.join(", "));
            let more = hits.len().saturating_sub(LINES_NAMED);
            if more > 0 {
                f = f.suffixed(" and {more} more line(s)").fact("more", more);
            }
            let queried = hits.iter().filter(|h| h.in_query).count();
            if queried > 0 {
                f = f
                    .suffixed("; {queried} of these lines hold it in a URL query string (cordon's refusal checks send the valid credential as `access_token`, `token` and `api_key` to prove it is refused there: this log keeps query strings unmasked)")
                    .fact("queried", queried);
            }
            f
        })
        .collect();
    (findings, line)
}

/// Pure: a credential in any part of a provider URL of the scenario.
pub fn urls_in_scenario(scenario: &Scenario, scanner: &Scanner) -> Vec<Finding> {
    let mut out = Vec::new();
    for p in &scenario.providers {
        for (credential, form, part) in in_url(p.url.as_str(), scanner) {
            out.push(
                Finding::new(
                    FindingKind::SecretInUrl,
                    "provider `{provider}`'s URL carries credential {credential} in its {part} ({form}): a key in the URL reaches every log and proxy on the way; hide it behind a header-authenticated proxy",
                )
                .fact("provider", &p.id)
                .fact("credential", credential)
                .fact("part", part)
                .fact("form", form),
            );
        }
    }
    out
}

/// Pure: a credential inside a URL in a container's environment.
pub fn urls_in_environment(container: &str, env: &[(String, String)], scanner: &Scanner) -> Vec<Finding> {
    let mut out = Vec::new();
    for (var, value) in env {
        for url in urls_in_text(value) {
            for (credential, form, part) in in_url(url, scanner) {
                out.push(
                    Finding::new(
                        FindingKind::SecretInUrl,
                        "container {container}: a URL in its environment variable {variable} carries credential {credential} in its {part} ({form})",
                    )
                    .fact("container", container)
                    .fact("variable", var)
                    .fact("credential", credential)
                    .fact("part", part)
                    .fact("form", form),
                );
            }
        }
    }
    out
}

/// Every `http://` or `https://` URL in a text, up to a quote, space or bracket.
fn urls_in_text(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("http://").into_iter().chain(rest.find("https://")).min() {
        let url = &rest[at..];
        let end = url.find(|c: char| c.is_whitespace() || "\"'<>`,;)]}".contains(c)).unwrap_or(url.len());
        out.push(&url[..end]);
        rest = &url[end..];
    }
    out
}

/// (credential, form, which part) for every credential in a URL.
fn in_url(url: &str, scanner: &Scanner) -> Vec<(String, &'static str, &'static str)> {
    let parsed = url::Url::parse(url).ok();
    let parts: Vec<(&'static str, String)> = match &parsed {
        Some(u) => vec![
            ("host", u.host_str().unwrap_or_default().to_string()),
            ("user name or password", format!("{}:{}", u.username(), u.password().unwrap_or_default())),
            ("path", u.path().to_string()),
            ("query", u.query().unwrap_or_default().to_string()),
            ("fragment", u.fragment().unwrap_or_default().to_string()),
        ],
        None => vec![("text", url.to_string())],
    };
    let mut out: Vec<(String, &'static str, &'static str)> = Vec::new();
    for (part, text) in parts {
        for (credential, form) in scanner.find(&text) {
            if !out.iter().any(|(c, _, _)| *c == credential) {
                out.push((credential, form, part));
            }
        }
    }
    out
}

/// The family, registered once (`checks::FAMILIES`).
pub const SPEC: Spec = Spec { family: Family::Secrets, plan: planned, explain };

fn planned(scenario: &Scenario, _: &Suite) -> Vec<Arc<dyn Check>> {
    plan(scenario)
}

/// What a check of this family proves, and where it looks from (`cordon explain`).
fn explain(_: &CheckName) -> Option<(&'static str, &'static str)> {
    Some((
        "no credential of the scenario, in any form the redactor knows (8+ character runs as written, percent-encoded, JSON-escaped, base64, hex), appears in the log of any container of the deployment (its last 20000 lines, fewer past 16 MiB), in a provider URL of the scenario, or in a URL in a container's environment",
        "the engine: docker logs and container inspect",
    ))
}

#[cfg(test)]
mod tests;
