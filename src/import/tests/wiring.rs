//! What an import makes of correct metadata: dark surfaces, sidecars and their app,
//! adapters' specifications, conditions read through `lookup('config', …)`, Open WebUI's
//! groups, pinned schema hashes, and the same bytes every time.

use std::collections::BTreeMap;

use super::errors::{ADAPTER_PINS, ALL_LIMITS, adapter_with, contract_sha, spec_sha};
use super::{BOTH, Tree};
use crate::exit::Ending;
use crate::import::args::{Pins, generate};
use crate::import::decide::Request;
use crate::import::emit;

fn adapter(t: &Tree) {
    let block = format!(
        "adapter:\n  type: openapi_allowlist\n{ADAPTER_PINS}  specification_path: roles/web-app-p/files/mcp/tools.json\n  specification_sha256: {}\n  upstream_network: net-app\n",
        spec_sha()
    );
    adapter_with(t, &block);
    t.edit("web-app-p", "meta/mcp.yml", "service_key: p", "service_key: pmcp");
    t.write(
        "web-app-p",
        "meta/services.yml",
        "p:\n  ports:\n    internal: { http: 3000, ssh: 22 }\npmcp:\n  enabled: \"{{ lookup('config', 'web-app-p', 'mcp.enabled') | bool }}\"\n  ports:\n    internal: { http: 8080 }\n",
    );
    t.write("web-app-p", "meta/networks.yml", "local:\n  subnet: 192.168.9.0/24\n");
    t.edit("web-app-p", "meta/mcp.yml", "tools:\n", &format!("{ALL_LIMITS}tools:\n"));
    let schema = format!("  schema_sha256: {}\n  read_only_default", contract_sha());
    t.edit("web-app-p", "meta/mcp.yml", "  read_only_default", &schema);
    t.edit(
        "web-app-p",
        "meta/mcp.yml",
        "  read_only_default",
        "  writer_allowlist: [read_thing, write_thing]\n  upstream_serves: [read_thing, write_thing, admin_thing]\n  read_only_default",
    );
}

#[test]
fn an_adapter_is_a_sidecar_in_front_of_its_app_with_its_contract() {
    let tree = Tree::new();
    adapter(&tree);
    let import = tree.import(BOTH).unwrap_or_else(|e| panic!("{}", e.join("\n")));
    let p = &import.providers["web-app-p"];
    assert_eq!(p.url, "http://pmcp:8080/mcp");
    assert_eq!(p.service, "pmcp");
    assert_eq!(p.sidecar_networks.as_deref(), Some(&["p".to_string(), "net-app".to_string()][..]));
    let app = p.app.as_ref().unwrap();
    assert_eq!((app.service.as_str(), app.ports.as_slice()), ("p", &[22, 3000][..]));
    assert_eq!(p.mutating, ["write_thing"], "the writer's extra names are the mutating ones");
    assert_eq!(p.boundary.denied_tools, ["admin_thing"], "the upstream's other tools are denied");
    assert!(p.boundary.strict_arguments, "the platform's adapter refuses undeclared arguments");
    assert_eq!(
        crate::import::model::limit_entries(&p.boundary.limits),
        [
            ("request_bytes", 65536),
            ("response_bytes", 1048576),
            ("timeout_seconds", 15),
            ("concurrent_requests", 4),
            ("page_size", 100),
            ("result_items", 500),
            ("stream_seconds", 300)
        ]
    );
    let spec = p.boundary.specification.as_ref().unwrap();
    assert_eq!(spec, std::path::Path::new("roles/web-app-p/files/mcp/tools.json"), "relative to the scenario");
    assert_eq!(import.networks["p"].as_deref(), Some("192.168.9.0/24"));
    let text = emit::scenario(&import);
    for line in [
        "    denied_tools: [admin_thing]",
        "    strict_arguments: true",
        "    limits:\n      request_bytes: 65536\n      response_bytes: 1048576\n",
        "    specification: roles/web-app-p/files/mcp/tools.json",
        "      networks: [p, net-app]",
        "      # subnets: p 192.168.9.0/24",
    ] {
        assert!(text.contains(line), "missing {line:?} in:\n{text}");
    }
}

#[test]
fn a_switched_off_adapter_is_checked_dark_where_it_lived() {
    let tree = Tree::new();
    adapter(&tree);
    tree.edit("web-app-p", "meta/mcp.yml", "enabled: true", "enabled: false");
    let import = tree.import(BOTH).unwrap_or_else(|e| panic!("{}", e.join("\n")));
    let p = &import.providers["web-app-p"];
    assert!(p.disabled);
    assert_eq!(p.networks, ["p"]);
    assert_eq!(p.allowed_consumers, ["web-app-c"], "its former consumers are probe positions");
    assert!(p.allowlist.is_empty() && p.read.is_none() && p.sidecar_networks.is_none());
    assert!(import.clients["web-app-c"].credentials.is_empty(), "nobody holds a disabled provider's credential");
    assert_eq!(import.credentials["web-app-p-mcp-bearer"].env, "WEB_APP_P_MCP_BEARER");
}

#[test]
fn a_native_endpoint_that_stops_with_the_surface_is_checked_dark() {
    let tree = Tree::new();
    tree.edit("web-app-p", "meta/mcp.yml", "enabled: true", "enabled: false");
    tree.edit(
        "web-app-p",
        "meta/services.yml",
        "  enabled: true",
        "  enabled: \"{{ lookup('config', 'web-app-p', 'mcp.enabled') }}\"",
    );
    let import = tree.import(BOTH).unwrap_or_else(|e| panic!("{}", e.join("\n")));
    assert!(import.providers["web-app-p"].disabled);
}

#[test]
fn a_token_store_credential_is_the_owners_token() {
    let tree = Tree::new();
    tree.edit(
        "web-app-p",
        "meta/mcp.yml",
        "source: credentials\n  key: mcp_bearer",
        "source: token_store\n  key: web-app-p",
    );
    let import = tree.import(BOTH).unwrap();
    let c = &import.credentials["mcp-web-app-p-web-app-p"];
    assert_eq!(c.env, "MCP_WEB_APP_P_WEB_APP_P");
    assert_eq!(c.origin, "token `web-app-p` of principal mcp-web-app-p (token_store)");
}

#[test]
fn open_webui_is_granted_per_provider_group() {
    let tree = Tree::new();
    tree.write("web-app-openwebui", "meta/mcp.yml", super::CLIENT_MCP);
    tree.edit("web-app-p", "meta/mcp.yml", "  - web-app-c", "  - web-app-c\n  - web-app-openwebui");
    let deployed = ["web-app-p", "web-app-c", "web-app-openwebui"];
    let without = tree.import(&deployed).unwrap();
    assert!(without.clients["web-app-openwebui"].openwebui.is_none());
    assert!(without.notes[0].contains("give --openwebui-admin EMAIL"), "{:?}", without.notes);
    let request = Request { openwebui_admin: Some("admin@example.test".into()), ..tree.request(&deployed) };
    let with = tree.import_with(request).unwrap();
    let client = &with.clients["web-app-openwebui"];
    assert_eq!(client.service, "openwebui");
    let block = client.openwebui.as_ref().unwrap();
    assert_eq!(block.groups["web-app-p"], "roles/web-app-p/mcp");
    assert_eq!(with.credentials["openwebui-admin-password"].env, "OPENWEBUI_ADMIN_PASSWORD");
    let text = emit::scenario(&with);
    assert!(text.contains("    openwebui:\n      admin: { email: admin@example.test, password: openwebui-admin-password }\n      groups:\n        web-app-p: roles/web-app-p/mcp\n"), "{text}");
}

#[test]
fn a_pinned_served_hash_is_written_and_a_wrong_pin_refused() {
    let tree = Tree::new();
    let hash = "ab".repeat(32);
    let pins = Pins { schema: BTreeMap::from([("web-app-p".to_string(), hash.clone())]), ..Pins::default() };
    let (_, text) = generate(&tree.request(BOTH), &pins).unwrap();
    assert!(text.contains(&format!("      schema_sha256: {hash}\n")), "{text}");
    let wrong = Pins { schema: BTreeMap::from([("web-app-nope".to_string(), hash)]), ..Pins::default() };
    assert_eq!(generate(&tree.request(BOTH), &wrong).err(), Some(Ending::Usage));
}

#[test]
fn the_same_metadata_gives_the_same_bytes() {
    let tree = Tree::new();
    adapter(&tree);
    tree.write("web-app-d", "meta/mcp.yml", super::CLIENT_MCP);
    let deployed = ["web-app-d", "web-app-p", "web-app-c"];
    let first = emit::scenario(&tree.import(&deployed).unwrap());
    let again = emit::scenario(&tree.import(&["web-app-c", "web-app-p", "web-app-d"]).unwrap());
    assert_eq!(first, again);
    assert!(first.ends_with('\n'));
}

#[test]
fn a_role_that_serves_and_consumes_never_consumes_itself() {
    let tree = Tree::new();
    tree.edit(
        "web-app-p",
        "meta/mcp.yml",
        "direction: server",
        "direction: both\nsupported_transports: [streamable_http]\nsupported_auths: [bearer_token]",
    );
    tree.edit("web-app-p", "meta/mcp.yml", "classification: native_server", "classification: native_both");
    tree.edit("web-app-p", "meta/mcp.yml", "  - web-app-c", "  - web-app-c\n  - web-app-p");
    let import = tree.import(BOTH).unwrap_or_else(|e| panic!("{}", e.join("\n")));
    assert_eq!(import.providers["web-app-p"].allowed_consumers, ["web-app-c"]);
    assert!(import.clients["web-app-p"].credentials.is_empty());
}

#[test]
fn the_mcp_entry_may_live_in_services_yml() {
    let tree = Tree::new();
    let before = emit::scenario(&tree.import(BOTH).unwrap());
    let indented: String = super::PROVIDER_MCP.lines().skip(1).map(|l| format!("  {l}\n")).collect();
    std::fs::remove_file(tree.roles().join("web-app-p/meta/mcp.yml")).unwrap();
    tree.write("web-app-p", "meta/services.yml", &format!("{}mcp:\n  bond: 1\n{indented}", super::PROVIDER_SERVICES));
    let after = emit::scenario(&tree.import(BOTH).unwrap_or_else(|e| panic!("{}", e.join("\n"))));
    assert_eq!(before, after);
    tree.write("web-app-p", "meta/mcp.yml", super::PROVIDER_MCP);
    let twice = tree.import(BOTH).unwrap_err().join("\n");
    assert!(twice.contains("meta/services.yml:9:3: mcp: the MCP entry is declared twice"), "{twice}");
}

/// A native surface switched off in an app that keeps running is a disabled surface whose
/// path must go dark (GET and POST there), never a `not_enabled` line.
#[test]
fn a_switched_off_native_endpoint_is_checked_dark_at_its_path() {
    let tree = Tree::new();
    tree.edit("web-app-p", "meta/mcp.yml", "enabled: true", "enabled: false");
    let import = tree.import(BOTH).unwrap_or_else(|e| panic!("{}", e.join("\n")));
    let p = &import.providers["web-app-p"];
    assert!(p.disabled && p.served_by_app, "{p:?}");
    assert!(import.rejections.iter().all(|r| r.role != "web-app-p"), "{:?}", import.rejections);
    let text = emit::scenario(&import);
    assert!(text.contains("    disabled: true\n") && text.contains("    served_by_app: true\n"), "{text}");
}

#[test]
fn the_adapter_image_pin_reaches_the_scenario_and_loads() {
    let tree = Tree::new();
    adapter(&tree);
    let digest = "sha256:8a3c6f0d2b1e4a5f6c7d8e9f0a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6e7f8a9b";
    let (_, text) = generate(&tree.request(BOTH), &Pins::default()).unwrap();
    let pinned = format!("      image: registry.example.test/adapter:1.2.3\n      digest: {digest}\n");
    assert!(text.contains(&pinned), "{text}");

    let built = Pins {
        image_digest_env: BTreeMap::from([("web-app-p".to_string(), "P_ADAPTER_DIGEST".to_string())]),
        ..Pins::default()
    };
    let (_, text) = generate(&tree.request(BOTH), &built).unwrap();
    assert!(text.contains("      digest: { env: P_ADAPTER_DIGEST }\n"), "{text}");
    assert!(text.contains(&format!("# the metadata pins {digest}; this deploy builds the image")), "{text}");

    let nobody =
        Pins { image_digest_env: BTreeMap::from([("web-app-q".to_string(), "Q".to_string())]), ..Pins::default() };
    assert_eq!(generate(&tree.request(BOTH), &nobody).err(), Some(Ending::Usage));
}
