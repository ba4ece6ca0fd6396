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
