//! The client applications cordon checks from the inside (Open WebUI, Flowise, n8n):
//! each in one folder, with what cordon reads of it (api, gather, observe), what it
//! makes and undoes (ephemeral), its scenario block (config) and its check family
//! (checks). What they share: the signed-in web session ([`webapp`]) and the read a
//! client app is asked to run ([`clientapp`]).

pub mod clientapp;
pub mod flowise;
pub mod n8n;
pub mod openwebui;
pub mod webapp;
