//! cordon: end-to-end contract and isolation checks for MCP deployments.
//!
//! scenario + suite ([`config`]) → planned checks ([`checks`]) → [`runner`] → results
//! ([`model`]) → reporters ([`report`]).
pub mod agent;
pub mod app;
pub mod checks;
pub mod cli;
pub mod config;
pub mod demo;
pub mod deployment;
pub mod dns;
pub mod engine;
pub mod exit;
pub mod explain;
pub mod fsutil;
pub mod history;
pub mod matrix;
pub mod mcp;
pub mod model;
pub mod netns;
pub mod openwebui;
pub mod report;
pub mod runner;
pub mod secret;
pub mod text;
pub mod topology;
