//! Check families. Each module plans its checks from the scenario and judges answers.
pub mod contract;
pub mod refusal;

use std::sync::Arc;

use crate::config::{Family, Mode, Scenario, Suite};
use crate::mcp::{Endpoint, McpError};
use crate::model::{Attempt, CheckName};
use crate::runner::{Check, SkippedCheck};

/// Every check the suite's families ask for, in a stable order.
pub fn plan(scenario: &Scenario, suite: &Suite) -> Vec<Arc<dyn Check>> {
    let mut checks: Vec<Arc<dyn Check>> = Vec::new();
    for family in &suite.families {
        match family {
            Family::Contract => checks.extend(contract::plan(scenario)),
            other => unreachable!("suite validation admits no {other:?} family in {:?} mode", suite.mode),
        }
    }
    if suite.mode == Mode::Host {
        for provider in scenario.providers.iter().filter(|p| p.disabled) {
            checks.push(Arc::new(SkippedCheck {
                name: CheckName::new(Family::Disabled, provider.id.clone()),
                reason: "host mode cannot see a disabled surface from a client's network namespace; run the compose or swarm suite".into(),
            }));
        }
    }
    checks
}

/// Where probes go in host mode: the scenario's URL as written.
pub fn host_endpoint(provider: &crate::config::Provider) -> Endpoint {
    Endpoint { url: provider.url.clone(), transport: provider.transport, pin: None }
}

/// An error on the way to a verdict: "not ready" errors are retried, the rest are final.
pub fn attempt_from_error(context: &str, error: &McpError, evidence: Vec<String>) -> Attempt {
    let reason = format!("{context}: {error}");
    if error.is_not_ready() { Attempt::not_ready(reason, evidence) } else { Attempt::fail(reason, evidence) }
}
