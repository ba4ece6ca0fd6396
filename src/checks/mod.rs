//! Check families. Each module plans its checks from the scenario, observes inside a
//! network namespace (typed observations, no verdicts), and judges with a pure function
//! of observations and scenario that its tests feed tables of observations.
pub mod contract;
pub mod credentials;
pub mod disabled;
pub mod kit;
pub mod plan;
pub mod reach;
pub mod route;
pub mod secrets;
pub mod session;
pub mod sidecar;
#[cfg(test)]
mod swarm_tests;

use std::sync::Arc;

use crate::check::{Check, Skipped, Spec, named};
use crate::config::{Family, Mode, Scenario, Suite};
use crate::model::CheckName;

/// Every family, in [`Family::ALL`]'s order.
pub const FAMILIES: [Spec; 11] = [
    route::SPEC,
    reach::SPEC,
    session::SPEC,
    contract::SPEC,
    disabled::SPEC,
    sidecar::SPEC,
    crate::apps::openwebui::checks::SPEC,
    credentials::SPEC,
    secrets::SPEC,
    crate::apps::flowise::checks::SPEC,
    crate::apps::n8n::checks::SPEC,
];

/// The family's spec.
pub fn spec(family: Family) -> &'static Spec {
    FAMILIES.iter().find(|s| s.family == family).expect("every family is registered in FAMILIES")
}

/// Every check the suite's families ask for, in a stable order.
pub fn plan(scenario: &Scenario, suite: &Suite) -> Vec<Arc<dyn Check>> {
    let mut checks: Vec<Arc<dyn Check>> = Vec::new();
    for family in &suite.families {
        checks.extend((spec(*family).plan)(scenario, suite));
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

#[cfg(test)]
mod spec_tests {
    use super::*;

    /// Each family is registered once, in the order of `Family::ALL` (the order checks are
    /// planned and listed in).
    #[test]
    fn every_family_is_registered_once_in_order() {
        let registered: Vec<Family> = FAMILIES.iter().map(|s| s.family).collect();
        assert_eq!(registered, Family::ALL.to_vec());
    }
}
