//! Scenario and suite files: parsed, validated, with errors that point at file:line:column.
mod apps;
pub mod boundary;
pub mod check_pattern;
pub mod credential;
pub mod duration;
pub mod error;
pub mod flowise;
pub mod image_pin;
mod keys;
pub mod n8n;
pub mod openwebui;
pub mod outputs;
pub mod scenario;
pub mod strict;
pub mod suite;

pub use boundary::{Boundary, LimitProbes, ProbeCall, ProviderLimits, Specification, SpecifiedTool};
pub use check_pattern::CheckPattern;
pub use error::{ConfigError, ConfigErrors};
pub use flowise::Flowise;
pub use n8n::N8n;
pub use openwebui::{IdpAdmin, Keycloak, KeycloakGrant, Oidc, OpenWebui};
pub use outputs::Outputs;
pub use scenario::{AppSpec, Client, Expectation, Provider, ReadSpec, Refusal, Scenario, ToolsContract};
pub use suite::{Family, FindingMatch, KnownFailure, Mode, Suite};

#[cfg(test)]
mod tests;
