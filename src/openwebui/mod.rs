//! Open WebUI as cordon sees it: a small API client that runs inside the Open WebUI
//! container's network namespace ([`api`]), typed observations with no secret in them
//! ([`observe`]), the calls that gather them ([`gather`]), the OpenID Connect login a
//! browser would do ([`oidc`]), and the users, groups and drift cordon makes for one
//! check and always undoes ([`ephemeral`]). The verdicts live in `checks::openwebui`.
pub mod api;
pub mod ephemeral;
pub mod gather;
pub mod observe;
pub mod oidc;
