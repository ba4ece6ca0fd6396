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
