//! `disabled::<provider>`: a surface the platform switched off is dark, and its
//! credential is dead.
//!
//! From every client's namespace: the name resolves to nothing outside the wildcard set,
//! and no address of it — resolved, or of a leftover container — accepts TCP or gives
//! any HTTP answer (a 401 means something still listens). From a position on every
//! network the provider declared and every network its former consumers sit on: every
//! MCP listener there (any container, any listening port) refuses the disabled
//! provider's credential — a leftover under another service name that still accepts it
//! fails.

use std::collections::{BTreeMap, BTreeSet};
use std::net::{IpAddr, SocketAddr};
use std::rc::Rc;
use std::sync::Arc;

use futures_util::future::{BoxFuture, join_all};
use serde::{Deserialize, Serialize};

use super::kit::connect::{ConnectError, Connected, full_accept_queue, tcp_connect};
use super::kit::door::{Answer, AskWho, Door, who_answers};
use super::kit::name::{self, NameSeen};
use super::kit::presented::{How, honoured};
pub use super::kit::presented::{Presented, credential_at};
use super::kit::sessions::{ErrorSeen, Try};
use super::kit::vantage::pinned;
use crate::check::Spec;
use crate::check::{Check, Probe, RunContext, named};
use crate::config::Suite;
use crate::config::{Family, Provider, Scenario};
use crate::deployment::Deployment;
use crate::engine::Target;
use crate::mcp::{Ask, EntryPoint, Exchange, Limits, McpClient};
use crate::model::{Attempt, CheckName, Finding, FindingKind};
use crate::secret::Secret;

mod owners;

pub use owners::{Owner, Owners};

pub fn plan(scenario: &Scenario) -> Vec<Arc<dyn Check>> {
    scenario
        .providers
        .iter()
        .filter(|p| p.disabled)
        .map(|p| named(CheckName::of_provider(Family::Disabled, &p.id, None), DisabledCheck { provider: p.id.clone() }))
        .collect()
}

struct DisabledCheck {
    provider: String,
}

/// What one position saw.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Look {
    pub position: String,
    /// How a client resolves the name (network positions do not judge names).
    pub name: Option<NameSeen>,
    /// TCP to every resolved or leftover address on the endpoint port.
    pub knocks: Vec<(SocketAddr, Connected)>,
    /// A GET (event stream) and a POST (`tools/list`) with no bearer, wherever TCP opened.
    pub answers: Vec<(SocketAddr, Try)>,
    /// Swarm: who answered one fixed request wherever TCP opened (see [`Owners`]).
    #[serde(default)]
    pub who: Vec<(SocketAddr, Answer)>,
    /// The disabled credential presented at every listener on this position's networks.
    pub credential: Vec<Presented>,
}

/// One place to look from, and what to try there.
struct Position {
    target: Target,
    label: String,
    resolve: bool,
    doors: Vec<Door>,
}

impl Probe for DisabledCheck {
    fn run<'a>(&'a self, ctx: &'a RunContext) -> BoxFuture<'a, Attempt> {
        Box::pin(async move {
            let (deployment, provider) = ctx.deployment(&self.provider);
            let provider = provider.clone();
            let topology = deployment.topology();
            let tasks = topology.running(&provider.service).to_vec();
            let mut leftovers: Vec<(IpAddr, String)> =
                tasks.iter().flat_map(|t| t.addresses().into_iter().map(move |a| (a, t.name.clone()))).collect();
            let mut evidence = vec![match tasks.is_empty() {
                true => format!("no running container of service `{}`", provider.service),
                false => format!(
                    "running container(s) of service `{}`: {}",
                    provider.service,
                    leftovers.iter().map(|(a, n)| format!("{n} at {a}")).collect::<Vec<_>>().join(", ")
                ),
            }];
            // A swarm service scaled to 0 keeps its virtual IPs. With tasks behind them,
            // nothing may answer there; with none, nothing of the service can, and whatever
            // answers a connect is elsewhere (upstream of docker_gwbridge): not knocked.
            let vips = topology.vips_of(&provider.service);
            for (addr, network) in vips {
                if tasks.is_empty() {
                    evidence.push(format!(
                        "the VIP of `{}` at {addr} on {network} is kept by a service with no running task: nothing of it can answer there",
                        provider.service
                    ));
                } else {
                    leftovers.push((addr, format!("the VIP of `{}` on {network}", provider.service)));
                }
            }
            let swarm = deployment.mode == crate::config::Mode::Swarm;
            let port = provider.url.port_or_known_default().unwrap_or(80);
            let ask_who = swarm.then(|| AskWho {
                host: provider.url.host_str().unwrap_or_default().to_string(),
                path: provider.url.path().to_string(),
            });
            let owners = match &ask_who {
                Some(ask) => {
                    match owners(&deployment, &tasks, &leftovers, port, ask, ctx.suite.limits.connect_timeout).await {
                        Ok(o) => Some(o),
                        Err(attempt) => return attempt,
                    }
                }
                None => None,
            };
            let positions = match positions(&deployment, ctx, &provider, &mut evidence).await {
                Ok(p) => p,
                Err(attempt) => return attempt,
            };
            if positions.is_empty() {
                return Attempt::not_ready("no running container to look from", evidence);
            }
            let secret = ctx.scenario.secret(&provider.credential).clone();
            let limits = ctx.suite.limits.clone();
            let lookers: Vec<crate::engine::Target> = positions.iter().map(|p| p.target.clone()).collect();
            let looks = join_all(positions.into_iter().map(|pos| {
                let plan = LookPlan {
                    ask_who: ask_who.clone(),
                    known: pos.target.dns_names(),
                    resolve: pos.resolve,
                    label: pos.label.clone(),
                    doors: pos.doors,
                    provider: provider.clone(),
                    leftovers: leftovers.iter().map(|(a, _)| *a).collect(),
                    secret: secret.clone(),
                    limits: limits.clone(),
                };
                let deployment = deployment.clone();
                async move {
                    let how = deployment.probed_by(&pos.target, &pos.label);
                    match deployment.observe(&pos.target, &pos.label, plan).await {
                        Ok(Ok(look)) => Ok((look, how)),
                        Ok(Err(reason)) => Err(Attempt::not_ready(reason, vec![])),
                        Err(attempt) => Err(attempt),
                    }
                }
            }))
            .await;
            let mut seen = Vec::new();
            for l in looks {
                match l {
                    Ok((look, how)) => {
                        evidence.push(how);
                        seen.push(look)
                    }
                    Err(attempt) => return attempt,
                }
            }
            let dark = if provider.served_by_app { Dark::PathOnly } else { Dark::Endpoint };
            let attempt = judge_surface(provider.url.as_str(), &seen, evidence, owners.as_ref(), dark);
            let attempt = settled_or_not_ready(attempt, &seen, &lookers);
            silence_of_a_full_queue(attempt, &seen, &deployment, &tasks, port).await
        })
    }
}

/// Swarm: whose each leftover address is, and how each task answers from its own namespace.
async fn owners(
    deployment: &Deployment,
    tasks: &[Target],
    leftovers: &[(IpAddr, String)],
    port: u16,
    ask: &AskWho,
    timeout: std::time::Duration,
) -> Result<Owners, Attempt> {
    let of = leftovers
        .iter()
        .map(|(addr, owner)| {
            let task = tasks.iter().find(|t| &t.name == owner).map(|t| Owner::Task(t.name.clone()));
            (*addr, task.unwrap_or(Owner::Vip))
        })
        .collect();
    let doors: Vec<Door> = tasks
        .iter()
        .map(|t| Door {
            addr: SocketAddr::new(t.addresses().first().copied().unwrap_or(IpAddr::from([127, 0, 0, 1])), port),
            container: t.name.clone(),
            network: "its own".into(),
            via: super::kit::door::Via::Direct,
        })
        .collect();
    let refs = super::kit::door::references(deployment, tasks, &doors, ask, timeout).await?;
    Ok(Owners { refs, of })
}

/// Every client, and a container on each network the provider declared or its former
/// consumers sit on; each network's listeners are tried from the first position on it.
async fn positions(
    deployment: &Arc<Deployment>,
    ctx: &RunContext,
    provider: &Provider,
    evidence: &mut Vec<String>,
) -> Result<Vec<Position>, Attempt> {
    let topology = deployment.topology();
    let mut out: Vec<Position> = Vec::new();
    for client in &ctx.scenario.clients {
        if let Some(target) = topology.running(&client.service).first() {
            out.push(Position {
                target: target.clone(),
                label: format!("client {}", client.id),
                resolve: true,
                doors: vec![],
            });
        }
    }
    let mut networks: BTreeSet<String> = provider.networks.iter().cloned().collect();
    for consumer in &provider.allowed_consumers {
        if let Some(c) = ctx.scenario.clients.iter().find(|c| &c.id == consumer) {
            for t in topology.running(&c.service) {
                networks.extend(topology.network_keys_of(t));
            }
        }
    }
    // Every container on those networks, read at once (not network by network).
    let mut containers: Vec<Target> = networks.iter().flat_map(|n| topology.on_network(n)).cloned().collect();
    containers.sort_by(|a, b| a.id.cmp(&b.id));
    containers.dedup_by(|a, b| a.id == b.id);
    let listening = deployment.listeners_of(&containers).await?;
    for network in &networks {
        let on_it = topology.on_network(network);
        let holder = out.iter().position(|p| topology.network_keys_of(&p.target).iter().any(|n| n == network));
        let index = match holder {
            Some(i) => i,
            None => match on_it.first() {
                Some(t) => {
                    out.push(Position {
                        target: (*t).clone(),
                        label: format!("network {network} via {}", t.name),
                        resolve: false,
                        doors: vec![],
                    });
                    out.len() - 1
                }
                None => {
                    evidence.push(format!("network {network}: no running container on it to look from"));
                    continue;
                }
            },
        };
        let containers: Vec<Target> = on_it.into_iter().cloned().collect();
        out[index].doors.extend(doors_on(&topology, network, &containers, &listening));
    }
    Ok(out)
}

/// Every listener of every container on `network`, at its address there.
fn doors_on(
    topology: &crate::topology::Topology,
    network: &str,
    containers: &[Target],
    listening: &BTreeMap<String, Vec<crate::netns::listener::Listener>>,
) -> Vec<Door> {
    let mut doors = Vec::new();
    for t in containers {
        for att in t.attachments.iter().filter(|a| topology.network_key(&a.network) == network) {
            for addr in att.ipv4.map(IpAddr::V4).into_iter().chain(att.ipv6.map(IpAddr::V6)) {
                for l in listening.get(&t.name).into_iter().flatten().filter(|l| l.accepts_on(addr)) {
                    doors.push(Door {
                        addr: SocketAddr::new(addr, l.addr.port()),
                        container: t.name.clone(),
                        network: network.to_string(),
                        via: super::kit::door::Via::Direct,
                    });
                }
            }
        }
    }
    doors.sort_by_key(|d| d.addr);
    doors.dedup();
    doors
}

/// What one position does: resolve the name (clients), knock on every resolved or
/// leftover address, and present the disabled credential at every listener of its networks.
#[derive(Clone, Serialize, Deserialize)]
pub struct LookPlan {
    pub resolve: bool,
    /// Names the position's own resolver must know (see [`name::observe`]).
    #[serde(default)]
    pub known: Vec<String>,
    pub label: String,
    pub doors: Vec<Door>,
    #[serde(with = "super::kit::wire::provider")]
    pub provider: Provider,
    pub leftovers: Vec<IpAddr>,
    #[serde(with = "super::kit::wire::secret")]
    pub secret: Secret,
    pub limits: Limits,
    /// Swarm: ask who answers wherever TCP opens (see [`Owners`]).
    #[serde(default)]
    pub ask_who: Option<AskWho>,
}

impl LookPlan {
    /// Runs in one position's namespace.
    pub async fn observe(self, view: Rc<crate::netns::NsView>) -> Result<Look, String> {
        let LookPlan { resolve, known, label, doors, provider, leftovers, secret, limits, ask_who } = self;
        // The credential tries wait longest (a listener that speaks no HTTP holds them for
        // the short limit): they overlap with the name, the knocks and the answers.
        let knocking = Knocking {
            resolve: resolve.then_some(&known[..]),
            provider: &provider,
            leftovers: &leftovers,
            limits: &limits,
            ask_who: ask_who.as_ref(),
        };
        let (named, credential) =
            futures_util::join!(knocking.run(&view), credential_at(doors, &provider, secret, &limits));
        let (name, knocks, answers, who) = named.map_err(Attempt::into_reason)?;
        Ok(Look { position: label, name, knocks, answers, who, credential })
    }
}

/// What a position knocks on, and how.
struct Knocking<'a> {
    /// Resolve the name (clients), with the names its own resolver must know.
    resolve: Option<&'a [String]>,
    provider: &'a Provider,
    leftovers: &'a [IpAddr],
    limits: &'a Limits,
    /// Swarm: also ask who answers wherever TCP opens.
    ask_who: Option<&'a AskWho>,
}

type Knocked = (Option<NameSeen>, Vec<(SocketAddr, Connected)>, Vec<(SocketAddr, Try)>, Vec<(SocketAddr, Answer)>);

impl Knocking<'_> {
    /// The name as this position resolves it, TCP to every resolved or leftover address,
    /// and a GET and a POST (and, in swarm, who answers) wherever TCP opened.
    async fn run(&self, view: &crate::netns::NsView) -> Result<Knocked, Attempt> {
        let (provider, limits) = (self.provider, self.limits);
        let host = provider.url.host_str().unwrap_or_default().to_string();
        let port = provider.url.port_or_known_default().unwrap_or(80);
        let name = match self.resolve {
            Some(known) => Some(name::observe(view, &host, known).await?),
            None => None,
        };
        let mut addrs: Vec<IpAddr> = name.as_ref().map(NameSeen::routed).unwrap_or_default();
        addrs.extend(self.leftovers);
        addrs.sort();
        addrs.dedup();
        let knocks: Vec<(SocketAddr, Connected)> = join_all(addrs.iter().map(|a| async move {
            let target = SocketAddr::new(*a, port);
            (target, tcp_connect(target, limits.connect_timeout).await)
        }))
        .await;
        let open: Vec<SocketAddr> = knocks.iter().filter(|(_, r)| r.is_ok()).map(|(a, _)| *a).collect();
        let no_names = BTreeSet::new();
        let mut answers = Vec::new();
        for addr in &open {
            let Ok(client) = McpClient::new(pinned(provider, addr.ip()), None, limits.clone()) else { continue };
            for ask in [Ask::new(EntryPoint::SseGet), Ask::new(EntryPoint::ToolsList)] {
                let outcome = client.exchange(&ask, &no_names).await.map_err(|e| ErrorSeen::from(&e));
                answers.push((*addr, Try { ask, outcome }));
            }
        }
        let who = match self.ask_who {
            Some(ask) => {
                join_all(open.iter().map(|a| async move { (*a, who_answers(*a, ask, limits.connect_timeout).await) }))
                    .await
            }
            None => vec![],
        };
        Ok((name, knocks, answers, who))
    }
}

/// A dark verdict is only as good as its closed IPv6 doors: while an IPv6 address on the
/// way is still in duplicate address detection, a failed IPv6 connect proves nothing.
fn settled_or_not_ready(attempt: Attempt, looks: &[Look], lookers: &[crate::engine::Target]) -> Attempt {
    let Attempt::Pass { evidence } = attempt else { return attempt };
    let closed_v6 = looks.iter().flat_map(|l| &l.knocks).any(|(a, r)| a.is_ipv6() && r.is_err());
    let addrs = looks.iter().flat_map(|l| l.knocks.iter().map(|(a, _)| a.ip()));
    let settling = if closed_v6 { super::kit::connect::ipv6_settling(lookers, addrs) } else { vec![] };
    if settling.is_empty() {
        return Attempt::Pass { evidence };
    }
    Attempt::not_ready(super::kit::connect::settling_reason(&settling), evidence)
}

/// A dark verdict is only as good as its silent knocks: a leftover container whose
/// listener on the endpoint port has a full accept queue (paused, hung) drops every SYN,
/// so its silence is not darkness: it would serve again once it runs.
async fn silence_of_a_full_queue(
    attempt: Attempt,
    looks: &[Look],
    deployment: &Deployment,
    tasks: &[crate::engine::Target],
    port: u16,
) -> Attempt {
    let behind = silent_containers(looks, tasks);
    if !matches!(attempt, Attempt::Pass { .. }) || behind.is_empty() {
        return attempt;
    }
    match deployment.listeners_of(&behind).await {
        Ok(listening) => dark_unless_full(attempt, &behind, &listening, port),
        Err(not_read) => not_read,
    }
}

/// The leftover containers behind an address some position knocked on with no answer.
fn silent_containers(looks: &[Look], tasks: &[crate::engine::Target]) -> Vec<crate::engine::Target> {
    let silent: BTreeSet<IpAddr> = looks
        .iter()
        .flat_map(|l| &l.knocks)
        .filter(|(_, r)| matches!(r, Err(ConnectError::NoAnswer { .. })))
        .map(|(a, _)| a.ip())
        .collect();
    tasks.iter().filter(|t| t.addresses().iter().any(|a| silent.contains(a))).cloned().collect()
}

/// Pure: a dark verdict stands unless a silent container's listener on the endpoint port
/// has a full accept queue (read after the knocks).
fn dark_unless_full(
    attempt: Attempt,
    behind: &[crate::engine::Target],
    listening: &BTreeMap<String, Vec<crate::netns::listener::Listener>>,
    port: u16,
) -> Attempt {
    let Attempt::Pass { evidence } = attempt else { return attempt };
    let why: Vec<String> = behind.iter().filter_map(|t| full_accept_queue(listening, &t.name, port)).collect();
    match why.is_empty() {
        true => Attempt::Pass { evidence },
        false => Attempt::not_ready(format!("a silent address is not a dark one: {}", why.join("; ")), evidence),
    }
}

/// Pure: no client routes the name, nothing accepts or answers, and no listener on the
/// provider's networks honours its credential.
#[cfg(test)]
fn judge(url: &str, looks: &[Look], evidence: Vec<String>, owners: Option<&Owners>) -> Attempt {
    judge_surface(url, looks, evidence, owners, Dark::Endpoint)
}

/// What goes dark with a switched-off surface.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dark {
    /// Its own endpoint (an adapter, a sidecar, a service of its own): no name, no TCP,
    /// no HTTP answer.
    Endpoint,
    /// Only its MCP path: the address is the app's, which keeps running (a native
    /// surface switched off in the app). The name resolving and TCP opening say nothing;
    /// a GET or POST at the path that shows the surface (a refused credential, an MCP
    /// answer) is the finding.
    PathOnly,
}

pub fn judge_surface(
    url: &str,
    looks: &[Look],
    mut evidence: Vec<String>,
    owners: Option<&Owners>,
    dark: Dark,
) -> Attempt {
    let mut findings = Vec::new();
    for l in looks {
        match dark {
            Dark::Endpoint => {
                judge_name(l, &mut findings, &mut evidence);
                let elsewhere = judge_knocks(l, owners, &mut findings, &mut evidence);
                judge_answers(l, &elsewhere, dark, &mut findings, &mut evidence);
            }
            Dark::PathOnly => {
                let mut app = Vec::new();
                judge_name(l, &mut app, &mut evidence);
                judge_knocks(l, owners, &mut app, &mut evidence);
                if !app.is_empty() {
                    evidence
                        .push(format!("{}: the name resolves and TCP opens: the app keeps serving there", l.position));
                }
                judge_answers(l, &[], dark, &mut findings, &mut evidence);
            }
        }
        judge_credential(l, &mut findings, &mut evidence);
    }
    evidence.insert(0, format!("endpoint: {url}"));
    Attempt::from_findings(findings, evidence)
}

/// Whether an answer at a switched-off surface's path shows the surface, by what the
/// server did: a JSON-RPC message, an event stream or a tool inventory in the body; a
/// refusal that asks for a bearer (401/403 with a `Bearer` challenge, or none); MCP's
/// answer to a wrong `Accept` (406). What an app does at a path it does not serve (404,
/// 405, its HTML page, its own JSON, a site-wide `Basic` login) does not.
fn shows_the_surface(e: &Exchange) -> bool {
    let speaks_mcp = !e.body.messages.is_empty() || e.body.endpoint_event || e.body.inventory;
    let stream = (200..300).contains(&e.status) && e.is_event_stream();
    let bearer_wanted = matches!(e.status, 401 | 403)
        && e.www_authenticate.as_deref().is_none_or(|w| w.trim_start().to_ascii_lowercase().starts_with("bearer"));
    speaks_mcp || stream || bearer_wanted || e.status == 406
}

/// The name resolves to nothing outside the wildcard set.
fn judge_name(l: &Look, findings: &mut Vec<Finding>, evidence: &mut Vec<String>) {
    let from = &l.position;
    if let Some(name) = &l.name {
        evidence.extend(name.evidence().into_iter().map(|e| format!("{from}: {e}")));
        let routed = name.routed();
        if !routed.is_empty() {
            findings.push(
                Finding::new(
                    FindingKind::StillRouted,
                    "still routed: from {from} `{host}` resolves to [{addrs}] outside the wildcard set",
                )
                .fact("from", from)
                .fact("host", &name.host)
                .fact("addrs", super::kit::connect::join_addrs(&routed))
                .proven_by(format!("{from}: {}", name.answered())),
            );
        }
    }
}

/// Nothing accepts TCP at the surface's addresses; the addresses where something else
/// answered (swarm) are returned: they prove nothing, and their answers are not the
/// service's either.
fn judge_knocks(
    l: &Look,
    owners: Option<&Owners>,
    findings: &mut Vec<Finding>,
    evidence: &mut Vec<String>,
) -> Vec<SocketAddr> {
    let from = &l.position;
    let mut elsewhere: Vec<SocketAddr> = Vec::new();
    for (addr, r) in &l.knocks {
        if let (Ok(()), Some(owners)) = (r, owners) {
            let seen = l.who.iter().find(|(a, _)| a == addr).map(|(_, w)| w);
            match owners.attribute(*addr, seen) {
                Ok(line) => evidence.push(format!("{from}: {line}")),
                Err(line) => {
                    evidence.push(format!("{from}: {line}"));
                    elsewhere.push(*addr);
                    continue;
                }
            }
        }
        match r {
            Ok(()) => {
                let line = format!("{from}: {addr}: TCP connect accepted");
                evidence.push(line.clone());
                findings.push(
                    Finding::new(FindingKind::StillAccepting, "still accepting TCP: from {from} {addr}")
                        .fact("from", from)
                        .fact("addr", addr)
                        .proven_by(line),
                );
            }
            Err(e) => evidence.push(format!("{from}: {addr}: {e}")),
        }
    }
    elsewhere
}

/// Nothing answers HTTP at the surface's addresses (at its path only: nothing that shows
/// the surface).
fn judge_answers(
    l: &Look,
    elsewhere: &[SocketAddr],
    dark: Dark,
    findings: &mut Vec<Finding>,
    evidence: &mut Vec<String>,
) {
    let from = &l.position;
    for (addr, t) in l.answers.iter().filter(|(a, _)| !elsewhere.contains(a)) {
        match &t.outcome {
            Ok(e) if dark == Dark::PathOnly && !shows_the_surface(e) => {
                evidence.push(format!("{from}: {} (dark: no MCP surface answers at the path)", e.summary()))
            }
            Ok(e) => {
                evidence.push(format!("{from}: {}", e.summary()));
                let line = e.proof(&format!("{from}: "));
                findings.push(
                    Finding::new(
                        FindingKind::StillListening,
                        "still listening: from {from} {entry} at {url} ({addr}) answered {status}",
                    )
                    .fact("from", from)
                    .fact("entry", t.ask.entry)
                    .fact("url", &e.url)
                    .fact("status", e.status)
                    .fact("addr", addr)
                    .proven_by(line),
                );
            }
            Err(e) => evidence.push(format!("{from}: {}: no HTTP answer ({})", t.ask, e.text)),
        }
    }
}

/// No listener on the surface's networks accepts its credential.
fn judge_credential(l: &Look, findings: &mut Vec<Finding>, evidence: &mut Vec<String>) {
    let from = &l.position;
    for p in &l.credential {
        let door = &p.door;
        let answers = |tries: &[Try]| -> Vec<String> {
            tries
                .iter()
                .map(|t| match &t.outcome {
                    Ok(e) => format!("{} {}", t.ask, e.status),
                    Err(_) => format!("{} no answer", t.ask),
                })
                .collect()
        };
        let alive = |template: &'static str| Finding::new(FindingKind::CredentialAlive, template);
        let how = honoured(p).map(|h| match h.how {
            How::Result => (h.exchange, alive(" answered {entry} at {url} {status} with a result")),
            How::Session => (h.exchange, alive(" answered {entry} at {url} {status} with a session")),
            How::PastAuthentication { status_without } => {
                let passes = " answered {entry} at {url} {status_without} without it but {status} with it: it passes authentication there";
                (h.exchange, alive(passes).fact("status_without", status_without))
            }
        });
        match how {
            Some((e, how)) => {
                let e = &e;
                evidence.push(format!("{from}: {door}: {}", e.summary()));
                let line = e.proof(&format!("{from}: {door}: "));
                findings.push(
                    door.before(how.fact("entry", &e.ask).fact("url", &e.url).fact("status", e.status))
                        .prefixed("the disabled provider's credential still works: ")
                        .proven_by(line),
                );
            }
            None => evidence.push(format!(
                "{from}: credential at {door}: {}; without it: {}",
                answers(&p.with).join(", "),
                answers(&p.without).join(", ")
            )),
        }
    }
}

/// The family, registered once (`checks::FAMILIES`).
pub const SPEC: Spec = Spec { family: Family::Disabled, plan: planned, explain };

fn planned(scenario: &Scenario, _: &Suite) -> Vec<Arc<dyn Check>> {
    plan(scenario)
}

/// What a check of this family proves, and where it looks from (`cordon explain`).
fn explain(_: &CheckName) -> Option<(&'static str, &'static str)> {
    Some((
        "the switched-off surface is dark: its name resolves to nothing outside the wildcard set, nothing accepts TCP or answers HTTP at its addresses, and no listener on its networks (or its former consumers') accepts its credential",
        "every client's namespace, and a container on each network the provider declared or its former consumers sit on",
    ))
}

#[cfg(test)]
mod tests {
    use super::super::kit::door::Via;
    use super::*;
    use crate::dns::{AnswerSource, NameAnswer, WildcardSet};

    fn door(addr: &str, container: &str) -> Door {
        Door {
            addr: addr.parse().unwrap(),
            container: container.into(),
            network: "net-native".into(),
            via: super::super::kit::door::Via::Direct,
        }
    }

    fn dark(position: &str) -> Look {
        Look {
            position: position.into(),
            name: Some(NameSeen {
                unknown: false,
                host: "wiki".into(),
                wildcard: WildcardSet { addrs: ["10.0.0.99".parse().unwrap()].into(), ..Default::default() },
                answer: NameAnswer { source: AnswerSource::Dns, addrs: vec!["10.0.0.99".parse().unwrap()] },
            }),
            knocks: vec![],
            answers: vec![],
            who: vec![],
            credential: vec![],
        }
    }

    fn exchange(ask: Ask, status: u16, result: bool) -> Exchange {
        crate::checks::kit::testing::exchange_for_tests(ask, "http://wiki:8000/mcp", status, result)
    }

    fn kinds(a: Attempt) -> Vec<FindingKind> {
        match a {
            Attempt::Fail { findings, .. } => findings.into_iter().map(|f| f.kind).collect(),
            _ => vec![],
        }
    }

    /// A native surface switched off in an app that keeps running: the app's name and
    /// port answer, only what shows the MCP surface at the path fails.
    #[rstest::rstest]
    #[case::not_found(404, None, None, false, true)]
    #[case::method_not_allowed(405, None, None, false, true)]
    #[case::the_apps_own_page(200, Some("text/html; charset=utf-8"), None, false, true)]
    #[case::a_redirect_to_its_login(302, Some("text/html"), None, false, true)]
    #[case::the_apps_own_json(200, Some("application/json"), None, false, true)]
    #[case::a_site_wide_basic_login(401, Some("text/html"), Some("Basic realm=\"intranet\""), false, true)]
    #[case::a_refused_credential(401, Some("application/json"), None, false, false)]
    #[case::a_bearer_challenge(401, None, Some("Bearer resource_metadata=\"http://wiki/.well-known\""), false, false)]
    #[case::forbidden(403, None, None, false, false)]
    #[case::an_mcp_answer(200, Some("application/json"), None, true, false)]
    #[case::an_event_stream(200, Some("text/event-stream"), None, false, false)]
    fn a_path_of_a_running_app_is_dark_unless_the_surface_answers(
        #[case] status: u16,
        #[case] content_type: Option<&str>,
        #[case] challenge: Option<&str>,
        #[case] json_rpc: bool,
        #[case] dark_path: bool,
    ) {
        let mut l = dark("client a");
        l.name.as_mut().unwrap().answer.addrs = vec!["10.0.1.9".parse().unwrap()];
        l.knocks = vec![("10.0.1.9:8000".parse().unwrap(), Ok(()))];
        let ask = Ask::new(EntryPoint::ToolsList);
        let mut e = exchange(ask.clone(), status, json_rpc);
        e.content_type = content_type.map(str::to_string);
        e.www_authenticate = challenge.map(str::to_string);
        l.answers = vec![("10.0.1.9:8000".parse().unwrap(), Try { ask, outcome: Ok(e) })];
        let attempt = judge_surface("u", std::slice::from_ref(&l), vec![], None, Dark::PathOnly);
        assert_eq!(attempt.is_pass(), dark_path, "{attempt:?}");
        if !dark_path {
            assert_eq!(kinds(attempt), vec![FindingKind::StillListening]);
        }
        // Its own endpoint: the same look fails for the name and the open port alone.
        let own = kinds(judge("u", &[l], vec![], None));
        assert!(own.starts_with(&[FindingKind::StillRouted, FindingKind::StillAccepting]), "{own:?}");
    }

    #[test]
    fn a_dark_surface_passes() {
        assert!(judge("u", &[dark("client a")], vec![], None).is_pass());
    }

    #[test]
    fn routed_accepting_listening_and_a_live_credential_each_fail() {
        let mut l = dark("client a");
        l.name.as_mut().unwrap().answer.addrs = vec!["10.0.1.9".parse().unwrap()];
        assert_eq!(kinds(judge("u", &[l], vec![], None)), vec![FindingKind::StillRouted]);
        let mut l = dark("client a");
        l.knocks = vec![("10.0.1.9:8000".parse().unwrap(), Ok(()))];
        l.answers = vec![(
            "10.0.1.9:8000".parse().unwrap(),
            Try { ask: Ask::new(EntryPoint::SseGet), outcome: Ok(exchange(Ask::new(EntryPoint::SseGet), 401, false)) },
        )];
        assert_eq!(
            kinds(judge("u", &[l], vec![], None)),
            vec![FindingKind::StillAccepting, FindingKind::StillListening]
        );
        let mut l = dark("network net-native via x");
        let door = door("10.0.1.7:8000", "wiki-old_1");
        let ask = Ask::new(EntryPoint::Initialize);
        l.credential = vec![Presented {
            door,
            with: vec![Try { ask: ask.clone(), outcome: Ok(exchange(ask, 200, true)) }],
            without: vec![],
        }];
        let Attempt::Fail { findings, .. } = judge("u", &[l], vec![], None) else { panic!() };
        assert_eq!(findings[0].kind, FindingKind::CredentialAlive);
        assert_eq!(findings[0].facts["container"], "wiki-old_1");
    }

    /// Swarm: a connect, and any HTTP status, answered by something other than a task of the
    /// disabled service (upstream of docker_gwbridge, at a VIP with nothing behind it) is
    /// no sign of the service; the task's own answer at its address is.
    #[test]
    fn in_swarm_only_the_services_own_answer_counts() {
        let answer = |status: &str| Answer {
            status: Some(status.into()),
            headers: vec!["content-type".into()],
            body_sha256: "cd".repeat(32),
        };
        let at: SocketAddr = "10.0.1.9:8000".parse().unwrap();
        let mut l = dark("client n8n");
        l.knocks = vec![(at, Ok(()))];
        l.answers = vec![(
            at,
            Try { ask: Ask::new(EntryPoint::SseGet), outcome: Ok(exchange(Ask::new(EntryPoint::SseGet), 404, false)) },
        )];
        l.who = vec![(at, answer("HTTP/1.1 404 Not Found"))];
        let vip = Owners { refs: BTreeMap::new(), of: BTreeMap::from([(at.ip(), Owner::Vip)]) };
        let attempt = judge("u", &[l.clone()], vec![], Some(&vip));
        assert!(attempt.is_pass(), "{attempt:?}");
        assert!(attempt.evidence().iter().any(|e| e.contains("something else answered")));
        let task = Owners {
            refs: BTreeMap::from([(("wiki_1".to_string(), 8000), answer("HTTP/1.1 404 Not Found"))]),
            of: BTreeMap::from([(at.ip(), Owner::Task("wiki_1".into()))]),
        };
        assert_eq!(
            kinds(judge("u", &[l], vec![], Some(&task))),
            vec![FindingKind::StillAccepting, FindingKind::StillListening]
        );
    }

    /// A finding names a door in the words the door is shown with.
    #[test]
    fn a_door_is_named_as_it_is_shown() {
        for via in [Via::Direct, Via::Published { container_port: "8000/tcp".into() }, Via::Vip] {
            let d = Door { via, ..door("10.0.1.7:8000", "wiki-old_1") };
            let f = d.before(Finding::new(FindingKind::CredentialAlive, ": here"));
            assert_eq!(f.sentence(), format!("{d}: here"));
            assert_eq!(f.facts["addr"], "10.0.1.7:8000");
        }
    }

    #[test]
    fn a_refused_credential_is_dead() {
        let mut l = dark("client a");
        let door = door("10.0.1.5:8000", "native_1");
        let ask = Ask::new(EntryPoint::Initialize);
        let refused = Try { ask: ask.clone(), outcome: Ok(exchange(ask.clone(), 401, false)) };
        l.credential = vec![Presented { door, with: vec![refused.clone()], without: vec![refused] }];
        assert!(judge("u", &[l], vec![], None).is_pass());
    }

    fn presented(with: u16, without: u16) -> Look {
        let mut l = dark("client a");
        let door = door("10.0.1.7:8000", "wiki-old_1");
        let ask = Ask::new(EntryPoint::Initialize);
        let t = |status| Try { ask: ask.clone(), outcome: Ok(exchange(ask.clone(), status, false)) };
        l.credential = vec![Presented { door, with: vec![t(with)], without: vec![t(without)] }];
        l
    }

    #[test]
    fn a_credential_let_past_authentication_elsewhere_than_the_endpoint_is_alive() {
        // A legacy SSE leftover: POST /mcp is 401 without the credential, 404 with it.
        let Attempt::Fail { findings, .. } = judge("u", &[presented(404, 401)], vec![], None) else { panic!() };
        assert_eq!(findings[0].kind, FindingKind::CredentialAlive);
        assert!(findings[0].sentence().contains("401 without it but 404 with it"), "{}", findings[0].sentence());
        assert!(!judge("u", &[presented(307, 403)], vec![], None).is_pass());
        // Refused both ways, routed before authentication, or an error of the server: dead.
        for (with, without) in [(401, 401), (403, 401), (404, 404), (429, 401), (500, 401)] {
            assert!(judge("u", &[presented(with, without)], vec![], None).is_pass(), "{with} with, {without} without");
        }
    }

    /// A paused leftover on the endpoint port drops every SYN once its accept queue is
    /// full: its silence is not darkness. A listener with room, or another port, stays dark.
    #[rstest::rstest]
    #[case::full_queue_on_the_port(8000, 129, "not ready")]
    #[case::room_in_the_queue(8000, 3, "pass")]
    #[case::full_queue_on_another_port(9000, 129, "pass")]
    fn a_silent_leftover_with_a_full_accept_queue_is_not_dark(
        #[case] listens_on: u16,
        #[case] waiting: u32,
        #[case] want: &str,
    ) {
        let leftover =
            crate::engine::Target { name: "wiki_1".into(), ..crate::checks::kit::testing::target_for_tests() };
        let queue = Some(crate::netns::listener::AcceptQueue { waiting, backlog: 128 });
        let addr = std::net::SocketAddr::new([0, 0, 0, 0].into(), listens_on);
        let listening =
            BTreeMap::from([("wiki_1".to_string(), vec![crate::netns::listener::Listener { addr, queue }])]);
        let got = match dark_unless_full(Attempt::Pass { evidence: vec![] }, &[leftover], &listening, 8000) {
            Attempt::Pass { .. } => "pass",
            Attempt::NotReady { reason, .. } => {
                assert!(reason.contains("a silent address is not a dark one: wiki_1 listens on"), "{reason}");
                "not ready"
            }
            other => panic!("{other:?}"),
        };
        assert_eq!(got, want);
    }
}
