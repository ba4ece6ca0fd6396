//! Pure judges of the `flowise` family: observations in, findings out. No I/O; the tests
//! feed them tables of observations.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::config::{Expectation, ReadSpec, Scenario};
use crate::flowise::observe::{AccessView, EntrySeen, RegistryView, RunSeen};
use crate::mcp::Transport;
use crate::model::{Finding, FindingKind};

/// One entry the scenario wants Flowise's registry to hold.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WantedEntry {
    pub provider: String,
    /// `<prefix><provider>`.
    pub name: String,
    /// The provider URL's origin: all Flowise shows of a URL.
    pub origin: String,
    pub allowlist: Vec<String>,
    pub schema_sha256: Option<String>,
}

/// The declared registry of one Flowise, derived from the scenario.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Desired {
    pub prefix: String,
    pub entries: Vec<WantedEntry>,
    /// Providers of the scenario Flowise must hold no entry for, and why.
    pub forbidden: BTreeMap<String, String>,
    /// API keys (by name) that may see the managed servers.
    pub admin_keys: Vec<String>,
}

impl Desired {
    pub fn of(scenario: &Scenario, client: &str) -> Desired {
        let Some(c) = scenario.clients.iter().find(|c| c.id == client) else { return Desired::default() };
        let Some(flowise) = &c.flowise else { return Desired::default() };
        let mut desired =
            Desired { prefix: flowise.prefix.clone(), admin_keys: flowise.admin_keys.clone(), ..Desired::default() };
        for p in &scenario.providers {
            let why = if p.disabled {
                Some("is disabled".to_string())
            } else if !p.allowed_consumers.iter().any(|a| a == client) {
                Some(format!("does not admit `{client}`"))
            } else if p.transport == Transport::Sse {
                Some("speaks HTTP+SSE only (Flowise's registry takes Streamable-HTTP providers)".to_string())
            } else {
                None
            };
            match why {
                Some(why) => {
                    desired.forbidden.insert(p.id.clone(), why);
                }
                None => desired.entries.push(WantedEntry {
                    provider: p.id.clone(),
                    name: format!("{}{}", flowise.prefix, p.id),
                    origin: p.url.origin().ascii_serialization(),
                    allowlist: p.tools.allowlist.clone(),
                    schema_sha256: p.tools.schema_sha256.clone(),
                }),
            }
        }
        desired
    }
}

fn drift(message: String) -> Finding {
    Finding::text(FindingKind::RegistryDrift, message)
}

/// `flowise::registry`: the registry holds exactly the declared entries, each holding its
/// credential in Flowise's encrypted custom headers, authorized, serving exactly the
/// allowlist; no credential shows in any entry's plain fields or any flow's `flowData`.
pub fn judge_registry(view: &RegistryView, desired: &Desired) -> Vec<Finding> {
    let mut findings = Vec::new();
    for want in &desired.entries {
        let held: Vec<&EntrySeen> = view.entries.iter().filter(|e| e.name == want.name).collect();
        match held.as_slice() {
            [] => findings.push(
                drift(format!(
                    "no entry `{}` for provider `{}` (declared at {})",
                    want.name, want.provider, want.origin
                ))
                .fact("provider", &want.provider),
            ),
            [one] => findings.extend(judge_entry(one, want)),
            many => findings.push(
                drift(format!("{} entries are named `{}`: exactly one may be", many.len(), want.name))
                    .fact("provider", &want.provider)
                    .fact("entries", many.iter().map(|e| e.id.as_str()).collect::<Vec<_>>().join(", ")),
            ),
        }
    }
    for e in view.entries.iter().filter(|e| e.name.starts_with(&desired.prefix)) {
        let provider = &e.name[desired.prefix.len()..];
        if let Some(why) = desired.forbidden.get(provider) {
            findings.push(
                drift(format!("an entry `{}` exists for provider `{provider}`, which {why}: none may", e.name))
                    .fact("provider", provider),
            );
        } else if !desired.entries.iter().any(|w| w.provider == provider) {
            findings.push(
                drift(format!(
                    "entry `{}` carries the managed prefix `{}` but names no provider of the scenario",
                    e.name, desired.prefix
                ))
                .fact("entry", &e.name),
            );
        }
    }
    for e in &view.entries {
        for leak in &e.leaks {
            findings.push(
                Finding::text(
                    FindingKind::SecretInPlain,
                    format!(
                        "entry `{}` shows the value of credential `{}` in its plain field `{}` (only the encrypted custom headers may hold it)",
                        e.name, leak.credential, leak.field
                    ),
                )
                .fact("credential", &leak.credential)
                .fact("field", &leak.field),
            );
        }
    }
    for f in &view.flows {
        for leak in &f.leaks {
            findings.push(
                Finding::text(
                    FindingKind::SecretInPlain,
                    format!(
                        "{} `{}` holds the value of credential `{}` in `{}`",
                        f.kind.to_lowercase(),
                        f.name,
                        leak.credential,
                        leak.field
                    ),
                )
                .fact("credential", &leak.credential)
                .fact("field", &leak.field),
            );
        }
    }
    findings
}

fn judge_entry(e: &EntrySeen, want: &WantedEntry) -> Vec<Finding> {
    let mut findings = Vec::new();
    let fact = |f: Finding| f.fact("provider", &want.provider);
    if e.origin() != want.origin {
        findings.push(fact(drift(format!(
            "entry `{}` points at {}, not at provider `{}`'s {}",
            e.name,
            e.origin(),
            want.provider,
            want.origin
        ))));
    }
    // Any header name will do (a provider may take its key as `X-Api-Key`): what matters
    // is that the credential sits where Flowise encrypts and masks it; AUTHORIZED below
    // shows the provider accepted it.
    if e.auth_type != "CUSTOM_HEADERS" || e.header_names.is_empty() {
        findings.push(fact(drift(format!(
            "entry `{}` holds no credential in Flowise's encrypted custom headers (auth {}, headers [{}])",
            e.name,
            e.auth_type,
            e.header_names.join(", ")
        ))));
    }
    if e.status != "AUTHORIZED" {
        findings.push(fact(drift(format!(
            "entry `{}` is {}, not AUTHORIZED: Flowise could not connect to it with its headers",
            e.name, e.status
        ))));
        return findings;
    }
    let mut served = e.tools.clone();
    served.sort();
    let mut allowed = want.allowlist.clone();
    allowed.sort();
    if served != allowed {
        findings.push(fact(
            Finding::text(
                FindingKind::ToolsMismatch,
                format!(
                    "entry `{}` discovered tools [{}], the allowlist is [{}]",
                    e.name,
                    served.join(", "),
                    allowed.join(", ")
                ),
            )
            .fact("served", served.join(",")),
        ));
    }
    if let (Some(pin), Some(hash)) = (&want.schema_sha256, &e.schema_sha256)
        && pin != hash
    {
        findings.push(fact(Finding::text(
            FindingKind::SchemaPinMismatch,
            format!("entry `{}` discovered tools whose schema hash is {hash}, the pin is {pin}", e.name),
        )));
    }
    findings
}

/// `flowise::tool_call::<p>`: the managed chatflow uses the managed entry, Flowise ran the
/// read tool (its own record, `usedTools`), the result meets the read's expectation, and
/// the model got it back.
pub fn judge_run(provider: &str, entry: &str, seen: &RunSeen, read: &ReadSpec, nonce: Option<&str>) -> Vec<Finding> {
    let fail = |msg: String| vec![Finding::text(FindingKind::ToolCallFailed, msg).fact("provider", provider)];
    let tool = &read.tool;
    if seen.status.is_none() {
        let why = seen.error.clone().unwrap_or_else(|| "no answer".into());
        return fail(format!("running `{}` got no answer after {} ms: {why}", seen.chatflow, seen.waited_ms));
    }
    if seen.entries.is_empty() {
        return fail(format!("Flowise holds no entry `{entry}` for the chatflow `{}` to use", seen.chatflow));
    }
    if !seen.uses.iter().any(|u| seen.entries.contains(u)) {
        return fail(format!(
            "the managed chatflow `{}` does not use the entry `{entry}` (its Custom MCP Server nodes use [{}])",
            seen.chatflow,
            seen.uses.join(", ")
        ));
    }
    if let Some(error) = &seen.error {
        return fail(format!("running `{}` ({}) failed: {error}", seen.chatflow, seen.via));
    }
    let reply = seen.reply.clone().unwrap_or_default();
    let Some(call) = seen.used.iter().find(|u| &u.tool == tool) else {
        let used: Vec<&str> = seen.used.iter().map(|u| u.tool.as_str()).collect();
        if reply.contains(crate::checks::clientapp::NOT_OFFERED) {
            return fail(format!("Flowise did not offer `{tool}` to the model: {reply}"));
        }
        return fail(format!(
            "Flowise's record of the run shows no call of `{tool}` (tools run: [{}]); the model replied {reply:?}",
            used.join(", ")
        ));
    };
    if !crate::checks::clientapp::recorded_result_holds(&call.output, read, nonce) {
        return fail(format!(
            "the call of `{tool}` never returned its result: Flowise recorded the output {:?}, which does not meet the read's expectation {}{}",
            call.output,
            describe(&read.expect),
            nonce.map(|n| format!(" with this call's nonce {n}")).unwrap_or_default()
        ));
    }
    if crate::checks::clientapp::reply_carries_result(&reply, read, nonce) {
        vec![]
    } else {
        fail(format!("the model never got the result of `{tool}` back: its reply was {reply:?}"))
    }
}

pub fn describe(expect: &Expectation) -> String {
    match expect {
        Expectation::TextContains(t) => format!("(text containing {t:?})"),
        Expectation::JsonSubset(v) => format!("(JSON containing {v})"),
    }
}

/// Permissions that open Flowise 3.1.4's custom MCP server routes.
pub const TOOLS_PERMISSIONS: [&str; 4] = ["tools:view", "tools:create", "tools:update", "tools:delete"];
/// Permissions that open `POST /api/v1/node-load-method/*` in Flowise 3.1.4
/// (`routes/node-load-methods`): any of them lets a key ask `customMcpServerTool` for
/// its `listServers`.
pub const LOAD_METHOD_PERMISSIONS: [&str; 12] = [
    "chatflows:view",
    "chatflows:create",
    "chatflows:update",
    "chatflows:delete",
    "agentflows:view",
    "agentflows:create",
    "agentflows:update",
    "agentflows:delete",
    "documentStores:view",
    "documentStores:create",
    "documentStores:update",
    "documentStores:add-loader",
];

/// `flowise::access`: the SSRF guard denies every guarded address; a flow author's key
/// does not list the managed servers; no API key but the declared admin keys can see
/// them — by a tools permission, or by a permission that opens the load method when the
/// author's key was shown them there.
pub fn judge_access(view: &AccessView, desired: &Desired) -> Vec<Finding> {
    let mut findings = Vec::new();
    for g in view.guard.iter().filter(|g| !g.denied()) {
        findings.push(
            Finding::text(
                FindingKind::SsrfGuardOff,
                format!(
                    "HTTP_SECURITY_CHECK is off: Flowise let an MCP server be registered at {} (answered {}: {})",
                    g.url, g.status, g.detail
                ),
            )
            .fact("url", &g.url),
        );
    }
    let offered = view.author.as_ref().is_some_and(|a| !a.offered.is_empty());
    if let Some(a) = &view.author
        && a.list_status == 200
        && !a.listed.is_empty()
    {
        findings.push(
            Finding::text(
                FindingKind::AccessDrift,
                format!(
                    "a flow author's API key ({}) lists the managed MCP servers [{}]",
                    a.permissions.join(", "),
                    a.listed.join(", ")
                ),
            )
            .fact("key", "flow author")
            .fact("listed", a.listed.join(",")),
        );
    }
    for k in view.keys.iter().filter(|k| !desired.admin_keys.contains(&k.name)) {
        let has =
            |set: &[&str]| k.permissions.iter().filter(|p| set.contains(&p.as_str())).cloned().collect::<Vec<_>>();
        let tools = has(&TOOLS_PERMISSIONS);
        let load = has(&LOAD_METHOD_PERMISSIONS);
        let through = if !tools.is_empty() {
            Some(format!("its {} opens the custom MCP server routes", tools.join(", ")))
        } else if offered && !load.is_empty() {
            Some(format!(
                "its {} opens POST /api/v1/node-load-method/customMcpServerTool, which offered [{}] to cordon's flow-author key",
                load.join(", "),
                view.author.as_ref().map(|a| a.offered.join(", ")).unwrap_or_default()
            ))
        } else {
            None
        };
        if let Some(through) = through {
            findings.push(
                Finding::text(
                    FindingKind::AccessDrift,
                    format!(
                        "API key `{}` is not an admin key but sees the managed MCP servers: {through} (the workspace must be admin-only)",
                        k.name
                    ),
                )
                .fact("key", &k.name),
            );
        }
    }
    findings
}
