//! The engine, netns and DNS layers against a real Docker engine: busybox containers
//! on user networks this test creates (subnets 10.233.231-234.0/24), cleaned up by
//! guards on every path. Fails without Docker (a skip would read as a pass).
//! Needs root for `setns`.

mod support;

use std::collections::BTreeSet;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

use cordon::dns::{ClientResolver, WildcardSet};
use cordon::engine::{Engine, EngineError, Subnet};
use cordon::netns::{NetnsError, interfaces, run_in_netns, run_in_netns_async};
use hickory_resolver::proto::op::{Message, MessageType, ResponseCode};
use hickory_resolver::proto::rr::{Name, RData, Record, RecordType, rdata::A};
use support::docker::{Container, Network, require_docker};
use tokio::sync::oneshot;

const LABEL_PROJECT: &str = "com.docker.compose.project";
const LABEL_SERVICE: &str = "com.docker.compose.service";

fn compose_labels(project: &str, service: &str) -> Vec<String> {
    vec!["--label".into(), format!("{LABEL_PROJECT}={project}"), "--label".into(), format!("{LABEL_SERVICE}={service}")]
}

fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

#[tokio::test]
async fn compose_labels_resolve_targets_networks_and_hardening() {
    require_docker("compose_labels_resolve_targets_networks_and_hardening");
    let net = Network::create(231);
    let project = support::docker::unique("proj");
    let provider_ip = net.addr(10).to_string();

    let mut opts = compose_labels(&project, "provider");
    opts.extend(
        [
            "--network",
            &net.name,
            "--network-alias",
            "provider",
            "--ip",
            &provider_ip,
            "--dns",
            "127.0.0.1",
            "--read-only",
            "--tmpfs",
            "/tmp",
            "--cap-drop",
            "ALL",
            "--security-opt",
            "no-new-privileges:true",
            "--user",
            "65534:65534",
            "--memory",
            "64m",
            "--cpus",
            "0.5",
            "--pids-limit",
            "32",
            "--publish",
            "127.0.0.1::8080",
        ]
        .map(String::from),
    );
    let provider = Container::run("provider", &strs(&opts));
    let mut opts = compose_labels(&project, "client");
    opts.extend(["--network", &net.name, "--network-alias", "client", "--dns", "127.0.0.1"].map(String::from));
    let client = Container::run("client", &strs(&opts));
    let mut opts = compose_labels(&project, "old");
    opts.extend(["--network", &net.name].map(String::from));
    let _stopped = Container::create("old", &strs(&opts));

    let engine = Engine::connect().await.expect("engine");
    eprintln!("negotiated API version {}", engine.api_version());

    let targets = engine.compose_targets(&project).await.expect("compose targets");
    let services: Vec<(&str, bool)> = targets.iter().map(|t| (t.service.as_str(), t.running)).collect();
    assert_eq!(services, vec![("client", true), ("old", false), ("provider", true)]);
    let p = targets.iter().find(|t| t.service == "provider").unwrap();
    assert_eq!(p.id, provider.id);
    assert_eq!(p.name, provider.name);
    assert_eq!(p.project, project);
    assert_eq!(p.pid, provider.pid());
    assert!(p.pid > 1);
    assert_eq!(p.attachments.len(), 1, "{:?}", p.attachments);
    let a = &p.attachments[0];
    assert_eq!(a.network, net.name);
    assert_eq!(a.network_id, net.id);
    assert_eq!(a.ipv4, Some(net.addr(10)));
    assert!(a.aliases.iter().any(|x| x == "provider"), "aliases {:?}", a.aliases);
    eprintln!("provider aliases on 1.41: {:?}", a.aliases);
    let c = targets.iter().find(|t| t.service == "client").unwrap();
    assert_eq!(c.pid, client.pid());
    let old = targets.iter().find(|t| t.service == "old").unwrap();
    assert_eq!((old.pid, old.running), (0, false));

    let facts = engine.network(&net.name).await.expect("network");
    assert_eq!(facts.id, net.id);
    assert_eq!(facts.name, net.name);
    assert_eq!(facts.driver, "bridge");
    assert_eq!(facts.subnets, vec![net.subnet.parse::<Subnet>().unwrap()]);
    assert!(facts.contains(IpAddr::V4(a.ipv4.unwrap())));
    assert_eq!(engine.network(&net.id).await.unwrap().name, net.name, "by id too");

    match engine.service_targets(&project, "old").await {
        Err(EngineError::NotRunning { stopped: 1, .. }) => {}
        other => panic!("expected NotRunning, got {other:?}"),
    }
    match engine.service_targets(&project, "nope").await {
        Err(EngineError::NoService { known, .. }) => assert_eq!(known, vec!["client", "old", "provider"]),
        other => panic!("expected NoService, got {other:?}"),
    }
    assert_eq!(engine.service_targets(&project, "provider").await.unwrap().len(), 1);
    match engine.compose_targets(&format!("{project}-absent")).await {
        // Its exit code (3) is the run's: compose_stack's missing-project test asserts it.
        Err(EngineError::NoProject { .. }) => {}
        other => panic!("expected NoProject, got {other:?}"),
    }
    match engine.network(&format!("{}-absent", net.name)).await {
        Err(EngineError::NotFound { kind: "network", .. }) => {}
        other => panic!("expected NotFound, got {other:?}"),
    }

    let h = engine.hardening(&provider.id).await.expect("hardening");
    assert_eq!(h.user, "65534:65534");
    assert!(h.read_only_rootfs && h.no_new_privileges && !h.privileged, "{h:?}");
    assert_eq!(h.cap_drop, vec!["ALL"]);
    assert!(h.cap_add.is_empty());
    assert_eq!(h.memory_limit, Some(64 * 1024 * 1024));
    assert_eq!(h.cpu.cpus(), Some(0.5));
    assert_eq!(h.pids_limit, Some(32));
    assert_eq!(h.network_mode, net.name);
    assert_eq!(h.pid_mode, "");
    assert!(h.mounts.iter().any(|m| m.kind == "tmpfs" && m.destination == "/tmp"), "{:?}", h.mounts);
    assert_eq!(h.published_ports.len(), 1, "{:?}", h.published_ports);
    assert_eq!(h.published_ports[0].container_port, "8080/tcp");
    assert_eq!(h.published_ports[0].host_ip, "127.0.0.1");
    assert!(!h.published_ports[0].host_port.is_empty());
    let soft = engine.hardening(&client.id).await.unwrap();
    assert!(soft.user.is_empty() && !soft.read_only_rootfs && soft.cap_drop.is_empty() && soft.memory_limit.is_none());
    assert!(soft.published_ports.is_empty() && soft.pids_limit.is_none() && !soft.cpu.is_set());

    let before = client.pid();
    engine.restart(&client.id, Duration::from_secs(1)).await.expect("restart");
    let after = engine.target(&client.id).await.unwrap();
    assert!(after.running);
    assert_ne!(after.pid, before, "a restarted container has a new init process");
}

/// What one probe inside the client's netns saw.
#[derive(Debug)]
struct IsolationProbe {
    resolv_conf: String,
    interfaces: Vec<cordon::netns::Interface>,
    by_alias: Result<Vec<IpAddr>, cordon::dns::DnsError>,
    by_name: Result<Vec<IpAddr>, cordon::dns::DnsError>,
    wildcard: WildcardSet,
    inside_connect_ok: bool,
    host_connection_arrived: bool,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn netns_probe_sees_the_container_network_only() {
    require_docker("netns_probe_sees_the_container_network_only");
    let net = Network::create(232);
    // `--dns 127.0.0.1`: names the embedded DNS does not know are forwarded to the
    // container's own loopback (nothing there), never off this machine.
    let peer_ip = net.addr(10);
    let peer = Container::run(
        "peer",
        &["--network", &net.name, "--network-alias", "peer", "--ip", &peer_ip.to_string(), "--dns", "127.0.0.1"],
    );
    let client_ip = net.addr(20);
    let client =
        Container::run("client", &["--network", &net.name, "--ip", &client_ip.to_string(), "--dns", "127.0.0.1"]);
    let host_view = interfaces().expect("host interfaces");

    // Concurrent probes from one runtime each stay in their own namespace.
    let own_addrs = |pid| {
        run_in_netns_async(pid, |_| async {
            interfaces()
                .unwrap()
                .into_iter()
                .filter(|i| !i.is_loopback() && !i.is_link_local())
                .map(|i| i.addr)
                .collect()
        })
    };
    let (a, b): (Result<Vec<IpAddr>, _>, Result<Vec<IpAddr>, _>) =
        tokio::join!(own_addrs(peer.pid()), own_addrs(client.pid()));
    assert_eq!((a.unwrap(), b.unwrap()), (vec![IpAddr::V4(peer_ip)], vec![IpAddr::V4(client_ip)]));

    let (port_tx, port_rx) = oneshot::channel::<u16>();
    let (tried_tx, tried_rx) = oneshot::channel::<()>();
    let peer_name = peer.name.clone();
    let probe = run_in_netns_async(client.pid(), move |ctx| async move {
        let interfaces = interfaces().expect("netns interfaces");
        let resolver = ClientResolver::from_resolv_conf(&ctx.resolv_conf).expect("resolver");
        let by_alias = resolver.lookup("peer").await;
        let by_name = resolver.lookup(&peer_name).await;
        let wildcard = resolver.learn_wildcard().await;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind in netns");
        let port = listener.local_addr().unwrap().port();
        let inside_connect_ok = tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_ok();
        if inside_connect_ok {
            let _ = tokio::time::timeout(Duration::from_secs(1), listener.accept()).await;
        }
        port_tx.send(port).unwrap();
        let _ = tried_rx.await;
        let host_connection_arrived = tokio::time::timeout(Duration::from_millis(300), listener.accept()).await.is_ok();
        IsolationProbe {
            resolv_conf: ctx.resolv_conf,
            interfaces,
            by_alias,
            by_name,
            wildcard,
            inside_connect_ok,
            host_connection_arrived,
        }
    });
    let port = port_rx.await.expect("probe reported its port");
    let host_connect = tokio::task::spawn_blocking(move || {
        std::net::TcpStream::connect_timeout(&SocketAddr::from(([127, 0, 0, 1], port)), Duration::from_secs(1))
            .map(drop)
    })
    .await
    .unwrap();
    tried_tx.send(()).unwrap();
    let probe = probe.await.expect("netns probe");
    eprintln!("client resolv.conf:\n{}", probe.resolv_conf);
    eprintln!(
        "kernel view in the client netns: {:?}",
        probe.interfaces.iter().map(ToString::to_string).collect::<Vec<_>>()
    );
    eprintln!("unknown names from the client (127.0.0.11 forwarding to a dead upstream): {:?}", probe.wildcard);

    assert!(probe.resolv_conf.contains("nameserver 127.0.0.11"), "{}", probe.resolv_conf);

    // Kernel view: loopback plus exactly the container's own address in the subnet.
    let subnet: Subnet = net.subnet.parse().unwrap();
    assert!(probe.interfaces.iter().any(|i| i.name == "lo" && i.addr == IpAddr::from([127, 0, 0, 1])));
    let routable: Vec<_> = probe.interfaces.iter().filter(|i| !i.is_loopback() && !i.is_link_local()).collect();
    assert_eq!(routable.len(), 1, "{routable:?}");
    assert_eq!(routable[0].addr, IpAddr::V4(client_ip));
    assert_eq!(routable[0].prefix, 24);
    assert!(subnet.contains(routable[0].addr));
    for host in host_view.iter().filter(|i| !i.is_loopback() && !i.is_link_local()) {
        assert!(!probe.interfaces.iter().any(|i| i.addr == host.addr), "host address {host} visible in the netns");
    }
    // And back on the host nothing changed: the thread, not the process, moved.
    assert_eq!(interfaces().unwrap(), interfaces().unwrap());
    assert!(!interfaces().unwrap().iter().any(|i| i.addr == IpAddr::V4(client_ip)));

    // Loopback isolation: reachable inside, not from the host's 127.0.0.1.
    assert!(probe.inside_connect_ok);
    assert!(!probe.host_connection_arrived, "a host connection reached the netns listener");
    eprintln!("host connect to 127.0.0.1:{port}: {host_connect:?}");

    // The embedded DNS answers the peer's alias and container name from inside...
    assert_eq!(probe.by_alias.as_ref().unwrap(), &vec![IpAddr::V4(peer_ip)]);
    assert_eq!(probe.by_name.as_ref().unwrap(), &vec![IpAddr::V4(peer_ip)]);
    assert!(probe.wildcard.addrs.is_empty(), "no wildcard on this network: {:?}", probe.wildcard);
    // ...while the same resolv.conf used from the host's namespace reaches no such
    // server (127.0.0.11 exists only inside container namespaces). The host's own
    // resolver is deliberately not asked: it would send the query off this machine.
    let outside = ClientResolver::from_resolv_conf(&probe.resolv_conf).unwrap().lookup("peer").await;
    eprintln!("same resolv.conf from the host netns: {outside:?}");
    assert!(!outside.unwrap_or_default().contains(&IpAddr::V4(peer_ip)));
}

#[test]
fn netns_errors_are_typed() {
    require_docker("netns_errors_are_typed");
    let stopped = Container::create("stopped", &[]);
    let pid: u32 = support::docker::docker(&["inspect", "--format", "{{.State.Pid}}", &stopped.id]).parse().unwrap();
    assert_eq!(pid, 0);
    assert_eq!(run_in_netns(pid, |_| async {}).unwrap_err(), NetnsError::NoSuchProcess { pid: 0 });
}

const WILDCARD_IP: Ipv4Addr = Ipv4Addr::new(10, 233, 233, 99);

/// A wildcard DNS server for `*.demo.test`: every A question under `demo.test.` gets
/// `answer`, other types there an empty NOERROR, names outside it NXDOMAIN (like a
/// real upstream with a wildcard record in the platform's zone). Bounded: stops on
/// `stop`, after 60 s, or after 500 datagrams. Returns the questions it saw, in order
/// (`name type`).
async fn wildcard_responder(
    answer: Ipv4Addr,
    ready: oneshot::Sender<()>,
    mut stop: oneshot::Receiver<()>,
) -> Vec<String> {
    let socket = tokio::net::UdpSocket::bind("0.0.0.0:53").await.expect("bind :53 in the responder netns");
    ready.send(()).unwrap();
    let deadline = tokio::time::sleep(Duration::from_secs(60));
    tokio::pin!(deadline);
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    let zone = Name::from_ascii("demo.test.").unwrap();
    for _ in 0..500 {
        let (n, from) = tokio::select! {
            _ = &mut stop => break,
            _ = &mut deadline => break,
            got = socket.recv_from(&mut buf) => got.expect("recv"),
        };
        let Ok(query) = Message::from_vec(&buf[..n]) else { continue };
        if query.metadata.message_type != MessageType::Query {
            continue;
        }
        let mut reply = Message::response(query.metadata.id, query.metadata.op_code);
        reply.metadata.recursion_desired = query.metadata.recursion_desired;
        reply.metadata.recursion_available = true;
        reply.metadata.authoritative = true;
        reply.add_queries(query.queries.clone());
        for q in &query.queries {
            seen.push(format!("{} {}", q.name, q.query_type));
            if !zone.zone_of(&q.name) {
                reply.metadata.response_code = ResponseCode::NXDomain;
            } else if q.query_type == RecordType::A {
                reply.add_answer(Record::from_rdata(q.name.clone(), 60, RData::A(A(answer))));
            }
        }
        let _ = socket.send_to(&reply.to_vec().expect("encode"), from).await;
    }
    seen
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wildcard_upstream_is_learned_and_traps_bare_names() {
    require_docker("wildcard_upstream_is_learned_and_traps_bare_names");
    let net = Network::create(233);
    let dnsd_ip = net.addr(53);
    let dnsd = Container::run(
        "dnsd",
        &["--network", &net.name, "--network-alias", "dnsd", "--ip", &dnsd_ip.to_string(), "--dns", "127.0.0.1"],
    );
    let (ready_tx, ready_rx) = oneshot::channel();
    let (stop_tx, stop_rx) = oneshot::channel();
    let responder = run_in_netns_async(dnsd.pid(), move |_| wildcard_responder(WILDCARD_IP, ready_tx, stop_rx));
    ready_rx.await.expect("responder bound :53");

    let client =
        Container::run("client", &["--network", &net.name, "--dns", &dnsd_ip.to_string(), "--dns-search", "demo.test"]);
    let result = run_in_netns_async(client.pid(), |ctx| async move {
        let resolver = ClientResolver::from_resolv_conf(&ctx.resolv_conf).expect("resolver");
        let wildcard = resolver.learn_wildcard().await;
        let provider = resolver.lookup("provider").await;
        let known = resolver.lookup("dnsd").await;
        let outside_zone = resolver.lookup("provider.elsewhere.").await;
        (ctx.resolv_conf, resolver.config().clone(), wildcard, provider, known, outside_zone)
    })
    .await;
    let _ = stop_tx.send(());
    let seen = responder.await.expect("responder");
    let (resolv_conf, conf, wildcard, provider, known, outside_zone) = result.expect("client probe");
    eprintln!("client resolv.conf:\n{resolv_conf}");
    eprintln!("wildcard set: {wildcard:?}");
    eprintln!("questions the upstream saw (forwarded by 127.0.0.11): {seen:?}");

    assert_eq!(conf.search, vec!["demo.test"]);
    assert_eq!(conf.ndots, 0);
    assert!(wildcard.is_complete(), "{wildcard:?}");
    assert_eq!(wildcard.addrs, BTreeSet::from([IpAddr::V4(WILDCARD_IP)]));
    assert_eq!(wildcard.probes.len(), 3, "two bare labels and one per search domain: {wildcard:?}");
    assert!(wildcard.probes.iter().all(|(_, a)| a == &vec![IpAddr::V4(WILDCARD_IP)]));
    assert!(wildcard.probes.iter().any(|(n, _)| n.ends_with(".demo.test.")));
    // The trap: the bare provider name "resolves", through the search list, to the
    // wildcard answer.
    assert_eq!(provider.unwrap(), vec![IpAddr::V4(WILDCARD_IP)]);
    // ndots:0 honoured: the bare name is asked as-is first (NXDOMAIN upstream), then
    // with the search domain appended.
    let first = |q: &str| seen.iter().position(|s| s == q).unwrap_or_else(|| panic!("{q} never asked: {seen:?}"));
    assert!(first("provider. A") < first("provider.demo.test. A"), "{seen:?}");
    // NXDOMAIN is "no addresses", not an error.
    assert_eq!(outside_zone.unwrap(), Vec::<IpAddr>::new());
    // Names the embedded DNS knows are answered locally, never forwarded.
    assert_eq!(known.unwrap(), vec![IpAddr::V4(dnsd_ip)]);
    assert!(!seen.iter().any(|q| q.starts_with("dnsd")), "{seen:?}");
}

/// Compose v2 labels its containers with more than v1 (`container-number`, `oneoff`,
/// `version`, `config-hash`) and names them `<project>-<service>-1`: discovery reads the
/// project and service labels alone, so a v2 deployment is found as a v1 one is.
#[tokio::test]
async fn containers_labelled_as_compose_v2_labels_them_are_found() {
    require_docker("containers_labelled_as_compose_v2_labels_them_are_found");
    let net = Network::create(234);
    let project = support::docker::unique("v2proj");
    let v2 = |service: &str| {
        let mut opts = compose_labels(&project, service);
        for label in [
            "com.docker.compose.container-number=1",
            "com.docker.compose.oneoff=False",
            "com.docker.compose.version=2.29.7",
            "com.docker.compose.config-hash=0123456789abcdef",
            "com.docker.compose.depends_on=",
            "com.docker.compose.image=sha256:0123",
            "com.docker.compose.project.config_files=/srv/compose.yaml",
            "com.docker.compose.project.working_dir=/srv",
        ] {
            opts.extend(["--label".to_string(), label.to_string()]);
        }
        opts.extend(["--network", &net.name, "--network-alias", service].map(String::from));
        opts
    };
    let _provider = Container::run(&format!("{project}-provider-1"), &strs(&v2("provider")));
    let _client = Container::run(&format!("{project}-client-1"), &strs(&v2("client")));
    let engine = Engine::connect().await.expect("engine");
    let targets = engine.compose_targets(&project).await.expect("compose targets");
    let services: Vec<(&str, bool)> = targets.iter().map(|t| (t.service.as_str(), t.running)).collect();
    assert_eq!(services, vec![("client", true), ("provider", true)]);
    assert!(targets.iter().all(|t| t.name.ends_with("-1") && t.attachments.len() == 1), "{targets:?}");
}
