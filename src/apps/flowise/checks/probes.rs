//! The probes of the `flowise` family: each gathers its observations through Flowise's
//! API in the Flowise container's namespace and hands them to a pure judge.

use std::collections::HashMap;
use std::rc::Rc;
use std::sync::LazyLock;
use std::time::Duration;

use futures_util::future::BoxFuture;

use super::judge::{Desired, judge_access, judge_registry, judge_run, judge_run_target};
use crate::apps::clientapp::{ClientApp, RunAsk as Ask, credential_index, run_evidence, run_signed_in, warnings};
use crate::apps::flowise::api::Session;
use crate::apps::flowise::ephemeral::{self, Ephemeral};
use crate::apps::flowise::gather::{self, RunAsk};
use crate::apps::webapp::{ApiError, WebApp};
use crate::check::{Probe, RunContext, settled};
use crate::config::{Flowise, ReadSpec};
use crate::mcp::Limits;
use crate::model::Attempt;
use crate::netns::NsView;
use crate::secret::{Redactor, Secret};

/// How long a run of a chatflow may take: the model, Flowise's MCP client (whose own
/// request timeout is 60 s) and the model again.
const RUN_BUDGET: Duration = Duration::from_secs(90);
const UNDO_BUDGET: Duration = Duration::from_secs(60);

/// Which Flowise a probe talks to, and everything a job in its namespace needs, owned.
#[derive(Clone)]
pub struct Site {
    pub client: String,
}

#[derive(Clone)]
struct Login {
    flowise: Flowise,
    limits: Limits,
    redactor: Redactor,
    password: Secret,
}

impl Login {
    /// The admin session, one per Flowise for the whole run: Flowise 3.1.4 on SQLite
    /// answers concurrent sign-ins with 500 ("cannot start a transaction within a
    /// transaction"), so checks that start at once share the first one's session (a
    /// tokio mutex works across their runtimes).
    async fn open(&self) -> Result<Session, ApiError> {
        static SESSIONS: LazyLock<tokio::sync::Mutex<HashMap<String, Session>>> = LazyLock::new(Default::default);
        let app = WebApp::new(&self.flowise.url, &self.limits)?;
        let key = format!("{} {}", self.flowise.url, self.flowise.admin_email);
        let mut sessions = SESSIONS.lock().await;
        if let Some(s) = sessions.get(&key) {
            let s = s.on(app.clone());
            if s.send(reqwest::Method::GET, "/api/v1/custom-mcp-servers", None).await?.status == 200 {
                return Ok(s);
            }
            sessions.remove(&key);
        }
        let session = Session::open(&app, &self.flowise.admin_email, &self.password, &self.redactor).await?;
        sessions.insert(key, session.clone());
        Ok(session)
    }
}

impl ClientApp for Login {
    const NAME: &'static str = "Flowise";
    type Session = (Session, Redactor);
    type Pending = ephemeral::Pending;

    fn for_client(ctx: &RunContext, client: &str) -> Self {
        let client = ctx.scenario.clients.iter().find(|c| c.id == client).expect("planned from the scenario");
        let flowise = client.flowise.clone().expect("planned for the client with the block");
        Login {
            password: ctx.scenario.secret(&flowise.admin_password).clone(),
            flowise,
            limits: ctx.suite.limits.clone(),
            redactor: ctx.redactor.clone(),
        }
    }

    async fn sign_in(&self) -> Result<Self::Session, ApiError> {
        Ok((self.open().await?, self.redactor.clone()))
    }

    fn take_pending() -> Vec<Self::Pending> {
        ephemeral::take_all()
    }

    async fn undo(&self, pending: Vec<Self::Pending>) -> Result<Vec<String>, String> {
        let session = tokio::time::timeout(UNDO_BUDGET, self.open())
            .await
            .map_err(|_| "Flowise did not answer the sign-in".to_string())?
            .map_err(|e| e.to_string())?;
        let mut left = Vec::new();
        for p in &pending {
            left.extend(ephemeral::undo(&session, p).await);
        }
        Ok(left)
    }

    /// Flowise 3.1.4 on SQLite answers concurrent writes (a prediction saving its chat
    /// while another check makes an API key) with 500 `SQLITE_BUSY: database is locked`.
    fn one_at_a_time() -> Option<&'static tokio::sync::Mutex<()>> {
        static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
        Some(&ONE_AT_A_TIME)
    }
}

impl Site {
    /// Runs `job` with an admin session in the Flowise container's namespace, one check
    /// at a time.
    async fn run<F, Fut, T>(&self, ctx: &RunContext, what: &str, job: F) -> Result<T, Attempt>
    where
        F: FnOnce(Rc<NsView>, Session, Redactor) -> Fut + Send + 'static,
        Fut: std::future::Future<Output = Result<T, ApiError>> + 'static,
        T: Send + 'static,
    {
        run_signed_in::<Login, _, _, _>(ctx, &self.client, what, move |view, (session, redactor)| {
            job(view, session, redactor)
        })
        .await
    }
}

/// `flowise::registry`: Flowise's custom MCP servers, variables and flows, read as its admin.
pub struct Registry {
    pub site: Site,
    pub desired: Desired,
}

impl Probe for Registry {
    fn run<'a>(&'a self, ctx: &'a RunContext) -> BoxFuture<'a, Attempt> {
        settled(async move {
            let credentials = credential_index(ctx);
            let job = move |_: Rc<NsView>, session: Session, _: Redactor| async move {
                gather::registry(&session, &credentials).await
            };
            let view = self.site.run(ctx, "reading Flowise's registry", job).await?;
            let prefix = &self.desired.prefix;
            let mut evidence: Vec<String> = view
                .entries
                .iter()
                .map(|e| {
                    let kind = if e.name.starts_with(prefix.as_str()) {
                        "entry"
                    } else {
                        "human-made entry (left alone unless a provider authorized it)"
                    };
                    format!("{kind}: {}", e.describe())
                })
                .collect();
            if view.entries.is_empty() {
                evidence.push("entry: none".into());
            }
            evidence.extend(view.variables.iter().map(|v| format!("variable `{}` ({})", v.name, v.kind)));
            let entry_name = |id: &String| {
                view.entries
                    .iter()
                    .find(|e| &e.id == id)
                    .map_or(format!("{id} (no such entry)"), |e| format!("`{}`", e.name))
            };
            evidence.extend(view.flows.iter().map(|f| {
                format!(
                    "{}: `{}` uses entries [{}] with tools [{}]",
                    f.kind.to_lowercase(),
                    f.name,
                    f.servers.iter().map(entry_name).collect::<Vec<_>>().join(", "),
                    f.actions.join(", ")
                )
            }));
            Ok(Attempt::from_findings(judge_registry(&view, &self.desired), evidence))
        })
    }
}

/// `flowise::tool_call::<provider>`: the managed flow run once, and what Flowise recorded of
/// the read it made.
pub struct ToolCall {
    pub site: Site,
    pub provider: String,
    pub prefix: String,
    /// The provider's origin: the entry the run goes through must point there.
    pub origin: String,
    pub read: ReadSpec,
    /// The read's argument whose value the result echoes, if any.
    pub nonce_argument: Option<String>,
}

impl Probe for ToolCall {
    fn run<'a>(&'a self, ctx: &'a RunContext) -> BoxFuture<'a, Attempt> {
        settled(async move {
            let name = format!("{}{}", self.prefix, self.provider);
            let asked = Ask::of(&self.read, self.nonce_argument.as_deref());
            let ask = RunAsk {
                chatflow: name.clone(),
                entry: name.clone(),
                question: asked.prompt.clone(),
                budget: RUN_BUDGET,
            };
            let job = move |_: Rc<NsView>, session: Session, redactor: Redactor| async move {
                let eph = Ephemeral::new(&session, &redactor);
                let seen = gather::run(&session, &ask, &eph).await;
                let left = eph.cleanup().await;
                seen.map(|s| (s, left))
            };
            let (seen, left) = self.site.run(ctx, "running the managed chatflow", job).await?;
            let asked_line = format!(
                "{} asked through {} {:?}: {} after {} ms",
                seen.chatflow,
                if seen.via.is_empty() { "-" } else { seen.via.as_str() },
                asked.prompt,
                seen.status.map_or("no answer".to_string(), |s| format!("answered {s}")),
                seen.waited_ms
            );
            let ran = seen
                .used
                .iter()
                .map(|u| format!("Flowise ran `{}` with {} -> {}", u.tool, u.input, u.output))
                .collect();
            let reply = seen.reply.as_deref().map(|r| ("the model replied", r));
            let evidence = run_evidence(asked_line, ran, reply, left);
            let mut findings = judge_run(&self.provider, &name, &seen, &self.read, asked.nonce.as_deref());
            findings.extend(judge_run_target(&self.provider, &name, &self.origin, &seen));
            Ok(Attempt::from_findings(findings, evidence))
        })
    }
}

/// `flowise::access`: Flowise's SSRF guard, and which API keys see the managed servers.
pub struct Access {
    pub site: Site,
    pub desired: Desired,
}

impl Probe for Access {
    fn run<'a>(&'a self, ctx: &'a RunContext) -> BoxFuture<'a, Attempt> {
        settled(async move {
            let prefix = self.desired.prefix.clone();
            let job = move |_: Rc<NsView>, session: Session, redactor: Redactor| async move {
                let eph = Ephemeral::new(&session, &redactor);
                let seen = gather::access(&session, &eph, &prefix).await;
                let left = eph.cleanup().await;
                seen.map(|s| (s, left))
            };
            let (view, left) = self.site.run(ctx, "observing Flowise's access rules", job).await?;
            let mut evidence: Vec<String> = view
                .guard
                .iter()
                .map(|g| format!("registering an MCP server at {}: {} {}", g.url, g.status, g.detail))
                .collect();
            if let Some(a) = &view.author {
                evidence.push(format!(
                    "a flow author's API key ({}, made by cordon and deleted): GET /api/v1/custom-mcp-servers {} [{}]; listServers {} [{}]",
                    a.permissions.join(", "),
                    a.list_status,
                    a.listed.join(", "),
                    a.load_method_status,
                    a.offered.join(", ")
                ));
            }
            evidence.push(format!(
                "API keys: {}",
                if view.keys.is_empty() {
                    "none".to_string()
                } else {
                    view.keys
                        .iter()
                        .map(|k| format!("`{}` ({})", k.name, k.permissions.join(", ")))
                        .collect::<Vec<_>>()
                        .join("; ")
                }
            ));
            evidence.push(format!("managed entries: [{}]", view.managed.join(", ")));
            evidence.push("users: the open-source edition has one organization, one workspace and its owner (Flowise's admin); workspace membership is an Enterprise feature and is not read".into());
            evidence.extend(warnings(left));
            Ok(Attempt::from_findings(judge_access(&view, &self.desired), evidence))
        })
    }
}
