//! Every rejection code, with the line a user reads (in the summary and in the
//! scenario's comment block), and proof that the rest of the import still happens.

use rstest::rstest;

use super::{BOTH, Tree};
use crate::import::emit;
use crate::import::model::Code;

fn no_change(_: &Tree) {}

fn second_client(t: &Tree) {
    t.write("web-app-d", "meta/mcp.yml", super::CLIENT_MCP);
}

fn basic_auth(t: &Tree) {
    t.edit("web-app-p", "meta/mcp.yml", "auth: bearer_token", "auth: basic_auth");
}

fn administrator(t: &Tree) {
    t.edit("web-app-p", "meta/mcp.yml", "owner: mcp-web-app-p", "owner: administrator");
}

fn vault_source(t: &Tree) {
    t.edit("web-app-p", "meta/mcp.yml", "source: credentials", "source: vault");
}

fn key_in_path(t: &Tree) {
    t.edit(
        "web-app-p",
        "meta/mcp.yml",
        "  port_key: http\n",
        "  port_key: http\n  key_credential: mcp_endpoint_key\n  suffix: sse\n",
    );
}

fn dark_without_port(t: &Tree) {
    t.edit("web-app-p", "meta/mcp.yml", "enabled: true", "enabled: false");
    t.edit("web-app-p", "meta/mcp.yml", "implementation: native", "implementation: adapter");
    t.edit("web-app-p", "meta/mcp.yml", "port_key: http", "port_key: api");
}

fn audit_only(t: &Tree) {
    t.edit(
        "web-app-p",
        "meta/mcp.yml",
        "classification: native_server",
        "classification: adapter_candidate\nreason: licence\nnotes: No licence allows serving it.",
    );
}

fn blocked(t: &Tree) {
    t.edit(
        "web-app-p",
        "meta/mcp.yml",
        "classification: native_server",
        "classification: blocked\nreason: hosted_only\nnotes: Only the vendor's hosted service speaks MCP.",
    );
}

fn no_enabled_key(t: &Tree) {
    t.edit("web-app-p", "meta/mcp.yml", "enabled: true\n", "");
}

fn not_shared(t: &Tree) {
    t.edit("web-app-p", "meta/mcp.yml", "shared: true", "shared: false");
}

fn reviewed_no_surface(t: &Tree) {
    t.write(
        "web-app-p",
        "meta/mcp.yml",
        "classification: no_surface\nreason: host_execution_boundary\nnotes: This desktop role has no isolated remote application identity or endpoint.\n",
    );
}

fn client_off(t: &Tree) {
    t.edit("web-app-c", "meta/mcp.yml", "enabled: true", "enabled: false");
}

fn no_mcp_file(t: &Tree) {
    t.write("web-svc-x", "meta/services.yml", "x: {}\n");
}

#[rstest]
#[case::consumer_not_allowed(second_client, &["web-app-p", "web-app-c", "web-app-d"], Code::ConsumerNotAllowed,
    "web-app-d -> web-app-p: consumer_not_allowed: web-app-p admits [web-app-c], not web-app-d")]
#[case::auth_cordon_cannot_present(
    basic_auth,
    BOTH,
    Code::AuthUnsupported,
    "web-app-p (provider): auth_unsupported: authenticates with `basic_auth`; cordon presents only `Authorization: Bearer`"
)]
#[case::administrator_token(
    administrator,
    &["web-app-p"],
    Code::CredentialMissing,
    "web-app-p (provider): credential_missing: names the owner `administrator`: a provider never borrows the administrator's token"
)]
#[case::unknown_credential_source(
    vault_source,
    &["web-app-p"],
    Code::CredentialMissing,
    "web-app-p (provider): credential_missing: reads its secret from `vault`, which is no credential source"
)]
#[case::credential_in_the_url(
    key_in_path,
    BOTH,
    Code::EndpointUnreachable,
    "web-app-p (provider): endpoint_unreachable: the platform puts credential `mcp_endpoint_key` into the URL path (…/mcp/<mcp_endpoint_key>/sse)"
)]
#[case::dark_surface_without_a_port(
    dark_without_port,
    BOTH,
    Code::EndpointUnreachable,
    "web-app-p (provider): endpoint_unreachable: service `p` has no internal port `api`"
)]
#[case::audit_only(
    audit_only,
    BOTH,
    Code::AuditOnly,
    "web-app-p: audit_only: classification `adapter_candidate` is an audit entry, never an endpoint (reason `licence`)"
)]
#[case::blocked(
    blocked,
    BOTH,
    Code::Blocked,
    "web-app-p: blocked: classification `blocked` is an audit entry, never an endpoint (reason `hosted_only`)"
)]
#[case::not_deployed(no_change, &["web-app-c"], Code::NotDeployed,
    "web-app-p: not_deployed: not among the deployed roles (--deployed or --inventory)")]
#[case::no_enabled_key(
    no_enabled_key,
    BOTH,
    Code::NotEnabled,
    "web-app-p: not_enabled: its MCP entry sets no `enabled`: cordon imports an explicit `enabled: true` only"
)]
#[case::client_switched_off(
    client_off,
    BOTH,
    Code::NotEnabled,
    "web-app-c (client): not_enabled: `enabled` is false: the client is switched off"
)]
#[case::not_shared(
    not_shared,
    BOTH,
    Code::NotShared,
    "web-app-p: not_shared: enabled but is not `shared`: other roles may not discover it"
)]
#[case::reviewed_no_surface(
    reviewed_no_surface,
    BOTH,
    Code::NoSurface,
    "web-app-p: no_surface: classification `no_surface` is an audit entry, never an endpoint (reason `host_execution_boundary`)"
)]
#[case::no_metadata(no_mcp_file, &["web-app-p", "web-app-c", "web-svc-x"], Code::NoMetadata,
    "web-svc-x: no_metadata: no MCP entry (meta/mcp.yml, or `mcp:` in meta/services.yml): the role declares no MCP surface")]
fn every_rejection_is_listed_with_its_code(
    #[case] setup: fn(&Tree),
    #[case] deployed: &[&str],
    #[case] code: Code,
    #[case] line: &str,
) {
    let tree = Tree::new();
    setup(&tree);
    let import = tree.import(deployed).unwrap_or_else(|e| panic!("{}", e.join("\n")));
    let lines: Vec<String> = import.rejections.iter().map(|r| r.to_string()).collect();
    let found = import.rejections.iter().find(|r| r.code == code).unwrap_or_else(|| panic!("no {code} in {lines:#?}"));
    assert!(found.to_string().starts_with(line), "expected {line:?}, got {:?}", found.to_string());
    let scenario = emit::scenario(&import);
    assert!(scenario.contains(&format!("#   {}", found)), "the scenario's comment block lists it:\n{scenario}");
    assert!(
        !import.providers.contains_key(&found.role)
            || matches!(found.subject, crate::import::model::Subject::PairWith(_)),
        "a rejected provider is not imported"
    );
}

#[test]
fn every_code_has_a_case() {
    // A code is either listed (the table above) or aborts the import (errors.rs).
    let cases = [include_str!("rejections.rs"), include_str!("errors.rs")].concat();
    for code in Code::ALL {
        assert!(cases.contains(&format!(": {code}: ")), "no case shows {code}");
    }
    let words: Vec<&str> = Code::ALL.iter().map(|c| c.as_str()).collect();
    let mut sorted = words.clone();
    sorted.dedup();
    assert_eq!(sorted.len(), words.len(), "codes are distinct");
}

#[test]
fn the_summary_states_the_same_lines() {
    let tree = Tree::new();
    second_client(&tree);
    let import = tree.import(&["web-app-p", "web-app-c", "web-app-d"]).unwrap();
    // The pair is left out, the pair that is admitted is wired: nothing else changes.
    assert_eq!(import.providers["web-app-p"].allowed_consumers, ["web-app-c"]);
    assert!(import.clients["web-app-d"].credentials.is_empty());
    assert_eq!(import.clients["web-app-c"].credentials["web-app-p"], "web-app-p-mcp-bearer");
}
