//! The platform's metadata contract, rule by rule (requirement 035: "Target Metadata
//! Contract", "Identity, Authorization, and Credential Requirements", "Discovery and
//! Reconciliation", "Tool and Adapter Safety Contract"): each broken rule is a finding
//! with a stable code, the file, line and key. An import with findings is computed (so
//! every finding is reported in one pass) but never written: cordon exits 1.

use std::path::Path;

use serde_saphyr::{Location, Spanned};

use super::adapter::own_specification;
use super::codes::*;
use super::condition::{self, Expr};
use super::context::Context;
use super::metadata::McpFile;
use super::roles::Role;
use super::vocabulary as words;

/// The rules that hold for every role's metadata, deployed or not: what the platform's
/// own lint runs over the whole tree.
pub fn every_role(ctx: &mut Context, role: &Role) {
    let Some(mcp) = &role.mcp else { return };
    let (file, m) = (mcp.file.as_path(), &mcp.value);
    let anchor = m.classification.as_ref().map(|c| c.referenced);
    let classification = m.classification.as_ref().map(|c| c.value.as_str()).unwrap_or_default();
    let deployable = words::DEPLOYABLE.contains(&classification);
    if !deployable && !classification.is_empty() {
        for (present, key) in [(m.reason.is_some(), "reason"), (m.notes.is_some(), "notes")] {
            if !present {
                let message = format!(
                    "the audit entry `{classification}` gives no `{key}`: a negative classification carries a concrete reason and notes that explain it"
                );
                ctx.lint(NEGATIVE_UNEXPLAINED, file, anchor.as_ref(), key, message);
            }
        }
    }
    if let Some(reason) = &m.reason
        && !REASONS.contains(&reason.value.as_str())
    {
        let message = format!("unknown reason `{}` (expected {})", reason.value, words::one_of(REASONS));
        ctx.lint(REASON_UNKNOWN, file, Some(&reason.referenced), "reason", message);
    }
    if deployable {
        source_pinned(ctx, file, anchor.as_ref(), m);
    }
    for (key, value) in [("enabled", &m.enabled), ("shared", &m.shared)] {
        if let Some(v) = value {
            names_no_peer(ctx, role, file, key, v);
        }
    }
    let auth = m.auth.as_ref().map(|a| a.value.as_str());
    if auth == Some(words::CORDON_AUTH) {
        let subject = m.auth_subject.as_ref();
        if let Some(s) = subject.filter(|s| s.value != "service_account") {
            let message = format!(
                "`auth: bearer_token` declared as `{}`: a static bearer issued to the deployment is not on-behalf-of and stays `service_account`",
                s.value
            );
            ctx.lint(STATIC_BEARER_SUBJECT, file, Some(&s.referenced), "auth_subject", message);
        }
    }
    if let Some(tools) = &m.tools {
        let t = &tools.value;
        if t.mutating_tools_enabled.as_ref().is_some_and(|f| f.value.0) && m.mutating_proofs.is_none() {
            let at = t.mutating_tools_enabled.as_ref().map(|f| f.referenced);
            ctx.lint(
                MUTATING_WITHOUT_PROOFS,
                file,
                at.as_ref(),
                "tools.mutating_tools_enabled",
                "mutations are enabled without a `mutating_proofs` block (human confirmation, authorization, idempotency, audit, rollback)",
            );
        }
        if let Some(list) = t.allowlist.as_ref().filter(|l| l.value.is_empty()) {
            ctx.lint(
                EMPTY_ALLOWLIST,
                file,
                Some(&list.referenced),
                "tools.allowlist",
                "the allowlist is empty: a provider names the exact tools it serves",
            );
        }
    }
    if let Some(path) = m.adapter.as_ref().and_then(|a| a.value.specification_path.as_ref())
        && let Err(why) = own_specification(&role.id, &path.value)
    {
        let message = format!(
            "`{}` {why}: a specification is a checked-in file under the role's own `files/` (`files/...` or `roles/{}/files/...`)",
            crate::text::sanitize(&path.value),
            role.id
        );
        ctx.lint(SPECIFICATION_OUTSIDE_ROLE, file, Some(&path.referenced), "adapter.specification_path", message);
    }
}

fn source_pinned(ctx: &mut Context, file: &Path, anchor: Option<&Location>, m: &McpFile) {
    if m.source_url.as_ref().is_none_or(|u| u.value.trim().is_empty()) {
        ctx.lint(
            SOURCE_UNPINNED,
            file,
            anchor,
            "source_url",
            "a deployable mapping names its authoritative `source_url`",
        );
    }
    let pinned_by_url = m.source_url.as_ref().is_some_and(|u| source_pins_a_version(&u.value));
    match &m.supported_version {
        None if pinned_by_url => {}
        None => ctx.lint(
            SOURCE_UNPINNED,
            file,
            anchor,
            "supported_version",
            "a deployable mapping names the exact `supported_version` (or a `source_url` at a tag or commit) it was verified with (`minimum_version` is a floor, not a pin)",
        ),
        Some(v) if !is_exact_version(&v.value.0) => {
            let message = format!(
                "`{}` is a range or a placeholder, not an exact version",
                crate::text::sanitize(&v.value.0)
            );
            ctx.lint(SOURCE_UNPINNED, file, Some(&v.referenced), "supported_version", message);
        }
        Some(_) => {}
    }
}

/// A source URL that names one release or commit: a ref after `tree/`, `blob/`,
/// `commit/` or `tag/` (GitHub, GitLab, Gitea), or a version after `@` (Go modules,
/// npm), holding a digit (`main` is a branch, not a version).
fn source_pins_a_version(url: &str) -> bool {
    let path = url.split(['?', '#']).next().unwrap_or_default();
    let segments: Vec<&str> = path.split('/').collect();
    let after_marker = segments
        .windows(2)
        .filter(|w| matches!(w[0], "tree" | "blob" | "commit" | "commits" | "tag" | "tags"))
        .map(|w| w[1]);
    let after_at = segments.iter().filter_map(|s| s.split_once('@').map(|(_, v)| v));
    let versioned = |r: &str| {
        let r = r.replace("%40", "@");
        let r = r.rsplit('@').next().unwrap_or_default().to_string();
        r.chars().any(|c| c.is_ascii_digit()) && is_exact_version(&r)
    };
    after_marker.chain(after_at).any(versioned)
}

/// A version as released or a commit: no range operator, no wildcard, not empty.
fn is_exact_version(v: &str) -> bool {
    let v = v.trim();
    !v.is_empty()
        && v != "latest"
        && !v.contains(['<', '>', '^', '~', '*', '=', ',', ' ', '|'])
        && !v.split(['.', '-']).any(|part| part.eq_ignore_ascii_case("x"))
}

/// An MCP `enabled`/`shared` names only this role: the platform derives enablement from
/// the role's own state, never from which peers happen to be deployed.
fn names_no_peer(ctx: &mut Context, role: &Role, file: &Path, key: &str, value: &Spanned<condition::Condition>) {
    let Ok(expr) = condition::parse(&value.value) else { return };
    let mut named = Vec::new();
    roles_named(&expr, &mut named);
    named.retain(|r| r != &role.id);
    named.dedup();
    if !named.is_empty() {
        let message = format!(
            "names the peer role(s) {}: enablement is the role's own state or a direction-aware lookup, never a list of peers",
            named.iter().map(|r| format!("`{r}`")).collect::<Vec<_>>().join(", ")
        );
        ctx.lint(CONDITION_NAMES_PEERS, file, Some(&value.referenced), key, message);
    }
}

fn roles_named(expr: &Expr, out: &mut Vec<String>) {
    match expr {
        Expr::Literal(_) => {}
        Expr::Deployed(r) | Expr::Config { role: r, .. } => out.push(r.clone()),
        Expr::Not(e) => roles_named(e, out),
        Expr::And(a, b) | Expr::Or(a, b) => {
            roles_named(a, out);
            roles_named(b, out);
        }
    }
}

/// Every field the contract shows for an enabled provider surface, and for an adapter
/// its image, limits and contract pins: each missing one is a finding (none defaults).
pub fn enabled_provider(ctx: &mut Context, role: &Role) {
    let Some(mcp) = &role.mcp else { return };
    let (file, m) = (mcp.file.as_path(), &mcp.value);
    let anchor = m.classification.as_ref().map(|c| c.referenced);
    let mut missing: Vec<(String, Option<Location>)> = Vec::new();
    let mut need = |present: bool, key: &str, at: Option<Location>| {
        if !present {
            missing.push((key.to_string(), at));
        }
    };
    need(m.transport.is_some(), "transport", anchor);
    need(m.exposure.is_some(), "exposure", anchor);
    need(m.auth_subject.is_some(), "auth_subject", anchor);
    need(m.implementation.is_some(), "implementation", anchor);
    need(m.allowed_consumers.is_some(), "allowed_consumers", anchor);
    need(m.shared.is_some(), "shared", anchor);
    match &m.credential {
        None => need(false, "credential", anchor),
        Some(c) => {
            let filled = |v: &Option<String>| v.as_deref().is_some_and(|s| !s.trim().is_empty());
            need(filled(&c.value.owner), "credential.owner", Some(c.referenced));
            need(filled(&c.value.source), "credential.source", Some(c.referenced));
            need(filled(&c.value.key), "credential.key", Some(c.referenced));
        }
    }
    match &m.tools {
        None => need(false, "tools", anchor),
        Some(t) => {
            need(t.value.allowlist.is_some(), "tools.allowlist", Some(t.referenced));
            need(t.value.read_only_default.is_some(), "tools.read_only_default", Some(t.referenced));
            need(t.value.mutating_tools_enabled.is_some(), "tools.mutating_tools_enabled", Some(t.referenced));
        }
    }
    let implementation = m.implementation.as_ref().map(|i| i.value.as_str());
    let is_adapter =
        implementation == Some("adapter") || m.classification.as_ref().is_some_and(|c| c.value == "adapter_server");
    if is_adapter {
        match &m.adapter {
            None => need(false, "adapter", anchor),
            Some(a) => {
                let v = &a.value;
                for (present, key) in [
                    (v.kind.is_some(), "adapter.type"),
                    (v.image.is_some(), "adapter.image"),
                    (v.version.is_some(), "adapter.version"),
                    (v.digest.is_some(), "adapter.digest"),
                    (v.upstream_api_version.is_some(), "adapter.upstream_api_version"),
                ] {
                    need(present, key, Some(a.referenced));
                }
            }
        }
        match &m.limits {
            None => need(false, "limits", anchor),
            Some(l) => {
                let set: Vec<&str> = crate::import::model::limit_entries(&super::metadata::limits(Some(&l.value)))
                    .into_iter()
                    .map(|(k, _)| k)
                    .collect();
                for key in crate::import::model::LIMIT_KEYS.iter().filter(|k| !set.contains(k)) {
                    need(false, &format!("limits.{key}"), Some(l.referenced));
                }
            }
        }
        if let Some(t) = &m.tools {
            need(t.value.schema_sha256.is_some(), "tools.schema_sha256", Some(t.referenced));
        }
    }
    for (key, at) in missing {
        let message = format!(
            "no `{key}`: every field the contract shows is required for an enabled {} surface, and none has a default",
            if is_adapter { "adapter" } else { "provider" }
        );
        ctx.lint(MISSING_FIELD, file, at.as_ref(), &key, message);
    }
}

/// An enabled client states what it speaks; without it no pair can be decided.
pub fn enabled_client(ctx: &mut Context, role: &Role) {
    let Some(mcp) = &role.mcp else { return };
    let (file, m) = (mcp.file.as_path(), &mcp.value);
    let anchor = m.classification.as_ref().map(|c| c.referenced);
    for (present, key) in [
        (m.supported_transports.as_ref().is_some_and(|l| !l.value.is_empty()), "supported_transports"),
        (m.supported_auths.as_ref().is_some_and(|l| !l.value.is_empty()), "supported_auths"),
    ] {
        if !present {
            let message = format!(
                "no `{key}`: every client declares the transports and auth schemes it supports, so discovery can decide each pair"
            );
            ctx.lint(CLIENT_CAPABILITIES_MISSING, file, anchor.as_ref(), key, message);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_versions_only() {
        for ok in ["1.2.3", "v4.5.6", "2026.7.1", "0123abcd", "1.0.0-rc.1"] {
            assert!(is_exact_version(ok), "{ok}");
        }
        for bad in ["", "latest", ">=1.2", "^1.2", "~1", "1.x", "1.2.*", "1.0 || 2.0"] {
            assert!(!is_exact_version(bad), "{bad}");
        }
    }

    #[test]
    fn a_source_url_at_a_tag_or_commit_pins_the_version() {
        for pinned in [
            "https://example.invalid/project/source/tree/v4.5.6",
            "https://github.com/n8n-io/n8n/tree/n8n%401.95.3/packages/x",
            "https://github.com/o/r/commit/0123abcd",
            "https://pkg.go.dev/gitea.com/gitea/gitea-mcp@v0.3.1",
            "https://github.com/o/r/releases/tag/v1.2.3",
        ] {
            assert!(source_pins_a_version(pinned), "{pinned}");
        }
        for floating in [
            "https://pkg.go.dev/gitea.com/gitea/gitea-mcp",
            "https://github.com/o/r/tree/main",
            "https://docs.example.test/mcp/",
            "https://github.com/o/r/tree/",
        ] {
            assert!(!source_pins_a_version(floating), "{floating}");
        }
    }

    #[test]
    fn every_code_is_listed_once() {
        let mut codes: Vec<&str> = RULES.iter().map(|(c, _)| *c).collect();
        codes.sort_unstable();
        codes.dedup();
        assert_eq!(codes.len(), RULES.len());
    }
}
