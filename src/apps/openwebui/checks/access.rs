//! `openwebui::access::*`: ephemeral users in chosen groups, and what each of them sees.
//! Runs in the Open WebUI container's namespace; every user and group it makes is deleted
//! before it returns (and by the Ctrl-C handler if it never gets there).

use std::collections::BTreeSet;
use std::rc::Rc;

use futures_util::future::BoxFuture;

use super::Signin;
use super::judge::Desired;
use super::probes::{Case, Phase, Site, When, first_granted, judge_phases, oidc_of};
use crate::apps::clientapp::warnings;
use crate::apps::openwebui::api::{Api, ApiError, Token};
use crate::apps::openwebui::ephemeral::{self, Ephemeral};
use crate::apps::openwebui::gather::{self, group_ids};
use crate::apps::openwebui::idp_admin::Admin;
use crate::apps::openwebui::observe::GroupSeen;
use crate::apps::openwebui::oidc::{self, Login};
use crate::check::{Probe, RunContext, settled};
use crate::config::Oidc;
use crate::model::{Attempt, Finding, FindingKind};
use crate::netns::NsView;
use crate::secret::Secret;

pub struct AccessPlan {
    pub case: Case,
    pub desired: Desired,
    /// Group names of apps Open WebUI must not serve.
    pub wrong_app: Vec<String>,
    pub oidc: Option<(Oidc, Secret)>,
}

#[derive(Debug, Default)]
pub struct AccessSeen {
    pub phases: Vec<Phase>,
    pub notes: Vec<String>,
    /// Why the case could not be set up (a missing group, a failed login).
    pub problem: Option<Finding>,
    /// What could not be cleaned up.
    pub left: Vec<String>,
}

struct Work<'a> {
    api: &'a Api,
    admin: &'a Token,
    eph: &'a Ephemeral,
    groups: Vec<GroupSeen>,
    ids: BTreeSet<String>,
    seen: AccessSeen,
}

impl AccessPlan {
    pub async fn observe(self, view: &NsView, signin: &Signin) -> Result<AccessSeen, ApiError> {
        let (api, admin) = signin.open().await?;
        let eph = Ephemeral::new(&api, &admin);
        let outcome = async {
            let admin_view = gather::admin_view(&api, &admin, &signin.credentials).await?;
            let mut ids = admin_view.server_ids();
            ids.extend(self.desired.connections.iter().map(|c| c.provider.clone()));
            let mut work = Work {
                api: &api,
                admin: &admin,
                eph: &eph,
                groups: admin_view.groups,
                ids,
                seen: AccessSeen::default(),
            };
            self.run_case(&mut work, view, signin).await?;
            Ok::<_, ApiError>(work.seen)
        }
        .await;
        let mut left = eph.cleanup().await;
        if let (Case::LastGroupRemovedOidc, Some((o, secret))) = (self.case, &self.oidc)
            && let Ok(idp) = oidc::Idp::locate(view, o.admin.url()).await
        {
            let admin = Admin { idp: &idp, how: &o.admin, secret, limits: &signin.limits, redactor: &signin.redactor };
            if let Err(e) = admin.forget(&ephemeral::email("oidc")).await {
                left.push(format!("could not remove the test user at the identity provider: {e}"));
            }
        }
        let mut seen = outcome?;
        seen.left.append(&mut left);
        Ok(seen)
    }

    async fn run_case(&self, w: &mut Work<'_>, view: &NsView, signin: &Signin) -> Result<(), ApiError> {
        match self.case {
            Case::OneOfSeveral => {
                let other = w.eph.group("other").await?;
                w.seen
                    .notes
                    .push(format!("each user is also in {}, a group that grants nothing", ephemeral::name("other")));
                for want in &self.desired.connections {
                    let Some(gid) = w.group(&want.group) else { return Ok(()) };
                    let user = w.eph.user(&format!("one-{}", want.provider)).await?;
                    gather::add_member(w.api, w.admin, &gid, &user.id).await?;
                    gather::add_member(w.api, w.admin, &other, &user.id).await?;
                    let label = format!("{} in `{}`", user.label, want.group);
                    w.phase(When::default(), &user.token, &label, [want.provider.clone()], true).await?;
                }
            }
            Case::NoGroup => {
                let user = w.eph.user("none").await?;
                w.phase(When::default(), &user.token, &format!("{} in no group", user.label), [], true).await?;
            }
            Case::WrongApp => {
                let user = w.eph.user("wrong-app").await?;
                let mut names = Vec::new();
                for name in &self.wrong_app {
                    let gid = match group_ids(&w.groups, name).first() {
                        Some(id) => id.clone(),
                        None => {
                            w.seen.notes.push(format!("Open WebUI has no group `{name}`; an ephemeral one stands in"));
                            w.eph.group("wrong-app").await?
                        }
                    };
                    gather::add_member(w.api, w.admin, &gid, &user.id).await?;
                    names.push(format!("`{name}`"));
                }
                if names.is_empty() {
                    let gid = w.eph.group("wrong-app").await?;
                    gather::add_member(w.api, w.admin, &gid, &user.id).await?;
                    names.push(format!("`{}`", ephemeral::name("wrong-app")));
                    w.seen
                        .notes
                        .push("the scenario names no group of another app; an ephemeral group stands in".into());
                }
                let label = format!("{} in {}", user.label, names.join(", "));
                w.phase(When::default(), &user.token, &label, [], true).await?;
            }
            Case::LastGroupRemoved => {
                let Some((provider, group)) = first_granted(&self.desired) else { return w.nothing_granted() };
                let Some(gid) = w.group(&group) else { return Ok(()) };
                let user = w.eph.user("last").await?;
                gather::add_member(w.api, w.admin, &gid, &user.id).await?;
                let label = format!("{} in `{group}`", user.label);
                w.phase(When::default(), &user.token, &label, [provider.clone()], false).await?;
                gather::remove_member(w.api, w.admin, &gid, &user.id).await?;
                let when = When::new("after `{group}`, its last group, was removed through the admin API: ")
                    .fact("group", &group);
                w.phase(when, &user.token, &user.label, [], true).await?;
            }
            Case::LastGroupRemovedOidc => self.oidc_case(w, view, signin).await?,
        }
        Ok(())
    }

    async fn oidc_case(&self, w: &mut Work<'_>, view: &NsView, signin: &Signin) -> Result<(), ApiError> {
        let Some((provider, group)) = first_granted(&self.desired) else { return w.nothing_granted() };
        let Some((o, secret)) = &self.oidc else { return Ok(()) };
        let email = ephemeral::email("oidc");
        let idp = match oidc::Idp::locate(view, o.admin.url()).await {
            Ok(idp) => idp,
            Err(e) => {
                w.seen.problem = Some(
                    cannot("cannot find the identity provider of {url}: {error}")
                        .fact("url", o.admin.url())
                        .fact("error", e),
                );
                return Ok(());
            }
        };
        w.seen.notes.push(format!(
            "identity provider {} resolves from Open WebUI to [{}]",
            o.admin.url(),
            idp.addrs.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")
        ));
        let admin = Admin { idp: &idp, how: &o.admin, secret, limits: &signin.limits, redactor: &signin.redactor };
        w.eph.expect_user(&email);
        w.eph.expect_idp_user(&email);
        let login = Login { view, api: w.api, login_path: &o.login_path, idp: &idp, limits: &signin.limits };
        let steps = [
            (vec![group.clone()], "", false),
            (vec![], "after the identity provider emptied the groups claim and the user logged in again: ", true),
        ];
        for (claim, when, exact) in steps {
            let password = match admin.set_groups(&email, &claim).await {
                Ok(p) => p,
                Err(e) => {
                    w.seen.problem = Some(
                        cannot("cannot set the test user's groups at the identity provider: {error}").fact("error", e),
                    );
                    return Ok(());
                }
            };
            let (token, hops) = login.login(&format!("oidc {email}"), &email, password.as_ref()).await;
            w.seen.notes.push(format!("OIDC login with groups claim {claim:?}: {}", hops.join(", ")));
            let token = match token {
                Ok(t) => t,
                Err(e) => {
                    w.seen.problem = Some(
                        cannot("the OIDC login of {email} failed: {error}").fact("email", &email).fact("error", e),
                    );
                    return Ok(());
                }
            };
            let expected: Vec<String> = if exact { vec![] } else { vec![provider.clone()] };
            let label = format!("OIDC user {} (claim {claim:?})", ephemeral::name("oidc"));
            w.phase(When::new(when), &token, &label, expected, exact).await?;
        }
        Ok(())
    }
}

/// Why a case could not be set up, as a finding (the caller adds the facts `template` names).
fn cannot(template: &'static str) -> Finding {
    Finding::new(FindingKind::CannotBeJudged, template)
}

impl Work<'_> {
    /// The id of the one group named `name`, or the problem noted.
    fn group(&mut self, name: &str) -> Option<String> {
        match group_ids(&self.groups, name).as_slice() {
            [id] => Some(id.clone()),
            [] => {
                self.seen.problem = Some(cannot("group `{group}` does not exist in Open WebUI").fact("group", name));
                None
            }
            many => {
                self.seen.problem = Some(
                    cannot("{count} groups are named `{group}`: access cannot be set up")
                        .fact("count", many.len())
                        .fact("group", name),
                );
                None
            }
        }
    }

    fn nothing_granted(&mut self) -> Result<(), ApiError> {
        self.seen.problem = Some(cannot("the scenario grants Open WebUI no provider"));
        Ok(())
    }

    async fn phase(
        &mut self,
        when: When,
        token: &Token,
        label: &str,
        expected: impl IntoIterator<Item = String>,
        exact: bool,
    ) -> Result<(), ApiError> {
        let view = gather::user_view(self.api, token, label, &self.ids).await?;
        self.seen.phases.push(Phase { when, view, expected: expected.into_iter().collect(), exact });
        Ok(())
    }
}

/// `openwebui::access::<case>`: what each ephemeral user sees before and after a group change.
pub struct Access {
    pub site: Site,
    pub desired: Desired,
    pub case: Case,
}

impl Probe for Access {
    fn run<'a>(&'a self, ctx: &'a RunContext) -> BoxFuture<'a, Attempt> {
        settled(async move {
            let _shared = self.site.turns.shared().await;
            let webui = self.site.webui(ctx);
            let wrong_app: Vec<String> = webui
                .groups
                .iter()
                .filter(|(p, _)| self.desired.forbidden.contains_key(*p))
                .map(|(_, g)| g.clone())
                .collect();
            let plan =
                AccessPlan { case: self.case, desired: self.desired.clone(), wrong_app, oidc: oidc_of(ctx, webui) };
            let job = move |view: Rc<NsView>, signin: Signin| async move { plan.observe(&view, &signin).await };
            let seen = self.site.run(ctx, "observing group access", job).await?;
            let mut evidence: Vec<String> = seen.notes.clone();
            evidence.extend(seen.phases.iter().map(|p| format!("{}{}", p.when.text(), p.view.evidence())));
            evidence.extend(warnings(seen.left.clone()));
            if let Some(problem) = &seen.problem {
                return Ok(Attempt::failed(vec![problem.clone().fact("phase", "setup")], evidence));
            }
            Ok(Attempt::from_findings(judge_phases(&seen.phases), evidence))
        })
    }
}
