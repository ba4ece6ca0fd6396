//! An enabled adapter's contract: its required fields, and the specification file it
//! serves from, checked against the digests the platform pins for it.

use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};

use serde_saphyr::Spanned;
use sha2::{Digest, Sha256};

use super::context::Context;
use super::metadata::McpFile;
use super::validate::{pin_matches, sha256_hex};
use super::vocabulary::{self as words, one_of};

/// The specification an adapter serves from.
#[derive(Debug, Clone)]
pub struct Specification {
    /// Where it was read (the platform checkout joined with `specification_path`).
    pub path: PathBuf,
    pub tools: BTreeSet<String>,
}

/// The largest specification read: real ones are a few kilobytes.
const MAX_SPECIFICATION_BYTES: u64 = 4 << 20;

/// Checks an enabled adapter's block; `Ok(None)` for an adapter type with no
/// specification. Every problem is an error in `ctx`; `Err(())` when there was one.
pub fn specification(
    ctx: &mut Context,
    file: &Path,
    m: &McpFile,
    role_dir: &Path,
    role: &str,
) -> Result<Option<Specification>, ()> {
    let errors_before = ctx.errors.len();
    let Some(adapter) = &m.adapter else {
        let at = m.classification.as_ref().map(|c| c.referenced);
        ctx.error(file, at.as_ref(), "adapter", "no `adapter` block: an enabled adapter names its `type` and, for a specification type, `specification_path` and `specification_sha256`");
        return Err(());
    };
    let a = &adapter.value;
    let Some(kind) = &a.kind else {
        let message = format!("no `adapter.type`: expected {}", one_of(words::ADAPTER_TYPES));
        ctx.error(file, Some(&adapter.referenced), "adapter.type", message);
        return Err(());
    };
    if !words::SPECIFICATION_ADAPTER_TYPES.contains(&kind.value.as_str()) {
        return Ok(None);
    }
    for (present, key) in [
        (a.specification_path.is_some(), "specification_path"),
        (a.specification_sha256.is_some(), "specification_sha256"),
    ] {
        if !present {
            let message = format!("no `adapter.{key}`: a `{}` adapter serves from a pinned specification", kind.value);
            ctx.error(file, Some(&adapter.referenced), &format!("adapter.{key}"), message);
        }
    }
    let (Some(rel), Some(pin)) = (&a.specification_path, &a.specification_sha256) else { return Err(()) };
    // Outside the role's own files: a finding of its own (lint), nothing to read here.
    let Ok(within) = own_specification(role, &rel.value) else { return Err(()) };
    let path = role_dir.join(within);
    let spec = read_pinned(ctx, file, rel, pin, &path)?;
    let tools: BTreeSet<String> = spec.as_object().map(|o| o.keys().cloned().collect()).unwrap_or_default();
    check_against(ctx, file, m, &spec, &tools, &path);
    if ctx.errors.len() > errors_before { Err(()) } else { Ok(Some(Specification { path, tools })) }
}

/// The specification's JSON at `path`, its bytes checked against `pin` (a mismatch is an
/// error, the JSON still returned so the rest is checked too).
fn read_pinned(
    ctx: &mut Context,
    file: &Path,
    rel: &Spanned<String>,
    pin: &Spanned<String>,
    path: &Path,
) -> Result<serde_json::Value, ()> {
    let bytes = match crate::fsutil::read_regular(path, MAX_SPECIFICATION_BYTES) {
        Ok(bytes) => bytes,
        Err(e) => {
            let message =
                format!("cannot read `{}`: it {}", path.display(), crate::config::error::read_error_words(&e));
            ctx.error(file, Some(&rel.referenced), "adapter.specification_path", message);
            return Err(());
        }
    };
    if let Ok(pinned) = sha256_hex(&pin.value) {
        let actual = hex::encode(Sha256::digest(&bytes));
        if !pin_matches(&pinned, &actual) {
            let message = format!(
                "`{}` has sha256 {actual}, not the pinned {pinned}: the specification changed without its pin (or the pin is wrong)",
                path.display()
            );
            ctx.error(file, Some(&pin.referenced), "adapter.specification_sha256", message);
        }
    }
    match serde_json::from_slice(&bytes) {
        Ok(v @ serde_json::Value::Object(_)) => Ok(v),
        Ok(_) => {
            ctx.error(
                file,
                Some(&rel.referenced),
                "adapter.specification_path",
                format!("`{}` is not a JSON object of tools by name", path.display()),
            );
            Err(())
        }
        Err(e) => {
            ctx.error(
                file,
                Some(&rel.referenced),
                "adapter.specification_path",
                format!("`{}` is not JSON: {e}", path.display()),
            );
            Err(())
        }
    }
}

/// The platform's contract hash of the specification, and each allowlisted tool: in the
/// specification, and a GET or HEAD operation while mutations are off.
fn check_against(
    ctx: &mut Context,
    file: &Path,
    m: &McpFile,
    spec: &serde_json::Value,
    tools: &BTreeSet<String>,
    path: &Path,
) {
    if let Some(schema) = m.tools.as_ref().and_then(|t| t.value.schema_sha256.as_ref())
        && let Ok(pinned) = sha256_hex(&schema.value)
    {
        let actual = hex::encode(Sha256::digest(crate::mcp::canonical_json(spec).as_bytes()));
        if !pin_matches(&pinned, &actual) {
            let message = format!(
                "the platform's contract hash of `{}` (sorted keys, `,`/`:` separators) is {actual}, not the pinned {pinned}",
                path.display()
            );
            ctx.error(file, Some(&schema.referenced), "tools.schema_sha256", message);
        }
    }
    let mutations_on =
        m.tools.as_ref().and_then(|t| t.value.mutating_tools_enabled.as_ref()).is_some_and(|f| f.value.0);
    if let Some(allowlist) = m.tools.as_ref().and_then(|t| t.value.allowlist.as_ref()) {
        for (i, tool) in allowlist.value.iter().enumerate() {
            let method = spec.get(&tool.value).and_then(|d| d.get("method")).and_then(serde_json::Value::as_str);
            if let Some(method) =
                method.filter(|m| !mutations_on && !matches!(m.to_ascii_uppercase().as_str(), "GET" | "HEAD"))
            {
                let message = format!(
                    "tool `{}` is the operation {} {} of `{}`, allowlisted while mutations are off (`mutating_tools_enabled` is not true): a read-only surface allows GET and HEAD only",
                    tool.value,
                    crate::text::sanitize(method),
                    spec[&tool.value]
                        .get("path")
                        .and_then(serde_json::Value::as_str)
                        .map(crate::text::sanitize)
                        .unwrap_or_default(),
                    path.display()
                );
                ctx.lint(
                    super::codes::MUTATING_OPERATION,
                    file,
                    Some(&tool.referenced),
                    &format!("tools.allowlist[{i}]"),
                    message,
                );
            }
            if !tools.contains(&tool.value) {
                let message = format!(
                    "tool `{}` is not in the adapter's specification `{}` (it has: {})",
                    tool.value,
                    path.display(),
                    tools.iter().cloned().collect::<Vec<_>>().join(", ")
                );
                ctx.error(file, Some(&tool.referenced), &format!("tools.allowlist[{i}]"), message);
            }
        }
    }
}

/// `specification_path` within the role's own `files/`, as a path relative to the role
/// directory (`files/...`); why not, otherwise.
pub(super) fn own_specification(role: &str, path: &str) -> Result<String, String> {
    let p = Path::new(path);
    if p.is_absolute() {
        return Err("is absolute".into());
    }
    if p.components().any(|c| !matches!(c, Component::Normal(_) | Component::CurDir)) {
        return Err("climbs out with `..`".into());
    }
    let parts: Vec<&str> =
        p.components().filter_map(|c| if let Component::Normal(n) = c { n.to_str() } else { None }).collect();
    let within = match parts.as_slice() {
        ["files", rest @ ..] if !rest.is_empty() => rest,
        ["roles", r, "files", rest @ ..] if *r == role && !rest.is_empty() => rest,
        ["roles", r, ..] if *r != role => return Err(format!("lies in role `{r}`, not in `{role}`")),
        _ => return Err("is not under the role's `files/`".into()),
    };
    Ok(format!("files/{}", within.join("/")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_specification_stays_in_its_role() {
        assert_eq!(own_specification("web-app-x", "files/mcp/a.json").as_deref(), Ok("files/mcp/a.json"));
        assert_eq!(
            own_specification("web-app-x", "roles/web-app-x/files/mcp/a.json").as_deref(),
            Ok("files/mcp/a.json")
        );
        assert_eq!(own_specification("web-app-x", "./files/a.json").as_deref(), Ok("files/a.json"));
        for bad in [
            "roles/web-app-y/files/a.json",
            "files/../../etc/passwd",
            "/etc/passwd",
            "meta/a.json",
            "files",
            "roles/web-app-x/templates/a.json",
        ] {
            assert!(own_specification("web-app-x", bad).is_err(), "{bad}");
        }
    }
}
