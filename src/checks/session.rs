//! `session::<client>-><provider>`: from the client's namespace, with the credential that
//! client holds, the handshake succeeds, the tools list is read and the deterministic
//! read answers as contracted.

use std::sync::Arc;

use futures_util::future::BoxFuture;

use super::attempt_from_error;
use super::contract::{deterministic_read, open_session};
use super::position::{Position, Resolution, client_container, pinned, with_resolution};
use super::route::{describe, pair_name};
use crate::config::{Family, Scenario};
use crate::model::Attempt;
use crate::runner::{Check, Probe, RunContext, named};

pub fn plan(scenario: &Scenario) -> Vec<Arc<dyn Check>> {
    let mut checks: Vec<Arc<dyn Check>> = Vec::new();
    for provider in scenario.providers.iter().filter(|p| !p.disabled) {
        for client in &provider.allowed_consumers {
            checks.push(named(
                pair_name(Family::Session, client, "->", &provider.id),
                SessionCheck { client: client.clone(), provider: provider.id.clone() },
            ));
        }
    }
    checks
}

struct SessionCheck {
    client: String,
    provider: String,
}

impl Probe for SessionCheck {
    fn run<'a>(&'a self, ctx: &'a RunContext) -> BoxFuture<'a, Attempt> {
        Box::pin(async move {
            let (topology, provider) = ctx.deployment(&self.provider);
            let provider = provider.clone();
            let client = ctx.scenario.clients.iter().find(|c| c.id == self.client).expect("validated consumer");
            let Some(credential) = client.credentials.get(&provider.id) else {
                return Attempt::fail(
                    format!(
                        "client `{}` is admitted to `{}` but the scenario gives it no credential for it (clients.{}.credentials.{})",
                        client.id, provider.id, client.id, provider.id
                    ),
                    vec![],
                );
            };
            let secret = ctx.scenario.secret(credential).clone();
            let client_target = match client_container(&topology, &ctx.scenario, &client.id) {
                Ok(t) => t,
                Err(attempt) => return attempt,
            };
            let limits = ctx.suite.limits.clone();
            let label = format!("client {}", client.id);
            let position = Position::of(&label, &client_target);
            let read = provider.read.clone();
            let endpoint_of = provider.clone();
            with_resolution(position, provider, topology, Some(client_target), move |resolution, evidence| async move {
                let Resolution::Owned { owned: addrs, .. } = &resolution else {
                    return Attempt::fail(format!("no session from {label}: {}", describe(&resolution)), evidence);
                };
                let endpoint = pinned(&endpoint_of, addrs[0].0);
                let (client, session, mut evidence) = match open_session(endpoint, secret, limits, evidence).await {
                    Ok(s) => s,
                    Err(attempt) => return attempt,
                };
                match client.list_tools(&session).await {
                    Ok(tools) => evidence.push(format!(
                        "tools/list: [{}]",
                        tools.iter().map(|t| t.name.as_str()).collect::<Vec<_>>().join(", ")
                    )),
                    Err(e) => {
                        client.close(session).await;
                        return attempt_from_error("tools/list failed", &e, evidence);
                    }
                }
                match &read {
                    Some(read) => deterministic_read(&client, session, read, evidence).await,
                    None => {
                        client.close(session).await;
                        Attempt::Pass { evidence }
                    }
                }
            })
            .await
        })
    }
}
