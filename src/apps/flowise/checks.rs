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

use crate::check::Spec;
use crate::check::{Check, Skipped, named};
use crate::config::Suite;
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

/// The family, registered once (`checks::FAMILIES`).
pub const SPEC: Spec = Spec { family: Family::Flowise, plan: planned, explain };

fn planned(scenario: &Scenario, _: &Suite) -> Vec<Arc<dyn Check>> {
    plan(scenario)
}

/// What a check of this family proves, and where it looks from (`cordon explain`); `None`
/// for one it does not plan.
fn explain(name: &CheckName) -> Option<(&'static str, &'static str)> {
    let subject = name.subject.as_str();
    Some(match name.aspect.first().map(String::as_str) {
        _ if subject == "registry" => (
            "Flowise's custom MCP servers hold exactly one AUTHORIZED entry `<prefix><provider>` per admitted Streamable-HTTP provider, its bearer in Flowise's encrypted custom headers, discovering exactly the allowlist; none for an SSE-only, disabled or non-admitted provider; no credential in any entry's plain fields or any flow's flowData; entries without the prefix are listed and left alone",
            "Flowise's API as its admin, from inside Flowise's container's namespace",
        ),
        _ if subject == "tool_call" => (
            "the managed flow `<prefix><provider>` (a chatflow or an Agentflow), run through Flowise's prediction API, calls the provider's read tool through Flowise's own MCP client and an entry at the provider's own origin (Flowise's record of the call: a chatflow's usedTools, an Agentflow's executed Tool or Agent node); the result meets the read's expectation, with this call's nonce where the read echoes one, and reaches the model",
            "Flowise's API from inside Flowise's container's namespace",
        ),
        _ if subject == "access" => (
            "Flowise's SSRF guard (HTTP_SECURITY_CHECK) refuses loopback, link-local and RFC 1918 MCP server URLs, and no API key but the declared admin keys can see the managed MCP servers (a flow author's key made by cordon shows which routes offer them)",
            "Flowise's API as its admin and as an ephemeral API key, from inside Flowise's container's namespace",
        ),
        _ => return None,
    })
}
