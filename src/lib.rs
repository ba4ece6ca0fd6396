//! cordon: end-to-end contract and isolation checks for MCP deployments.
//!
//! scenario + suite ([`config`]) → planned checks ([`checks`]) → [`runner`] → results
//! ([`model`]) → reporters ([`report`]).
pub(crate) mod agent;
pub(crate) mod app;
pub(crate) mod apps;
pub(crate) mod check;
pub(crate) mod checks;
pub mod cli;
pub(crate) mod compare;
pub mod config;
pub(crate) mod cost;
pub mod demo;
pub(crate) mod deployment;
pub mod dns;
pub mod engine;
pub mod exit;
pub(crate) mod explain;
pub(crate) mod fsutil;
pub(crate) mod history;
pub mod import;
pub(crate) mod init;
pub(crate) mod interrupt;
pub(crate) mod matrix;
pub(crate) mod mcp;
pub(crate) mod model;
pub mod netns;
pub(crate) mod report;
pub(crate) mod runner;
pub mod secret;
pub mod text;
pub(crate) mod topology;
pub(crate) mod waiting;
