//! `contract::<provider>::{anonymous,wrong_bearer,foreign_bearer}`: which bearers each
//! aspect presents (none, a made-up one and near misses of the valid one, every other
//! provider's valid credential), tried and judged by the kit's refusal
//! ([`crate::checks::kit::refusal`]).

use std::collections::BTreeSet;

use futures_util::future::BoxFuture;

use crate::check::{Probe, RunContext};
use crate::checks::kit::presented::QUERY_CREDENTIAL_PARAMS;
use crate::checks::kit::refusal::{Presented, RefusalRule, near_misses, presented_everywhere, wrong_bearer};
use crate::config::Provider;
use crate::model::Attempt;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bearer {
    Anonymous,
    Wrong,
    /// Other providers' valid credentials.
    Foreign,
}

impl Bearer {
    pub fn aspect(self) -> &'static str {
        match self {
            Bearer::Anonymous => "anonymous",
            Bearer::Wrong => "wrong_bearer",
            Bearer::Foreign => "foreign_bearer",
        }
    }
}

pub struct RefusalCheck {
    pub provider: String,
    pub bearer: Bearer,
}

impl Probe for RefusalCheck {
    fn run<'a>(&'a self, ctx: &'a RunContext) -> BoxFuture<'a, Attempt> {
        Box::pin(async move {
            let provider = ctx.scenario.provider(&self.provider).expect("planned from the scenario").clone();
            let (presented, shared_with) = match self.presented(ctx, &provider) {
                Ok(p) => p,
                Err(attempt) => return attempt,
            };
            let rule = RefusalRule {
                refusal: provider.refusal,
                bearer_label: describe(self.bearer),
                shared_with,
                presented_by_cordon: self.bearer == Bearer::Foreign,
                ..Default::default()
            };
            presented_everywhere(ctx, &provider, presented, &rule).await
        })
    }
}

fn describe(bearer: Bearer) -> String {
    match bearer {
        Bearer::Anonymous => "no bearer".into(),
        Bearer::Wrong => "a wrong bearer".into(),
        Bearer::Foreign => "another provider's valid bearer".into(),
    }
}

impl RefusalCheck {
    /// The bearers to present, and the providers sharing this one's secret.
    fn presented(&self, ctx: &RunContext, provider: &Provider) -> Result<(Vec<Presented>, Vec<String>), Attempt> {
        match self.bearer {
            Bearer::Anonymous => {
                let valid = ctx.scenario.secret(&provider.credential);
                let mut presented = vec![Presented::bearer("no bearer", None)];
                presented.extend(QUERY_CREDENTIAL_PARAMS.iter().map(|param| Presented {
                    label: format!(
                        "the valid credential in the URL query parameter `{param}` (no Authorization header)"
                    ),
                    secret: Some(valid.clone()),
                    in_query: Some(param.to_string()),
                    short: Some(format!("the valid credential as `?{param}=`")),
                }));
                Ok((presented, vec![]))
            }
            Bearer::Wrong => {
                let valid = ctx.scenario.secret(&provider.credential);
                let mut presented = vec![Presented::bearer(
                    "a wrong bearer",
                    Some(ctx.redactor.register("generated-wrong-bearer", wrong_bearer())),
                )];
                presented.extend(near_misses(valid.expose()).into_iter().map(|(how, value)| {
                    let label = format!("{}/near-miss/{}", valid.label(), how.replace(' ', "-"));
                    Presented::bearer(
                        format!("a near miss of the valid credential ({how})"),
                        Some(ctx.redactor.register(&label, value)),
                    )
                    .shortly(format!("near miss: {how}"))
                }));
                Ok((presented, vec![]))
            }
            Bearer::Foreign => {
                let own = ctx.scenario.secret(&provider.credential).expose().to_string();
                let mut shared = Vec::new();
                let mut presented: Vec<Presented> = Vec::new();
                let mut seen = BTreeSet::new();
                for other in ctx.scenario.providers.iter().filter(|o| o.id != provider.id) {
                    let secret = ctx.scenario.secret(&other.credential);
                    if secret.expose() == own {
                        shared.push(other.id.clone());
                    } else if seen.insert(secret.expose().to_string()) {
                        presented.push(
                            Presented::bearer(
                                format!(
                                    "another provider's valid bearer ({}, of provider {})",
                                    secret.label(),
                                    other.id
                                ),
                                Some(secret.clone()),
                            )
                            .shortly(format!("{}'s {}", other.id, secret.label())),
                        );
                    }
                }
                for id in &ctx.scenario.foreign_credentials {
                    let secret = ctx.scenario.secret(id);
                    if secret.expose() != own && seen.insert(secret.expose().to_string()) {
                        presented.push(Presented::bearer(
                            format!("another provider's valid bearer ({})", secret.label()),
                            Some(secret.clone()),
                        ));
                    }
                }
                if presented.is_empty() && shared.is_empty() {
                    return Err(Attempt::Skip {
                        reason: "no other provider in the scenario holds a different credential to present".into(),
                    });
                }
                Ok((presented, shared))
            }
        }
    }
}
