//! `cordon import infinito`: the scenario `cordon compose` and `cordon swarm` read,
//! generated from the platform's own role metadata (`roles/<role>/meta/mcp.yml`,
//! `services.yml`, `networks.yml` and an adapter's `files/mcp/tools.json`), so the
//! harness checks what the platform declares rather than a hand-kept copy of it.
//!
//! roles directory → [`roles::Roles`] (parsed, located) → [`validate`] (metadata errors)
//! → [`decide`] (standing, providers, clients, wiring, rejections) → [`model::Import`]
//! → [`emit`] (deterministic YAML) → written, printed, or compared ([`check`]).

mod adapter;
pub mod args;
mod check;
pub mod codes;
mod condition;
mod context;
pub mod decide;
pub mod emit;
mod endpoint;
pub mod inventory;
pub mod lint;
mod metadata;
pub mod model;
mod provider;
mod roles;
mod validate;
mod vocabulary;
pub(crate) mod yaml;

pub use args::{Platform, run};
pub use decide::{Request, import};
pub use model::{Code, Import, Rejection};

#[cfg(test)]
mod tests;
