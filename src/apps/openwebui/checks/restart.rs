//! `openwebui::restart_convergence`: drift Open WebUI's runtime state through the admin
//! API (a rogue connection, one dropped, one granted to the wrong group), restart only
//! its container through the engine, wait for `/ready`, and expect the declared
//! connections and every user's view back — equal to the state before the drift.
//!
//! Three steps in two namespaces: before and drift in the old container, the restart from
//! cordon's own, the after-view and the cleanup in the new container. What is pending
//! between them (users, the drift) is in the Ctrl-C handler's list all along.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use futures_util::future::BoxFuture;
use serde_json::{Value, json};

use super::Signin;
use super::connections::judge_connections;
use super::judge::{Desired, judge_view};
use super::probes::{ConnectionsSeen, Site, json_list, observe_connections};
use crate::apps::openwebui::api::{Api, ApiError, Token, wait_ready};
use crate::apps::openwebui::ephemeral::{self, Ephemeral};
use crate::apps::openwebui::gather::{self, group_ids};
use crate::apps::openwebui::observe::{AdminView, UserView};
use crate::check::{Probe, RunContext};
use crate::engine::Engine;
use crate::model::{Attempt, Finding, FindingKind};

/// Seconds the engine gives Open WebUI to stop before it kills it.
const STOP_TIMEOUT: Duration = Duration::from_secs(10);

/// One ephemeral user whose view is compared across the restart.
#[derive(Clone, Debug)]
pub struct Watched {
    pub label: String,
    pub token: Token,
    pub expected: BTreeSet<String>,
}

/// What was seen around a restart. The raw connection list (it holds keys) is never kept
/// here: only typed views.
#[derive(Clone, Debug, Default)]
pub struct RestartSeen {
    pub before: AdminView,
    pub drifted: AdminView,
    pub drift: Vec<String>,
    pub after: AdminView,
    pub views_before: Vec<(UserView, BTreeSet<String>)>,
    pub views_after: Vec<(UserView, BTreeSet<String>)>,
}

/// Pure: the drift must have taken, and everything after the restart must equal the
/// declared state and the state before the drift.
pub fn judge_restart(seen: &RestartSeen, desired: &Desired) -> Vec<Finding> {
    let drift = |template: &'static str| Finding::new(FindingKind::RestartDrift, template);
    if judge_connections(&seen.drifted, desired).is_empty() {
        return vec![
            Finding::new(
                FindingKind::CannotBeJudged,
                "the drift made through the admin API did not show in the admin view: the restart would prove nothing",
            )
            .fact("phase", "drift"),
        ];
    }
    // The same judgement as `openwebui::connections`, on what Open WebUI holds now.
    let mut findings: Vec<Finding> = judge_connections(&seen.after, desired)
        .into_iter()
        .map(|f| f.reclassified(FindingKind::RestartDrift).prefixed("after the restart: "))
        .collect();
    let (before, after) = (described(&seen.before), described(&seen.after));
    for c in after.difference(&before) {
        findings.push(
            drift("after the restart Open WebUI holds {gained}, which it did not hold before the drift")
                .fact("gained", c),
        );
    }
    for c in before.difference(&after) {
        findings.push(drift("after the restart Open WebUI no longer holds {lost}").fact("lost", c));
    }
    for ((after, expected), (before, _)) in seen.views_after.iter().zip(&seen.views_before) {
        findings.extend(
            judge_view(after, expected, "after the restart: ")
                .into_iter()
                .map(|f| f.reclassified(FindingKind::RestartDrift).fact("user", &after.user)),
        );
        if after.visible() != before.visible() {
            let show = |v: &UserView| v.visible().into_iter().collect::<Vec<_>>().join(", ");
            findings.push(
                drift("{user}: sees [{servers}] after the restart, [{servers_before}] before the drift")
                    .fact("user", &after.user)
                    .fact("servers", show(after))
                    .fact("servers_before", show(before)),
            );
        }
    }
    findings
}

/// Each connection as one line (grants by group name, the key as which credential).
fn described(view: &AdminView) -> BTreeSet<String> {
    view.connections.iter().map(|c| c.describe(&view.groups)).collect()
}

/// The drift: drop the first declared connection, grant the second to the first's group,
/// and add a rogue connection everyone may use.
fn drift_of(
    original: &[Value],
    desired: &Desired,
    groups: &[crate::apps::openwebui::observe::GroupSeen],
) -> (Vec<Value>, Vec<String>) {
    let id_of = |v: &Value| v.pointer("/info/id").and_then(Value::as_str).map(str::to_string);
    let mut list: Vec<Value> = original.to_vec();
    let mut said = Vec::new();
    if let Some(first) = desired.connections.first() {
        list.retain(|c| id_of(c).as_deref() != Some(first.provider.as_str()));
        said.push(format!("dropped connection `{}`", first.provider));
        if let (Some(second), Some(gid)) = (desired.connections.get(1), group_ids(groups, &first.group).first()) {
            for c in list.iter_mut().filter(|c| id_of(c).as_deref() == Some(second.provider.as_str())) {
                c["config"]["access_grants"] =
                    json!([{"principal_type": "group", "principal_id": gid, "permission": "read"}]);
                said.push(format!("granted connection `{}` to `{}` instead", second.provider, first.group));
            }
        }
    }
    let rogue = ephemeral::name("rogue");
    list.push(json!({
        "type": "mcp", "url": "http://cordon-rogue.invalid/mcp", "path": "", "auth_type": "none", "key": "",
        "config": {"enable": true, "access_grants": [{"principal_type": "user", "principal_id": "*", "permission": "read"}]},
        "info": {"id": rogue, "name": rogue, "description": "made by cordon; a restart must remove it"},
    }));
    said.push(format!("added a rogue connection `{rogue}` every user may use"));
    (list, said)
}

struct Before {
    seen: RestartSeen,
    watched: Vec<Watched>,
    ids: BTreeSet<String>,
}

async fn before_and_drift(
    api: &Api,
    admin: &Token,
    eph: &Ephemeral,
    signin: &Signin,
    desired: &Desired,
) -> Result<Before, ApiError> {
    let before = gather::admin_view(api, admin, &signin.credentials).await?;
    let mut ids = before.server_ids();
    ids.extend(desired.connections.iter().map(|c| c.provider.clone()));
    let mut watched = Vec::new();
    for want in &desired.connections {
        let user = eph.user(&format!("restart-{}", want.provider)).await?;
        if let Some(gid) = group_ids(&before.groups, &want.group).first() {
            gather::add_member(api, admin, gid, &user.id).await?;
        }
        watched.push(Watched {
            label: format!("{} in `{}`", user.label, want.group),
            token: user.token,
            expected: [want.provider.clone()].into(),
        });
    }
    let nobody = eph.user("restart-none").await?;
    watched.push(Watched {
        label: format!("{} in no group", nobody.label),
        token: nobody.token,
        expected: BTreeSet::new(),
    });
    let mut views_before = Vec::new();
    for w in &watched {
        views_before.push((gather::user_view(api, &w.token, &w.label, &ids).await?, w.expected.clone()));
    }
    let raw = api.json(reqwest::Method::GET, "/api/v1/configs/tool_servers", admin, None).await?;
    let original = json_list(&raw);
    let (drifted_list, drift) = drift_of(&original, desired, &before.groups);
    ephemeral::refuse_if_interrupted("/api/v1/configs/tool_servers")?;
    eph.drifting(Value::Array(original));
    let body = json!({"TOOL_SERVER_CONNECTIONS": drifted_list});
    api.json(reqwest::Method::POST, "/api/v1/configs/tool_servers", admin, Some(&body)).await?;
    let drifted = gather::admin_view(api, admin, &signin.credentials).await?;
    Ok(Before { seen: RestartSeen { before, drifted, drift, views_before, ..Default::default() }, watched, ids })
}

pub async fn run(site: &Site, desired: &Desired, ctx: &RunContext) -> Attempt {
    let d = desired.clone();
    let job = move |_view, signin: Signin| async move {
        let (api, admin) = signin.open().await?;
        let eph = Ephemeral::new(&api, &admin);
        match before_and_drift(&api, &admin, &eph, &signin, &d).await {
            Ok(before) => Ok((before, eph.detach())),
            Err(e) => {
                eph.cleanup().await;
                Err(e)
            }
        }
    };
    let (before, key) = match site.run(ctx, "drifting Open WebUI before the restart", job).await {
        Ok(x) => x,
        Err(attempt) => return attempt,
    };
    let mut evidence: Vec<String> = before.seen.drift.iter().map(|d| format!("drift: {d}")).collect();
    let restarted = restart_container(site, ctx).await;
    // The cleanup runs in whatever container answers now, restarted or not.
    let managed = desired.managed();
    let (after, left, waited) =
        after_restart(site, ctx, key, before.watched, before.ids, described(&before.seen.before), managed).await;
    match &restarted {
        Ok(took) => evidence
            .push(format!("restarted the Open WebUI container through the engine in {:.1}s", took.as_secs_f64())),
        Err(e) => evidence.push(format!("restart failed: {e}")),
    }
    evidence.extend(left.into_iter().map(|l| format!("warning: {l}")));
    let (after_view, views_after, ready) = match (restarted, after) {
        (Err(e), _) => return Attempt::not_ready(format!("the engine could not restart Open WebUI: {e}"), evidence),
        (Ok(_), Err(reason)) => return Attempt::not_ready(reason, evidence),
        (Ok(_), Ok((seen, views, ready))) => (seen.placed(ctx), views, ready),
    };
    evidence.push(format!(
        "/ready answered 200 {:.1}s after the restart ({:.1}s waited in all)",
        ready.as_secs_f64(),
        waited.as_secs_f64()
    ));
    let seen = RestartSeen { after: after_view, views_after, ..before.seen };
    evidence.extend(seen.after.evidence().into_iter().map(|l| format!("after the restart: {l}")));
    evidence.extend(seen.views_after.iter().map(|(v, _)| format!("after the restart: {}", v.evidence())));
    Attempt::from_findings(judge_restart(&seen, desired), evidence)
}

async fn restart_container(site: &Site, ctx: &RunContext) -> Result<Duration, String> {
    let (_, target) = site.target(ctx).map_err(|_| "no running Open WebUI container".to_string())?;
    let engine = Engine::connect().await.map_err(|e| e.to_string())?;
    let started = Instant::now();
    engine.restart(&target.id, STOP_TIMEOUT).await.map_err(|e| e.to_string())?;
    Ok(started.elapsed())
}

type After = (ConnectionsSeen, Vec<(UserView, BTreeSet<String>)>, Duration);

/// Waits for the new container and its `/ready`, observes, and undoes what is pending.
async fn after_restart(
    site: &Site,
    ctx: &RunContext,
    key: u64,
    watched: Vec<Watched>,
    ids: BTreeSet<String>,
    before: BTreeSet<String>,
    managed: Vec<String>,
) -> (Result<After, String>, Vec<String>, Duration) {
    let started = Instant::now();
    let deadline = ctx.clock.deadline_at();
    let mut last = String::from("no attempt yet");
    while Instant::now() < deadline {
        if site.target(ctx).is_err() {
            if let Some(d) = &ctx.deployment {
                d.refresh().await;
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
            continue;
        }
        let budget = deadline.saturating_duration_since(Instant::now());
        let (watched, ids, before, managed) = (watched.clone(), ids.clone(), before.clone(), managed.clone());
        let job = move |ns: std::rc::Rc<crate::netns::NsView>, signin: Signin| async move {
            let api = Api::new(&signin.url, &signin.limits, &signin.redactor)?;
            let ready = wait_ready(&api, budget).await.map_err(|detail| ApiError::Unreachable {
                method: "GET".into(),
                path: "/ready".into(),
                detail,
            })?;
            let (api, admin) = signin.open().await?;
            let eph = Ephemeral::resume(&api, &admin, key);
            let observed = async {
                let after = observe_connections(&ns, &api, &admin, &signin, &managed).await?;
                let mut views = Vec::new();
                for w in &watched {
                    views.push((gather::user_view(&api, &w.token, &w.label, &ids).await?, w.expected.clone()));
                }
                Ok::<_, ApiError>((after, views))
            }
            .await;
            // A restart that reloaded the declared state undid the drift; one that did not
            // leaves it for the cleanup to put back.
            if observed.as_ref().is_ok_and(|(after, _)| described(after.view()) == before) {
                eph.drift_undone();
            }
            let left = eph.cleanup().await;
            Ok::<_, ApiError>((observed, ready, left))
        };
        match site.run(ctx, "waiting for Open WebUI after the restart", job).await {
            Ok((Ok((after, views)), ready, left)) => return (Ok((after, views, ready)), left, started.elapsed()),
            Ok((Err(e), _, left)) => {
                return (Err(format!("observing after the restart: {e}")), left, started.elapsed());
            }
            Err(attempt) => {
                last = match attempt {
                    Attempt::NotReady { reason, .. } | Attempt::Skip { reason } => reason,
                    Attempt::Fail { findings, .. } => crate::model::reason_of(&findings),
                    Attempt::Pass { .. } => String::new(),
                };
                if let Some(d) = &ctx.deployment {
                    d.refresh().await;
                }
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
        }
    }
    (Err(format!("Open WebUI did not come back before the suite's deadline: {last}")), vec![], started.elapsed())
}

pub struct Restart {
    pub site: Site,
    pub desired: Desired,
}

impl Probe for Restart {
    fn run<'a>(&'a self, ctx: &'a RunContext) -> BoxFuture<'a, Attempt> {
        Box::pin(async move {
            let _alone = self.site.turns.alone().await;
            run(&self.site, &self.desired, ctx).await
        })
    }
}
