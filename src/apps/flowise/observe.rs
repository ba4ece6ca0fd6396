//! What cordon saw through Flowise's API, as typed values a judge can be fed in tests.
//! Nothing here holds a secret: a credential seen in a field is kept as its scenario id
//! and the field's path, never its value.

use serde::{Deserialize, Serialize};

pub use crate::apps::webapp::Leak;

/// One custom MCP server entry, as the admin sees it (`GET /api/v1/custom-mcp-servers`,
/// `/:id` and `/:id/tools`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EntrySeen {
    pub id: String,
    pub name: String,
    /// `serverUrl` as Flowise shows it: the origin, then `/************` for any path.
    pub shown_url: String,
    /// `NONE` or `CUSTOM_HEADERS`.
    pub auth_type: String,
    /// Names of the encrypted custom headers (Flowise masks their values).
    pub header_names: Vec<String>,
    /// `PENDING`, `AUTHORIZED` or `ERROR`.
    pub status: String,
    /// Tool names Flowise discovered when it authorized the entry.
    pub tools: Vec<String>,
    /// The schema hash of those tools (cordon's `schema_sha256`).
    pub schema_sha256: Option<String>,
    pub leaks: Vec<Leak>,
}

impl EntrySeen {
    /// The origin part of the shown URL (`http://native:8000`).
    pub fn origin(&self) -> &str {
        origin_of(&self.shown_url)
    }

    pub fn describe(&self) -> String {
        let headers = if self.header_names.is_empty() { "none".to_string() } else { self.header_names.join(", ") };
        format!(
            "`{}` at {} auth={} (encrypted headers: {headers}), {}, tools [{}]",
            self.name,
            self.shown_url,
            self.auth_type,
            self.status,
            self.tools.join(", ")
        )
    }
}

/// One chatflow or agentflow, as the admin sees it (`GET /api/v1/chatflows`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FlowSeen {
    pub id: String,
    pub name: String,
    /// `CHATFLOW`, `AGENTFLOW`, …
    pub kind: String,
    /// Entry ids its Custom MCP Server nodes use.
    pub servers: Vec<String>,
    /// Tool names those nodes select.
    pub actions: Vec<String>,
    pub leaks: Vec<Leak>,
}

/// One variable (`GET /api/v1/variables`): a flow reads it as `{{$vars.<name>}}`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct VariableSeen {
    pub name: String,
    /// `static` (its value is stored, unencrypted) or `runtime` (read from the environment).
    pub kind: String,
    pub leaks: Vec<Leak>,
}

/// The admin's view of the registry, of every flow and of every variable.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RegistryView {
    pub entries: Vec<EntrySeen>,
    pub flows: Vec<FlowSeen>,
    #[serde(default)]
    pub variables: Vec<VariableSeen>,
}

/// A tool call Flowise recorded for a prediction (`usedTools`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct UsedTool {
    pub tool: String,
    pub input: String,
    pub output: String,
}

/// A run of a managed chatflow through the prediction API.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunSeen {
    /// The chatflow's name, or what was looked for.
    pub chatflow: String,
    /// The entry ids its Custom MCP Server nodes use, and the ids of the entries named
    /// as the managed one.
    pub uses: Vec<String>,
    pub entries: Vec<String>,
    /// Where the entries named as the managed one point (their origins, as Flowise shows them).
    #[serde(default)]
    pub entry_origins: Vec<String>,
    /// `CHATFLOW` or `AGENTFLOW`, as Flowise stores the flow; empty when none was found.
    #[serde(default)]
    pub flow_type: String,
    /// The route that ran it.
    pub via: String,
    pub status: Option<u16>,
    /// The model's reply (`text`), sanitized and cut.
    pub reply: Option<String>,
    /// Flowise's own record of the tools the agent ran.
    pub used: Vec<UsedTool>,
    pub waited_ms: u64,
    /// What went wrong before a verdict could rest on the run.
    pub error: Option<String>,
}

/// A registration at an address Flowise's SSRF guard (`HTTP_SECURITY_CHECK`) must deny.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GuardSeen {
    pub url: String,
    pub status: u16,
    pub detail: String,
}

impl RunSeen {
    /// The flow's kind in a sentence: `chatflow`, `agentflow`, or `flow` when unknown.
    pub fn flow_word(&self) -> String {
        match self.flow_type.to_ascii_lowercase().as_str() {
            "" => "flow".into(),
            kind => kind.into(),
        }
    }
}

impl GuardSeen {
    pub fn denied(&self) -> bool {
        self.status == 400 && self.detail.contains("not allowed by policy")
    }
}

/// What an API key holding only a flow author's permissions sees of the managed servers.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuthorSeen {
    pub permissions: Vec<String>,
    /// `GET /api/v1/custom-mcp-servers`.
    pub list_status: u16,
    /// Managed entries in that answer.
    pub listed: Vec<String>,
    /// `POST /api/v1/node-load-method/customMcpServerTool` (`listServers`).
    pub load_method_status: u16,
    /// Managed entries in that answer.
    pub offered: Vec<String>,
}

/// An API key of the workspace: a non-admin principal.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApiKeySeen {
    pub name: String,
    pub permissions: Vec<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AccessView {
    pub guard: Vec<GuardSeen>,
    pub author: Option<AuthorSeen>,
    /// Every API key but cordon's own.
    pub keys: Vec<ApiKeySeen>,
    /// The managed entries' names, for evidence.
    pub managed: Vec<String>,
}

/// The origin part of a URL as Flowise shows it (`http://native:8000/************`).
pub fn origin_of(shown: &str) -> &str {
    match shown.find("://") {
        Some(i) => match shown[i + 3..].find('/') {
            Some(j) => &shown[..i + 3 + j],
            None => shown,
        },
        None => shown,
    }
}
