//! Scenario pieces for the judges' tables.

use crate::config::Provider;

/// A provider with nothing but an id, an allowlist and defaults, for judges' tables.
pub(crate) fn provider_for_tests(id: &str, allowlist: &[&str]) -> Provider {
    Provider {
        id: id.into(),
        url: format!("http://{id}:8000/mcp").parse().expect("a URL"),
        transport: crate::mcp::Transport::StreamableHttp,
        credential: format!("{id}-token"),
        refusal: Default::default(),
        allowed_consumers: vec![],
        tools: crate::config::ToolsContract {
            allowlist: allowlist.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        },
        read: None,
        disabled: false,
        served_by_app: false,
        app_ports: vec![],
        service: id.into(),
        sidecar_networks: None,
        sidecar_image: None,
        app: None,
        networks: vec![],
        boundary: Default::default(),
    }
}

/// A running container with one address on one network, for judges' tables.
pub(crate) fn target_for_tests() -> crate::engine::Target {
    crate::engine::Target {
        id: "c0ffee".into(),
        name: "native_1".into(),
        service: "native".into(),
        project: "p".into(),
        pid: 1,
        node_pid: 1,
        running: true,
        attachments: vec![crate::engine::Attachment {
            network: "p_net-native".into(),
            network_id: "n".into(),
            ipv4: Some([10, 0, 1, 5].into()),
            ipv6: None,
            aliases: vec![],
        }],
        netns_inode: None,
        netns_of: None,
        published: vec![],
        node: None,
    }
}

/// A POST of `ask` to `url` answered `status`, with a JSON-RPC result or none.
pub(crate) fn exchange_for_tests(ask: crate::mcp::Ask, url: &str, status: u16, result: bool) -> crate::mcp::Exchange {
    crate::mcp::Exchange {
        ask,
        method: "POST".into(),
        url: url.into(),
        status,
        content_type: None,
        content_encoding: None,
        location: None,
        www_authenticate: None,
        session_id: None,
        hops: vec![],
        body: crate::mcp::BodyFacts {
            messages: if result { vec![crate::mcp::RpcFacts { result: true, error_code: None }] } else { vec![] },
            ..Default::default()
        },
    }
}
