//! What cordon saw through n8n's API, as typed values a judge can be fed in tests.
//! Nothing here holds a secret: a credential is named by the name n8n stores it under,
//! and a scenario credential seen in a workflow is kept as its id and the field's path.

use serde::{Deserialize, Serialize};

pub use crate::apps::webapp::Leak;

/// An MCP Client Tool node (`@n8n/n8n-nodes-langchain.mcpClientTool`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClientNodeSeen {
    pub node: String,
    /// `sseEndpoint`: n8n 1.100.1's MCP Client Tool speaks HTTP+SSE only.
    pub endpoint: String,
    /// `bearerAuth`, `headerAuth` or `none` (n8n's default).
    pub authentication: String,
    /// The name of the n8n credential it uses, if any.
    pub credential: Option<String>,
    /// `all` (n8n's default), `selected` or `except`.
    pub include: String,
    pub include_tools: Vec<String>,
    pub exclude_tools: Vec<String>,
}

impl ClientNodeSeen {
    pub fn describe(&self) -> String {
        let tools = match self.include.as_str() {
            "selected" => format!("include selected [{}]", self.include_tools.join(", ")),
            "except" => format!("include all except [{}]", self.exclude_tools.join(", ")),
            other => format!("include {other}"),
        };
        format!(
            "MCP Client Tool `{}` -> {} auth={} (credential {}), {tools}",
            self.node,
            self.endpoint,
            self.authentication,
            self.credential.as_deref().map_or("none".to_string(), |c| format!("`{c}`"))
        )
    }
}

/// An MCP Server Trigger node (`@n8n/n8n-nodes-langchain.mcpTrigger`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TriggerSeen {
    pub node: String,
    pub type_version: f64,
    /// `none` (n8n's default), `bearerAuth` or `headerAuth`.
    pub authentication: String,
    pub credential: Option<String>,
    pub path: String,
    /// Names of the tool nodes connected to it (`ai_tool`).
    pub tools: Vec<String>,
}

/// One workflow, as the public API shows it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct WorkflowSeen {
    pub id: String,
    pub name: String,
    pub active: bool,
    /// The path of its Webhook trigger, if it has one.
    pub webhook: Option<String>,
    pub clients: Vec<ClientNodeSeen>,
    pub triggers: Vec<TriggerSeen>,
    pub leaks: Vec<Leak>,
}

/// What one tool node did in a run, from n8n's own execution record.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolRunSeen {
    pub node: String,
    pub tool: String,
    /// `success` or `error`.
    pub status: String,
    pub output: String,
    pub error: Option<String>,
}

/// A run of a managed workflow through its production webhook.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunSeen {
    pub workflow: String,
    pub status: Option<u16>,
    /// The agent's answer (`output`), sanitized and cut.
    pub reply: Option<String>,
    /// n8n's execution id, when one was found.
    pub execution: Option<String>,
    pub calls: Vec<ToolRunSeen>,
    pub waited_ms: u64,
    pub error: Option<String>,
}

/// What the MCP Server Trigger's endpoint serves to the provider's own bearer, asked
/// from n8n's namespace.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExposureSeen {
    pub url: String,
    pub tools: Option<Vec<String>>,
    pub error: Option<String>,
}
