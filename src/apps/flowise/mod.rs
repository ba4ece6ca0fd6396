//! Flowise as cordon sees it: its API inside the Flowise container's network namespace
//! (an admin session, and requests with an API key: [`api`]), typed observations with no
//! secret in them ([`observe`]), the calls that gather them ([`gather`]), and what cordon
//! makes for one check and always undoes ([`ephemeral`]). The verdicts live in
//! [`checks`], the scenario block in [`config`].

pub mod api;
pub mod checks;
pub mod config;
pub mod ephemeral;
pub mod gather;
pub mod observe;
