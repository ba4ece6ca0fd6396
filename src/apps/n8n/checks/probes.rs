//! The probes of the `n8n` family: each gathers its observations through n8n's API in
//! the n8n container's namespace and hands them to pure judges.

use std::rc::Rc;
use std::time::Duration;

use futures_util::future::BoxFuture;

use super::judge::{
    ManagedSet, WantedClient, judge_client_config, judge_client_run, judge_server, judge_workflows, managed_workflow,
};
use crate::apps::clientapp::{ClientApp, RunAsk as Ask, credential_index, run_evidence, run_signed_in};
use crate::apps::n8n::api::N8nApi;
use crate::apps::n8n::ephemeral::{self, Ephemeral};
use crate::apps::n8n::gather::{self, RunAsk};
use crate::apps::n8n::observe::WorkflowSeen;
use crate::apps::webapp::{ApiError, WebApp};
use crate::check::{Probe, RunContext, settled};
use crate::config::{N8n, Provider};
use crate::mcp::Limits;
use crate::model::Attempt;
use crate::netns::NsView;
use crate::secret::Secret;

/// How long a run may take: the model, the MCP Client Tool's SSE session, the model.
const RUN_BUDGET: Duration = Duration::from_secs(90);

#[derive(Clone)]
pub struct Site {
    pub client: String,
}

#[derive(Clone)]
struct Access {
    n8n: N8n,
    limits: Limits,
    key: Secret,
}

impl Access {
    fn api(&self) -> Result<N8nApi, ApiError> {
        Ok(N8nApi::new(WebApp::new(&self.n8n.url, &self.limits)?, self.key.clone()))
    }
}

impl ClientApp for Access {
    const NAME: &'static str = "n8n";
    type Session = N8nApi;
    type Pending = ephemeral::RunMark;

    fn for_client(ctx: &RunContext, client: &str) -> Self {
        let client = ctx.scenario.clients.iter().find(|c| c.id == client).expect("planned from the scenario");
        let n8n = client.n8n.clone().expect("planned for the client with the block");
        Access { key: ctx.scenario.secret(&n8n.api_key).clone(), n8n, limits: ctx.suite.limits.clone() }
    }

    async fn sign_in(&self) -> Result<N8nApi, ApiError> {
        self.api()
    }

    fn take_pending() -> Vec<Self::Pending> {
        ephemeral::take_all()
    }

    /// Deletes the execution records the family's runs left.
    async fn undo(&self, pending: Vec<Self::Pending>) -> Result<Vec<String>, String> {
        let api = self.api().map_err(|e| e.to_string())?;
        Ok(ephemeral::undo(&api, &pending, ephemeral::INTERRUPTED_RECORD_WAIT).await)
    }
}

impl Site {
    async fn run<F, Fut, T>(&self, ctx: &RunContext, what: &str, job: F) -> Result<T, Attempt>
    where
        F: FnOnce(Rc<NsView>, N8nApi) -> Fut + Send + 'static,
        Fut: std::future::Future<Output = Result<T, ApiError>> + 'static,
        T: Send + 'static,
    {
        run_signed_in::<Access, _, _, _>(ctx, &self.client, what, job).await
    }
}

fn workflow_lines(workflows: &[WorkflowSeen], prefix: &str) -> Vec<String> {
    let mut out = Vec::new();
    for w in workflows.iter().filter(|w| w.name.starts_with(prefix)) {
        out.push(format!(
            "workflow `{}` ({}), webhook {:?}",
            w.name,
            if w.active { "active" } else { "inactive" },
            w.webhook
        ));
        out.extend(w.clients.iter().map(|n| format!("  {}", n.describe())));
    }
    out
}

/// `n8n::client::<provider>`: the provider's managed workflow, its MCP Client Tool nodes,
/// and one run of it through its webhook.
pub struct Client {
    pub site: Site,
    pub want: WantedClient,
    /// The read's argument whose value the result echoes, if any.
    pub nonce_argument: Option<String>,
}

impl Probe for Client {
    fn run<'a>(&'a self, ctx: &'a RunContext) -> BoxFuture<'a, Attempt> {
        settled(async move {
            let credentials = credential_index(ctx);
            let want = self.want.clone();
            let asked = self.want.read.as_ref().map(|r| Ask::of(r, self.nonce_argument.as_deref()));
            let (prompt, nonce) = asked.map(|a| (a.prompt, a.nonce)).unwrap_or_default();
            let question = prompt.clone();
            let job = move |_: Rc<NsView>, api: N8nApi| async move {
                let workflows = gather::workflows(&api, &credentials).await?;
                let config = judge_client_config(&workflows, &want);
                let run = match (&want.read, managed_workflow(&workflows, &want)) {
                    (Some(_), Ok(w)) if config.is_empty() => {
                        let ask = RunAsk { workflow: w.clone(), question, budget: RUN_BUDGET };
                        let eph = Ephemeral::new(&api);
                        let seen = gather::run(&api, &ask, &eph).await;
                        let left = eph.cleanup().await;
                        Some((seen?, left))
                    }
                    _ => None,
                };
                Ok((workflows, config, run))
            };
            let (workflows, mut findings, run) = self.site.run(ctx, "reading n8n's workflows", job).await?;
            let mut evidence = workflow_lines(&workflows, &self.want.prefix);
            match (&run, &self.want.read) {
                (Some((seen, left)), Some(read)) => {
                    let asked_line = format!(
                        "POST /webhook/{} asking {:?}: {} after {} ms{}",
                        managed_workflow(&workflows, &self.want)
                            .ok()
                            .and_then(|w| w.webhook.clone())
                            .unwrap_or_default(),
                        prompt,
                        seen.status.map_or("no answer".to_string(), |s| format!("answered {s}")),
                        seen.waited_ms,
                        seen.execution.as_ref().map(|e| format!(", execution {e} (deleted)")).unwrap_or_default()
                    );
                    let ran = seen
                        .calls
                        .iter()
                        .map(|c| {
                            format!(
                                "n8n ran `{}` through `{}`: {} -> {}",
                                c.tool,
                                c.node,
                                c.status,
                                c.error.clone().unwrap_or_else(|| c.output.clone())
                            )
                        })
                        .collect();
                    let reply = seen.reply.as_deref().map(|r| ("the agent answered", r));
                    evidence.extend(run_evidence(asked_line, ran, reply, left.clone()));
                    findings.extend(judge_client_run(&self.want, read, seen, nonce.as_deref()));
                }
                (None, None) => evidence
                    .push(format!("provider `{}` declares no `read`: the workflow was not run", self.want.provider)),
                _ => evidence.push("the workflow was not run: its configuration is already wrong".into()),
            }
            Ok(Attempt::from_findings(findings, evidence))
        })
    }
}

/// `n8n::server`: the MCP Server Trigger that serves the provider n8n is, and its endpoint.
pub struct Server {
    pub site: Site,
    pub provider: Provider,
}

impl Probe for Server {
    fn run<'a>(&'a self, ctx: &'a RunContext) -> BoxFuture<'a, Attempt> {
        settled(async move {
            let credentials = credential_index(ctx);
            let path = self.provider.url.path().to_string();
            let trigger_path =
                path.trim_start_matches('/').trim_start_matches("mcp/").trim_end_matches('/').to_string();
            let bearer = ctx.scenario.secret(&self.provider.credential).clone();
            let (transport, limits, disabled) =
                (self.provider.transport, ctx.suite.limits.clone(), self.provider.disabled);
            let job = move |_: Rc<NsView>, api: N8nApi| async move {
                let workflows = gather::workflows(&api, &credentials).await?;
                let exposure = if disabled {
                    None
                } else {
                    Some(gather::exposure(api.app.base(), &path, transport, &bearer, &limits).await)
                };
                Ok((workflows, exposure))
            };
            let (workflows, exposure) = self.site.run(ctx, "reading n8n's workflows", job).await?;
            let triggers: Vec<_> = workflows.iter().flat_map(|w| w.triggers.iter().map(move |t| (w, t))).collect();
            let mut evidence: Vec<String> = triggers
                .iter()
                .map(|(w, t)| {
                    format!(
                        "MCP Server Trigger `{}` (typeVersion {}) of workflow `{}` ({}): path `{}`, auth={} (credential {}), tool nodes [{}]",
                        t.node,
                        t.type_version,
                        w.name,
                        if w.active { "active" } else { "inactive" },
                        t.path,
                        t.authentication,
                        t.credential.as_deref().unwrap_or("none"),
                        t.tools.join(", ")
                    )
                })
                .collect();
            if triggers.is_empty() {
                evidence.push("MCP Server Trigger: none".into());
            }
            if let Some(e) = &exposure {
                evidence.push(match (&e.tools, &e.error) {
                    (Some(tools), _) => format!("{} lists [{}] to the provider's bearer", e.url, tools.join(", ")),
                    (None, Some(err)) => format!("{}: {err}", e.url),
                    _ => format!("{}: nothing", e.url),
                });
            }
            Ok(Attempt::from_findings(
                judge_server(&self.provider, &trigger_path, &triggers, exposure.as_ref()),
                evidence,
            ))
        })
    }
}

/// `n8n::workflows`: every managed workflow, whichever provider it names.
pub struct Workflows {
    pub site: Site,
    pub set: ManagedSet,
}

impl Probe for Workflows {
    fn run<'a>(&'a self, ctx: &'a RunContext) -> BoxFuture<'a, Attempt> {
        settled(async move {
            let credentials = credential_index(ctx);
            let job = move |_: Rc<NsView>, api: N8nApi| async move { gather::workflows(&api, &credentials).await };
            let workflows = self.site.run(ctx, "reading n8n's workflows", job).await?;
            let mut evidence = workflow_lines(&workflows, &self.set.prefix);
            let people = workflows.iter().filter(|w| !w.name.starts_with(&self.set.prefix)).count();
            evidence.push(format!(
                "{} workflow(s) under the managed prefix `{}`; {people} without it (a person's, left alone here)",
                workflows.len() - people,
                self.set.prefix
            ));
            Ok(Attempt::from_findings(judge_workflows(&workflows, &self.set), evidence))
        })
    }
}
