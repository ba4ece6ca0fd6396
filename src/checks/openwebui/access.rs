//! `openwebui::access::*`: ephemeral users in chosen groups, and what each of them sees.
//! Runs in the Open WebUI container's namespace; every user and group it makes is deleted
//! before it returns (and by the Ctrl-C handler if it never gets there).

use std::collections::BTreeSet;

use super::Signin;
use super::judge::Desired;
use super::probes::{Case, Phase, first_granted};
use crate::config::Oidc;
use crate::netns::NsView;
use crate::openwebui::api::{Api, ApiError, Token};
use crate::openwebui::ephemeral::{self, Ephemeral};
use crate::openwebui::gather::{self, group_ids};
use crate::openwebui::observe::GroupSeen;
use crate::openwebui::oidc::{self, Login};
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
    pub problem: Option<String>,
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
        if let (Case::LastGroupRemovedOidc, Some((o, bearer))) = (self.case, &self.oidc) {
            let _ = oidc::forget(view, &o.control, bearer, &signin.limits, &ephemeral::email("oidc")).await;
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
                    w.phase("", &user.token, &label, [want.provider.clone()], true).await?;
                }
            }
            Case::NoGroup => {
                let user = w.eph.user("none").await?;
                w.phase("", &user.token, &format!("{} in no group", user.label), [], true).await?;
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
                w.phase("", &user.token, &label, [], true).await?;
            }
            Case::LastGroupRemoved => {
                let Some((provider, group)) = first_granted(&self.desired) else { return w.nothing_granted() };
                let Some(gid) = w.group(&group) else { return Ok(()) };
                let user = w.eph.user("last").await?;
                gather::add_member(w.api, w.admin, &gid, &user.id).await?;
                let label = format!("{} in `{group}`", user.label);
                w.phase("", &user.token, &label, [provider.clone()], false).await?;
                gather::remove_member(w.api, w.admin, &gid, &user.id).await?;
                let when = format!("after `{group}`, its last group, was removed through the admin API: ");
                w.phase(&when, &user.token, &user.label, [], true).await?;
            }
            Case::LastGroupRemovedOidc => self.oidc_case(w, view, signin).await?,
        }
        Ok(())
    }

    async fn oidc_case(&self, w: &mut Work<'_>, view: &NsView, signin: &Signin) -> Result<(), ApiError> {
        let Some((provider, group)) = first_granted(&self.desired) else { return w.nothing_granted() };
        let Some((o, bearer)) = &self.oidc else { return Ok(()) };
        let email = ephemeral::email("oidc");
        w.eph.expect_user(&email);
        let login = Login { view, api: w.api, login_path: &o.login_path, idp: &o.control, limits: &signin.limits };
        let steps = [
            (vec![group.clone()], "", false),
            (vec![], "after the identity provider emptied the groups claim and the user logged in again: ", true),
        ];
        for (claim, when, exact) in steps {
            if let Err(e) = oidc::set_claim(view, &o.control, bearer, &signin.limits, &email, &claim).await {
                w.seen.problem = Some(format!("cannot set the groups claim: {e}"));
                return Ok(());
            }
            let (token, hops) = login.login(&format!("oidc {email}"), &email).await;
            w.seen.notes.push(format!("OIDC login with groups claim {claim:?}: {}", hops.join(", ")));
            let token = match token {
                Ok(t) => t,
                Err(e) => {
                    w.seen.problem = Some(format!("the OIDC login of {email} failed: {e}"));
                    return Ok(());
                }
            };
            let expected: Vec<String> = if exact { vec![] } else { vec![provider.clone()] };
            let label = format!("OIDC user {} (claim {claim:?})", ephemeral::name("oidc"));
            w.phase(when, &token, &label, expected, exact).await?;
        }
        Ok(())
    }
}

impl Work<'_> {
    /// The id of the one group named `name`, or the problem noted.
    fn group(&mut self, name: &str) -> Option<String> {
        match group_ids(&self.groups, name).as_slice() {
            [id] => Some(id.clone()),
            [] => {
                self.seen.problem = Some(format!("group `{name}` does not exist in Open WebUI"));
                None
            }
            many => {
                self.seen.problem = Some(format!("{} groups are named `{name}`: access cannot be set up", many.len()));
                None
            }
        }
    }

    fn nothing_granted(&mut self) -> Result<(), ApiError> {
        self.seen.problem = Some("the scenario grants Open WebUI no provider".into());
        Ok(())
    }

    async fn phase(
        &mut self,
        when: &str,
        token: &Token,
        label: &str,
        expected: impl IntoIterator<Item = String>,
        exact: bool,
    ) -> Result<(), ApiError> {
        let view = gather::user_view(self.api, token, label, &self.ids).await?;
        self.seen.phases.push(Phase { when: when.to_string(), view, expected: expected.into_iter().collect(), exact });
        Ok(())
    }
}
