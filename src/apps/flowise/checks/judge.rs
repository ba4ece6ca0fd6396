//! Pure judges of the `flowise` family: observations in, findings out. No I/O; the tests
//! feed them tables of observations.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::apps::clientapp::expecting;
use crate::apps::flowise::observe::{AccessView, EntrySeen, RegistryView, RunSeen};
use crate::config::{ReadSpec, Scenario};
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

/// Why Flowise must hold no entry for a provider of the scenario.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Forbidden {
    /// The provider is disabled.
    Disabled,
    /// The provider does not admit this client.
    NotAdmitted { client: String },
    /// The provider speaks HTTP+SSE only; Flowise's registry takes Streamable-HTTP providers.
    Sse,
}

/// The declared registry of one Flowise, derived from the scenario.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Desired {
    pub prefix: String,
    pub entries: Vec<WantedEntry>,
    /// Providers of the scenario Flowise must hold no entry for, and why.
    pub forbidden: BTreeMap<String, Forbidden>,
    /// API keys (by name) that may see the managed servers.
    pub admin_keys: Vec<String>,
    /// Every provider of the scenario and its origin: an entry without the prefix that
    /// Flowise authorized there holds one of the deployment's credentials.
    #[serde(default)]
    pub origins: Vec<(String, String)>,
}

impl Desired {
    pub fn of(scenario: &Scenario, client: &str) -> Desired {
        let Some(c) = scenario.clients.iter().find(|c| c.id == client) else { return Desired::default() };
        let Some(flowise) = &c.flowise else { return Desired::default() };
        let mut desired =
            Desired { prefix: flowise.prefix.clone(), admin_keys: flowise.admin_keys.clone(), ..Desired::default() };
        for p in &scenario.providers {
            desired.origins.push((p.id.clone(), p.url.origin().ascii_serialization()));
            let why = if p.disabled {
                Some(Forbidden::Disabled)
            } else if !p.allowed_consumers.iter().any(|a| a == client) {
                Some(Forbidden::NotAdmitted { client: client.to_string() })
            } else if p.transport == Transport::Sse {
                Some(Forbidden::Sse)
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

fn drift(template: &'static str) -> Finding {
    Finding::new(FindingKind::RegistryDrift, template)
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
                drift("no entry `{entry}` for provider `{provider}` (declared at {declared})")
                    .fact("provider", &want.provider)
                    .fact("entry", &want.name)
                    .fact("declared", &want.origin),
            ),
            [one] => findings.extend(judge_entry(one, want)),
            many => findings.push(
                drift("{count} entries are named `{entry}`: exactly one may be")
                    .fact("count", many.len())
                    .fact("entry", &want.name)
                    .fact("provider", &want.provider)
                    .fact("entries", many.iter().map(|e| e.id.as_str()).collect::<Vec<_>>().join(", ")),
            ),
        }
    }
    for e in view.entries.iter().filter(|e| e.name.starts_with(&desired.prefix)) {
        let provider = &e.name[desired.prefix.len()..];
        if let Some(why) = desired.forbidden.get(provider) {
            let f = match why {
                Forbidden::Disabled => {
                    drift("an entry `{entry}` exists for provider `{provider}`, which is disabled: none may")
                }
                Forbidden::NotAdmitted { client } => drift(
                    "an entry `{entry}` exists for provider `{provider}`, which does not admit `{client}`: none may",
                )
                .fact("client", client),
                Forbidden::Sse => drift(
                    "an entry `{entry}` exists for provider `{provider}`, which speaks HTTP+SSE only (Flowise's registry takes Streamable-HTTP providers): none may",
                ),
            };
            findings.push(f.fact("entry", &e.name).fact("provider", provider));
        } else if !desired.entries.iter().any(|w| w.provider == provider) {
            findings.push(
                drift("entry `{entry}` carries the managed prefix `{prefix}` but names no provider of the scenario")
                    .fact("entry", &e.name)
                    .fact("prefix", &desired.prefix),
            );
        }
    }
    for e in &view.entries {
        for leak in &e.leaks {
            findings.push(
                Finding::new(
                    FindingKind::SecretInPlain,
                    "entry `{entry}` shows the value of credential `{credential}` in its plain field `{field}` (only the encrypted custom headers may hold it)",
                )
                .fact("entry", &e.name)
                .fact("credential", &leak.credential)
                .fact("field", &leak.field),
            );
        }
    }
    for e in view.entries.iter().filter(|e| !e.name.starts_with(&desired.prefix)) {
        findings.extend(judge_unmanaged(e, desired));
    }
    for v in &view.variables {
        for leak in &v.leaks {
            findings.push(
                Finding::new(
                    FindingKind::SecretInPlain,
                    "variable `{variable}` ({variable_type}) holds the value of credential `{credential}` in `{field}`: Flowise stores variables unencrypted and any flow reads it as $vars.{variable} (only an entry's encrypted custom headers may hold it)",
                )
                .fact("variable", &v.name)
                .fact("variable_type", &v.kind)
                .fact("credential", &leak.credential)
                .fact("field", &leak.field),
            );
        }
    }
    for f in &view.flows {
        for leak in &f.leaks {
            findings.push(
                Finding::new(
                    FindingKind::SecretInPlain,
                    "{flow_type} `{flow}` holds the value of credential `{credential}` in `{field}`",
                )
                .fact("flow_type", f.kind.to_lowercase())
                .fact("flow", &f.name)
                .fact("credential", &leak.credential)
                .fact("field", &leak.field),
            );
        }
    }
    findings
}

/// An entry without the managed prefix is a person's and may stay, but one Flowise
/// AUTHORIZED at a provider's origin with custom headers got past a provider that takes
/// only the deployment's credentials: one of them sits in an entry no reconciler rotates
/// or revokes, a second consumer of it. (Flowise masks header values, so which credential
/// is not shown; that the provider let it in is.)
fn judge_unmanaged(e: &EntrySeen, desired: &Desired) -> Option<Finding> {
    if e.status != "AUTHORIZED" || e.auth_type != "CUSTOM_HEADERS" || e.header_names.is_empty() {
        return None;
    }
    let (provider, origin) = desired.origins.iter().find(|(_, origin)| origin == e.origin())?;
    Some(
        Finding::new(
            FindingKind::RegistryDrift,
            "entry `{entry}` has no managed prefix but Flowise AUTHORIZED it at {origin}, provider `{provider}`'s, with encrypted headers [{headers}]: the provider takes only the deployment's credentials, so one sits in an entry nobody reconciles or revokes (the entry may stay; a deployment credential in it may not)",
        )
        .fact("entry", &e.name)
        .fact("origin", origin)
        .fact("provider", provider)
        .fact("headers", e.header_names.join(", ")),
    )
}

fn judge_entry(e: &EntrySeen, want: &WantedEntry) -> Vec<Finding> {
    let mut findings = Vec::new();
    let fact = |f: Finding| f.fact("provider", &want.provider).fact("entry", &e.name);
    if e.origin() != want.origin {
        findings.push(fact(
            drift("entry `{entry}` points at {origin}, not at provider `{provider}`'s {declared}")
                .fact("origin", e.origin())
                .fact("declared", &want.origin),
        ));
    }
    // Any header name will do (a provider may take its key as `X-Api-Key`): what matters
    // is that the credential sits where Flowise encrypts and masks it; AUTHORIZED below
    // shows the provider accepted it.
    if e.auth_type != "CUSTOM_HEADERS" || e.header_names.is_empty() {
        findings.push(fact(
            drift("entry `{entry}` holds no credential in Flowise's encrypted custom headers (auth {auth}, headers [{headers}])")
                .fact("auth", &e.auth_type)
                .fact("headers", e.header_names.join(", ")),
        ));
    }
    if e.status != "AUTHORIZED" {
        findings.push(fact(
            drift("entry `{entry}` is {status}, not AUTHORIZED: Flowise could not connect to it with its headers")
                .fact("status", &e.status),
        ));
        return findings;
    }
    let mut served = e.tools.clone();
    served.sort();
    let mut allowed = want.allowlist.clone();
    allowed.sort();
    if served != allowed {
        findings.push(fact(
            Finding::new(
                FindingKind::ToolsMismatch,
                "entry `{entry}` discovered tools [{tools}], the allowlist is [{allowlist}]",
            )
            .fact("tools", served.join(", "))
            .fact("allowlist", allowed.join(", "))
            .fact("served", served.join(",")),
        ));
    }
    if let (Some(pin), Some(hash)) = (&want.schema_sha256, &e.schema_sha256)
        && pin != hash
    {
        findings.push(fact(
            Finding::new(
                FindingKind::SchemaPinMismatch,
                "entry `{entry}` discovered tools whose schema hash is {hash}, the pin is {pin}",
            )
            .fact("hash", hash)
            .fact("pin", pin),
        ));
    }
    findings
}

/// `flowise::tool_call::<p>`: the managed chatflow uses the managed entry, Flowise ran the
/// read tool (its own record, `usedTools`), the result meets the read's expectation, and
/// the model got it back.
pub fn judge_run(provider: &str, entry: &str, seen: &RunSeen, read: &ReadSpec, nonce: Option<&str>) -> Vec<Finding> {
    let fail = |template: &'static str| {
        Finding::new(FindingKind::ToolCallFailed, template)
            .fact("provider", provider)
            .fact("chatflow", &seen.chatflow)
            .fact("flow_type", seen.flow_word())
    };
    let tool = &read.tool;
    if seen.status.is_none() {
        let f = match &seen.error {
            Some(error) => {
                fail("running `{chatflow}` got no answer after {waited_ms} ms: {error}").fact("error", error)
            }
            None => fail("running `{chatflow}` got no answer after {waited_ms} ms: no answer"),
        };
        return vec![f.fact("waited_ms", seen.waited_ms)];
    }
    if seen.entries.is_empty() {
        return vec![
            fail("Flowise holds no entry `{entry}` for the {flow_type} `{chatflow}` to use").fact("entry", entry),
        ];
    }
    if !seen.uses.iter().any(|u| seen.entries.contains(u)) {
        return vec![
            fail("the managed {flow_type} `{chatflow}` does not use the entry `{entry}` (its Custom MCP Server nodes use [{uses}])")
                .fact("entry", entry)
                .fact("uses", seen.uses.join(", ")),
        ];
    }
    if let Some(error) = &seen.error {
        return vec![fail("running `{chatflow}` ({via}) failed: {error}").fact("via", &seen.via).fact("error", error)];
    }
    let reply = seen.reply.clone().unwrap_or_default();
    let Some(call) = seen.used.iter().find(|u| &u.tool == tool) else {
        let used: Vec<&str> = seen.used.iter().map(|u| u.tool.as_str()).collect();
        if reply.contains(crate::apps::clientapp::NOT_OFFERED) {
            return vec![
                fail("Flowise did not offer `{tool}` to the model: {reply}").fact("tool", tool).fact("reply", &reply),
            ];
        }
        return vec![
            fail("Flowise's record of the run shows no call of `{tool}` (tools run: [{tools}]); the model replied {reply}")
                .fact("tool", tool)
                .fact("tools", used.join(", "))
                .fact("reply", format!("{reply:?}")),
        ];
    };
    if !crate::apps::clientapp::recorded_result_holds(&call.output, read, nonce) {
        let f = fail(
            "the call of `{tool}` never returned its result: Flowise recorded the output {output}, which does not meet the read's expectation ",
        )
        .fact("tool", tool)
        .fact("output", format!("{:?}", call.output));
        return vec![expecting(f, &read.expect, nonce)];
    }
    if crate::apps::clientapp::reply_carries_result(&reply, read, nonce) {
        vec![]
    } else {
        vec![
            fail("the model never got the result of `{tool}` back: its reply was {reply}")
                .fact("tool", tool)
                .fact("reply", format!("{reply:?}")),
        ]
    }
}

/// The run's answer proves a call of this provider only if the entry it went through
/// points at the provider: an impostor registered under the managed name elsewhere would
/// answer the same read.
pub fn judge_run_target(provider: &str, entry: &str, origin: &str, seen: &RunSeen) -> Option<Finding> {
    let elsewhere: Vec<&str> = seen.entry_origins.iter().map(String::as_str).filter(|o| *o != origin).collect();
    (!elsewhere.is_empty()).then(|| {
        Finding::new(
            FindingKind::ToolCallFailed,
            "the entry `{entry}` the {flow_type} `{chatflow}` calls through points at {origin_seen}, not at provider `{provider}`'s {declared}: whatever answered the read, it was not this provider",
        )
        .fact("provider", provider)
        .fact("entry", entry)
        .fact("chatflow", &seen.chatflow)
        .fact("flow_type", seen.flow_word())
        .fact("origin_seen", elsewhere.join(", "))
        .fact("declared", origin)
    })
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
            Finding::new(
                FindingKind::SsrfGuardOff,
                "HTTP_SECURITY_CHECK is off: Flowise let an MCP server be registered at {url} (answered {status}: {detail})",
            )
            .fact("url", &g.url)
            .fact("status", g.status)
            .fact("detail", &g.detail),
        );
    }
    let offered = view.author.as_ref().is_some_and(|a| !a.offered.is_empty());
    if let Some(a) = &view.author
        && a.list_status == 200
        && !a.listed.is_empty()
    {
        findings.push(
            Finding::new(
                FindingKind::AccessDrift,
                "a flow author's API key ({permissions}) lists the managed MCP servers [{servers}]",
            )
            .fact("permissions", a.permissions.join(", "))
            .fact("servers", a.listed.join(", "))
            .fact("key", "flow author")
            .fact("listed", a.listed.join(",")),
        );
    }
    for k in view.keys.iter().filter(|k| !desired.admin_keys.contains(&k.name)) {
        let has =
            |set: &[&str]| k.permissions.iter().filter(|p| set.contains(&p.as_str())).cloned().collect::<Vec<_>>();
        let tools = has(&TOOLS_PERMISSIONS);
        let load = has(&LOAD_METHOD_PERMISSIONS);
        let finding = if !tools.is_empty() {
            Some(
                Finding::new(
                    FindingKind::AccessDrift,
                    "API key `{key}` is not an admin key but sees the managed MCP servers: its {permissions} opens the custom MCP server routes (the workspace must be admin-only)",
                )
                .fact("permissions", tools.join(", ")),
            )
        } else if offered && !load.is_empty() {
            Some(
                Finding::new(
                    FindingKind::AccessDrift,
                    "API key `{key}` is not an admin key but sees the managed MCP servers: its {permissions} opens POST /api/v1/node-load-method/customMcpServerTool, which offered [{offered}] to cordon's flow-author key (the workspace must be admin-only)",
                )
                .fact("permissions", load.join(", "))
                .fact("offered", view.author.as_ref().map(|a| a.offered.join(", ")).unwrap_or_default()),
            )
        } else {
            None
        };
        if let Some(f) = finding {
            findings.push(f.fact("key", &k.name));
        }
    }
    findings
}
