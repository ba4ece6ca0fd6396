//! Checks every `meta/mcp.yml` holds before any decision: known words, well-formed and
//! real digests, consumers that are client roles. Reported like scenario errors
//! (file:line:column, key, what was expected), all in one pass.

use std::path::Path;

use serde_saphyr::{Location, Spanned};

use super::metadata::McpFile;
use super::roles::Roles;
use super::vocabulary::{self as words, one_of};
use crate::config::ConfigError;

/// Every problem of every role's `meta/mcp.yml`.
pub fn metadata(roles: &Roles) -> Vec<ConfigError> {
    let mut errors = Vec::new();
    for role in roles.by_id.values() {
        let Some(mcp) = &role.mcp else { continue };
        let mut check = FileCheck { file: &mcp.file, errors: &mut errors };
        check.words(&mcp.value);
        check.digests(&mcp.value);
        check.consumers(&mcp.value, roles);
    }
    errors
}

struct FileCheck<'a> {
    file: &'a Path,
    errors: &'a mut Vec<ConfigError>,
}

impl FileCheck<'_> {
    fn error(&mut self, at: &Location, key: &str, message: String) {
        self.errors.push(ConfigError::at(self.file, at, key, message));
    }

    fn word(&mut self, value: Option<&Spanned<String>>, key: &str, allowed: &[&str], what: &str) {
        if let Some(v) = value
            && !allowed.contains(&v.value.as_str())
        {
            let message = format!("unknown {what} `{}` (expected {})", v.value, one_of(allowed));
            self.error(&v.referenced, key, message);
        }
    }

    fn word_list(&mut self, list: Option<&Spanned<Vec<Spanned<String>>>>, key: &str, allowed: &[&str], what: &str) {
        for (i, v) in list.map(|l| l.value.as_slice()).unwrap_or_default().iter().enumerate() {
            self.word(Some(v), &format!("{key}[{i}]"), allowed, what);
        }
    }

    fn words(&mut self, m: &McpFile) {
        match &m.classification {
            None => self.errors.push(ConfigError {
                key: "classification".into(),
                ..ConfigError::whole_file(
                    self.file,
                    format!(
                        "no `classification`: every MCP entry states what the role is ({})",
                        one_of(words::CLASSIFICATIONS)
                    ),
                )
            }),
            Some(c) => self.word(Some(c), "classification", words::CLASSIFICATIONS, "classification"),
        }
        let deployable = m.classification.as_ref().is_some_and(|c| words::DEPLOYABLE.contains(&c.value.as_str()));
        match (&m.direction, &m.classification) {
            (None, Some(c)) if deployable => {
                let message = format!(
                    "no `direction`: a `{}` role serves, consumes or both ({})",
                    c.value,
                    one_of(words::DIRECTIONS)
                );
                self.error(&c.referenced, "direction", message);
            }
            (d, _) => self.word(d.as_ref(), "direction", words::DIRECTIONS, "direction"),
        }
        self.word(m.transport.as_ref(), "transport", words::TRANSPORTS, "transport");
        self.word(m.exposure.as_ref(), "exposure", words::EXPOSURES, "exposure");
        self.word(m.auth.as_ref(), "auth", words::AUTHS, "auth scheme");
        self.word(m.auth_subject.as_ref(), "auth_subject", words::AUTH_SUBJECTS, "auth subject");
        self.word(m.implementation.as_ref(), "implementation", words::IMPLEMENTATIONS, "implementation");
        self.word_list(m.supported_transports.as_ref(), "supported_transports", words::TRANSPORTS, "transport");
        self.word_list(m.supported_auths.as_ref(), "supported_auths", words::AUTHS, "auth scheme");
        if let Some(a) = &m.adapter {
            self.word(a.value.kind.as_ref(), "adapter.type", words::ADAPTER_TYPES, "adapter type");
        }
    }

    fn digests(&mut self, m: &McpFile) {
        let mut pins: Vec<(&Spanned<String>, &str)> = Vec::new();
        if let Some(a) = &m.adapter {
            pins.extend(a.value.specification_sha256.as_ref().map(|d| (d, "adapter.specification_sha256")));
            pins.extend(a.value.digest.as_ref().map(|d| (d, "adapter.digest")));
        }
        if let Some(t) = &m.tools {
            pins.extend(t.value.schema_sha256.as_ref().map(|d| (d, "tools.schema_sha256")));
        }
        for (digest, key) in pins {
            if let Err(problem) = sha256_hex(&digest.value) {
                self.error(&digest.referenced, key, problem);
            }
        }
    }

    fn consumers(&mut self, m: &McpFile, roles: &Roles) {
        let Some(list) = &m.allowed_consumers else { return };
        for (i, consumer) in list.value.iter().enumerate() {
            let role = roles.get(&consumer.value);
            let direction = role.and_then(|r| r.mcp.as_ref()).and_then(|m| m.value.direction.as_ref());
            let problem = match (role, direction) {
                (None, _) => format!("there is no role `{}` under {}", consumer.value, roles.dir.display()),
                (Some(r), None) if r.mcp.is_none() => {
                    format!("role `{}` declares no MCP entry, so it is no MCP client", consumer.value)
                }
                (Some(_), Some(d)) if words::is_client(&d.value) => continue,
                (Some(_), d) => format!(
                    "role `{}` is no MCP client (its direction is {})",
                    consumer.value,
                    d.map_or("not set".into(), |d| format!("`{}`", d.value))
                ),
            };
            let message = format!(
                "unknown consumer: {problem}; `allowed_consumers` names client roles (direction `client` or `both`)"
            );
            self.error(&consumer.referenced, &format!("allowed_consumers[{i}]"), message);
        }
    }
}

pub use crate::text::{pin_matches, sha256_hex};
