//! Scenario and suite files: parsed, validated, with errors that point at file:line:column.
pub mod credential;
pub mod duration;
pub mod error;
mod keys;
pub mod openwebui;
pub mod outputs;
pub mod scenario;
pub mod strict;
pub mod suite;

pub use error::{ConfigError, ConfigErrors};
pub use openwebui::{Oidc, OpenWebui};
pub use outputs::Outputs;
pub use scenario::{AppSpec, Client, Expectation, Provider, ReadSpec, Refusal, Scenario, ToolsContract};
pub use suite::{Family, KnownFailure, Mode, Suite};

#[cfg(test)]
mod tests;
