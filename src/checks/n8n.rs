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

use crate::check::{Check, Skipped, named};
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
