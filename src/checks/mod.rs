//! Check families. Each module plans its checks from the scenario, observes inside a
//! network namespace (typed observations, no verdicts), and judges with a pure function
//! of observations and scenario that its tests feed tables of observations.
pub mod clientapp;
pub mod contract;
pub mod credentials;
pub mod disabled;
pub mod flowise;
pub mod kit;
pub mod n8n;
pub mod openwebui;
pub mod plan;
pub mod reach;
pub mod route;
pub mod secrets;
pub mod session;
pub mod sidecar;
#[cfg(test)]
mod swarm_tests;

use std::sync::Arc;

use crate::check::{Check, Skipped, named};
use crate::config::{Family, Mode, Scenario, Suite};
use crate::model::CheckName;

/// Every check the suite's families ask for, in a stable order.
pub fn plan(scenario: &Scenario, suite: &Suite) -> Vec<Arc<dyn Check>> {
    let mut checks: Vec<Arc<dyn Check>> = Vec::new();
    for family in &suite.families {
        match family {
            Family::Contract => {
                checks.extend(contract::plan(scenario));
                checks.extend(contract::calls::plan(scenario));
                checks.extend(contract::arguments::plan(scenario));
                checks.extend(contract::limits::plan(scenario));
            }
            Family::Route => checks.extend(route::plan(scenario)),
            Family::Reach => checks.extend(reach::plan(scenario)),
            Family::Session => checks.extend(session::plan(scenario)),
            Family::Disabled => checks.extend(disabled::plan(scenario)),
            Family::Sidecar => {
                checks.extend(sidecar::plan(scenario));
                checks.extend(sidecar::egress::plan(scenario));
            }
            Family::Openwebui => checks.extend(openwebui::plan(scenario, suite)),
            Family::Credentials => checks.extend(credentials::plan(scenario)),
            Family::Secrets => checks.extend(secrets::plan(scenario)),
            Family::Flowise => checks.extend(flowise::plan(scenario)),
            Family::N8n => checks.extend(n8n::plan(scenario)),
        }
    }
    if suite.mode == Mode::Host {
        for provider in scenario.providers.iter().filter(|p| p.disabled) {
            checks.push(named(
                CheckName::of_provider(Family::Disabled, &provider.id, None),
                Skipped {
                    reason: "host mode cannot see a disabled surface from a client's network namespace; run the compose or swarm suite".into(),
                },
            ));
        }
    }
    checks
}
