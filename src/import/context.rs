//! What every step of an import shares: the roles, the deployed set, and the errors and
//! rejections gathered so far; plus where each role stands before any wiring.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde_saphyr::{Location, Spanned};

use super::condition::{self, Condition};
use super::model::{Code, Rejection, Subject};
use super::roles::{Role, Roles};
use super::vocabulary as words;
use crate::config::ConfigError;

pub struct Context<'a> {
    pub roles: &'a Roles,
    pub deployed: &'a BTreeSet<String>,
    /// Each inventory host's `group_names`; empty when the roles were named one by one
    /// (then every condition sees the deployed set).
    pub hosts: &'a BTreeMap<String, BTreeSet<String>>,
    pub errors: Vec<ConfigError>,
    /// Rules of the platform's metadata contract the tree breaks ([`super::lint`]).
    pub lint: Vec<ConfigError>,
    pub rejections: Vec<Rejection>,
}

impl<'a> Context<'a> {
    pub fn new(
        roles: &'a Roles,
        deployed: &'a BTreeSet<String>,
        hosts: &'a BTreeMap<String, BTreeSet<String>>,
    ) -> Self {
        Context { roles, deployed, hosts, errors: Vec::new(), lint: Vec::new(), rejections: Vec::new() }
    }

    pub fn reject(&mut self, role: &str, subject: Subject, code: Code, detail: impl Into<String>) {
        self.rejections.push(Rejection { role: role.to_string(), subject, code, detail: detail.into() });
    }

    pub fn error(&mut self, file: &Path, at: Option<&Location>, key: &str, message: impl Into<String>) {
        self.errors.push(match at {
            Some(at) => ConfigError::at(file, at, key, message),
            None => ConfigError { key: key.to_string(), ..ConfigError::whole_file(file, message) },
        });
    }

    /// A broken rule of the metadata contract, with its stable code.
    pub fn lint(
        &mut self,
        code: &'static str,
        file: &Path,
        at: Option<&Location>,
        key: &str,
        message: impl Into<String>,
    ) {
        let mut e = match at {
            Some(at) => ConfigError::at(file, at, key, message),
            None => ConfigError { key: key.to_string(), ..ConfigError::whole_file(file, message) },
        };
        e.code = Some(code);
        self.lint.push(e);
    }

    /// The value of a condition at `key` of `file`, for `role` as Ansible evaluates it:
    /// with the `group_names` of each host that carries the role. `None` (and an error
    /// naming the file, line and expression) when it is not one cordon evaluates, or when
    /// the hosts that carry the role disagree.
    pub fn evaluate(&mut self, role: &str, file: &Path, key: &str, value: &Spanned<Condition>) -> Option<bool> {
        let on_hosts: Vec<(&str, &BTreeSet<String>)> =
            self.hosts.iter().filter(|(_, groups)| groups.contains(role)).map(|(h, g)| (h.as_str(), g)).collect();
        let views: Vec<(&str, &BTreeSet<String>)> =
            if on_hosts.is_empty() { vec![("", self.deployed)] } else { on_hosts };
        let mut results: Vec<(&str, bool)> = Vec::new();
        for (host, group_names) in views {
            let result =
                condition::parse(&value.value).and_then(|expr| condition::evaluate(&expr, group_names, self.roles));
            match result {
                Ok(b) => results.push((host, b)),
                Err(problem) => {
                    let shown = match &value.value {
                        Condition::Literal(b) => b.to_string(),
                        Condition::Text(t) => crate::text::sanitize(t),
                    };
                    let message = format!(
                        "cannot evaluate `{shown}`: it {problem} (cordon evaluates `'role' in group_names`, \
                         `lookup('config', 'role', 'mcp.enabled')`, true and false, joined by and, or, not)"
                    );
                    self.error(file, Some(&value.referenced), key, message);
                    return None;
                }
            }
        }
        let first = results[0].1;
        if results.iter().all(|(_, b)| *b == first) {
            return Some(first);
        }
        let each: Vec<String> = results.iter().map(|(h, b)| format!("{b} on {h}")).collect();
        let message = format!(
            "is {} for role {role}: the hosts that carry it disagree (each host has its own `group_names`), so the surface would be on for some and off for others",
            each.join(", ")
        );
        self.error(file, Some(&value.referenced), key, message);
        None
    }
}

/// Where a role stands before any wiring.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Standing {
    /// Deployed, deployable, `enabled` and `shared` both true.
    Active,
    /// Deployed, deployable, `enabled` false: a surface that must be dark.
    Off,
    /// Listed as rejected (or not an MCP role at all).
    Out,
}

/// Decides a role's standing; a role that is out is listed with its code (a role with no
/// MCP metadata only when it is deployed).
pub fn standing(ctx: &mut Context, role: &Role) -> Standing {
    let deployed = ctx.deployed.contains(&role.id);
    let Some(mcp) = &role.mcp else {
        if deployed {
            ctx.reject(
                &role.id,
                Subject::Role,
                Code::NoMetadata,
                "no MCP entry (meta/mcp.yml, or `mcp:` in meta/services.yml): the role declares no MCP surface",
            );
        }
        return Standing::Out;
    };
    let (file, m) = (&mcp.file, &mcp.value);
    if !deployed {
        ctx.reject(
            &role.id,
            Subject::Role,
            Code::NotDeployed,
            "not among the deployed roles (--deployed or --inventory)",
        );
        return Standing::Out;
    }
    if !crate::config::scenario::is_valid_id(&role.id) {
        let message = format!(
            "the role name `{}` cannot name a provider or client of a scenario (letters, digits, `-`, `_`, `.`)",
            role.id
        );
        ctx.error(file, None, "", message);
        return Standing::Out;
    }
    let classification = m.classification.as_ref().map(|c| c.value.as_str()).unwrap_or_default();
    if !words::DEPLOYABLE.contains(&classification) {
        let reason = m.reason.as_ref().map_or("no reason given".to_string(), |r| format!("reason `{}`", r.value));
        let code = match classification {
            "blocked" => Code::Blocked,
            // A reviewed refusal, not a role nobody examined (`no_metadata`).
            "no_surface" => Code::NoSurface,
            _ => Code::AuditOnly,
        };
        let detail = format!("classification `{classification}` is an audit entry, never an endpoint ({reason})");
        ctx.reject(&role.id, Subject::Role, code, detail);
        return Standing::Out;
    }
    let client_only = m.direction.as_ref().is_some_and(|d| d.value == "client");
    let Some(enabled) = &m.enabled else {
        if client_only {
            // A client the platform carries whenever its role is deployed (the platform's
            // own Open WebUI role has no `enabled`): it is wired, not skipped.
            return Standing::Active;
        }
        let detail = "its MCP entry sets no `enabled`: cordon imports an explicit `enabled: true` only \
                      (the platform's default is off, and role defaults or the inventory may say otherwise)";
        ctx.reject(&role.id, Subject::Role, Code::NotEnabled, detail);
        return Standing::Out;
    };
    let Some(is_enabled) = ctx.evaluate(&role.id, file, "enabled", enabled) else { return Standing::Out };
    if !is_enabled {
        return Standing::Off;
    }
    let shared = match &m.shared {
        None => None,
        Some(s) => match ctx.evaluate(&role.id, file, "shared", s) {
            Some(b) => Some(b),
            None => return Standing::Out,
        },
    };
    if client_only {
        // `shared` says whether other roles may discover a surface; a client serves none.
        return Standing::Active;
    }
    if shared.is_none() {
        let message = "no `shared`: an enabled surface states whether other roles may discover it (no default)";
        ctx.lint(super::codes::MISSING_FIELD, file, Some(&enabled.referenced), "shared", message);
    }
    if shared != Some(true) {
        let said = if shared.is_none() { "sets no `shared`" } else { "is not `shared`" };
        let detail = format!("enabled but {said}: other roles may not discover it, so no client is wired to it");
        ctx.reject(&role.id, Subject::Role, Code::NotShared, detail);
        return Standing::Out;
    }
    Standing::Active
}

/// The role's direction word (validated before).
pub fn direction(role: &Role) -> &str {
    role.mcp.as_ref().and_then(|m| m.value.direction.as_ref()).map(|d| d.value.as_str()).unwrap_or_default()
}
