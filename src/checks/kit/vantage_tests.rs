//! Where contract checks stand: every replica is covered, each from the first position
//! that shares a network with it.

use super::*;
use crate::engine::Attachment;

fn target(name: &str, service: &str, networks: &[(&str, &str)]) -> Target {
    Target {
        id: name.into(),
        name: name.into(),
        service: service.into(),
        project: "p".into(),
        pid: 1,
        node_pid: 1,
        running: true,
        attachments: networks
            .iter()
            .map(|(n, ip)| Attachment {
                network: format!("p_{n}"),
                network_id: n.to_string(),
                ipv4: Some(ip.parse().unwrap()),
                ipv6: None,
                aliases: vec![],
            })
            .collect(),
        netns_inode: None,
        netns_of: None,
        published: vec![],
        node: None,
    }
}

fn covered(replicas: Vec<Target>, candidates: &[(Target, String)]) -> Vec<(usize, Vec<String>)> {
    let mut topology = Topology { project: "p".into(), ..Default::default() };
    topology.services.insert("modern".into(), replicas);
    cover(&topology, "modern", candidates)
        .into_iter()
        .map(|(i, rs)| (i, rs.into_iter().map(|r| format!("{} {}", r.container, r.addr)).collect()))
        .collect()
}

#[test]
fn one_client_that_reaches_every_replica_probes_them_all() {
    let replicas = vec![target("m1", "modern", &[("a", "10.0.3.2")]), target("m2", "modern", &[("a", "10.0.3.3")])];
    let webui = (target("webui", "webui", &[("a", "10.0.3.9")]), "client webui".to_string());
    assert_eq!(covered(replicas, &[webui]), [(0, vec!["m1 10.0.3.2".to_string(), "m2 10.0.3.3".to_string()])]);
}

#[test]
fn a_replica_the_first_client_cannot_reach_is_probed_from_the_next_position() {
    let replicas = vec![target("m1", "modern", &[("a", "10.0.3.2")]), target("open", "modern", &[("b", "10.0.7.2")])];
    let webui = (target("webui", "webui", &[("a", "10.0.3.9")]), "client webui".to_string());
    let n8n = (target("n8n", "n8n", &[("a", "10.0.3.8"), ("b", "10.0.7.8")]), "client n8n".to_string());
    assert_eq!(
        covered(replicas.clone(), &[webui.clone(), n8n]),
        [(0, vec!["m1 10.0.3.2".into()]), (1, vec!["open 10.0.7.2".into()])]
    );
    // No client reaches it: the replica probes its own address from its own namespace.
    let own = (replicas[1].clone(), "provider modern".to_string());
    assert_eq!(covered(replicas, &[webui, own]), [(0, vec!["m1 10.0.3.2".into()]), (1, vec!["open 10.0.7.2".into()])]);
}
