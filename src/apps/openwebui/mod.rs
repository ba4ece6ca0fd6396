//! Open WebUI as cordon sees it: a small API client that runs inside the Open WebUI
//! container's network namespace ([`api`]), typed observations with no secret in them
//! ([`observe`]; what a connection sends to authenticate: [`headers`]), the calls that
//! gather them ([`gather`]; a chat with a tool call and Open WebUI's record of it:
//! [`chat`]), the OpenID Connect login a browser would do ([`oidc`]; the provider's
//! login form: [`login_form`]) with a test user whose groups are set at the identity
//! provider ([`idp_admin`]), and
//! the users, groups and drift cordon makes for one check and always undoes
//! ([`ephemeral`]). The verdicts live in [`checks`], the scenario block in [`config`].

pub mod api;
pub mod chat;
pub mod checks;
pub mod config;
pub mod ephemeral;
pub mod gather;
pub mod headers;
pub mod idp_admin;
pub mod login_form;
pub mod observe;
pub mod oidc;
