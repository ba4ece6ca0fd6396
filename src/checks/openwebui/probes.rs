//! The probes of the `openwebui` family: each gathers its observations in the Open WebUI
//! container's namespace and hands them to a pure judge.

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::{Arc, LazyLock};
use std::time::Duration;

use futures_util::future::BoxFuture;
use serde_json::Value;
use tokio::sync::RwLock;

use super::judge::{Desired, full_url, judge_connections, judge_reach, judge_tool_call, judge_view};
use super::{Signin, restart};

use crate::checks::client_target;
use crate::config::{OpenWebui, ReadSpec};
use crate::deployment::Deployment;
use crate::engine::Target;
use crate::model::{Attempt, Finding, FindingKind};
use crate::netns::NsView;
use crate::openwebui::api::{Api, ApiError, wait_ready};
use crate::openwebui::ephemeral::{self, Ephemeral, Pending, Undoer};
use crate::openwebui::gather::{self, ToolCallAsk, group_ids};
use crate::openwebui::observe::{AdminView, ChatSeen, Destination, UserView};
use crate::runner::{Probe, RunContext};
use crate::topology::Topology;

/// Held for reading by every check of the family while it runs, for writing by the
/// restart: the restart never overlaps another Open WebUI check.
pub(super) static EXCLUSIVE: LazyLock<RwLock<()>> = LazyLock::new(|| RwLock::new(()));

const CHAT_BUDGET: Duration = Duration::from_secs(60);
/// How long Ctrl-C waits for Open WebUI to answer (it may be restarting) to undo.
const UNDO_BUDGET: Duration = Duration::from_secs(75);

/// Which Open WebUI a probe talks to: the scenario client with the `openwebui` block.
pub struct Site {
    pub client: String,
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
        let undoer: Undoer = Arc::new(move |todo: Vec<Pending>| {
            let (deployment, scenario, client, signin) =
                (deployment.clone(), scenario.clone(), client.clone(), signin.clone());
            Box::pin(async move {
                // Ctrl-C may land mid-restart: wait for the container that answers now.
                let started = std::time::Instant::now();
                let mut last = vec![format!("no running Open WebUI container to undo {} change(s) in", todo.len())];
                while started.elapsed() < UNDO_BUDGET {
                    deployment.refresh().await;
                    if let Ok(target) = client_target(&deployment.topology(), &scenario, &client) {
                        let (todo, signin) = (todo.clone(), signin.clone());
                        let job = move |_view: Rc<NsView>| async move {
                            let api =
                                Api::new(&signin.url, &signin.limits, &signin.redactor).map_err(|e| e.to_string())?;
                            wait_ready(&api, UNDO_BUDGET).await?;
                            let (api, admin) = signin.open().await.map_err(|e| e.to_string())?;
                            let mut left = Vec::new();
                            for p in &todo {
                                left.extend(ephemeral::undo(&api, &admin, p).await);
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

pub fn api_attempt(what: &str, e: &ApiError) -> Attempt {
    let reason = format!("{what}: {e}");
    if e.is_not_ready() { Attempt::not_ready(reason, vec![]) } else { Attempt::fail(reason, vec![]) }
}

fn warnings(left: Vec<String>) -> Vec<String> {
    left.into_iter().map(|l| format!("warning: {l}")).collect()
}

pub struct Connections {
    pub site: Site,
    pub desired: Desired,
}

impl Probe for Connections {
    fn run<'a>(&'a self, ctx: &'a RunContext) -> BoxFuture<'a, Attempt> {
        Box::pin(async move {
            let _shared = EXCLUSIVE.read().await;
            let managed: Vec<String> = self.desired.connections.iter().map(|c| c.provider.clone()).collect();
            let job = |ns: Rc<NsView>, signin: Signin| async move {
                let (api, admin) = signin.open().await?;
                let view = gather::admin_view(&api, &admin, &signin.credentials).await?;
                let resolved = resolve_unmanaged(&ns, &view, &managed).await;
                Ok((view, resolved))
            };
            let (mut view, resolved) = match self.site.run(ctx, "reading the admin view", job).await {
                Ok(v) => v,
                Err(attempt) => return attempt,
            };
            if let Some(deployment) = &ctx.deployment {
                view.destinations = owned_destinations(&deployment.topology(), resolved);
            }
            let managed: Vec<&str> = self.desired.connections.iter().map(|c| c.provider.as_str()).collect();
            let evidence = view
                .connections
                .iter()
                .map(|c| {
                    let managed = c.id.as_deref().is_some_and(|id| managed.contains(&id));
                    format!("{}: {}", if managed { "connection" } else { "unmanaged" }, c.describe(&view.groups))
                })
                .collect::<Vec<_>>();
            let evidence = if evidence.is_empty() { vec!["connection: none".to_string()] } else { evidence };
            Attempt::from_findings(judge_connections(&view, &self.desired), evidence)
        })
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
        let Ok(url) = reqwest::Url::parse(&full_url(c)) else { continue };
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

pub struct Reach {
    pub site: Site,
    pub provider: String,
}

impl Probe for Reach {
    fn run<'a>(&'a self, ctx: &'a RunContext) -> BoxFuture<'a, Attempt> {
        Box::pin(async move {
            let _shared = EXCLUSIVE.read().await;
            let provider = self.provider.clone();
            let job = |_: Rc<NsView>, signin: Signin| async move {
                let (api, admin) = signin.open().await?;
                gather::specs(&api, &admin, &provider).await
            };
            let seen = match self.site.run(ctx, "asking Open WebUI for the tools", job).await {
                Ok(s) => s,
                Err(attempt) => return attempt,
            };
            let allowlist = &ctx.scenario.provider(&self.provider).expect("planned").tools.allowlist;
            let evidence = vec![format!(
                "GET /api/v1/tools/id/server:mcp:{}/specs as the admin: {} {}",
                self.provider,
                seen.status,
                seen.tools.as_ref().map_or(seen.detail.clone(), |t| format!("[{}]", t.join(", ")))
            )];
            Attempt::from_findings(judge_reach(&self.provider, &seen, allowlist), evidence)
        })
    }
}

pub struct ToolCall {
    pub site: Site,
    pub provider: String,
    pub group: String,
    pub model: String,
    pub read: ReadSpec,
}

impl Probe for ToolCall {
    fn run<'a>(&'a self, ctx: &'a RunContext) -> BoxFuture<'a, Attempt> {
        Box::pin(async move {
            let _shared = EXCLUSIVE.read().await;
            let (provider, group, model) = (self.provider.clone(), self.group.clone(), self.model.clone());
            let (tool, arguments) = (format!("{}_{}", self.provider, self.read.tool), self.read.arguments.clone());
            let job = move |_: Rc<NsView>, signin: Signin| async move {
                let (api, admin) = signin.open().await?;
                let eph = Ephemeral::new(&api, &admin);
                let seen = async {
                    let user = eph.user(&format!("call-{provider}")).await?;
                    let label = format!("{} in `{group}`", user.label);
                    match group_ids(&gather::groups(&api, &admin).await?, &group).first() {
                        Some(gid) => gather::add_member(&api, &admin, gid, &user.id).await?,
                        None => {
                            return Ok(ChatSeen {
                                user: label,
                                tool: tool.clone(),
                                reply: None,
                                done: false,
                                waited_ms: 0,
                                error: Some(format!("group `{group}` does not exist in Open WebUI")),
                            });
                        }
                    }
                    let ask = ToolCallAsk { user: label, model, server: provider, tool: tool.clone(), arguments };
                    Ok(gather::chat_tool_call(&api, &user.token, &ask, CHAT_BUDGET).await)
                }
                .await;
                let left = eph.cleanup().await;
                seen.map(|s| (s, left))
            };
            let (seen, left) = match self.site.run(ctx, "running a chat with a tool call", job).await {
                Ok(s) => s,
                Err(attempt) => return attempt,
            };
            let mut evidence = vec![format!(
                "{} asked {} to call {}: {} after {} ms{}",
                seen.user,
                self.model,
                seen.tool,
                seen.reply.as_deref().map_or("no reply".to_string(), |r| format!("reply {r:?}")),
                seen.waited_ms,
                seen.error.as_deref().map_or(String::new(), |e| format!(" ({e})"))
            )];
            evidence.extend(warnings(left));
            Attempt::from_findings(judge_tool_call(&self.provider, &seen, &self.read.expect), evidence)
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

/// One view of one user, and what it must show.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Phase {
    /// "" or e.g. "after the last group was removed: ".
    pub when: String,
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
            findings.extend(judge_view(&p.view, &p.expected, &p.when));
        } else {
            let visible = p.view.visible();
            for id in p.expected.difference(&visible) {
                findings.push(
                    Finding::new(FindingKind::AccessDrift, format!("{}{}: `{id}` is not usable", p.when, p.view.user))
                        .fact("server", id),
                );
            }
        }
    }
    findings
}

pub struct Access {
    pub site: Site,
    pub desired: Desired,
    pub case: Case,
}

impl Probe for Access {
    fn run<'a>(&'a self, ctx: &'a RunContext) -> BoxFuture<'a, Attempt> {
        Box::pin(async move {
            let _shared = EXCLUSIVE.read().await;
            let webui = self.site.webui(ctx);
            let wrong_app: Vec<String> = webui
                .groups
                .iter()
                .filter(|(p, _)| self.desired.forbidden.contains_key(*p))
                .map(|(_, g)| g.clone())
                .collect();
            let plan = super::access::AccessPlan {
                case: self.case,
                desired: self.desired.clone(),
                wrong_app,
                oidc: webui.oidc.clone().map(|o| {
                    let bearer = ctx.scenario.secret(&o.control_credential).clone();
                    (o, bearer)
                }),
            };
            let job = move |view: Rc<NsView>, signin: Signin| async move { plan.observe(&view, &signin).await };
            let seen = match self.site.run(ctx, "observing group access", job).await {
                Ok(s) => s,
                Err(attempt) => return attempt,
            };
            let mut evidence: Vec<String> = seen.notes.clone();
            evidence.extend(seen.phases.iter().map(|p| format!("{}{}", p.when, p.view.evidence())));
            evidence.extend(warnings(seen.left.clone()));
            if let Some(problem) = &seen.problem {
                return Attempt::failed(vec![Finding::new(FindingKind::CannotBeJudged, problem.clone())], evidence);
            }
            Attempt::from_findings(judge_phases(&seen.phases), evidence)
        })
    }
}

pub struct Restart {
    pub site: Site,
    pub desired: Desired,
}

impl Probe for Restart {
    fn run<'a>(&'a self, ctx: &'a RunContext) -> BoxFuture<'a, Attempt> {
        Box::pin(async move {
            let _alone = EXCLUSIVE.write().await;
            restart::run(&self.site, &self.desired, ctx).await
        })
    }
}

/// The first declared connection's id, for cases that need one granted server.
pub fn first_granted(desired: &Desired) -> Option<(String, String)> {
    desired.connections.first().map(|c| (c.provider.clone(), c.group.clone()))
}

pub fn json_list(v: &Value) -> Vec<Value> {
    v.get("TOOL_SERVER_CONNECTIONS").and_then(Value::as_array).cloned().unwrap_or_default()
}
