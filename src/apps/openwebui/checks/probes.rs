//! The probes of the `openwebui` family: each gathers its observations in the Open WebUI
//! container's namespace and hands them to a pure judge.

use crate::apps::clientapp::api_attempt;
use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use serde_json::Value;
use tokio::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

use super::Signin;
use super::connections::judge_connections;
use super::judge::{Desired, judge_reach, judge_view};

use crate::apps::openwebui::api::{Api, ApiError, Token, wait_ready};
use crate::apps::openwebui::ephemeral::{self, Pending, Undoer};
use crate::apps::openwebui::gather;
use crate::apps::openwebui::idp_admin::Admin;
use crate::apps::openwebui::observe::{AdminView, Destination, UserView};
use crate::apps::openwebui::oidc::Idp;
use crate::check::{Probe, RunContext, settled};
use crate::checks::kit::vantage::client_target;
use crate::config::{IdpAdmin, KeycloakGrant, Oidc, OpenWebui};
use crate::deployment::Deployment;
use crate::engine::Target;
use crate::model::{Attempt, Finding, FindingKind};
use crate::netns::NsView;
use crate::secret::Secret;
use crate::topology::Topology;

/// The planned family's turns at its one Open WebUI: every check holds it for reading
/// while it runs, the restart for writing, so the restart never overlaps another Open
/// WebUI check. One per plan, shared by the family's checks through their [`Site`].
#[derive(Clone, Default)]
pub struct Turns(Arc<RwLock<()>>);

impl Turns {
    pub async fn shared(&self) -> RwLockReadGuard<'_, ()> {
        self.0.read().await
    }

    pub async fn alone(&self) -> RwLockWriteGuard<'_, ()> {
        self.0.write().await
    }
}

/// How long Ctrl-C waits for Open WebUI to answer (it may be restarting) to undo.
const UNDO_BUDGET: Duration = Duration::from_secs(75);

/// Which Open WebUI a probe talks to: the scenario client with the `openwebui` block.
#[derive(Clone)]
pub struct Site {
    pub client: String,
    pub turns: Turns,
}

impl Site {
    pub fn webui<'a>(&self, ctx: &'a RunContext) -> &'a OpenWebui {
        let client = ctx.scenario.clients.iter().find(|c| c.id == self.client).expect("planned from the scenario");
        client.openwebui.as_ref().expect("planned for the client with the block")
    }

    pub fn signin(&self, ctx: &RunContext) -> Signin {
        Signin::of(&ctx.scenario, self.webui(ctx), &ctx.suite.limits, &ctx.redactor)
    }

    pub fn target(&self, ctx: &RunContext) -> Result<(Arc<Deployment>, Target), Attempt> {
        let deployment = ctx.deployment.clone().expect("the openwebui family runs in compose mode");
        let target = client_target(&deployment.topology(), &ctx.scenario, &self.client)?;
        Ok((deployment, target))
    }

    /// Runs `job` in the Open WebUI container's namespace; an API error becomes "not
    /// ready" (no answer, 502-504) or a failure.
    pub async fn run<F, Fut, T>(&self, ctx: &RunContext, what: &str, job: F) -> Result<T, Attempt>
    where
        F: FnOnce(Rc<NsView>, Signin) -> Fut + Send + 'static,
        Fut: Future<Output = Result<T, ApiError>> + 'static,
        T: Send + 'static,
    {
        self.guard_ctrl_c(ctx);
        let (deployment, target) = self.target(ctx)?;
        let signin = self.signin(ctx);
        match deployment.run_in(&target, &format!("client {}", self.client), move |view| job(view, signin)).await? {
            Ok(out) => Ok(out),
            Err(e) => Err(api_attempt(what, &e)),
        }
    }

    /// Ctrl-C undoes what the family still has pending in Open WebUI, then exits.
    fn guard_ctrl_c(&self, ctx: &RunContext) {
        let Some(deployment) = ctx.deployment.clone() else { return };
        let scenario = ctx.scenario.clone();
        let client = self.client.clone();
        let signin = self.signin(ctx);
        let oidc = oidc_of(ctx, self.webui(ctx));
        let undoer: Undoer = Arc::new(move |todo: Vec<Pending>| {
            let (deployment, scenario, client, signin, oidc) =
                (deployment.clone(), scenario.clone(), client.clone(), signin.clone(), oidc.clone());
            Box::pin(async move {
                // Ctrl-C may land mid-restart: wait for the container that answers now.
                let started = std::time::Instant::now();
                let mut last = vec![format!("no running Open WebUI container to undo {} change(s) in", todo.len())];
                while started.elapsed() < UNDO_BUDGET {
                    deployment.refresh().await;
                    if let Ok(target) = client_target(&deployment.topology(), &scenario, &client) {
                        let (todo, signin, oidc) = (todo.clone(), signin.clone(), oidc.clone());
                        let job = move |view: Rc<NsView>| async move {
                            let api =
                                Api::new(&signin.url, &signin.limits, &signin.redactor).map_err(|e| e.to_string())?;
                            wait_ready(&api, UNDO_BUDGET).await?;
                            let (api, admin) = signin.open().await.map_err(|e| e.to_string())?;
                            let mut left = Vec::new();
                            for p in &todo {
                                left.extend(ephemeral::undo(&api, &admin, p).await);
                            }
                            let idp_users: Vec<&String> = todo.iter().flat_map(|p| &p.idp_users).collect();
                            if let (false, Some((o, secret))) = (idp_users.is_empty(), &oidc) {
                                left.extend(forget_at_idp(&view, o, secret, &signin, &idp_users).await);
                            }
                            Ok::<_, String>(left)
                        };
                        match deployment.run_in(&target, "cleanup", job).await {
                            Ok(Ok(left)) => return left,
                            Ok(Err(e)) => last = vec![e],
                            Err(_) => last = vec!["cannot enter the Open WebUI container".into()],
                        }
                    }
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
                last
            }) as BoxFuture<'static, Vec<String>>
        });
        ephemeral::undo_on_ctrl_c(undoer);
    }
}

/// The identity provider's admin side and its secret (control bearer, Keycloak admin
/// password or client secret), if the block names one.
pub(super) fn oidc_of(ctx: &RunContext, webui: &OpenWebui) -> Option<(Oidc, Secret)> {
    webui.oidc.clone().map(|o| {
        let secret = match &o.admin {
            IdpAdmin::Control { credential, .. } => credential,
            IdpAdmin::Keycloak(k) => match &k.grant {
                KeycloakGrant::Password { password, .. } => password,
                KeycloakGrant::ClientCredentials { secret } => secret,
            },
        };
        let secret = ctx.scenario.secret(secret).clone();
        (o, secret)
    })
}

/// Removes test users at the identity provider; returns what could not be removed.
async fn forget_at_idp(view: &NsView, o: &Oidc, secret: &Secret, signin: &Signin, emails: &[&String]) -> Vec<String> {
    let idp = match Idp::locate(view, o.admin.url()).await {
        Ok(idp) => idp,
        Err(e) => return vec![format!("could not reach the identity provider to remove its test users: {e}")],
    };
    let admin = Admin { idp: &idp, how: &o.admin, secret, limits: &signin.limits, redactor: &signin.redactor };
    let mut left = Vec::new();
    for email in emails {
        if let Err(e) = admin.forget(email).await {
            left.push(format!("could not remove test user {email} at the identity provider: {e}"));
        }
    }
    left
}

/// `openwebui::connections`: the tool-server connections in the admin view, and their grants.
pub struct Connections {
    pub site: Site,
    pub desired: Desired,
}

impl Probe for Connections {
    fn run<'a>(&'a self, ctx: &'a RunContext) -> BoxFuture<'a, Attempt> {
        settled(async move {
            let _shared = self.site.turns.shared().await;
            let managed = self.desired.managed();
            let job = |ns: Rc<NsView>, signin: Signin| async move {
                let (api, admin) = signin.open().await?;
                observe_connections(&ns, &api, &admin, &signin, &managed).await
            };
            let view = self.site.run(ctx, "reading the admin view", job).await?.placed(ctx);
            let managed = self.desired.managed();
            let evidence = view
                .connections
                .iter()
                .map(|c| {
                    let managed = c.id.as_ref().is_some_and(|id| managed.contains(id));
                    format!("{}: {}", if managed { "connection" } else { "unmanaged" }, c.describe(&view.groups))
                })
                .collect::<Vec<_>>();
            let evidence = if evidence.is_empty() { vec!["connection: none".to_string()] } else { evidence };
            Ok(Attempt::from_findings(judge_connections(&view, &self.desired), evidence))
        })
    }
}

/// The admin view and where each unmanaged connection's host leads from Open WebUI's own
/// namespace: what `openwebui::connections` judges, and `restart_convergence` after the
/// restart (one observation, one judgement).
pub(super) struct ConnectionsSeen {
    view: AdminView,
    resolved: Vec<(usize, Vec<SocketAddr>)>,
}

pub(super) async fn observe_connections(
    ns: &NsView,
    api: &Api,
    admin: &Token,
    signin: &Signin,
    managed: &[String],
) -> Result<ConnectionsSeen, ApiError> {
    let view = gather::admin_view(api, admin, &signin.credentials).await?;
    let resolved = resolve_unmanaged(ns, &view, managed).await;
    Ok(ConnectionsSeen { view, resolved })
}

impl ConnectionsSeen {
    pub(super) fn view(&self) -> &AdminView {
        &self.view
    }

    /// Names the containers behind the resolved addresses (the engine's view).
    pub(super) fn placed(self, ctx: &RunContext) -> AdminView {
        let mut view = self.view;
        if let Some(deployment) = &ctx.deployment {
            view.destinations = owned_destinations(&deployment.topology(), self.resolved);
        }
        view
    }
}

/// The addresses each unmanaged connection's host resolves to from Open WebUI's own
/// namespace, as its libc would, on the URL's port. A name that does not resolve leads
/// nowhere cordon can name.
async fn resolve_unmanaged(ns: &NsView, view: &AdminView, managed: &[String]) -> Vec<(usize, Vec<SocketAddr>)> {
    let mut out = Vec::new();
    for (index, c) in view.connections.iter().enumerate() {
        if c.id.as_ref().is_some_and(|id| managed.contains(id)) {
            continue;
        }
        let Ok(url) = reqwest::Url::parse(&c.target_url()) else { continue };
        let (Some(host), Some(port)) = (url.host_str(), url.port_or_known_default()) else { continue };
        if let Ok(answer) = ns.resolve(host.trim_end_matches('.')).await {
            out.push((index, answer.addrs.into_iter().map(|ip| SocketAddr::new(ip, port)).collect()));
        }
    }
    out
}

/// Keeps the resolved addresses some container of the deployment owns, naming it.
fn owned_destinations(
    topology: &Topology,
    resolved: Vec<(usize, Vec<SocketAddr>)>,
) -> BTreeMap<usize, Vec<Destination>> {
    resolved
        .into_iter()
        .map(|(index, addrs)| {
            let owned = addrs
                .into_iter()
                .filter_map(|addr| {
                    let owner = topology.owner_of(addr.ip())?;
                    Some(Destination {
                        addr,
                        container: owner.container,
                        service: owner.service,
                        network: owner.network,
                    })
                })
                .collect();
            (index, owned)
        })
        .collect()
}

/// `openwebui::reach::<provider>`: the tools Open WebUI itself lists for the provider.
pub struct Reach {
    pub site: Site,
    pub provider: String,
}

impl Probe for Reach {
    fn run<'a>(&'a self, ctx: &'a RunContext) -> BoxFuture<'a, Attempt> {
        settled(async move {
            let _shared = self.site.turns.shared().await;
            let provider = self.provider.clone();
            let job = |_: Rc<NsView>, signin: Signin| async move {
                let (api, admin) = signin.open().await?;
                gather::specs(&api, &admin, &provider).await
            };
            let seen = self.site.run(ctx, "asking Open WebUI for the tools", job).await?;
            let allowlist = &ctx.scenario.provider(&self.provider).expect("planned").tools.allowlist;
            let evidence = vec![format!(
                "GET /api/v1/tools/id/server:mcp:{}/specs as the admin: {} {}",
                self.provider,
                seen.status,
                seen.tools.as_ref().map_or(seen.detail.clone(), |t| format!("[{}]", t.join(", ")))
            )];
            Ok(Attempt::from_findings(judge_reach(&self.provider, &seen, allowlist), evidence))
        })
    }
}

/// The group-access cases of `openwebui::access::*`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Case {
    OneOfSeveral,
    NoGroup,
    WrongApp,
    LastGroupRemoved,
    LastGroupRemovedOidc,
}

impl std::str::FromStr for Case {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Ok(match s {
            "one_of_several" => Case::OneOfSeveral,
            "no_group" => Case::NoGroup,
            "wrong_app" => Case::WrongApp,
            "last_group_removed" => Case::LastGroupRemoved,
            other => return Err(format!("no access case {other}")),
        })
    }
}

/// When a phase's view was taken, as the opening of its findings' sentences: a template
/// ("" or e.g. "after `{group}`, its last group, was removed through the admin API: ") and
/// the facts it names.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct When {
    pub template: &'static str,
    pub facts: Vec<(&'static str, String)>,
}

impl When {
    pub fn new(template: &'static str) -> Self {
        When { template, facts: vec![] }
    }

    pub fn fact(mut self, key: &'static str, value: impl ToString) -> Self {
        self.facts.push((key, value.to_string()));
        self
    }

    /// `f`, whose sentence `self.template` opens, with the facts it names.
    fn on(&self, f: Finding) -> Finding {
        self.facts.iter().fold(f, |f, (k, v)| f.fact(k, v))
    }

    /// The opening as text, for the evidence.
    pub fn text(&self) -> String {
        crate::model::phrase(|f| self.on(f.prefixed(self.template)))
    }
}

/// One view of one user, and what it must show.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Phase {
    pub when: When,
    pub view: UserView,
    pub expected: BTreeSet<String>,
    /// Exactly `expected`; otherwise at least it (before a removal, only the removed
    /// group's server matters).
    pub exact: bool,
}

pub fn judge_phases(phases: &[Phase]) -> Vec<Finding> {
    let mut findings = Vec::new();
    for p in phases {
        if p.exact {
            findings.extend(judge_view(&p.view, &p.expected, p.when.template).into_iter().map(|f| p.when.on(f)));
        } else {
            let visible = p.view.visible();
            for id in p.expected.difference(&visible) {
                let f = Finding::new(FindingKind::AccessDrift, "{user}: `{server}` is not usable")
                    .prefixed(p.when.template)
                    .fact("user", &p.view.user)
                    .fact("server", id)
                    .fact("access", "missing");
                findings.push(p.when.on(f));
            }
        }
    }
    findings
}

/// The first declared connection's id, for cases that need one granted server.
pub fn first_granted(desired: &Desired) -> Option<(String, String)> {
    desired.connections.first().map(|c| (c.provider.clone(), c.group.clone()))
}

pub fn json_list(v: &Value) -> Vec<Value> {
    v.get("TOOL_SERVER_CONNECTIONS").and_then(Value::as_array).cloned().unwrap_or_default()
}
