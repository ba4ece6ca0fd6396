//! Scenario and suite files: parsed, validated, with errors that point at file:line:column.
pub(crate) mod apps;
pub mod boundary;
pub mod check_pattern;
pub mod credential;
pub mod duration;
pub mod error;
pub mod image_pin;
mod keys;
pub mod outputs;
pub mod scenario;
pub mod strict;
pub mod suite;

pub use crate::apps::flowise::config::Flowise;
pub use crate::apps::n8n::config::N8n;
pub use crate::apps::openwebui::config::{IdpAdmin, Keycloak, KeycloakGrant, Oidc, OpenWebui};
pub use boundary::{Boundary, LimitProbes, ProbeCall, ProviderLimits, Specification, SpecifiedTool};
pub use check_pattern::CheckPattern;
pub use error::{ConfigError, ConfigErrors};
pub use outputs::Outputs;
pub use scenario::{AppSpec, Client, Expectation, Provider, ReadSpec, Refusal, Scenario, ToolsContract};
pub use suite::{Family, FindingMatch, KnownFailure, Mode, Suite};

#[cfg(test)]
mod tests;

#[cfg(test)]
pub mod testing {
    use super::Scenario;
    use crate::secret::Redactor;

    /// The head the client apps' tests share: a scenario `name` whose provider `native`
    /// admits `client`, reads `echo` with `arguments`, and whose two credentials are in `t`.
    pub fn native_for(name: &str, client: &str, arguments: &str) -> String {
        format!(
            "name: {name}\ncredentials:\n  native-token: {{ file: t }}\n  admin-pw: {{ file: t }}\nproviders:\n  \
             native:\n    url: http://native:8000/mcp\n    credential: native-token\n    \
             allowed_consumers: [{client}]\n    tools: {{ allowlist: [add, echo] }}\n    \
             read: {{ tool: echo, arguments: {arguments}, expect: {{ text_contains: hi }} }}\n"
        )
    }

    /// A scenario from `text`, beside a file `t` that holds a placeholder credential (for
    /// `{ file: t }`); its errors as `line:column: key: message`.
    pub fn load(text: &str) -> Result<Scenario, Vec<String>> {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("t"), "a-credential-value\n").unwrap();
        let path = dir.path().join("s.yaml");
        std::fs::write(&path, text).unwrap();
        Scenario::load(&path, &Redactor::new())
            .map_err(|e| e.0.iter().map(|e| format!("{}:{}: {}: {}", e.line, e.column, e.key, e.message)).collect())
    }
}
