//! One provider role made into a scenario provider: its endpoint, credential reference,
//! tool contract and, for an adapter or sidecar, the container in front of the app.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use super::adapter::{self, Specification};
use super::context::Context;
use super::endpoint::{self, internal_ports};
use super::metadata::{AdapterDecl, CredentialDecl, McpFile, ProbeCallDecl, ToolsDecl, UpstreamServes};
use super::model::{
    BoundaryKeys, Code, CredentialRef, ImportedApp, ImportedImage, ImportedProvider, ImportedRead, Subject,
};
use super::roles::Role;
use super::vocabulary::{self as words};
use crate::config::Expectation;
use crate::mcp::Transport;
use serde_saphyr::Spanned;

/// How the provider is imported: a live surface with its whole contract, or a disabled
/// one that must be dark (only where it was and how to knock).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Active,
    Dark,
    /// Disabled, and its endpoint is the running app's: only the MCP path goes dark.
    DarkPath,
}

impl Mode {
    fn is_dark(self) -> bool {
        matches!(self, Mode::Dark | Mode::DarkPath)
    }
}

/// The provider, with its credential's reference; `None` when it is rejected (listed in
/// `ctx`) or its metadata is wrong (an error in `ctx`).
pub fn resolve(
    ctx: &mut Context,
    role: &Role,
    mode: Mode,
    scenario_dir: &Path,
) -> Option<(ImportedProvider, CredentialRef)> {
    let mcp = role.mcp.as_ref()?;
    let (file, m) = (&mcp.file, &mcp.value);
    if mode == Mode::Active && !guarded_by_a_bearer(ctx, role, file, m) {
        return None;
    }
    let credential = credential_or_refusal(ctx, role, file, m, mode)?;
    let endpoint = endpoint_of(ctx, role, file, m, mode)?;
    let implementation = m.implementation.as_ref().map(|i| i.value.as_str()).unwrap_or_default();
    let is_sidecar = words::SIDECAR_IMPLEMENTATIONS.contains(&implementation);
    if mode == Mode::Active && !endpoint_runs(ctx, role, &endpoint.service) {
        return None;
    }
    let transport = match m.transport.as_ref().map(|t| t.value.as_str()) {
        Some("sse") => Transport::Sse,
        _ => Transport::StreamableHttp,
    };
    let own_network = network_name(role);
    let mut provider = ImportedProvider {
        id: role.id.clone(),
        summary: summary(role, m),
        url: endpoint.url.clone(),
        transport,
        service: endpoint.service.clone(),
        credential: credential_id(&credential.env),
        disabled: mode.is_dark(),
        served_by_app: mode == Mode::DarkPath,
        allowed_consumers: Vec::new(),
        networks: if mode.is_dark() { vec![own_network.clone()] } else { Vec::new() },
        app_ports: endpoint.other_ports.clone(),
        allowlist: Vec::new(),
        mutating: Vec::new(),
        mutating_enabled: false,
        schema_sha256: None,
        platform_schema_sha256: None,
        read: None,
        sidecar_networks: None,
        sidecar_image: None,
        app: None,
        boundary: BoundaryKeys::default(),
    };
    if mode.is_dark() {
        return Some((provider, credential));
    }
    let is_adapter =
        m.classification.as_ref().is_some_and(|c| c.value == "adapter_server") || implementation == "adapter";
    let role_dir = ctx.roles.dir.join(&role.id);
    let spec = if is_adapter { adapter::specification(ctx, file, m, &role_dir, &role.id).ok()? } else { None };
    let contract = contract(ctx, file, m, spec.as_ref())?;
    provider.allowlist = contract.allowlist;
    provider.mutating = contract.mutating;
    provider.mutating_enabled = contract.mutating_enabled;
    provider.read = contract.read;
    provider.platform_schema_sha256 =
        m.tools.as_ref().and_then(|t| t.value.schema_sha256.as_ref()).map(|s| s.value.clone());
    if is_sidecar {
        let upstream = m.adapter.as_ref().and_then(|a| a.value.upstream_network.as_ref()).map(|n| n.value.clone());
        let mut networks = vec![own_network];
        networks.extend(upstream.filter(|u| !networks.contains(u)));
        provider.sidecar_networks = Some(networks);
        provider.sidecar_image = m.adapter.as_ref().and_then(|a| pinned_image(&a.value));
        provider.app = app_behind(role, &endpoint.service);
    }
    let has_probes = contract.limit_probes.slow.is_some() || contract.limit_probes.large.is_some();
    if has_probes && m.limits.is_none() {
        let message = "names calls to push limits past their bounds, but the role gives no `limits`";
        ctx.error(file, None, "tools.limit_probes", message);
        return None;
    }
    provider.boundary = BoundaryKeys {
        denied_tools: contract.denied,
        strict_arguments: implementation == "adapter",
        limits: super::metadata::limits(m.limits.as_ref().map(|l| &l.value)),
        limit_probes: contract.limit_probes,
        retired: Vec::new(),
        specification: spec.map(|s| relative_to(&s.path, scenario_dir)),
    };
    Some((provider, credential))
}

/// An enabled provider states how it is guarded, and cordon can present it: a bearer.
/// False (an error, or a rejection listed in `ctx`) otherwise.
/// The provider's credential reference. Without one, authorized means it must work: a
/// deployed client the provider admits would be handed nothing, so the import fails
/// (lint `credential_missing`) rather than leave the pair unchecked; with no such client
/// the provider is left out with its code.
fn credential_or_refusal(
    ctx: &mut Context,
    role: &Role,
    file: &Path,
    m: &McpFile,
    mode: Mode,
) -> Option<CredentialRef> {
    let detail = match credential(&role.id, m.credential.as_ref().map(|c| &c.value)) {
        Ok(c) => return Some(c),
        Err(detail) => detail,
    };
    let waiting: Vec<&str> = m
        .allowed_consumers
        .iter()
        .flat_map(|l| l.value.iter().map(|c| c.value.as_str()))
        .filter(|c| ctx.deployed.contains(*c) && *c != role.id)
        .collect();
    if mode == Mode::Active && !waiting.is_empty() {
        let at = m.credential.as_ref().map(|c| c.referenced).or(m.classification.as_ref().map(|c| c.referenced));
        let message = format!(
            "provider {} {detail}, yet admits the deployed consumer(s) {}: an authorized connection that cannot be rendered",
            role.id,
            waiting.join(", ")
        );
        ctx.lint(super::codes::CREDENTIAL_MISSING, file, at.as_ref(), "credential", message);
    } else {
        ctx.reject(&role.id, Subject::Provider, Code::CredentialMissing, detail);
    }
    None
}

fn guarded_by_a_bearer(ctx: &mut Context, role: &Role, file: &Path, m: &McpFile) -> bool {
    match m.auth.as_ref().map(|a| a.value.as_str()) {
        None => {
            let message =
                format!("no `auth`: an enabled provider states how it is guarded ({})", words::one_of(words::AUTHS));
            ctx.error(file, m.classification.as_ref().map(|c| &c.referenced), "auth", message);
            false
        }
        Some(auth) if auth != words::CORDON_AUTH => {
            let detail = format!(
                "authenticates with `{auth}`; cordon presents only `Authorization: Bearer`, so a refusal could not be told from a wrong scheme"
            );
            ctx.reject(&role.id, Subject::Provider, Code::AuthUnsupported, detail);
            false
        }
        Some(_) => true,
    }
}

/// The endpoint through services.yml; one only cordon cannot reach (or of a dark
/// surface) is rejected, one the platform itself could not render is an error.
fn endpoint_of(ctx: &mut Context, role: &Role, file: &Path, m: &McpFile, mode: Mode) -> Option<endpoint::Endpoint> {
    match endpoint::resolve(role, m, file) {
        Ok(e) => Some(e),
        Err(p) if p.only_cordon || mode.is_dark() => {
            let detail = format!("{} ({}: {})", p.message, p.file.display(), p.key);
            ctx.reject(&role.id, Subject::Provider, Code::EndpointUnreachable, detail);
            None
        }
        Err(p) => {
            ctx.lint(super::codes::ENDPOINT_UNREACHABLE, &p.file, p.at.as_ref(), &p.key, p.message);
            None
        }
    }
}

/// False (and an error) when the endpoint's service is switched off while the surface
/// is on: clients would be handed an address nobody serves.
fn endpoint_runs(ctx: &mut Context, role: &Role, service: &str) -> bool {
    let Some(enabled) =
        role.services.value.get(service).and_then(|e| e.value.as_ref()).and_then(|e| e.enabled.as_ref())
    else {
        return true;
    };
    let file = role.services.file.clone();
    match ctx.evaluate(&role.id, &file, &format!("{service}.enabled"), enabled) {
        Some(true) => true,
        Some(false) => {
            let message = format!(
                "service `{service}` serves {}'s enabled MCP surface, but its `enabled` is false for the deployed roles",
                role.id
            );
            let key = format!("{service}.enabled");
            ctx.lint(super::codes::ENDPOINT_UNREACHABLE, &file, Some(&enabled.referenced), &key, message);
            false
        }
        None => false,
    }
}

/// Whether a disabled surface's endpoint stops with it (`true`: a container of its own,
/// an adapter or sidecar, or a service whose own `enabled` is false), or is served by the
/// app that keeps running (`false`: only the MCP path must go dark, checked with a GET
/// and a POST there).
pub fn endpoint_goes_dark(ctx: &mut Context, role: &Role) -> Result<bool, String> {
    let Some(mcp) = &role.mcp else { return Err("no metadata".into()) };
    let implementation = mcp.value.implementation.as_ref().map(|i| i.value.as_str()).unwrap_or_default();
    if words::SIDECAR_IMPLEMENTATIONS.contains(&implementation) {
        return Ok(true);
    }
    let service = mcp.value.endpoint.as_ref().and_then(|e| e.value.service_key.as_ref()).map(|s| s.value.clone());
    let Some(service) = service else { return Err("it names no endpoint service".into()) };
    let enabled = role.services.value.get(&service).and_then(|e| e.value.as_ref()).and_then(|e| e.enabled.clone());
    let file = role.services.file.clone();
    match enabled.map(|e| ctx.evaluate(&role.id, &file, &format!("{service}.enabled"), &e)) {
        Some(Some(false)) => Ok(true),
        Some(None) => Err("its endpoint service's condition cannot be evaluated".into()),
        _ => Ok(false),
    }
}

struct Contract {
    allowlist: Vec<String>,
    mutating: Vec<String>,
    mutating_enabled: bool,
    read: Option<ImportedRead>,
    limit_probes: crate::config::LimitProbes,
    denied: Vec<String>,
}

fn contract(ctx: &mut Context, file: &Path, m: &McpFile, spec: Option<&Specification>) -> Option<Contract> {
    let Some(tools) = &m.tools else {
        ctx.error(file, None, "tools", "no `tools`: an enabled provider states its exact tool allowlist");
        return None;
    };
    let t = &tools.value;
    let upstream = upstream_serves(ctx, file, t)?;
    let Some(allowlist) = &t.allowlist else {
        let dynamic = matches!(t.upstream_serves.as_ref().map(|u| &u.value), Some(UpstreamServes::Word(_)));
        let message = if dynamic {
            "no `allowlist`, and the upstream serves a dynamic tool list (`upstream_serves: dynamic`): cordon checks a \
             provider's exact tools, so this authorized provider cannot be rendered; pin an `allowlist`"
        } else {
            "no `tools.allowlist`: an enabled provider states its exact tools"
        };
        ctx.error(file, Some(&tools.referenced), "tools.allowlist", message);
        return None;
    };
    let before = ctx.errors.len();
    let names = allowlisted(ctx, file, allowlist);
    let writer_only = t.writer_allowlist.iter().flatten().filter(|n| !names.contains(n)).cloned();
    let mutating: BTreeSet<String> = t.mutating.iter().flatten().cloned().chain(writer_only).collect();
    let mutating_enabled = t.mutating_tools_enabled.as_ref().is_some_and(|f| f.value.0);
    let served_mutating: Vec<&str> = names.iter().filter(|n| mutating.contains(*n)).map(String::as_str).collect();
    if !mutating_enabled && !served_mutating.is_empty() {
        let message = format!(
            "allows the mutating tools {} while `mutating_tools_enabled` is not true: the contract contradicts itself",
            served_mutating.join(", ")
        );
        ctx.error(file, Some(&allowlist.referenced), "tools.allowlist", message);
    }
    let read = read_probe(ctx, file, t, &names);
    let probes = t.limit_probes.as_ref().map(|p| &p.value);
    let limit_probes = crate::config::LimitProbes {
        slow: probe_call(ctx, file, "slow", probes.and_then(|p| p.slow.as_ref()), &names),
        large: probe_call(ctx, file, "large", probes.and_then(|p| p.large.as_ref()), &names),
    };
    if ctx.errors.len() > before {
        return None;
    }
    let mut allowlist = names;
    allowlist.sort();
    let denied: BTreeSet<String> = spec
        .map(|s| s.tools.iter().cloned().collect::<Vec<_>>())
        .unwrap_or_default()
        .into_iter()
        .chain(upstream)
        .filter(|n| !allowlist.contains(n) && !mutating.contains(n))
        .collect();
    Some(Contract {
        allowlist,
        mutating: mutating.into_iter().collect(),
        mutating_enabled,
        read,
        limit_probes,
        denied: denied.into_iter().collect(),
    })
}

/// `tools.upstream_serves`: the names the upstream serves (none for `dynamic` or when not
/// given); `None` after an error for any other word.
fn upstream_serves(ctx: &mut Context, file: &Path, t: &ToolsDecl) -> Option<Vec<String>> {
    match t.upstream_serves.as_ref().map(|u| &u.value) {
        Some(UpstreamServes::Names(names)) => Some(names.clone()),
        Some(UpstreamServes::Word(w)) if w == "dynamic" => Some(Vec::new()),
        Some(UpstreamServes::Word(w)) => {
            let at = t.upstream_serves.as_ref().map(|u| u.referenced);
            let message = format!("`{w}`: expected a list of tool names or `dynamic`");
            ctx.error(file, at.as_ref(), "tools.upstream_serves", message);
            None
        }
        None => Some(Vec::new()),
    }
}

/// The allowlist's names in its order; a name listed twice is an error.
fn allowlisted(ctx: &mut Context, file: &Path, allowlist: &Spanned<Vec<Spanned<String>>>) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for (i, tool) in allowlist.value.iter().enumerate() {
        if names.contains(&tool.value) {
            let message = format!("tool `{}` is listed twice", tool.value);
            ctx.error(file, Some(&tool.referenced), &format!("tools.allowlist[{i}]"), message);
        }
        names.push(tool.value.clone());
    }
    names
}

/// `tools.read_probe`: an allowlisted tool with a mapping of arguments.
fn read_probe(ctx: &mut Context, file: &Path, t: &ToolsDecl, names: &[String]) -> Option<ImportedRead> {
    let probe = t.read_probe.as_ref()?;
    let p = &probe.value;
    if !names.contains(&p.tool.value) {
        let message = format!("read tool `{}` is not in the allowlist ({})", p.tool.value, names.join(", "));
        ctx.error(file, Some(&p.tool.referenced), "tools.read_probe.tool", message);
        return None;
    }
    let arguments = p.arguments.clone().unwrap_or_else(|| serde_json::json!({}));
    if !arguments.is_object() {
        ctx.error(file, Some(&probe.referenced), "tools.read_probe.arguments", "arguments must be a mapping");
        return None;
    }
    Some(ImportedRead {
        tool: p.tool.value.clone(),
        arguments,
        expectation_declared: p.expect.is_some(),
        expect: p.expect.clone().unwrap_or_else(|| Expectation::TextContains(String::new())),
    })
}

/// `tools.limit_probes.<which>`: an allowlisted tool with a mapping of arguments.
fn probe_call(
    ctx: &mut Context,
    file: &Path,
    which: &str,
    call: Option<&Spanned<ProbeCallDecl>>,
    names: &[String],
) -> Option<crate::config::ProbeCall> {
    let c = &call?.value;
    let key = format!("tools.limit_probes.{which}");
    if !names.contains(&c.tool.value) {
        let message = format!("tool `{}` is not in the allowlist ({})", c.tool.value, names.join(", "));
        ctx.error(file, Some(&c.tool.referenced), &format!("{key}.tool"), message);
        return None;
    }
    let arguments = c.arguments.clone().unwrap_or_else(|| serde_json::json!({}));
    if !arguments.is_object() {
        ctx.error(file, Some(&c.tool.referenced), &format!("{key}.arguments"), "arguments must be a mapping");
        return None;
    }
    Some(crate::config::ProbeCall { tool: c.tool.value.clone(), arguments })
}

/// The image an adapter's metadata pins, when it names one and its digest (the lint
/// requires both of an adapter; `validate` has refused a digest that is none).
fn pinned_image(adapter: &AdapterDecl) -> Option<ImportedImage> {
    let image = adapter.image.as_ref()?.value.trim().to_string();
    let digest = adapter.digest.as_ref()?.value.trim().to_string();
    let image = match &adapter.version {
        Some(v) if !image.rsplit('/').next().unwrap_or_default().contains(':') => format!("{image}:{}", v.value.0),
        _ => image,
    };
    Some(ImportedImage { image, digest, digest_env: None })
}

/// The app a sidecar fronts: the role's main service (named after its entity), with its
/// internal ports; `None` when the role declares no such service with a port.
fn app_behind(role: &Role, endpoint_service: &str) -> Option<ImportedApp> {
    let main = words::entity(&role.id);
    if main == endpoint_service {
        return None;
    }
    let entry = role.services.value.get(main)?.value.as_ref()?;
    let mut ports: Vec<u16> = internal_ports(entry).into_iter().filter_map(|(_, p)| p.ok()).collect();
    ports.sort_unstable();
    ports.dedup();
    (!ports.is_empty()).then(|| ImportedApp { service: main.to_string(), ports })
}

/// The role's own network: `networks.yml`'s `local.name`, or the entity name (the
/// platform's convention).
pub fn network_name(role: &Role) -> String {
    role.networks
        .value
        .local
        .as_ref()
        .and_then(|l| l.name.clone())
        .unwrap_or_else(|| words::entity(&role.id).to_string())
}

/// Where the deploy keeps the provider's secret, as an environment variable name:
/// `<ROLE>_<KEY>` for the role's own `credentials`, `<OWNER>_<KEY>` for a token of the
/// owner principal. Why there is none, as the platform's `credential_missing` says it.
pub fn credential(role: &str, decl: Option<&CredentialDecl>) -> Result<CredentialRef, String> {
    let Some(d) = decl else { return Err("declares no `credential` (owner, source, key)".into()) };
    let field = |v: &Option<String>| v.as_deref().map(str::trim).filter(|s| !s.is_empty()).map(str::to_string);
    let (Some(owner), Some(source), Some(key)) = (field(&d.owner), field(&d.source), field(&d.key)) else {
        return Err("declares an incomplete `credential`: owner, source and key are all needed".into());
    };
    if owner == words::FORBIDDEN_OWNER {
        return Err("names the owner `administrator`: a provider never borrows the administrator's token".into());
    }
    let (prefix, origin) = match source.as_str() {
        "credentials" => (role.to_string(), format!("`credentials.{key}` of role {role} (owner {owner})")),
        "token_store" => (owner.clone(), format!("token `{key}` of principal {owner} (token_store)")),
        other => {
            return Err(format!(
                "reads its secret from `{other}`, which is no credential source ({})",
                words::one_of(words::CREDENTIAL_SOURCES)
            ));
        }
    };
    let env: String = format!("{prefix}_{key}")
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_uppercase() } else { '_' })
        .collect();
    Ok(CredentialRef { env, origin })
}

/// A variable name of its own for a secret whose name another principal's secret
/// already has: the name with a digest of where the secret lives.
pub fn distinct_env(env: &str, origin: &str) -> String {
    use sha2::{Digest, Sha256};
    let digest = hex::encode(Sha256::digest(origin.as_bytes()));
    format!("{env}_{}", digest[..8].to_ascii_uppercase())
}

/// The scenario's id for a credential: its variable's name, lower case, `-` for `_`.
pub fn credential_id(env: &str) -> String {
    env.to_ascii_lowercase().replace('_', "-")
}

fn summary(role: &Role, m: &McpFile) -> String {
    let word = |v: &Option<serde_saphyr::Spanned<String>>| v.as_ref().map(|s| s.value.clone());
    let mut s = format!("{} of role {}", word(&m.classification).unwrap_or_default(), role.id);
    if let Some(kind) = m.adapter.as_ref().and_then(|a| a.value.kind.as_ref()) {
        s.push_str(&format!(", `{}` adapter", kind.value));
    }
    if let Some(auth) = word(&m.auth) {
        s.push_str(&format!(", {auth}"));
        if let Some(subject) = word(&m.auth_subject) {
            s.push_str(&format!(" as {subject}"));
        }
    }
    s
}

/// `target` relative to the directory `base` (both taken from the current directory
/// when relative), for a path written into a scenario that lives in `base`.
pub fn relative_to(target: &Path, base: &Path) -> PathBuf {
    let absolute = |p: &Path| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
    let (target, base) = (absolute(target), absolute(base));
    let t: Vec<_> = target.components().collect();
    let b: Vec<_> = base.components().collect();
    let common = t.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let mut out = PathBuf::new();
    for _ in common..b.len() {
        out.push("..");
    }
    for c in &t[common..] {
        out.push(c);
    }
    out
}
