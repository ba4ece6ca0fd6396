//! The keys of a scenario that describe a provider's boundary behind the handshake:
//! which tool names it must never run, whether it refuses arguments its tools do not
//! declare, the limits it enforces, the credentials a rotation retired, the upstream
//! specification of an adapter, and (per client) the credentials a removed consumer held.
//!
//! ```yaml
//! credentials:
//!   native-token-old: { env: NATIVE_TOKEN_OLD }   # still a reference, never a value
//! providers:
//!   native:
//!     denied_tools: [delete_everything]
//!     strict_arguments: true
//!     limits: { request_bytes: 65536, response_bytes: 1048576, timeout_seconds: 30,
//!               concurrent_requests: 4, page_size: 50, result_items: 100, stream_seconds: 60 }
//!     # Calls that push a limit past its bound (cordon's extension): without them a limit
//!     # a fast, small server never reaches cannot fail, and is not judged.
//!     limit_probes:
//!       slow: { tool: search, arguments: { query: everything } }   # longer than timeout_seconds
//!       large: { tool: search, arguments: { limit: 100000 } }      # over result_items / response_bytes
//!     retired: [native-token-old]
//!     specification: ../path/tools.json    # relative to the scenario file
//! clients:
//!   flowise:
//!     revoked: { wiki: wiki-token }
//! ```
//!
//! Every key is optional; a check that needs one the scenario lacks is skipped, naming it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_saphyr::{Location, Spanned};

use super::duration::HumanSize;
use super::error::ConfigError;
use super::strict::{Flag, Whole};

/// The largest request cordon sends to prove `request_bytes` (one byte over the limit).
pub const MAX_REQUEST_BYTES: u64 = 64 << 20;
/// Parallel calls cordon sends are the limit plus one: a bound on the load it adds.
pub const MAX_CONCURRENT_REQUESTS: u64 = 64;
/// The largest specification file read.
const MAX_SPECIFICATION_BYTES: u64 = 4 << 20;

/// `providers.<id>.limits` as written; each limit optional, at least one given.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct LimitsFile {
    request_bytes: Option<Spanned<HumanSize>>,
    response_bytes: Option<Spanned<HumanSize>>,
    timeout_seconds: Option<Whole<u64, 1, 3600>>,
    concurrent_requests: Option<Whole<u32, 1, MAX_CONCURRENT_REQUESTS>>,
    page_size: Option<Whole<u32, 1, 100_000>>,
    result_items: Option<Whole<u32, 1, 1_000_000>>,
    stream_seconds: Option<Whole<u64, 1, 86_400>>,
}

/// The limits an adapter must enforce, with explicit values (the platform's `limits:`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProviderLimits {
    pub request_bytes: Option<u64>,
    pub response_bytes: Option<u64>,
    pub timeout_seconds: Option<u64>,
    pub concurrent_requests: Option<u32>,
    pub page_size: Option<u32>,
    pub result_items: Option<u32>,
    pub stream_seconds: Option<u64>,
}

/// `providers.<id>.limit_probes` as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct LimitProbesFile {
    slow: Option<Spanned<ProbeCallFile>>,
    large: Option<Spanned<ProbeCallFile>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ProbeCallFile {
    tool: String,
    #[serde(default = "empty_object")]
    arguments: Value,
}

fn empty_object() -> Value {
    Value::Object(Default::default())
}

/// One call of an allowlisted tool.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProbeCall {
    pub tool: String,
    pub arguments: Value,
}

/// Calls the scenario names to push limits past their bounds: what a fast, small server
/// never reaches cannot fail otherwise.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LimitProbes {
    /// Takes longer than `timeout_seconds` uncut: proves the timeout, and (called
    /// `concurrent_requests` + 1 times at once) the concurrency limit.
    pub slow: Option<ProbeCall>,
    /// Answers more than `result_items` items and `response_bytes` bytes uncut.
    pub large: Option<ProbeCall>,
}

/// One tool of an upstream specification (the platform adapter's `tools.json`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SpecifiedTool {
    pub name: String,
    /// The specification marks it `mutating: true`.
    pub mutating: bool,
    /// Its `input_schema` (or `inputSchema`), when the specification gives one: what a
    /// call of it that carries a nonce to the upstream is made of.
    #[serde(default)]
    pub input_schema: Option<Value>,
    /// The upstream operation's path template (`/api/v1/repos/{repo}`), when given: an
    /// argument named in it travels in the URL an app's access log shows.
    #[serde(default)]
    pub path: Option<String>,
}

/// An upstream specification: every tool the adapter could expose.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Specification {
    pub file: PathBuf,
    pub tools: Vec<SpecifiedTool>,
}

/// What a provider must hold behind its handshake, beyond its tools contract.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Boundary {
    /// Names the provider must never run on `tools/call`.
    pub denied_tools: Vec<String>,
    /// Undeclared and missing arguments are refused (the platform's adapters).
    pub strict_arguments: bool,
    pub limits: Option<ProviderLimits>,
    pub limit_probes: LimitProbes,
    /// Credential ids retired by a rotation: dead everywhere, held by no client.
    pub retired: Vec<String>,
    pub specification: Option<Specification>,
}

/// A provider's boundary keys as written (serde cannot flatten them into a struct that
/// denies unknown fields, so the provider's own reader hands them over one by one).
pub(super) struct ProviderKeys<'a> {
    pub denied_tools: &'a [Spanned<String>],
    pub strict_arguments: Flag,
    pub limits: Option<&'a Spanned<LimitsFile>>,
    pub limit_probes: Option<&'a Spanned<LimitProbesFile>>,
    pub retired: &'a [Spanned<String>],
    pub specification: Option<&'a Spanned<String>>,
}

/// What validation knows about the provider the keys belong to.
pub(super) struct ProviderContext<'a> {
    /// `providers.<id>`
    pub key: &'a str,
    pub credential: &'a str,
    pub allowlist: &'a [String],
    pub credential_ids: &'a [&'a String],
}

/// Validates one provider's boundary keys; every problem is one located error.
pub(super) fn resolve_provider(
    file: &Path,
    keys: &ProviderKeys<'_>,
    p: &ProviderContext<'_>,
) -> Result<Boundary, Vec<ConfigError>> {
    let mut errors = Vec::new();
    let mut check = Checked { file, key: p.key, errors: &mut errors };
    let denied = check.denied_tools(keys, p);
    let retired = check.retired(keys, p);
    let limits = check.limits(keys);
    let limit_probes = check.limit_probes(keys, p);
    let specification = check.specification(keys, p);
    if errors.is_empty() {
        Ok(Boundary {
            denied_tools: denied,
            strict_arguments: keys.strict_arguments.0,
            limits,
            limit_probes,
            retired,
            specification,
        })
    } else {
        Err(errors)
    }
}

/// One provider's keys as they are checked: every problem becomes a located error.
struct Checked<'a> {
    file: &'a Path,
    /// `providers.<id>`, the prefix of every key named.
    key: &'a str,
    errors: &'a mut Vec<ConfigError>,
}

impl Checked<'_> {
    fn error(&mut self, at: &Location, key: String, message: String) {
        self.errors.push(ConfigError::at(self.file, at, key, message));
    }

    /// Named once each, never also allowed.
    fn denied_tools(&mut self, keys: &ProviderKeys<'_>, p: &ProviderContext<'_>) -> Vec<String> {
        let mut denied: Vec<String> = Vec::new();
        for (i, name) in keys.denied_tools.iter().enumerate() {
            let k = format!("{}.denied_tools[{i}]", self.key);
            let tool = &name.value;
            if tool.trim().is_empty() {
                self.error(&name.referenced, k, "a tool name is empty".into());
            } else if p.allowlist.contains(tool) {
                let message = format!("`{tool}` is in `tools.allowlist` too: a tool is either allowed or denied");
                self.error(&name.referenced, k, message);
            } else if denied.contains(tool) {
                self.error(&name.referenced, k, format!("`{tool}` is listed twice"));
            } else {
                denied.push(tool.clone());
            }
        }
        denied
    }

    /// Defined credentials, other than the current one, once each.
    fn retired(&mut self, keys: &ProviderKeys<'_>, p: &ProviderContext<'_>) -> Vec<String> {
        let mut retired: Vec<String> = Vec::new();
        for (i, name) in keys.retired.iter().enumerate() {
            let k = format!("{}.retired[{i}]", self.key);
            let id = &name.value;
            if !p.credential_ids.contains(&id) {
                let defined = p.credential_ids.iter().map(|c| c.as_str()).collect::<Vec<_>>().join(", ");
                let message = format!("credential `{id}` is not defined under `credentials` (defined: {defined})");
                self.error(&name.referenced, k, message);
            } else if id == p.credential {
                let message =
                    format!("`{id}` is the provider's current credential: a rotation retires the one before it");
                self.error(&name.referenced, k, message);
            } else if retired.contains(id) {
                self.error(&name.referenced, k, format!("`{id}` is listed twice"));
            } else {
                retired.push(id.clone());
            }
        }
        retired
    }

    /// At least one limit, each valid.
    fn limits(&mut self, keys: &ProviderKeys<'_>) -> Option<ProviderLimits> {
        let l = keys.limits?;
        match resolve_limits(&l.value) {
            Ok(Some(limits)) => Some(limits),
            Ok(None) => {
                let message = "names no limit: give at least one of request_bytes, response_bytes, timeout_seconds, concurrent_requests, page_size, result_items, stream_seconds, or leave `limits` out".to_string();
                self.error(&l.referenced, format!("{}.limits", self.key), message);
                None
            }
            Err(problems) => {
                for (at, k, m) in problems {
                    self.error(&at, format!("{}.limits.{k}", self.key), m);
                }
                None
            }
        }
    }

    /// Given with `limits` only, each an allowlisted tool with a mapping of arguments.
    fn limit_probes(&mut self, keys: &ProviderKeys<'_>, p: &ProviderContext<'_>) -> LimitProbes {
        let Some(probes) = keys.limit_probes else { return LimitProbes::default() };
        if keys.limits.is_none() {
            let message = "names calls to push limits past their bounds, but the provider has no `limits`".to_string();
            self.error(&probes.referenced, format!("{}.limit_probes", self.key), message);
        }
        let mut call = |which: &str, c: &Option<Spanned<ProbeCallFile>>| {
            let c = c.as_ref()?;
            let k = format!("{}.limit_probes.{which}", self.key);
            if !p.allowlist.contains(&c.value.tool) {
                let message = format!("tool `{}` is not in the allowlist ({})", c.value.tool, p.allowlist.join(", "));
                self.error(&c.referenced, format!("{k}.tool"), message);
                return None;
            }
            if !c.value.arguments.is_object() {
                self.error(&c.referenced, format!("{k}.arguments"), "arguments must be a mapping".into());
                return None;
            }
            Some(ProbeCall { tool: c.value.tool.clone(), arguments: c.value.arguments.clone() })
        };
        LimitProbes { slow: call("slow", &probes.value.slow), large: call("large", &probes.value.large) }
    }

    /// A specification that can be read and defines every allowlisted tool.
    fn specification(&mut self, keys: &ProviderKeys<'_>, p: &ProviderContext<'_>) -> Option<Specification> {
        let s = keys.specification?;
        let k = format!("{}.specification", self.key);
        let spec = match read_specification(self.file, &s.value) {
            Ok(spec) => spec,
            Err(message) => {
                self.error(&s.referenced, k, message);
                return None;
            }
        };
        let missing: Vec<&str> =
            p.allowlist.iter().filter(|t| !spec.tools.iter().any(|s| &s.name == *t)).map(String::as_str).collect();
        if missing.is_empty() {
            return Some(spec);
        }
        let message = format!(
            "`{}` does not define the allowlisted tool(s) {}: an adapter cannot serve what its specification lacks",
            s.value,
            missing.join(", ")
        );
        self.error(&s.referenced, k, message);
        None
    }
}

type LimitProblem = (Location, &'static str, String);

/// `Ok(None)` when the block names no limit.
fn resolve_limits(raw: &LimitsFile) -> Result<Option<ProviderLimits>, Vec<LimitProblem>> {
    let mut problems = Vec::new();
    let mut bytes = |size: &Option<Spanned<HumanSize>>, name: &'static str, max: u64, why: &str| {
        let s = size.as_ref()?;
        if s.value.0 == 0 || s.value.0 > max {
            problems.push((
                s.referenced,
                name,
                format!("{} bytes is out of range: from 1 to {max} ({why})", s.value.0),
            ));
            return None;
        }
        Some(s.value.0)
    };
    let request_bytes =
        bytes(&raw.request_bytes, "request_bytes", MAX_REQUEST_BYTES, "cordon sends one request a byte over it");
    let response_bytes = bytes(
        &raw.response_bytes,
        "response_bytes",
        super::suite::MAX_RESPONSE_BYTES_LIMIT,
        "cordon reads answers up to it",
    );
    if !problems.is_empty() {
        return Err(problems);
    }
    let limits = ProviderLimits {
        request_bytes,
        response_bytes,
        timeout_seconds: raw.timeout_seconds.map(|w| w.0),
        concurrent_requests: raw.concurrent_requests.map(|w| w.0),
        page_size: raw.page_size.map(|w| w.0),
        result_items: raw.result_items.map(|w| w.0),
        stream_seconds: raw.stream_seconds.map(|w| w.0),
    };
    Ok((limits != ProviderLimits::default()).then_some(limits))
}

/// Reads a specification relative to the scenario file: a JSON object of tool name →
/// tool object (the platform adapter's `tools.json`), or a `tools/list` result
/// (`{"tools": [{"name": …}, …]}`).
fn read_specification(scenario: &Path, written: &str) -> Result<Specification, String> {
    let path = Path::new(written);
    let path =
        if path.is_absolute() { path.to_path_buf() } else { scenario.parent().unwrap_or(Path::new(".")).join(path) };
    let shown = if path.as_path() == Path::new(written) {
        written.to_string()
    } else {
        format!("{written}` (`{}`", path.display())
    };
    let text = crate::fsutil::read_regular_text(&path, MAX_SPECIFICATION_BYTES)
        .map_err(|e| format!("cannot read the specification `{shown}`: it {}", super::error::read_error_words(&e)))?;
    let value: Value = serde_json::from_str(&text).map_err(|e| format!("`{shown}` is not JSON: {e}"))?;
    let tools = specified_tools(&value).map_err(|why| format!("`{shown}` {why}"))?;
    Ok(Specification { file: path, tools })
}

/// The tools a specification defines, in its order.
pub(super) fn specified_tools(value: &Value) -> Result<Vec<SpecifiedTool>, String> {
    let shape = "is not a tool specification: expected an object of tool name → tool object (the platform's tools.json), or {\"tools\": [{\"name\": …}]}";
    let Value::Object(map) = value else { return Err(shape.into()) };
    if let Some(Value::Array(list)) = map.get("tools") {
        return list
            .iter()
            .map(|t| match t.get("name").and_then(Value::as_str) {
                Some(name) if !name.is_empty() => Ok(SpecifiedTool {
                    name: name.into(),
                    mutating: mutating(t)?,
                    input_schema: input_schema(t),
                    path: path(t),
                }),
                _ => Err(format!(
                    "has a tool without a name in `tools`: {}",
                    crate::text::body_excerpt(t.to_string().as_bytes(), 80)
                )),
            })
            .collect();
    }
    map.iter()
        .map(|(name, tool)| {
            if !tool.is_object() || name.is_empty() {
                return Err(format!("{shape}; `{}` is not", crate::config::strict::echo(name)));
            }
            Ok(SpecifiedTool {
                name: name.clone(),
                mutating: mutating(tool)?,
                input_schema: input_schema(tool),
                path: path(tool),
            })
        })
        .collect()
}

fn path(tool: &Value) -> Option<String> {
    tool.get("path").and_then(Value::as_str).map(str::to_string)
}

fn input_schema(tool: &Value) -> Option<Value> {
    tool.get("input_schema").or_else(|| tool.get("inputSchema")).filter(|s| s.is_object()).cloned()
}

fn mutating(tool: &Value) -> Result<bool, String> {
    match tool.get("mutating") {
        None | Some(Value::Bool(false)) => Ok(false),
        Some(Value::Bool(true)) => Ok(true),
        Some(other) => Err(format!("marks a tool `mutating: {other}`; expected true or false")),
    }
}

/// What validation knows about a provider a client's `revoked:` names.
pub(super) struct RevokedFacts<'a> {
    pub id: &'a str,
    pub admits_client: bool,
}

/// Validates `clients.<id>.revoked`: provider → the credential the client held before
/// the provider stopped admitting it. It may be the provider's current credential (one
/// shared by every consumer): then the check fails on the deployment, which is where a
/// removal that rotated nothing belongs.
pub(super) fn resolve_revoked(
    file: &Path,
    key: &str,
    revoked: &BTreeMap<String, Spanned<String>>,
    holds: &BTreeMap<String, Spanned<String>>,
    providers: &[RevokedFacts<'_>],
    credential_ids: &[&String],
) -> Result<BTreeMap<String, String>, Vec<ConfigError>> {
    let mut errors = Vec::new();
    for (provider, credential) in revoked {
        let k = format!("{key}.revoked.{provider}");
        let mut error = |m: String| errors.push(ConfigError::at(file, &credential.referenced, k.clone(), m));
        let Some(p) = providers.iter().find(|p| p.id == provider) else {
            let ids = providers.iter().map(|p| p.id).collect::<Vec<_>>().join(", ");
            error(format!("`{provider}` is not a provider of this scenario (providers: {ids})"));
            continue;
        };
        let id = &credential.value;
        if !credential_ids.contains(&id) {
            let defined = credential_ids.iter().map(|c| c.as_str()).collect::<Vec<_>>().join(", ");
            error(format!("credential `{id}` is not defined under `credentials` (defined: {defined})"));
        } else if p.admits_client {
            error(format!(
                "provider `{provider}` still admits this client (`allowed_consumers`): only a removed consumer's credential is revoked"
            ));
        } else if holds.get(provider).is_some_and(|h| &h.value == id) {
            error(format!("the client still holds `{id}` for `{provider}` (`{key}.credentials.{provider}`)"));
        }
    }
    if errors.is_empty() {
        Ok(revoked.iter().map(|(p, c)| (p.clone(), c.value.clone())).collect())
    } else {
        Err(errors)
    }
}

/// A client's credential for `provider` must not be one its rotation retired.
pub(super) fn held_retired(
    file: &Path,
    key: &str,
    provider: &str,
    credential: &Spanned<String>,
    retired: &[Spanned<String>],
) -> Option<ConfigError> {
    retired.iter().any(|r| r.value == credential.value).then(|| {
        ConfigError::at(
            file,
            &credential.referenced,
            key,
            format!(
                "`{}` is retired for provider `{provider}` (`providers.{provider}.retired`): no client may still hold it",
                credential.value
            ),
        )
    })
}

#[cfg(test)]
mod tests;
