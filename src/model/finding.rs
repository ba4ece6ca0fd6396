//! A finding: one broken rule as typed data. Its kind is a stable code; its facts are
//! the values it rests on (addresses, ports, statuses, names; never a secret's value);
//! its sentence is rendered from those facts here and nowhere else, so what a person
//! reads says nothing the JSON facts do not carry.
//!
//! A judge gives the sentence's shape as fixed text with `{fact}` placeholders
//! (`"{container} listens on port {port}"`), never as text it formatted itself: the
//! constructor takes a `&'static str`, so a value can only enter through a fact.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

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
    ImageNotPinned,
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

/// One broken rule, with the facts it rests on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(into = "FindingRecord", from = "FindingRecord")]
pub struct Finding {
    pub kind: FindingKind,
    shape: Shape,
    pub facts: BTreeMap<String, String>,
    /// The evidence lines that show this rule broken (the exchange or connect that broke
    /// it), as the check's evidence has them: what the console prints under the reason,
    /// where the rest of the evidence stays in the reports.
    pub proof: Vec<String>,
}

/// A sentence's shape: fixed text from the code (placeholders filled from the facts), or
/// a sentence already rendered, read back from an earlier report.json.
#[derive(Debug, Clone, PartialEq)]
enum Shape {
    Template(Cow<'static, str>),
    Rendered(String),
}

impl Finding {
    /// A finding whose sentence is `template` with each `{fact}` filled in from the facts
    /// added with [`Finding::fact`]; `{{` and `}}` stand for braces, as in `format!`.
    pub fn new(kind: FindingKind, template: &'static str) -> Self {
        Self { kind, shape: Shape::Template(Cow::Borrowed(template)), facts: BTreeMap::new(), proof: Vec::new() }
    }

    /// A finding no family has classified: its whole sentence is its one fact, `reason`.
    pub fn unclassified(reason: impl ToString) -> Self {
        Self::new(FindingKind::Other, "{reason}").fact("reason", reason)
    }

    /// Adds one fact (e.g. `addr`, `port`, `container`, `network`, `entry`, `status`).
    pub fn fact(mut self, key: &str, value: impl ToString) -> Self {
        self.facts.insert(key.to_string(), value.to_string());
        self
    }

    /// Adds the evidence line that shows the rule broken (an exchange, a connect).
    pub fn proven_by(mut self, line: impl Into<String>) -> Self {
        self.add_proof([line.into()]);
        self
    }

    /// Adds every line of `lines` as [`Finding::proven_by`] does.
    pub fn proven_by_all(mut self, lines: impl IntoIterator<Item = String>) -> Self {
        self.add_proof(lines);
        self
    }

    /// Adds every line of `lines` not already there: the proof of findings merged into this one.
    pub fn add_proof(&mut self, lines: impl IntoIterator<Item = String>) {
        for line in lines {
            if !self.proof.contains(&line) {
                self.proof.push(line);
            }
        }
    }

    /// The same sentence and facts, as a finding of another kind (a connection's drift that
    /// a restart brought back is a restart's drift).
    pub fn reclassified(self, kind: FindingKind) -> Self {
        Finding { kind, ..self }
    }

    /// Puts `template` (filled from the facts, like the rest) before the sentence: where
    /// a finding was seen (`"{replica}: "`) once a caller knows it.
    pub fn prefixed(mut self, template: &'static str) -> Self {
        self.shape = match self.shape {
            Shape::Template(t) => Shape::Template(Cow::Owned(format!("{template}{t}"))),
            Shape::Rendered(text) => Shape::Rendered(format!("{}{text}", render(template, &self.facts))),
        };
        self
    }

    /// Puts `template` (filled from the facts, like the rest) after the sentence.
    pub fn suffixed(mut self, template: &'static str) -> Self {
        self.shape = match self.shape {
            Shape::Template(t) => Shape::Template(Cow::Owned(format!("{t}{template}"))),
            Shape::Rendered(text) => Shape::Rendered(format!("{text}{}", render(template, &self.facts))),
        };
        self
    }

    /// The same rule broken the same way: kind, sentence shape and facts alike, but for
    /// the facts named in `but` (and the proof). What findings are grouped by.
    pub fn same_rule_but(&self, other: &Finding, but: &[&str]) -> bool {
        let facts = |f: &Finding| -> Vec<(String, String)> {
            f.facts.iter().filter(|(k, _)| !but.contains(&k.as_str())).map(|(k, v)| (k.clone(), v.clone())).collect()
        };
        self.kind == other.kind && self.shape == other.shape && facts(self) == facts(other)
    }

    /// The finding with every value it holds passed through `clean` (the redactor): its
    /// facts, and a sentence read back from a report. A template is the code's own text.
    pub fn scrubbed(self, clean: impl Fn(&str) -> String) -> Self {
        let shape = match self.shape {
            Shape::Rendered(text) => Shape::Rendered(clean(&text)),
            template => template,
        };
        let facts = self.facts.into_iter().map(|(k, v)| (clean(&k), clean(&v))).collect();
        let proof = self.proof.iter().map(|line| clean(line)).collect();
        Finding { kind: self.kind, shape, facts, proof }
    }

    /// The sentence a reporter shows, rendered from the facts.
    pub fn sentence(&self) -> String {
        match &self.shape {
            Shape::Template(t) => render(t, &self.facts),
            Shape::Rendered(text) => text.clone(),
        }
    }
}

/// The words `compose` puts around an empty sentence, rendered as findings are: a phrase
/// that findings and evidence share (a door, a credential's name), written once.
pub fn phrase(compose: impl FnOnce(Finding) -> Finding) -> String {
    compose(Finding::new(FindingKind::Other, "")).sentence()
}

/// Fills each `{name}` from `facts`; `{{`/`}}` are braces. A placeholder with no fact is
/// a bug in the judge that made the finding.
fn render(template: &str, facts: &BTreeMap<String, String>) -> String {
    let mut out = String::with_capacity(template.len() + 32);
    let mut rest = template;
    while let Some(at) = rest.find(['{', '}']) {
        out.push_str(&rest[..at]);
        let tail = &rest[at..];
        if tail.starts_with("{{") || tail.starts_with("}}") {
            out.push_str(&tail[..1]);
            rest = &tail[2..];
            continue;
        }
        let named = tail.strip_prefix('{').and_then(|t| t.split_once('}')).filter(|(name, _)| is_name(name));
        match named {
            Some((name, after)) => {
                match facts.get(name) {
                    Some(value) => out.push_str(value),
                    // The unit tests stop on it; a run shows the placeholder rather than
                    // die in the middle of a check.
                    #[cfg(test)]
                    None => panic!("finding template `{template}` names fact `{name}`, which it lacks"),
                    #[cfg(not(test))]
                    None => out.push_str(&tail[..name.len() + 2]),
                }
                rest = after;
            }
            None => {
                out.push_str(&tail[..1]);
                rest = &tail[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

fn is_name(text: &str) -> bool {
    !text.is_empty() && text.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.sentence())
    }
}

/// A finding as report.json carries it: the rendered sentence beside the facts.
#[derive(Serialize, Deserialize)]
struct FindingRecord {
    kind: FindingKind,
    message: String,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    facts: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    proof: Vec<String>,
}

impl From<Finding> for FindingRecord {
    fn from(f: Finding) -> Self {
        FindingRecord { kind: f.kind, message: f.sentence(), facts: f.facts, proof: f.proof }
    }
}

impl From<FindingRecord> for Finding {
    fn from(r: FindingRecord) -> Self {
        Finding { kind: r.kind, shape: Shape::Rendered(r.message), facts: r.facts, proof: r.proof }
    }
}

/// The findings one line per outcome, for a person reading a failure: findings alike but
/// for the fact `varying` (same kind, sentence shape and other facts: the same answer at
/// the same place, to another bearer) are told once, by the first, with
/// " (and the same for N more: …)" naming the others by their fact `named_by` (their
/// `varying` where they lack it). Their proof goes with them. Findings without `varying`
/// are left as they are.
pub fn told_once(findings: &[Finding], varying: &str, named_by: &str) -> Vec<Finding> {
    let mut told: Vec<(Finding, Vec<String>)> = Vec::new();
    for f in findings {
        let alike = |t: &Finding| {
            f.facts.contains_key(varying) && t.facts.contains_key(varying) && t.same_rule_but(f, &[varying, named_by])
        };
        match told.iter_mut().find(|(t, _)| alike(t)) {
            Some((first, names)) => {
                first.add_proof(f.proof.iter().cloned());
                names.push(f.facts.get(named_by).or_else(|| f.facts.get(varying)).cloned().unwrap_or_default());
            }
            None => told.push((f.clone(), Vec::new())),
        }
    }
    told.into_iter()
        .map(|(f, names)| match names.len() {
            0 => f,
            n => f
                .suffixed(" (and the same for {alike} more: {alike_names})")
                .fact("alike", n)
                .fact("alike_names", names.join("; ")),
        })
        .collect()
}

/// The findings of a failure, as one line.
pub fn reason_of(findings: &[Finding]) -> String {
    findings.iter().map(Finding::sentence).collect::<Vec<_>>().join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sentence_is_rendered_from_the_facts() {
        let f = Finding::new(FindingKind::LateralReach, "{client} opened TCP to {addr} ({{not a fact}})")
            .fact("client", "n8n")
            .fact("addr", "10.0.0.1:80")
            .prefixed("{replica}: ")
            .fact("replica", "gitea_2");
        assert_eq!(f.sentence(), "gitea_2: n8n opened TCP to 10.0.0.1:80 ({not a fact})");
        let json = serde_json::to_value(&f).unwrap();
        assert_eq!(json["message"], "gitea_2: n8n opened TCP to 10.0.0.1:80 ({not a fact})");
        assert_eq!(
            (json["kind"].as_str(), json["facts"]["addr"].as_str()),
            (Some("lateral_reach"), Some("10.0.0.1:80"))
        );
    }

    #[test]
    fn a_value_is_never_read_as_a_placeholder() {
        let f = Finding::new(FindingKind::NotRefused, "answered {body}")
            .fact("body", "{addr} {\"x\":1}")
            .fact("addr", "no");
        assert_eq!(f.sentence(), "answered {addr} {\"x\":1}");
        assert_eq!(Finding::unclassified("a {b} c").sentence(), "a {b} c");
    }

    #[test]
    fn a_finding_read_back_from_a_report_keeps_its_sentence() {
        let f = Finding::new(FindingKind::ReadFailed, "read tool `{tool}` failed").fact("tool", "{x}");
        let back: Finding = serde_json::from_value(serde_json::to_value(&f).unwrap()).unwrap();
        assert_eq!((back.sentence(), back.facts.clone()), (f.sentence(), f.facts.clone()));
        assert_eq!(back.prefixed("{tool}: ").sentence(), "{x}: read tool `{x}` failed");
    }

    #[test]
    #[should_panic(expected = "lacks")]
    fn a_placeholder_without_its_fact_is_a_bug() {
        Finding::new(FindingKind::Other, "at {addr}").sentence();
    }
}
