//! `openwebui::*`: Open WebUI holds the declared connections, its own MCP client reaches
//! and calls every granted provider, its state converges after a restart of only its
//! container, and group access is exactly what the groups grant — including the removal
//! of a user's last group, through the admin API and through the real OIDC login.
//!
//! Every observation is made through Open WebUI's HTTP API from inside its container's
//! network namespace (its port on that namespace's loopback): nothing is published.
//! Checks that change state (ephemeral users and groups, a drift and a restart) undo what
//! they did on every path; the restart runs alone (a write lock every other check of the
//! family holds for reading), and only when the suite says `disruptive: true`.

mod access;
#[cfg(test)]
mod connection_tests;
mod connections;
mod judge;
mod probes;
mod restart;
#[cfg(test)]
mod tests;
mod tool_call;

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, LazyLock};

use url::Url;

pub use judge::Desired;

use crate::apps::openwebui::api::{Api, ApiError, Token};
use crate::check::Spec;
use crate::check::{Check, Skipped, named};
use crate::config::{Family, OpenWebui, Scenario, Suite};
use crate::mcp::Limits;
use crate::model::CheckName;
use crate::secret::{Redactor, Secret};

/// The access cases, in plan order.
pub const ACCESS_CASES: [&str; 4] = ["one_of_several", "no_group", "wrong_app", "last_group_removed"];
pub const OIDC_ASPECT: [&str; 2] = ["last_group_removed", "oidc"];

fn name(client: &str, subject: &str, aspect: Option<&str>, provider: Option<&str>) -> CheckName {
    CheckName::of_client(Family::Openwebui, client, subject, aspect.as_slice(), provider)
}

pub fn plan(scenario: &Scenario, suite: &Suite) -> Vec<Arc<dyn Check>> {
    let Some((client, webui)) = scenario.clients.iter().find_map(|c| c.openwebui.as_ref().map(|o| (c.id.clone(), o)))
    else {
        return vec![named(
            CheckName::new(Family::Openwebui, "connections"),
            Skipped { reason: "no client of the scenario has an `openwebui` block".into() },
        )];
    };
    let desired = Desired::of(scenario, &client);
    let turns = probes::Turns::default();
    let site = |_: ()| probes::Site { client: client.clone(), turns: turns.clone() };
    let mut checks: Vec<Arc<dyn Check>> = Vec::new();
    checks.push(named(
        name(&client, "connections", None, None),
        probes::Connections { site: site(()), desired: desired.clone() },
    ));
    for want in &desired.connections {
        let p = &want.provider;
        checks.push(named(
            name(&client, "reach", Some(p), Some(p)),
            probes::Reach { site: site(()), provider: p.clone() },
        ));
    }
    for want in &desired.connections {
        let p = &want.provider;
        let check = name(&client, "tool_call", Some(p), Some(p));
        let read = scenario.provider(p).and_then(|x| x.read.clone());
        match (&webui.model, read) {
            (Some(model), Some(read)) => checks.push(named(
                check,
                tool_call::ToolCall {
                    site: site(()),
                    provider: p.clone(),
                    group: want.group.clone(),
                    model: model.clone(),
                    read,
                    nonce_argument: webui.nonce_arguments.get(p).cloned(),
                },
            )),
            (None, _) => checks.push(named(
                check,
                Skipped { reason: format!("clients.{client}.openwebui names no `model` to script the tool call with") },
            )),
            (_, None) => checks.push(named(
                check,
                Skipped {
                    reason: format!("provider `{p}` declares no `read`: there is no deterministic call to make"),
                },
            )),
        }
    }
    let restart = name(&client, "restart_convergence", None, None);
    if suite.disruptive {
        checks.push(named(restart, restart::Restart { site: site(()), desired: desired.clone() }));
    } else {
        checks.push(named(
            restart,
            Skipped {
                reason: "disruptive: it restarts the Open WebUI container; the suite does not say `disruptive: true`"
                    .into(),
            },
        ));
    }
    for case in ACCESS_CASES {
        checks.push(named(
            name(&client, "access", Some(case), None),
            access::Access { site: site(()), desired: desired.clone(), case: case.parse().expect("known case") },
        ));
    }
    let oidc = CheckName::of_client(Family::Openwebui, &client, "access", &OIDC_ASPECT, None);
    if webui.oidc.is_some() {
        checks.push(named(oidc, access::Access { site: site(()), desired, case: probes::Case::LastGroupRemovedOidc }));
    } else {
        checks.push(named(
            oidc,
            Skipped {
                reason: format!("clients.{client}.openwebui names no `oidc` identity provider to log in through"),
            },
        ));
    }
    checks
}

/// How a job inside the Open WebUI container signs in: everything it needs, owned, so the
/// job can move to the namespace's thread.
#[derive(Clone)]
pub(crate) struct Signin {
    pub url: Url,
    pub limits: Limits,
    pub redactor: Redactor,
    pub email: String,
    pub password: Secret,
    pub credentials: BTreeMap<String, Secret>,
}

impl Signin {
    pub fn of(scenario: &Scenario, webui: &OpenWebui, limits: &Limits, redactor: &Redactor) -> Signin {
        Signin {
            url: webui.url.clone(),
            limits: limits.clone(),
            redactor: redactor.clone(),
            email: webui.admin_email.clone(),
            password: scenario.secret(&webui.admin_password).clone(),
            credentials: scenario.credentials.clone(),
        }
    }

    /// The API client (built on the calling thread: call it inside the namespace) and an
    /// admin session. One session serves the whole run: Open WebUI allows 15 sign-ins per
    /// address in 3 minutes, and its tokens outlive a restart (same secret key).
    pub async fn open(&self) -> Result<(Api, Token), ApiError> {
        // Checks open at once from many namespace threads: one signs in, the others wait
        // for its token (a tokio mutex works across their runtimes).
        static SESSIONS: LazyLock<tokio::sync::Mutex<HashMap<String, Token>>> = LazyLock::new(Default::default);
        let api = Api::new(&self.url, &self.limits, &self.redactor)?;
        let key = format!("{} {}", self.url, self.email);
        let mut sessions = SESSIONS.lock().await;
        if let Some(token) = sessions.get(&key).cloned() {
            if api.send(reqwest::Method::GET, "/api/v1/auths/", Some(&token), None).await?.status == 200 {
                return Ok((api, token));
            }
            sessions.remove(&key);
        }
        let admin = api.signin("admin", &self.email, &self.password).await?;
        sessions.insert(key, admin.clone());
        Ok((api, admin))
    }
}

/// The family, registered once (`checks::FAMILIES`).
pub const SPEC: Spec = Spec { family: Family::Openwebui, plan: planned, explain };

fn planned(scenario: &Scenario, suite: &Suite) -> Vec<Arc<dyn Check>> {
    plan(scenario, suite)
}

/// What a check of this family proves, and where it looks from (`cordon explain`).
fn explain(_: &CheckName) -> Option<(&'static str, &'static str)> {
    Some((
        "Open WebUI's tool-server connections, grants, per-user access and tool calls match the scenario, also after a restart of only its container",
        "Open WebUI's API from inside its own container's namespace",
    ))
}
