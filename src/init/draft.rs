//! The scenario `cordon init` writes, from a [`Survey`]: every MCP server found becomes a
//! provider whose allowlist is what it serves today, every other container a client, and
//! every pair that opened TCP today an admitted pair marked `# review`. A pure function
//! of the survey, so its shape is tested on tables.

use std::collections::BTreeMap;
use std::fmt::Write;

use super::survey::{Auth, EndpointSeen, Survey};
use crate::import::yaml::{flow_list, scalar};
use crate::mcp::Transport;

/// The line every admitted pair carries: reachability today is not a contract.
pub const REVIEW_PAIR: &str = "observed, not declared";

/// Provider ids: the service's name, or `service-port` where one service serves MCP at
/// more than one port.
pub fn provider_ids(endpoints: &[EndpointSeen]) -> Vec<String> {
    let mut per_service: BTreeMap<&str, usize> = BTreeMap::new();
    for e in endpoints {
        *per_service.entry(&e.service).or_default() += 1;
    }
    endpoints
        .iter()
        .map(
            |e| {
                if per_service[e.service.as_str()] > 1 {
                    format!("{}-{}", e.service, e.port)
                } else {
                    e.service.clone()
                }
            },
        )
        .collect()
}

pub fn draft(survey: &Survey, command: &str) -> String {
    let ids = provider_ids(&survey.endpoints);
    let mut out = String::new();
    header(&mut out, survey, command);
    let _ = writeln!(out, "name: {}", scalar(&survey.project, false));
    let _ = writeln!(out, "project: {}", scalar(&survey.project, false));
    if survey.endpoints.is_empty() {
        out.push_str("# review: no container answered an MCP handshake; the providers below are for you to write\n");
        out.push_str("providers: {}\n");
    } else {
        out.push_str("credentials:\n");
        for (e, id) in survey.endpoints.iter().zip(&ids) {
            let _ = writeln!(out, "  {}-token: {{ env: {} }}", id, e.credential_var);
        }
        out.push_str("providers:\n");
        for (index, (e, id)) in survey.endpoints.iter().zip(&ids).enumerate() {
            provider(&mut out, survey, index, e, id);
        }
    }
    clients(&mut out, survey, &ids);
    unconfirmed(&mut out, survey);
    out
}

fn header(out: &mut String, survey: &Survey, command: &str) {
    let _ = writeln!(out, "# Drafted by `{command}` from what the deployment does today, not from what it");
    out.push_str("# should do: every admitted pair below is one that opened TCP, every allowlist is what the\n");
    out.push_str("# server served. Read each `# review` line and delete what you did not mean before you\n");
    out.push_str("# commit this file: an admitted pair nobody declared is the leak cordon exists to catch.\n");
    let what = if survey.swarm { "stack" } else { "project" };
    let _ = writeln!(out, "# Networks of the {what} (subnets: services):");
    for (network, (subnets, services)) in &survey.networks {
        let _ = writeln!(out, "#   {network} ({}): {}", subnets.join(", "), services.join(", "));
    }
}

fn provider(out: &mut String, survey: &Survey, index: usize, e: &EndpointSeen, id: &str) {
    let _ = writeln!(out, "  {id}:");
    let replicas = if e.replicas == 1 { "1 replica".to_string() } else { format!("{} replicas", e.replicas) };
    let era: String = one_line(&e.era).chars().take(80).collect();
    let _ = writeln!(out, "    # {replicas}, the first asked: {era}");
    let _ = writeln!(out, "    url: {}", scalar(&e.url(), false));
    if e.transport == Transport::Sse {
        out.push_str("    transport: sse\n");
    }
    if id != e.service {
        let _ = writeln!(out, "    service: {}", scalar(&e.service, false));
    }
    let _ = writeln!(out, "    credential: {id}-token");
    match e.auth {
        Auth::Bearer { refused_status } => {
            let _ = writeln!(
                out,
                "    # refused a handshake without a bearer ({refused_status}), opened one with {}",
                e.credential_var
            );
        }
        Auth::Open => {
            let _ = writeln!(
                out,
                "    # review: it opened a session with no bearer at all; contract::{id}::anonymous fails until it refuses one"
            );
        }
    }
    let admitted: Vec<(&str, &super::survey::Reach)> = survey
        .vantages
        .iter()
        .flat_map(|v| v.reached.iter().filter(|(i, _)| *i == index).map(move |(_, r)| (v.service.as_str(), r)))
        .collect();
    let names: Vec<&str> = admitted.iter().map(|(c, _)| *c).collect();
    let _ = writeln!(out, "    allowed_consumers: {}", flow_list(&names));
    for (client, reach) in &admitted {
        let _ = writeln!(
            out,
            "    # review: {client} -> {id}: {REVIEW_PAIR} ({client} opened TCP to {} on {})",
            reach.addr, reach.network
        );
    }
    out.push_str("    tools:\n");
    match &e.tools {
        Ok(tools) => {
            out.push_str("      # review: what tools/list served today; remove what no client may call\n");
            let _ = writeln!(out, "      allowlist: {}", flow_list(tools));
        }
        Err(why) => {
            let _ = writeln!(out, "      # review: tools/list failed ({}); write the allowlist by hand", one_line(why));
            out.push_str("      allowlist: []\n");
        }
    }
    out.push_str(
        "    # review: no deterministic read; name a read-only tool and what it returns (read: { tool, arguments, expect })\n",
    );
}

fn clients(out: &mut String, survey: &Survey, ids: &[String]) {
    if survey.vantages.is_empty() {
        out.push_str("clients: {}\n");
        return;
    }
    out.push_str("clients:\n");
    for v in &survey.vantages {
        let _ = writeln!(out, "  {}:", v.service);
        let held: Vec<String> =
            v.reached.iter().map(|(i, _)| format!("{}: {}-token", ids[*i], ids[*i])).collect::<Vec<_>>();
        if held.is_empty() {
            out.push_str("    credentials: {}\n");
        } else {
            let _ = writeln!(out, "    credentials: {{ {} }}", held.join(", "));
        }
        match (&v.unprobed, v.reached.is_empty()) {
            (Some(why), _) => {
                let _ = writeln!(
                    out,
                    "    # review: its namespace could not be entered ({}); nothing was probed from it",
                    one_line(why)
                );
            }
            (None, true) => out.push_str("    # reaches no MCP server today; reach:: checks it stays so\n"),
            (None, false) => {}
        }
    }
}

fn unconfirmed(out: &mut String, survey: &Survey) {
    if survey.unconfirmed.is_empty() && survey.unprobed.is_empty() {
        return;
    }
    out.push_str("# Not in this draft:\n");
    for u in &survey.unconfirmed {
        let challenge =
            u.www_authenticate.as_deref().map(|w| format!(", www-authenticate {}", one_line(w))).unwrap_or_default();
        let _ = writeln!(
            out,
            "# review: {}:{}{} refused a handshake without a bearer ({}{challenge}): {}",
            u.service,
            u.port,
            u.path,
            if u.status == 200 { "a JSON-RPC error".to_string() } else { u.status.to_string() },
            one_line(&u.why)
        );
    }
    for why in &survey.unprobed {
        let _ = writeln!(out, "# review: {}", one_line(why));
    }
}

fn one_line(text: &str) -> String {
    crate::text::sanitize(&text.replace('\n', " "))
}

#[cfg(test)]
mod tests;
