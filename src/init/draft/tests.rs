use std::net::SocketAddr;

use super::*;
use crate::config::Scenario;
use crate::init::survey::{Reach, Unconfirmed, VantageSeen};
use crate::secret::Redactor;

fn endpoint(service: &str, port: u16, path: &str, transport: Transport, tools: &[&str]) -> EndpointSeen {
    EndpointSeen {
        service: service.into(),
        port,
        path: path.into(),
        transport,
        replicas: 1,
        era: "Stateful".into(),
        auth: Auth::Bearer { refused_status: 401 },
        credential_var: format!("{}_TOKEN", service.to_uppercase()),
        tools: Ok(tools.iter().map(|t| t.to_string()).collect()),
    }
}

fn reach(addr: &str, network: &str) -> Reach {
    Reach { addr: addr.parse::<SocketAddr>().unwrap(), network: network.into() }
}

fn vantage(service: &str, reached: Vec<(usize, Reach)>) -> VantageSeen {
    VantageSeen { service: service.into(), reached, unprobed: None }
}

fn reference_like() -> Survey {
    Survey {
        project: "shop".into(),
        swarm: false,
        networks: [(
            "net-native".to_string(),
            (vec!["10.1.1.0/24".to_string()], vec!["native".into(), "webui".into()]),
        )]
        .into(),
        endpoints: vec![
            endpoint("native", 8000, "/mcp", Transport::StreamableHttp, &["add", "echo"]),
            endpoint("legacy", 8000, "/sse", Transport::Sse, &["echo"]),
        ],
        vantages: vec![
            vantage("dns", vec![]),
            vantage("flowise", vec![(0, reach("10.1.1.2:8000", "net-native"))]),
            vantage(
                "webui",
                vec![(0, reach("10.1.1.2:8000", "net-native")), (1, reach("10.1.2.2:8000", "net-legacy"))],
            ),
        ],
        ..Default::default()
    }
}

/// The draft is a scenario cordon loads (credential values are not needed to list).
fn load(text: &str) -> Scenario {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("draft.yaml");
    std::fs::write(&path, text).unwrap();
    Scenario::load_for_listing(&path, &Redactor::new()).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

#[test]
fn every_observed_pair_is_admitted_and_marked_for_review() {
    let text = draft(&reference_like(), "cordon init --project shop");
    let scenario = load(&text);
    let native = scenario.provider("native").unwrap();
    assert_eq!(native.allowed_consumers, ["flowise", "webui"]);
    assert_eq!(native.tools.allowlist, ["add", "echo"]);
    assert_eq!(native.credential, "native-token");
    let legacy = scenario.provider("legacy").unwrap();
    assert_eq!(legacy.transport, Transport::Sse);
    assert_eq!(legacy.allowed_consumers, ["webui"]);
    for pair in ["flowise -> native", "webui -> native", "webui -> legacy"] {
        let line = format!("# review: {pair}: {REVIEW_PAIR}");
        assert_eq!(text.matches(&line).count(), 1, "{pair}:\n{text}");
    }
    assert_eq!(text.matches(REVIEW_PAIR).count(), 3, "one line per pair:\n{text}");
    let webui = scenario.clients.iter().find(|c| c.id == "webui").unwrap();
    assert_eq!(webui.credentials.get("legacy").map(String::as_str), Some("legacy-token"));
    // A container that reaches nothing is still a client: reach:: proves it stays so.
    let dns = scenario.clients.iter().find(|c| c.id == "dns").unwrap();
    assert!(dns.credentials.is_empty());
    assert!(text.contains("{ env: NATIVE_TOKEN }"), "{text}");
}

#[test]
fn a_service_serving_at_two_ports_is_two_providers_of_one_service() {
    let mut survey = reference_like();
    survey.endpoints = vec![
        endpoint("legacy", 8000, "/sse", Transport::Sse, &["echo"]),
        endpoint("legacy", 9000, "/mcp", Transport::StreamableHttp, &["echo"]),
    ];
    survey.vantages = vec![vantage("n8n", vec![(1, reach("10.1.6.3:9000", "postgres"))])];
    let scenario = load(&draft(&survey, "cordon init --project shop"));
    let second = scenario.provider("legacy-9000").unwrap();
    assert_eq!(second.service, "legacy");
    assert_eq!(second.allowed_consumers, ["n8n"]);
    assert!(scenario.provider("legacy-8000").unwrap().allowed_consumers.is_empty());
}

#[test]
fn what_could_not_be_read_is_said_and_never_guessed() {
    let mut survey = reference_like();
    survey.endpoints[0].auth = Auth::Open;
    survey.endpoints[1].tools = Err("tools/list returned json-rpc error -32601".into());
    survey.vantages[0].unprobed = Some("cannot probe from service dns: gone".into());
    survey.unconfirmed = vec![Unconfirmed {
        service: "gitea-mcp".into(),
        port: 8080,
        path: "/mcp".into(),
        status: 401,
        www_authenticate: Some("Bearer".into()),
        var: "GITEA_MCP_TOKEN".into(),
        why: "no credential to try: set GITEA_MCP_TOKEN".into(),
    }];
    let text = draft(&survey, "cordon init --project shop");
    let scenario = load(&text);
    assert!(
        text.contains("# review: it opened a session with no bearer at all; contract::native::anonymous"),
        "{text}"
    );
    assert!(scenario.provider("legacy").unwrap().tools.allowlist.is_empty());
    assert!(text.contains("# review: tools/list failed (tools/list returned json-rpc error -32601)"), "{text}");
    assert!(text.contains("# review: its namespace could not be entered"), "{text}");
    assert!(
        text.contains(
            "# review: gitea-mcp:8080/mcp refused a handshake without a bearer (401, www-authenticate Bearer)"
        ),
        "{text}"
    );
    assert!(scenario.provider("gitea-mcp").is_none(), "an unconfirmed server is not drafted as one");
}

#[test]
fn the_header_names_the_networks_and_the_command() {
    let text = draft(&reference_like(), "cordon init --project shop");
    assert!(text.starts_with("# Drafted by `cordon init --project shop`"), "{text}");
    assert!(text.contains("#   net-native (10.1.1.0/24): native, webui"), "{text}");
}
