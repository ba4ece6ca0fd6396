//! n8n as cordon sees it: its public API and production webhooks inside the n8n
//! container's network namespace ([`api`]), typed observations with no secret in them
//! ([`observe`]), the calls that gather them ([`gather`]), and the execution records a
//! run leaves, always deleted ([`ephemeral`]). The verdicts live in [`checks`], the scenario block in [`config`].

pub mod api;
pub mod checks;
pub mod config;
pub mod ephemeral;
pub mod gather;
pub mod observe;
