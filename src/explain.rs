//! `cordon explain <check>`: what a check proves, from where, and what the last run saw
//! (read back from `report.json`; nothing is probed).

use std::path::Path;

use serde_json::Value;

use crate::exit::Ending;
use crate::model::{CheckName, Family};

/// (what it proves, where it looks from) for a check, by its family, aspect and subject.
pub fn describe(name: &CheckName) -> Option<(&'static str, &'static str)> {
    let subject = name.subject.as_str();
    let aspect = name.aspect.first().map(String::as_str);
    Some(match (name.family, aspect) {
        (Family::Route, _) => (
            "the provider's name resolves, as the client's libc resolves it (hosts file, then DNS with its search list), only to addresses of provider containers on networks the client shares — never to the wildcard answer or another container — and every such address accepts TCP on the endpoint port",
            "the client container's own network namespace",
        ),
        (Family::Reach, _) if name.is_app() => (
            "no client reaches the app behind the provider's adapter sidecar directly: no TCP connect to any address of any app container, on any port it listens on or declares, or through a port published on the host",
            "the client container's own network namespace",
        ),
        (Family::Reach, _) => (
            "a client the provider does not admit opens no TCP connection to any address of any replica, on any port a replica listens on or declares, nor through any port published on the host; a success is repeated before it counts, and a port is judged only once the provider listens on it",
            "the client container's own network namespace",
        ),
        (Family::Session, _) => (
            "with the credential the client holds, at the address the client's libc gives first and at every other replica: the handshake succeeds, the tools list is read and the deterministic read answers as contracted",
            "the client container's own network namespace",
        ),
        (Family::Contract, Some("tools")) => (
            "every replica serves exactly the allowlisted tools (a subset fails too), in every era it speaks (2026-07-28 and the initialize handshake), no mutating tool unless enabled, and the pinned schema hash if one is set",
            "the first admitted client that shares a network with the provider, else the provider's own container (host mode: cordon's namespace)",
        ),
        (Family::Contract, Some("read")) => (
            "the deterministic read tool answers isError: false with the expected content, at every replica",
            "the first admitted client that shares a network with the provider, else the provider's own container",
        ),
        (Family::Contract, Some("anonymous" | "wrong_bearer" | "foreign_bearer")) => (
            "the bearer is refused (401/403, or a JSON-RPC error where the scenario says so) at every entry point of every replica — initialize, server/discover, tools/list and tools/call with and without the 2026-07-28 headers, the SSE GET, the valid session's own id, any id a refusal hands out, a legacy session's message URL — and no answer discloses a tool name; it cannot be judged when the valid bearer gets no session either",
            "the first admitted client that shares a network with the provider, else the provider's own container",
        ),
        (Family::Contract, Some("call_allowlist")) => (
            "tools/call of every name the provider must not run (mutating with mutation off, denied_tools, the upstream specification's other tools, any name a listing served outside the allowlist) is refused at every replica, in every era, with every credential its clients hold, and shows no sign of having run: not isError: false, not an error that carries output, not a 5xx where that name is refused, and the read answers the same before and after; an error in the server's own words (unlike the refusal of a name that cannot exist) proves nothing either way, whatever its words, so unless the read shows a run the check is not judged (skipped, with why)",
            "the first admitted client that shares a network with the provider, else the provider's own container",
        ),
        (Family::Contract, Some("arguments")) => (
            "(strict_arguments) the read tool with an argument its schema does not describe, a tool with a required argument missing, a tool that declares no inputs given one, and every other allowlisted tool given one beside arguments its schema describes, are each refused where the same call without it is served",
            "the first admitted client that shares a network with the provider, else the provider's own container",
        ),
        (Family::Contract, Some("limits")) => (
            "(limits) each limit pushed past its bound holds: a request one byte over request_bytes is refused and the provider still serves; no tools/list page holds more than page_size tools; the large call (limit_probes.large) stays within result_items and response_bytes; the slow call (limit_probes.slow) is cut within timeout_seconds; concurrent_requests + 1 parallel calls are each served or refused, none dropped, and not all let in at once; a limit nothing could push past is not judged (skipped, naming it), never passed",
            "the first admitted client that shares a network with the provider, else the provider's own container",
        ),
        (Family::Credentials, _) => (
            "a credential a rotation retired (retired), or one a removed consumer held (revoked), is refused wherever a wrong bearer is, is not the live credential under another name, and no client (for revoked: not the removed client) carries it in its environment",
            "the contract position for the refusals; the engine's view of each client container's environment",
        ),
        (Family::Secrets, _) => (
            "no credential of the scenario, in any form the redactor knows (8+ character runs as written, percent-encoded, JSON-escaped, base64, hex), appears in the log of any container of the deployment (its last 20000 lines, fewer past 16 MiB), in a provider URL of the scenario, or in a URL in a container's environment",
            "the engine: docker logs and container inspect",
        ),
        (Family::Sidecar, Some("egress")) => (
            "from each sidecar replica, no TCP connect succeeds to any other container of the deployment on any port it listens on, nor to a port published on the host; only its app (which must answer) and its DNS servers may",
            "each sidecar replica's own namespace",
        ),
        (Family::Disabled, _) => (
            "the switched-off surface is dark: its name resolves to nothing outside the wildcard set, nothing accepts TCP or answers HTTP at its addresses, and no listener on its networks (or its former consumers') accepts its credential",
            "every client's namespace, and a container on each network the provider declared or its former consumers sit on",
        ),
        (Family::Sidecar, Some("interfaces")) => (
            "every replica of the adapter sidecar sits on its declared networks only (docker_gwbridge allowed once in swarm), and the kernel's and the engine's views agree",
            "each sidecar replica's own namespace and the engine",
        ),
        (Family::Sidecar, Some("hardening")) => (
            "every replica runs non-root, read-only, with all capabilities dropped, no-new-privileges, not privileged, no host namespaces, no engine socket, with memory/CPU/PID limits and no published ports",
            "the engine's inspect of each replica, and its process's uid from /proc",
        ),
        (Family::Flowise, _) if subject == "registry" => (
            "Flowise's custom MCP servers hold exactly one AUTHORIZED entry `<prefix><provider>` per admitted Streamable-HTTP provider, its bearer in Flowise's encrypted custom headers, discovering exactly the allowlist; none for an SSE-only, disabled or non-admitted provider; no credential in any entry's plain fields or any flow's flowData; entries without the prefix are listed and left alone",
            "Flowise's API as its admin, from inside Flowise's container's namespace",
        ),
        (Family::Flowise, _) if subject == "tool_call" => (
            "the managed chatflow `<prefix><provider>`, run through Flowise's prediction API, calls the provider's read tool through Flowise's own MCP client (Flowise's usedTools record), the result meets the read's expectation and reaches the model",
            "Flowise's API from inside Flowise's container's namespace",
        ),
        (Family::Flowise, _) if subject == "access" => (
            "Flowise's SSRF guard (HTTP_SECURITY_CHECK) refuses loopback, link-local and RFC 1918 MCP server URLs, and no API key but the declared admin keys can see the managed MCP servers (a flow author's key made by cordon shows which routes offer them)",
            "Flowise's API as its admin and as an ephemeral API key, from inside Flowise's container's namespace",
        ),
        (Family::N8n, _) if subject == "client" => (
            "every MCP Client Tool node of the provider's managed workflow points at the provider, authenticates with a Bearer or Header credential and includes an explicit, non-empty list of allowed tools; the workflow's webhook run executes the read tool (n8n's own execution record) and the agent gets the result",
            "n8n's public API (least-scope key) and production webhook, from inside n8n's container's namespace",
        ),
        (Family::N8n, _) if subject == "workflows" => (
            "every workflow under the managed prefix is for a provider that admits this n8n: none kept for a disabled provider (disabling revokes the credential) or one that does not admit it (consumer_not_allowed), none under the prefix for no provider of the scenario, and no managed MCP Client Tool node reaching a disabled or non-admitting provider; a person's workflows are left alone",
            "n8n's public API (least-scope key), from inside n8n's container's namespace",
        ),
        (Family::N8n, _) if subject == "server" => (
            "exactly one MCP Server Trigger (typeVersion 2 or later) serves the provider's path, with Bearer or Header authentication from a credential, active exactly when the provider is enabled, exposing exactly the allowlist; the contract family checks its endpoint like any provider's",
            "n8n's public API and its own endpoint, from inside n8n's container's namespace",
        ),
        (Family::Openwebui, _) => (
            "Open WebUI's tool-server connections, grants, per-user access and tool calls match the scenario, also after a restart of only its container",
            "Open WebUI's API from inside its own container's namespace",
        ),
        // A contract or sidecar aspect, or a client application check, cordon does not plan.
        _ => return None,
    })
}

/// Prints the explanation and the last evidence for `check` from `results/report.json`.
pub fn run(check: &str, results: &Path) -> Ending {
    let Some((what, from)) = CheckName::parse(check).as_ref().and_then(describe) else {
        eprintln!("error: `{check}` is not a check name cordon knows (family::subject[::aspect]; see --list)");
        return Ending::Usage;
    };
    println!("{check}\n  proves: {what}\n  from:   {from}");
    let path = results.join("report.json");
    let report: Option<Value> =
        crate::fsutil::read_regular_text(&path, 64 << 20).ok().and_then(|t| serde_json::from_str(&t).ok());
    let Some(report) = report else {
        println!("  last run: no report at {} (run a suite first)", path.display());
        return Ending::Passed;
    };
    let found = report["report"]["results"].as_array().and_then(|rs| rs.iter().find(|r| r["name"] == check));
    match found {
        None => println!("  last run: {} has no result for this check", path.display()),
        Some(r) => {
            let text = |v: &Value| crate::text::sanitize(v.as_str().unwrap_or(""));
            println!("  last run: {} — {}", text(&r["verdict"]), text(&r["reason"]));
            for line in r["evidence"].as_array().into_iter().flatten() {
                println!("    {}", text(line));
            }
            for line in r["transient"].as_array().into_iter().flatten() {
                println!("    transient: {}", text(line));
            }
        }
    }
    Ending::Passed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_family_is_explained() {
        for name in [
            "route::webui->native",
            "reach::n8n-/->legacy",
            "reach::webui-/->app:gitea",
            "session::webui->native",
            "contract::native::tools",
            "contract::native::read",
            "contract::native::foreign_bearer",
            "disabled::wiki",
            "sidecar::gitea::interfaces",
            "sidecar::gitea::hardening",
            "openwebui::connections",
            "contract::native::call_allowlist",
            "contract::gitea::arguments",
            "contract::gitea::limits",
            "credentials::native::retired",
            "credentials::native::revoked",
            "secrets::logs",
            "sidecar::gitea::egress",
            "flowise::registry",
            "flowise::tool_call::native",
            "flowise::access",
            "n8n::client::legacy",
            "n8n::server",
        ] {
            assert!(describe(&CheckName::parse(name).unwrap()).is_some(), "{name}");
        }
        assert!(CheckName::parse("nope::x").is_none());
        let app = CheckName::parse("reach::webui-/->app:gitea").unwrap();
        assert!(describe(&app).unwrap().0.contains("app behind"));
    }
}
