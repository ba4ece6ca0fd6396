//! Swarm semantics of the judges, on tables of observations: virtual IPs as provider
//! addresses, reach judged by who answers, docker_gwbridge allowed once, ingress refused.

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};

use super::kit::door::{self, Answer, Door, Knock, Surface, Via};
use super::kit::name::{self, NameSeen, Role};
use super::route::{self, RouteObservation};
use super::sidecar::judge_interfaces;
use crate::dns::{AnswerSource, NameAnswer, WildcardSet};
use crate::engine::swarm::{EndpointMode, StackFacts, SwarmService};
use crate::engine::{Attachment, NetworkEndpoint, NetworkFacts, Target};
use crate::model::{Attempt, FindingKind};
use crate::netns::listener::Listener;
use crate::topology::{SwarmView, Topology};

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

fn network(name: &str, id: &str, subnet: &str, endpoints: Vec<NetworkEndpoint>) -> NetworkFacts {
    NetworkFacts {
        name: name.into(),
        id: id.into(),
        driver: "overlay".into(),
        scope: "swarm".into(),
        internal: false,
        subnets: vec![subnet.parse().unwrap()],
        gateways: vec![],
        endpoints,
    }
}

fn task(name: &str, attachments: &[(&str, &str)]) -> Target {
    Target {
        id: format!("id-{name}"),
        name: name.into(),
        service: name.split('.').next().unwrap().trim_start_matches("s_").into(),
        project: "s".into(),
        pid: 1,
        node_pid: 1,
        running: true,
        attachments: attachments
            .iter()
            .map(|(n, a)| Attachment {
                network: n.to_string(),
                network_id: n.to_string(),
                ipv4: a.parse().ok(),
                ipv6: None,
                aliases: vec![],
            })
            .collect(),
        netns_inode: None,
        netns_of: None,
        published: vec![],
        node: Some("node-1".into()),
    }
}

/// Stack `s`: service `native` (vip mode, VIP 10.9.1.2 on s_net-native), a gwbridge on node-1.
fn topology() -> Topology {
    let mut t = Topology { project: "s".into(), ..Default::default() };
    t.networks.insert("s_net-native".into(), network("s_net-native", "n1", "10.9.1.0/24", vec![]));
    t.networks.insert("ingress".into(), network("ingress", "ing", "10.9.255.0/24", vec![]));
    let gw = network(
        "docker_gwbridge",
        "gw",
        "10.9.200.0/24",
        vec![NetworkEndpoint {
            container_id: "id-s_gitea-mcp.1".into(),
            name: "gateway_x".into(),
            ipv4: "10.9.200.5".parse().ok(),
            ipv6: None,
        }],
    );
    let service = SwarmService {
        id: "svc".into(),
        full_name: "s_native".into(),
        name: "native".into(),
        endpoint_mode: EndpointMode::Vip,
        vips: vec![("n1".into(), ip("10.9.1.2"))],
        ports: vec![],
        replicas: Some(1),
        updating: false,
    };
    let facts = StackFacts {
        stack: "s".into(),
        local_node: "node-1".into(),
        services: vec![service],
        tasks: vec![],
        old_tasks: vec![],
        pending: BTreeMap::new(),
        nodes: BTreeMap::new(),
    };
    t.swarm = Some(SwarmView { facts, gwbridges: BTreeMap::from([("node-1".to_string(), gw)]) });
    t
}

fn seen(answers: &[&str]) -> NameSeen {
    NameSeen {
        unknown: false,
        host: "native".into(),
        wildcard: WildcardSet { addrs: [ip("10.9.0.99")].into(), ..Default::default() },
        answer: NameAnswer { source: AnswerSource::Dns, addrs: answers.iter().map(|a| ip(a)).collect() },
    }
}

#[test]
fn a_vip_on_a_shared_overlay_is_the_providers_address() {
    let t = topology();
    let providers = [task("s_native.1", &[("s_net-native", "10.9.1.5")])];
    let client = task("s_webui.1", &[("s_net-native", "10.9.1.9")]);
    let s = seen(&["10.9.1.2"]);
    let roles = name::roles(&s, &providers, Some(&client), &t);
    assert!(
        matches!(&roles[0].1, Role::Provider { container, network } if container.contains("VIP") && network == "net-native"),
        "{roles:?}"
    );
    assert!(name::judge(&s, &roles, "client webui").is_ok());
    // dnsrr: the task addresses; a VIP of another service is foreign.
    let s = seen(&["10.9.1.5"]);
    assert!(name::judge(&s, &name::roles(&s, &providers, Some(&client), &t), "c").is_ok());
    let other = [task("s_legacy.1", &[("s_net-native", "10.9.1.7")])];
    let s = seen(&["10.9.1.2"]);
    let f = name::judge(&s, &name::roles(&s, &other, Some(&client), &t), "c").unwrap_err();
    assert_eq!(f[0].kind, FindingKind::ForeignAddress);
}

#[test]
fn a_vip_route_waits_until_a_replica_listens_then_must_open() {
    let providers = [task("s_native.1", &[("s_net-native", "10.9.1.5")])];
    let client = task("s_webui.1", &[("s_net-native", "10.9.1.9")]);
    let o = RouteObservation {
        name: seen(&["10.9.1.2"]),
        port: 8000,
        connects: vec![(
            "10.9.1.2:8000".parse().unwrap(),
            Err(crate::checks::kit::connect::ConnectError::NoAnswer { within_ms: 1000 }),
        )],
    };
    let roles = name::roles(&o.name, &providers, Some(&client), &topology());
    let none: BTreeMap<String, Vec<Listener>> = BTreeMap::from([("s_native.1".to_string(), vec![])]);
    assert!(matches!(route::judge(&o, &roles, &none, "c"), Attempt::NotReady { .. }));
    let listening = BTreeMap::from([("s_native.1".to_string(), vec![Listener::at("0.0.0.0:8000".parse().unwrap())])]);
    let Attempt::Fail { findings, .. } = route::judge(&o, &roles, &listening, "c") else {
        panic!("a VIP that never opens fails")
    };
    assert_eq!(findings[0].kind, FindingKind::ProviderNotAccepting);
}

fn answer(status: &str, body: &str) -> Answer {
    door::answer_of(format!("HTTP/1.1 {status}\r\ncontent-type: application/json\r\ndate: x\r\n\r\n{body}").as_bytes())
}

fn knock(addr: &str, container: &str, via: Via, answer: Option<Answer>) -> Knock {
    Knock {
        door: Door { addr: addr.parse().unwrap(), container: container.into(), network: "postgres".into(), via },
        first: Ok(()),
        repeats: vec![Ok(()), Ok(())],
        answer,
    }
}

#[test]
fn in_swarm_a_door_counts_only_when_the_container_behind_it_answers() {
    let own = answer("401 Unauthorized", r#"{"error":"unauthorized"}"#);
    let refs = BTreeMap::from([(("legacy.1".to_string(), 8000), own.clone())]);
    let surface =
        |k: &Knock| Surface { doors: vec![k.door.clone()], references: Some(refs.clone()), ..Default::default() };
    // The provider's own answer: lateral reach.
    let k = knock("10.9.6.4:8000", "legacy.1", Via::Direct, Some(own.clone()));
    let Attempt::Fail { findings, .. } =
        door::judge(&surface(&k), &[k], "c", "`legacy`", door::Crossing::Lateral).attempt
    else {
        panic!()
    };
    assert_eq!(findings[0].kind, FindingKind::LateralReach);
    // The upstream answered (the packet left the overlay): no reach, said in the evidence.
    let k = knock("10.9.6.4:8000", "legacy.1", Via::Direct, Some(answer("404 Not Found", "<html>")));
    match door::judge(&surface(&k), &[k], "c", "`legacy`", door::Crossing::Lateral).attempt {
        Attempt::Pass { evidence } => {
            assert!(evidence.iter().any(|e| e.contains("something else answered")), "{evidence:?}")
        }
        other => panic!("{other:?}"),
    }
    // Nothing to compare with: cannot tell, not a pass.
    let k = knock("10.9.6.4:8000", "legacy.1", Via::Direct, None);
    assert!(matches!(
        door::judge(&surface(&k), &[k], "c", "`legacy`", door::Crossing::Lateral).attempt,
        Attempt::NotReady { .. }
    ));
    // A published port is judged by the container port behind it; a VIP by any replica.
    let k =
        knock("10.9.200.1:18232", "legacy.1", Via::Published { container_port: "8000/tcp".into() }, Some(own.clone()));
    let Attempt::Fail { findings, .. } =
        door::judge(&surface(&k), &[k], "c", "`legacy`", door::Crossing::Lateral).attempt
    else {
        panic!()
    };
    assert_eq!(findings[0].kind, FindingKind::PublishedPortReach);
    let k = knock("10.9.6.2:8000", "legacy", Via::Vip, Some(own));
    let Attempt::Fail { findings, .. } =
        door::judge(&surface(&k), &[k], "c", "`legacy`", door::Crossing::Lateral).attempt
    else {
        panic!()
    };
    assert!(findings[0].sentence().contains("virtual IP"), "{}", findings[0].sentence());
}

#[test]
fn answers_ignore_what_changes_per_request() {
    let a = door::answer_of(b"HTTP/1.1 401 Unauthorized\r\nDate: Mon\r\nContent-Length: 2\r\nMcp-Session-Id: 1\r\nWWW-Authenticate: Bearer\r\n\r\n{}");
    let b = door::answer_of(b"HTTP/1.1 401 Unauthorized\r\nDate: Tue\r\nContent-Length: 2\r\nMcp-Session-Id: 2\r\nWWW-Authenticate: Bearer\r\n\r\n{}");
    assert_eq!(a, b);
    assert_eq!(a.headers, vec!["www-authenticate"]);
    assert_eq!(door::answer_of(b"").status, None);
    assert_ne!(a, door::answer_of(b"HTTP/1.1 404 Not Found\r\n\r\n{}"));
}

#[test]
fn every_vip_is_a_door_on_every_port_of_the_service() {
    let doors = vec![
        Door {
            addr: "10.9.1.5:8000".parse().unwrap(),
            container: "n.1".into(),
            network: "net".into(),
            via: Via::Direct,
        },
        Door {
            addr: "10.9.1.5:9090".parse().unwrap(),
            container: "n.1".into(),
            network: "net".into(),
            via: Via::Direct,
        },
    ];
    let vips = door::vip_doors(&[(ip("10.9.1.2"), "net".into())], "native", &doors);
    let addrs: Vec<SocketAddr> = vips.iter().map(|d| d.addr).collect();
    assert_eq!(addrs, ["10.9.1.2:8000".parse().unwrap(), "10.9.1.2:9090".parse().unwrap()]);
    assert!(vips.iter().all(|d| d.via == Via::Vip));
}

fn kernel(lines: &[&str]) -> Vec<String> {
    lines.iter().map(|l| l.to_string()).collect()
}

#[test]
fn docker_gwbridge_is_allowed_once_in_swarm_and_ingress_never() {
    let mut t = topology();
    t.networks.insert("s_net-gitea".into(), network("s_net-gitea", "n5", "10.9.5.0/24", vec![]));
    let sidecar = task("s_gitea-mcp.1", &[("s_net-gitea", "10.9.5.2")]);
    let declared = ["net-gitea".to_string()];
    let (f, e) = judge_interfaces(
        &t,
        &sidecar,
        &declared,
        &kernel(&["eth0 10.9.5.2/24", "eth1 10.9.200.5/24", "lo 127.0.0.1/8"]),
        true,
    );
    assert!(f.is_empty(), "{f:?}");
    assert!(e.iter().any(|l| l.contains("eth1 10.9.200.5 is on docker_gwbridge")), "{e:?}");
    assert!(e.iter().any(|l| l.contains("lists this task's endpoint at 10.9.200.5")), "{e:?}");
    // Compose has no such exception.
    let (f, _) = judge_interfaces(&t, &sidecar, &declared, &kernel(&["eth0 10.9.5.2/24", "eth1 10.9.200.5/24"]), false);
    assert!(f.iter().any(|x| x.kind == FindingKind::AddressOutsideDeclared), "{f:?}");
    // Twice is not swarm's plumbing.
    let (f, _) = judge_interfaces(
        &t,
        &sidecar,
        &declared,
        &kernel(&["eth0 10.9.5.2/24", "eth1 10.9.200.5/24", "eth2 10.9.200.6/24"]),
        true,
    );
    assert!(f.iter().any(|x| x.sentence().contains("2 interfaces on docker_gwbridge")), "{f:?}");
    // A port published through the routing mesh puts the task on ingress.
    let mut meshed = sidecar.clone();
    meshed.attachments.push(Attachment {
        network: "ingress".into(),
        network_id: "ing".into(),
        ipv4: "10.9.255.4".parse().ok(),
        ipv6: None,
        aliases: vec![],
    });
    let (f, _) = judge_interfaces(
        &t,
        &meshed,
        &declared,
        &kernel(&["eth0 10.9.5.2/24", "eth1 10.9.200.5/24", "eth2 10.9.255.4/24"]),
        true,
    );
    let text: Vec<String> = f.iter().map(|x| x.sentence()).collect();
    assert!(text.iter().any(|m| m.contains("routing mesh")), "{text:?}");
    assert!(text.iter().any(|m| m.contains("undeclared network `ingress`")), "{text:?}");
}
