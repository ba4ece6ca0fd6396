//! Scenario and suite files: parsed, validated, with errors that point at file:line:column.
pub mod duration;
pub mod error;
pub mod openwebui;
pub mod scenario;
pub mod suite;

pub use error::{ConfigError, ConfigErrors};
pub use openwebui::{Oidc, OpenWebui};
pub use scenario::{AppSpec, Client, Expectation, Provider, ReadSpec, Refusal, Scenario, ToolsContract};
pub use suite::{Family, KnownFailure, Mode, Outputs, Suite};

#[cfg(test)]
mod tests;
