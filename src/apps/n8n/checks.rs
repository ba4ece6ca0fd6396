//! `n8n::*`: every managed workflow of n8n reaches its provider through an MCP Client
//! Tool node that authenticates from n8n's credential store and includes an explicit
//! list of allowed tools, and really runs the provider's read tool when its webhook is
//! called (n8n's own execution record says so); n8n's own MCP Server Trigger, when the
//! scenario says n8n is a provider, requires Bearer authentication, exposes exactly the
//! allowlist and is active only when enabled — the contract family then checks its
//! endpoint like any other provider's.
//!
//! Every observation is made through n8n's public API (a least-scope API key) and its
//! production webhooks, from inside its container's network namespace; the execution
//! records a run leaves are deleted on every path.

mod judge;
mod probes;
#[cfg(test)]
mod tests;

use std::sync::Arc;

pub use judge::{ManagedSet, WantedClient};

use crate::check::Spec;
use crate::check::{Check, Skipped, named};
use crate::config::Suite;
use crate::config::{Family, Scenario};
use crate::model::CheckName;

/// `n8n::<subject>[::<provider>]`.
fn name(client: &str, subject: &str, provider: Option<&str>) -> CheckName {
    CheckName::of_client(Family::N8n, client, subject, provider.as_slice(), provider)
}

pub fn plan(scenario: &Scenario) -> Vec<Arc<dyn Check>> {
    let clients: Vec<_> = scenario.clients.iter().filter(|c| c.n8n.is_some()).collect();
    if clients.is_empty() {
        return vec![named(
            CheckName::new(Family::N8n, "client"),
            Skipped { reason: "no client of the scenario has an `n8n` block".into() },
        )];
    }
    let mut checks: Vec<Arc<dyn Check>> = Vec::new();
    for c in clients {
        let n8n = c.n8n.as_ref().expect("filtered");
        let site = probes::Site { client: c.id.clone() };
        let admitted = scenario.providers.iter().filter(|p| {
            !p.disabled && p.allowed_consumers.contains(&c.id) && n8n.server.as_deref() != Some(p.id.as_str())
        });
        for p in admitted {
            checks.push(named(
                name(&c.id, "client", Some(&p.id)),
                probes::Client {
                    site: site.clone(),
                    want: WantedClient::of(p, &n8n.prefix),
                    nonce_argument: n8n.nonce_arguments.get(&p.id).cloned(),
                },
            ));
        }
        checks.push(named(
            name(&c.id, "workflows", None),
            probes::Workflows {
                site: site.clone(),
                set: ManagedSet::of(scenario, &c.id, &n8n.prefix, n8n.server.as_deref()),
            },
        ));
        let server = name(&c.id, "server", None);
        match n8n.server.as_ref().and_then(|s| scenario.provider(s)) {
            Some(p) => checks.push(named(server, probes::Server { site, provider: p.clone() })),
            None => checks.push(named(
                server,
                Skipped { reason: format!("clients.{}.n8n names no `server`: n8n serves no MCP endpoint here", c.id) },
            )),
        }
    }
    checks
}

/// The family, registered once (`checks::FAMILIES`).
pub const SPEC: Spec = Spec { family: Family::N8n, plan: planned, explain };

fn planned(scenario: &Scenario, _: &Suite) -> Vec<Arc<dyn Check>> {
    plan(scenario)
}

/// What a check of this family proves, and where it looks from (`cordon explain`); `None`
/// for one it does not plan.
fn explain(name: &CheckName) -> Option<(&'static str, &'static str)> {
    let subject = name.subject.as_str();
    Some(match name.aspect.first().map(String::as_str) {
        _ if subject == "client" => (
            "every MCP Client Tool node of the provider's managed workflow points at the provider, authenticates with a Bearer or Header credential and includes an explicit, non-empty list of allowed tools; the workflow's webhook run executes the read tool (n8n's own execution record) and the agent gets the result",
            "n8n's public API (least-scope key) and production webhook, from inside n8n's container's namespace",
        ),
        _ if subject == "workflows" => (
            "every workflow under the managed prefix is for a provider that admits this n8n: none kept for a disabled provider (disabling revokes the credential) or one that does not admit it (consumer_not_allowed), none under the prefix for no provider of the scenario, and no managed MCP Client Tool node reaching a disabled or non-admitting provider; a person's workflows are left alone",
            "n8n's public API (least-scope key), from inside n8n's container's namespace",
        ),
        _ if subject == "server" => (
            "exactly one MCP Server Trigger (typeVersion 2 or later) serves the provider's path, with Bearer or Header authentication from a credential, active exactly when the provider is enabled, exposing exactly the allowlist; the contract family checks its endpoint like any provider's",
            "n8n's public API and its own endpoint, from inside n8n's container's namespace",
        ),
        _ => return None,
    })
}
