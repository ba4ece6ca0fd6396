//! `flowise::*`: Flowise's registry of custom MCP servers holds exactly one authorized
//! entry per admitted Streamable-HTTP provider, its bearer in Flowise's encrypted custom
//! headers and nowhere in plain; the managed chatflow of each provider really runs the
//! provider's read tool through Flowise's own MCP client; non-admin principals do not see
//! the managed servers and Flowise's SSRF guard stays on.
//!
//! Every observation is made through Flowise's HTTP API from inside its container's
//! network namespace (its port on that namespace's loopback): nothing is published. What
//! a check makes (an API key, a probe entry, the chat a run leaves) it undoes on every
//! path.

mod judge;
mod probes;
#[cfg(test)]
mod tests;

use std::sync::Arc;

pub use judge::Desired;

use crate::check::{Check, Skipped, named};
use crate::config::{Family, Scenario};
use crate::mcp::Transport;
use crate::model::CheckName;

/// `flowise::<subject>[::<provider>]`.
fn name(client: &str, subject: &str, provider: Option<&str>) -> CheckName {
    CheckName::of_client(Family::Flowise, client, subject, provider.as_slice(), provider)
}

pub fn plan(scenario: &Scenario) -> Vec<Arc<dyn Check>> {
    let clients: Vec<_> = scenario.clients.iter().filter(|c| c.flowise.is_some()).collect();
    if clients.is_empty() {
        return vec![named(
            CheckName::new(Family::Flowise, "registry"),
            Skipped { reason: "no client of the scenario has a `flowise` block".into() },
        )];
    }
    let mut checks: Vec<Arc<dyn Check>> = Vec::new();
    for c in clients {
        let flowise = c.flowise.as_ref().expect("filtered");
        let desired = Desired::of(scenario, &c.id);
        let site = probes::Site { client: c.id.clone() };
        checks.push(named(
            name(&c.id, "registry", None),
            probes::Registry { site: site.clone(), desired: desired.clone() },
        ));
        for want in &desired.entries {
            let p = scenario.provider(&want.provider).expect("derived from the scenario");
            let check = name(&c.id, "tool_call", Some(&p.id));
            match &p.read {
                Some(read) => checks.push(named(
                    check,
                    probes::ToolCall {
                        site: site.clone(),
                        provider: p.id.clone(),
                        prefix: flowise.prefix.clone(),
                        origin: p.url.origin().ascii_serialization(),
                        read: read.clone(),
                        nonce_argument: flowise.nonce_arguments.get(&p.id).cloned(),
                    },
                )),
                None => checks.push(named(
                    check,
                    Skipped {
                        reason: format!(
                            "provider `{}` declares no `read`: there is no deterministic call to make",
                            p.id
                        ),
                    },
                )),
            }
        }
        debug_assert!(
            desired
                .entries
                .iter()
                .all(|w| scenario.provider(&w.provider).is_some_and(|p| p.transport == Transport::StreamableHttp))
        );
        checks.push(named(name(&c.id, "access", None), probes::Access { site, desired }));
    }
    checks
}
