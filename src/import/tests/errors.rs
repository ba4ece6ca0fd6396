//! Every metadata error, as a user reads it: file:line:column, the key, and what was
//! expected. An error stops the import: no scenario is written from wrong metadata.

use rstest::rstest;

use super::Tree;

const ADAPTER: &str = "classification: adapter_server";
const SPEC: &str = "{\n  \"read_thing\": {\"description\": \"Read.\", \"method\": \"GET\", \"path\": \"/thing\"}\n}\n";

pub fn adapter_with(t: &Tree, adapter_block: &str) {
    t.edit("web-app-p", "meta/mcp.yml", "classification: native_server", ADAPTER);
    t.edit("web-app-p", "meta/mcp.yml", "implementation: native", "implementation: adapter");
    t.edit("web-app-p", "meta/mcp.yml", "tools:\n", &format!("{adapter_block}tools:\n"));
    t.write("web-app-p", "files/mcp/tools.json", SPEC);
}

/// The pin of [`SPEC`]'s bytes.
pub fn spec_sha() -> String {
    use sha2::Digest;
    format!("sha256:{}", hex::encode(sha2::Sha256::digest(SPEC.as_bytes())))
}

/// The platform's contract hash of [`SPEC`] (`tools.schema_sha256`).
pub fn contract_sha() -> String {
    use sha2::Digest;
    let spec: serde_json::Value = serde_json::from_str(SPEC).unwrap();
    format!("sha256:{}", hex::encode(sha2::Sha256::digest(crate::mcp::canonical_json(&spec).as_bytes())))
}

/// What an enabled adapter pins besides its specification: its image, and every limit.
pub const ADAPTER_PINS: &str = "  image: registry.example.test/adapter\n  version: 1.2.3\n  digest: sha256:8a3c6f0d2b1e4a5f6c7d8e9f0a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6e7f8a9b\n  upstream_api_version: v1\n";
pub const ALL_LIMITS: &str = "limits:\n  request_bytes: 65536\n  response_bytes: 1048576\n  timeout_seconds: 15\n  concurrent_requests: 4\n  page_size: 100\n  result_items: 500\n  stream_seconds: 300\n";

fn unknown_classification(t: &Tree) {
    t.edit("web-app-p", "meta/mcp.yml", "classification: native_server", "classification: native_serverr");
}
fn no_classification(t: &Tree) {
    t.edit("web-app-p", "meta/mcp.yml", "classification: native_server\n", "");
}
fn unknown_transport(t: &Tree) {
    t.edit("web-app-p", "meta/mcp.yml", "transport: streamable_http", "transport: websocket");
}
fn unknown_key(t: &Tree) {
    t.edit("web-app-p", "meta/mcp.yml", "exposure: internal", "exposure: internal\ncolour: red");
}
fn no_adapter_block(t: &Tree) {
    adapter_with(t, "");
}
fn adapter_without_its_pin(t: &Tree) {
    adapter_with(
        t,
        "adapter:\n  type: openapi_allowlist\n  specification_path: roles/web-app-p/files/mcp/tools.json\n",
    );
}
fn adapter_of_unknown_type(t: &Tree) {
    adapter_with(t, "adapter:\n  type: soap_allowlist\n");
}
fn placeholder_digest(t: &Tree) {
    let zeros = format!("sha256:{}", "0".repeat(64));
    adapter_with(
        t,
        &format!(
            "adapter:\n  type: openapi_allowlist\n  specification_path: roles/web-app-p/files/mcp/tools.json\n  specification_sha256: {zeros}\n"
        ),
    );
}
fn malformed_digest(t: &Tree) {
    t.edit("web-app-p", "meta/mcp.yml", "  read_only_default", "  schema_sha256: sha256:abc\n  read_only_default");
}
fn specification_changed(t: &Tree) {
    let other = format!("sha256:{}", "1".repeat(64));
    adapter_with(
        t,
        &format!(
            "adapter:\n  type: openapi_allowlist\n  specification_path: roles/web-app-p/files/mcp/tools.json\n  specification_sha256: {other}\n"
        ),
    );
}
fn contract_hash_differs(t: &Tree) {
    adapter_with(
        t,
        &format!(
            "adapter:\n  type: openapi_allowlist\n  specification_path: roles/web-app-p/files/mcp/tools.json\n  specification_sha256: {}\n",
            spec_sha()
        ),
    );
    t.edit(
        "web-app-p",
        "meta/mcp.yml",
        "  read_only_default",
        &format!("  schema_sha256: sha256:{}\n  read_only_default", "2".repeat(64)),
    );
}
fn tool_outside_the_specification(t: &Tree) {
    adapter_with(
        t,
        &format!(
            "adapter:\n  type: openapi_allowlist\n  specification_path: roles/web-app-p/files/mcp/tools.json\n  specification_sha256: {}\n",
            spec_sha()
        ),
    );
    t.edit("web-app-p", "meta/mcp.yml", "    - read_thing\n", "    - read_thing\n    - delete_thing\n");
}
fn missing_specification(t: &Tree) {
    adapter_with(
        t,
        &format!(
            "adapter:\n  type: openapi_allowlist\n  specification_path: roles/web-app-p/files/mcp/nope.json\n  specification_sha256: {}\n",
            spec_sha()
        ),
    );
}
fn unknown_consumer(t: &Tree) {
    t.edit("web-app-p", "meta/mcp.yml", "  - web-app-c", "  - web-app-c\n  - web-app-nobody");
}
fn consumer_is_a_server(t: &Tree) {
    t.write("web-app-s", "meta/mcp.yml", "classification: native_server\ndirection: server\n");
    t.edit("web-app-p", "meta/mcp.yml", "  - web-app-c", "  - web-app-s");
}
fn inventory_variable(t: &Tree) {
    t.edit("web-app-p", "meta/mcp.yml", "enabled: true", "enabled: \"{{ HCAPTCHA_ENABLED | bool }}\"");
}
fn quoted_word(t: &Tree) {
    t.edit("web-app-p", "meta/mcp.yml", "enabled: true", "enabled: \"yes\"");
}
fn env_lookup_on_the_endpoint(t: &Tree) {
    t.edit("web-app-p", "meta/services.yml", "  enabled: true", "  enabled: \"{{ lookup('env', 'P_ON') }}\"");
}
fn endpoint_service_off(t: &Tree) {
    t.edit("web-app-p", "meta/services.yml", "  enabled: true", "  enabled: \"{{ 'web-app-x' in group_names }}\"");
}
fn no_such_port(t: &Tree) {
    t.edit("web-app-p", "meta/mcp.yml", "port_key: http", "port_key: api");
}
fn no_such_service(t: &Tree) {
    t.edit("web-app-p", "meta/mcp.yml", "service_key: p", "service_key: pmcp");
}
fn client_without_the_transport(t: &Tree) {
    t.edit("web-app-p", "meta/mcp.yml", "transport: streamable_http", "transport: sse");
}
fn client_without_the_scheme(t: &Tree) {
    t.edit("web-app-c", "meta/mcp.yml", "  - bearer_token", "  - app_password");
}
fn dynamic_tools(t: &Tree) {
    t.edit("web-app-p", "meta/mcp.yml", "  allowlist:\n    - read_thing\n", "  upstream_serves: dynamic\n");
}
fn read_outside_the_allowlist(t: &Tree) {
    t.edit("web-app-p", "meta/mcp.yml", "  read_only_default", "  read_probe:\n    tool: other\n  read_only_default");
}
fn mutating_allowed_while_off(t: &Tree) {
    t.edit("web-app-p", "meta/mcp.yml", "  read_only_default", "  mutating: [read_thing]\n  read_only_default");
}
fn shared_principal(t: &Tree) {
    let token = "  owner: mcp-shared\n  source: token_store\n  key: shared\n";
    t.edit("web-app-p", "meta/mcp.yml", "  owner: mcp-web-app-p\n  source: credentials\n  key: mcp_bearer\n", token);
    let q = super::PROVIDER_MCP.replace("  owner: mcp-web-app-p\n  source: credentials\n  key: mcp_bearer\n", token);
    t.write("web-app-q", "meta/mcp.yml", &q.replace("service_key: p", "service_key: q"));
    t.write("web-app-q", "meta/services.yml", &super::PROVIDER_SERVICES.replace("\np:\n", "\nq:\n"));
}
fn limit_cordon_cannot_test(t: &Tree) {
    t.edit("web-app-p", "meta/mcp.yml", "tools:\n", "limits:\n  concurrent_requests: 500\ntools:\n");
}
fn role_name_no_id(t: &Tree) {
    t.write("web@app", "meta/mcp.yml", super::CLIENT_MCP);
}
fn broken_yaml(t: &Tree) {
    t.write("web-app-p", "meta/services.yml", "p:\n  ports: {\n    internal: [\n");
}

#[rstest]
#[case::unknown_classification(
    unknown_classification,
    "roles/web-app-p/meta/mcp.yml:4:17: classification: unknown classification `native_serverr` (expected one of: native_server, native_client"
)]
#[case::no_classification(
    no_classification,
    "roles/web-app-p/meta/mcp.yml: classification: no `classification`: every MCP entry states what the role is"
)]
#[case::unknown_transport(
    unknown_transport,
    "roles/web-app-p/meta/mcp.yml:6:12: transport: unknown transport `websocket` (expected one of: streamable_http, sse)"
)]
#[case::unknown_key(unknown_key, "roles/web-app-p/meta/mcp.yml:8:1: colour: unknown field `colour`")]
#[case::adapter_without_its_block(
    no_adapter_block,
    "roles/web-app-p/meta/mcp.yml:4:17: adapter: no `adapter` block: an enabled adapter names its `type`"
)]
#[case::adapter_without_its_pin(
    adapter_without_its_pin,
    "roles/web-app-p/meta/mcp.yml:22:3: adapter.specification_sha256: no `adapter.specification_sha256`: a `openapi_allowlist` adapter serves from a pinned specification"
)]
#[case::adapter_of_unknown_type(
    adapter_of_unknown_type,
    "roles/web-app-p/meta/mcp.yml:22:9: adapter.type: unknown adapter type `soap_allowlist` (expected one of: openapi_allowlist"
)]
#[case::placeholder_digest(
    placeholder_digest,
    "roles/web-app-p/meta/mcp.yml:24:25: adapter.specification_sha256: a placeholder digest (all zeros), not a pin: expected the sha256 of what is pinned"
)]
#[case::malformed_digest(
    malformed_digest,
    "roles/web-app-p/meta/mcp.yml:24:18: tools.schema_sha256: `sha256:abc` is not a digest: expected `sha256:` and 64 hex digits"
)]
#[case::specification_changed(
    specification_changed,
    "roles/web-app-p/meta/mcp.yml:24:25: adapter.specification_sha256: `roles/web-app-p/files/mcp/tools.json` has sha256 "
)]
#[case::contract_hash_differs(
    contract_hash_differs,
    "roles/web-app-p/meta/mcp.yml:28:18: tools.schema_sha256: the platform's contract hash of `roles/web-app-p/files/mcp/tools.json` (sorted keys, `,`/`:` separators) is "
)]
#[case::tool_outside_the_specification(
    tool_outside_the_specification,
    "roles/web-app-p/meta/mcp.yml:28:7: tools.allowlist[1]: tool `delete_thing` is not in the adapter's specification `roles/web-app-p/files/mcp/tools.json` (it has: read_thing)"
)]
#[case::missing_specification(
    missing_specification,
    "roles/web-app-p/meta/mcp.yml:23:23: adapter.specification_path: cannot read `roles/web-app-p/files/mcp/nope.json`: it cannot be opened"
)]
#[case::unknown_consumer(
    unknown_consumer,
    "roles/web-app-p/meta/mcp.yml:17:5: allowed_consumers[1]: unknown consumer: there is no role `web-app-nobody` under roles; `allowed_consumers` names client roles"
)]
#[case::consumer_is_a_server(
    consumer_is_a_server,
    "roles/web-app-p/meta/mcp.yml:16:5: allowed_consumers[0]: unknown consumer: role `web-app-s` is no MCP client (its direction is `server`)"
)]
#[case::inventory_variable(
    inventory_variable,
    "roles/web-app-p/meta/mcp.yml:2:10: enabled: cannot evaluate `{{ HCAPTCHA_ENABLED | bool }}`: it uses `HCAPTCHA_ENABLED`, which is no role test"
)]
#[case::quoted_word(
    quoted_word,
    "roles/web-app-p/meta/mcp.yml:2:10: enabled: cannot evaluate `yes`: it is neither a boolean nor one `{{ … }}` expression"
)]
#[case::env_lookup_on_the_endpoint(
    env_lookup_on_the_endpoint,
    "roles/web-app-p/meta/services.yml:3:12: p.enabled: cannot evaluate `{{ lookup('env', 'P_ON') }}`: it uses `lookup('env', …)`; only `lookup('config', role, path)` is understood"
)]
#[case::endpoint_service_off(
    endpoint_service_off,
    "roles/web-app-p/meta/services.yml:3:12: p.enabled: endpoint_unreachable: service `p` serves web-app-p's enabled MCP surface, but its `enabled` is false for the deployed roles"
)]
#[case::no_such_port(
    no_such_port,
    "roles/web-app-p/meta/mcp.yml:20:13: endpoint.port_key: endpoint_unreachable: service `p` has no internal port `api` in roles/web-app-p/meta/services.yml (ports.internal: http)"
)]
#[case::no_such_service(
    no_such_service,
    "roles/web-app-p/meta/mcp.yml:18:16: endpoint.service_key: endpoint_unreachable: names service `pmcp`, which roles/web-app-p/meta/services.yml does not declare (services: p)"
)]
#[case::transport_unsupported(
    client_without_the_transport,
    "roles/web-app-p/meta/mcp.yml:16:5: allowed_consumers[0]: transport_unsupported: web-app-p admits web-app-c here and speaks `sse`, but web-app-c lists only [streamable_http] under `supported_transports` (roles/web-app-c/meta/mcp.yml): an authorized connection that cannot be rendered"
)]
#[case::auth_unsupported(
    client_without_the_scheme,
    "roles/web-app-p/meta/mcp.yml:16:5: allowed_consumers[0]: auth_unsupported: web-app-p admits web-app-c here and authenticates with `bearer_token`, but web-app-c lists only [app_password] under `supported_auths`"
)]
#[case::dynamic_tools(
    dynamic_tools,
    "roles/web-app-p/meta/mcp.yml:22:3: tools.allowlist: no `allowlist`, and the upstream serves a dynamic tool list (`upstream_serves: dynamic`): cordon checks a provider's exact tools, so this authorized provider cannot be rendered"
)]
#[case::read_outside_the_allowlist(
    read_outside_the_allowlist,
    "roles/web-app-p/meta/mcp.yml:25:11: tools.read_probe.tool: read tool `other` is not in the allowlist (read_thing)"
)]
#[case::mutating_allowed_while_off(
    mutating_allowed_while_off,
    "roles/web-app-p/meta/mcp.yml:23:5: tools.allowlist: allows the mutating tools read_thing while `mutating_tools_enabled` is not true"
)]
#[case::shared_principal(
    shared_principal,
    "roles/web-app-q/meta/mcp.yml:12:3: credential.owner: principal_shared: authenticates as principal `mcp-shared`, as provider `web-app-p` does (token `shared` of principal mcp-shared (token_store))"
)]
#[case::limit_cordon_cannot_test(
    limit_cordon_cannot_test,
    "roles/web-app-p/meta/mcp.yml:22:24: limits.concurrent_requests: expected a whole number from 1 to 64, got 500"
)]
#[case::role_name_no_id(
    role_name_no_id,
    "roles/web@app/meta/mcp.yml: the role name `web@app` cannot name a provider or client of a scenario"
)]
#[case::wrong_shape(broken_yaml, "roles/web-app-p/meta/services.yml:3:15: p.ports.internal: expected a mapping")]
fn metadata_errors_name_the_file_line_and_key(#[case] setup: fn(&Tree), #[case] expected: &str) {
    let tree = Tree::new();
    setup(&tree);
    let deployed = ["web-app-p", "web-app-c", "web-app-q", "web-app-s", "web@app"];
    let errors = tree.import(&deployed).expect_err("the import must stop");
    assert!(errors.iter().any(|e| e.starts_with(expected)), "expected {expected:?} in:\n{}", errors.join("\n"));
}
