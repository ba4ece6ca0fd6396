//! Check families. Each module plans its checks from the scenario and judges answers.
pub mod contract;
pub mod disabled;
pub mod position;
pub mod reach;
pub mod refusal;
pub mod route;
pub mod session;
pub mod sidecar;

use std::future::Future;
use std::sync::Arc;

use position::{Resolution, contract_position, pinned, with_resolution};

use crate::config::{Family, Mode, Provider, Scenario, Suite};
use crate::mcp::{Endpoint, McpError};
use crate::model::{Attempt, CheckName};
use crate::runner::{Check, RunContext, Skipped, named};

/// Every check the suite's families ask for, in a stable order.
pub fn plan(scenario: &Scenario, suite: &Suite) -> Vec<Arc<dyn Check>> {
    let mut checks: Vec<Arc<dyn Check>> = Vec::new();
    for family in &suite.families {
        match family {
            Family::Contract => checks.extend(contract::plan(scenario)),
            Family::Route => checks.extend(route::plan(scenario)),
            Family::Reach => checks.extend(reach::plan(scenario)),
            Family::Session => checks.extend(session::plan(scenario)),
            Family::Disabled => checks.extend(disabled::plan(scenario)),
            Family::Sidecar => checks.extend(sidecar::plan(scenario)),
            Family::Openwebui => unreachable!("suite validation admits no openwebui family yet"),
        }
    }
    if suite.mode == Mode::Host {
        for provider in scenario.providers.iter().filter(|p| p.disabled) {
            checks.push(named(
                CheckName::new(Family::Disabled, provider.id.clone()),
                Skipped {
                    reason: "host mode cannot see a disabled surface from a client's network namespace; run the compose or swarm suite".into(),
                },
            ));
        }
    }
    checks
}

/// Where probes go in host mode: the scenario's URL as written.
pub fn host_endpoint(provider: &Provider) -> Endpoint {
    Endpoint { url: provider.url.clone(), transport: provider.transport, pin: None }
}

/// An error on the way to a verdict: "not ready" errors are retried, the rest are final.
pub fn attempt_from_error(context: &str, error: &McpError, evidence: Vec<String>) -> Attempt {
    let reason = format!("{context}: {error}");
    if error.is_not_ready() { Attempt::not_ready(reason, evidence) } else { Attempt::fail(reason, evidence) }
}

/// Runs `job` against the provider's endpoint from where contract checks stand: in host
/// mode the URL as written; in compose mode inside an admitted client's namespace, pinned
/// to an address that client's resolver gives and that belongs to a provider container.
pub async fn with_provider_endpoint<F, Fut>(ctx: &RunContext, provider: &Provider, job: F) -> Attempt
where
    F: FnOnce(Endpoint, Vec<String>) -> Fut + Send + 'static,
    Fut: Future<Output = Attempt> + Send + 'static,
{
    let Some(topology) = ctx.topology.clone() else {
        return job(host_endpoint(provider), vec![]).await;
    };
    let Some((position, client)) = contract_position(&topology, &ctx.scenario, provider) else {
        return Attempt::not_ready(
            format!("no running container of an admitted client or of provider `{}` to probe from", provider.id),
            vec![],
        );
    };
    let label = position.label();
    let host = provider.url.host_str().unwrap_or_default().to_string();
    let endpoint_of = provider.clone();
    with_resolution(position, provider.clone(), topology, client, move |resolution, mut evidence| async move {
        evidence.insert(0, format!("probed from {label}"));
        match resolution {
            Resolution::Owned { owned, .. } => job(pinned(&endpoint_of, owned[0].0), evidence).await,
            other => {
                Attempt::fail(format!("cannot reach `{host}` from {label}: {}", route::describe(&other)), evidence)
            }
        }
    })
    .await
}
