//! `credentials::<provider>::retired` and `::revoked`: a credential a rotation retired,
//! or one a consumer held before the provider stopped admitting it, is dead.
//!
//! - Refused everywhere a wrong bearer is: the same observation and judge as
//!   `contract::<p>::wrong_bearer` ([`super::kit::refusal`]), at every replica and entry
//!   point, in both eras, with and without a session. A disabled provider's credentials
//!   are `disabled::<p>`'s to prove.
//! - Held by nobody: no container of the deployment (a client, a provider, a sidecar,
//!   any other service; running or not) carries it, in any form the redactor knows, in
//!   its environment, its command line or its mounted secrets (`/run/secrets/*`: read in
//!   a running container through `/proc/<pid>/root`, or a stopped one's bind-mounted
//!   host file), nor does a swarm config of the stack. Compared in memory, never printed:
//!   findings name the holder, the credential and the place.
//! - Not the current credential under another name: a "retired" value equal to the live
//!   one means the rotation changed nothing.

use std::sync::Arc;

use futures_util::future::BoxFuture;

use super::kit::refusal::{self, Presented, RefusalRule};
use crate::check::Spec;
use crate::check::{Check, Probe, RunContext, named};
use crate::config::Suite;
use crate::config::{Family, Provider, Scenario};
use crate::model::{Attempt, CheckName, Finding, FindingKind};
use crate::secret::{Secret, named_forms};

mod carried;
pub use carried::Place;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dead {
    Retired,
    Revoked,
}

impl Dead {
    fn aspect(self) -> &'static str {
        match self {
            Dead::Retired => "retired",
            Dead::Revoked => "revoked",
        }
    }
}

pub fn plan(scenario: &Scenario) -> Vec<Arc<dyn Check>> {
    let mut checks: Vec<Arc<dyn Check>> = Vec::new();
    for p in &scenario.providers {
        for dead in [Dead::Retired, Dead::Revoked] {
            checks.push(named(
                CheckName::of_provider(Family::Credentials, &p.id, Some(dead.aspect())),
                CredentialsCheck { provider: p.id.clone(), dead },
            ));
        }
    }
    checks
}

struct CredentialsCheck {
    provider: String,
    dead: Dead,
}

/// One credential that must be dead, and who must not hold it.
#[derive(Clone, Debug)]
pub struct DeadCredential {
    pub credential: String,
    /// The only client that must not hold it, which held it before its removal (revoked);
    /// `None`: no client (retired).
    pub client: Option<String>,
}

impl DeadCredential {
    /// `finding` with how this credential is named put before it, and the facts that name
    /// it (`credential`, and `client` for a revoked one).
    fn named(&self, finding: Finding) -> Finding {
        match &self.client {
            None => finding.prefixed("the retired credential {credential}"),
            Some(client) => finding
                .prefixed("the credential client {client} held before its removal ({credential})")
                .fact("client", client),
        }
        .fact("credential", &self.credential)
    }

    /// How it is named, alone (as the refusal checks present it).
    pub fn label(&self) -> String {
        crate::model::phrase(|f| self.named(f))
    }
}

/// Pure: the credentials a check covers.
pub fn dead_credentials(scenario: &Scenario, provider: &Provider, dead: Dead) -> Vec<DeadCredential> {
    match dead {
        Dead::Retired => {
            provider.boundary.retired.iter().map(|c| DeadCredential { credential: c.clone(), client: None }).collect()
        }
        Dead::Revoked => scenario
            .clients
            .iter()
            .filter_map(|client| {
                let c = client.revoked.get(&provider.id)?;
                Some(DeadCredential { credential: c.clone(), client: Some(client.id.clone()) })
            })
            .collect(),
    }
}

impl Probe for CredentialsCheck {
    fn run<'a>(&'a self, ctx: &'a RunContext) -> BoxFuture<'a, Attempt> {
        Box::pin(async move {
            let provider = ctx.scenario.provider(&self.provider).expect("planned from the scenario").clone();
            let dead = dead_credentials(&ctx.scenario, &provider, self.dead);
            if dead.is_empty() {
                return Attempt::Skip {
                    reason: match self.dead {
                        Dead::Retired => {
                            format!("the scenario lists no `retired` credential for provider `{}`", provider.id)
                        }
                        Dead::Revoked => {
                            format!("no client of the scenario lists provider `{}` under `revoked`", provider.id)
                        }
                    },
                };
            }
            let current = ctx.scenario.secret(&provider.credential);
            let secrets: Vec<(&DeadCredential, &Secret)> =
                dead.iter().map(|d| (d, ctx.scenario.secret(&d.credential))).collect();
            let (mut findings, presented) = alive_or_presented(&provider, current, &secrets);
            let mut evidence = Vec::new();
            let refused = if provider.disabled {
                evidence.push(format!(
                    "provider `{}` is disabled: disabled::{} proves every listener on its networks refuses its credentials",
                    provider.id, provider.id
                ));
                Attempt::Pass { evidence: vec![] }
            } else if presented.is_empty() {
                Attempt::Pass { evidence: vec![] }
            } else {
                refused_everywhere(ctx, &provider, presented, self.dead).await
            };
            let held = match &ctx.deployment {
                Some(_) => holders(ctx, &provider, &dead).await,
                None => Ok((vec![], vec!["host mode: no client container to read the environment of".into()])),
            };
            let (held_findings, held_evidence) = match held {
                Ok(x) => x,
                Err(attempt) => return attempt,
            };
            findings.extend(held_findings);
            evidence.extend(held_evidence);
            merge(refused, findings, evidence)
        })
    }
}

/// Pure: a dead credential that is still the provider's current one is alive (nothing was
/// rotated); every other is presented to the provider, to be refused. A disabled
/// provider's own credential is dead too: `disabled::<p>` proves it refused.
fn alive_or_presented(
    provider: &Provider,
    current: &Secret,
    dead: &[(&DeadCredential, &Secret)],
) -> (Vec<Finding>, Vec<Presented>) {
    let mut findings = Vec::new();
    let mut presented = Vec::new();
    for (d, secret) in dead {
        if secret.expose() != current.expose() {
            presented.push(Presented {
                label: d.label(),
                secret: Some((*secret).clone()),
                in_query: None,
                short: None,
            });
        } else if !provider.disabled {
            findings.push(
                d.named(Finding::new(
                    FindingKind::CredentialAlive,
                    " is provider `{provider}`'s current credential ({current}): nothing was revoked (rotate it, and list the old one under `retired`)",
                ))
                .fact("provider", &provider.id)
                .fact("current", current.label()),
            );
        }
    }
    (findings, presented)
}

/// The refusal machinery of `wrong_bearer`, with the dead credentials as the bearers.
async fn refused_everywhere(ctx: &RunContext, provider: &Provider, presented: Vec<Presented>, dead: Dead) -> Attempt {
    let bearer_label = match dead {
        Dead::Retired => "a retired credential",
        Dead::Revoked => "a removed consumer's credential",
    };
    let rule = RefusalRule { refusal: provider.refusal, bearer_label: bearer_label.into(), ..Default::default() };
    refusal::presented_everywhere(ctx, provider, presented, &rule).await
}

/// Every container of the deployment, running or not, and every swarm config of the
/// stack that holds a dead credential, wherever the engine or the host shows it. The
/// provider's own containers may hold what is still its own current credential (a
/// disabled provider's, which its removed consumers held too): that is its to keep, and
/// `disabled::<p>` proves nothing accepts it.
async fn holders(
    ctx: &RunContext,
    provider: &Provider,
    dead: &[DeadCredential],
) -> Result<(Vec<Finding>, Vec<String>), Attempt> {
    let deployment = ctx.deployment.as_ref().expect("asked with a deployment");
    let topology = deployment.topology();
    let current = ctx.scenario.secret(&provider.credential).expose();
    let all: Vec<(&DeadCredential, &Secret)> = dead.iter().map(|d| (d, ctx.scenario.secret(&d.credential))).collect();
    let not_its_own: Vec<(&DeadCredential, &Secret)> =
        all.iter().copied().filter(|(_, secret)| secret.expose() != current).collect();
    let mut findings = Vec::new();
    let mut evidence = Vec::new();
    for target in topology.services.values().flatten().chain(topology.stopped.iter()) {
        let engine = deployment.engine_of(target).map_err(|e| Attempt::not_ready(e, vec![]))?;
        let on_this_host = target.pid != 0 || target.node.is_none();
        let carried = carried::read(&engine, target, on_this_host)
            .await
            .map_err(|e| Attempt::not_ready(format!("cannot read what {} carries: {e}", target.name), vec![]))?;
        let holder = match ctx.scenario.clients.iter().find(|c| c.service == target.service) {
            Some(client) => Holder::Client { client: client.id.clone(), container: target.name.clone() },
            None => Holder::Container { container: target.name.clone(), service: target.service.clone() },
        };
        let secrets = if target.service == provider.service { &not_its_own } else { &all };
        let found = held_in(&carried.values, secrets);
        evidence.push(format!(
            "{}: {}, {}",
            holder.describe(),
            carried.describe(),
            if found.is_empty() {
                "none holds a dead credential".to_string()
            } else {
                format!("{} hold one", found.len())
            }
        ));
        findings.extend(found.into_iter().map(|(place, d, form)| held(&holder, place, d, form)));
    }
    if let (Some(_), Some(engine)) = (&topology.swarm, deployment.engine()) {
        let configs =
            engine.stack_configs(&deployment.project).await.map_err(|e| Attempt::not_ready(e.to_string(), vec![]))?;
        evidence.push(format!("{} swarm config(s) of the stack read", configs.len()));
        for (name, data) in configs {
            let values = vec![(Place::Config, String::from_utf8_lossy(&data).into_owned())];
            let holder = Holder::Config { config: name };
            findings.extend(held_in(&values, &all).into_iter().map(|(place, d, form)| held(&holder, place, d, form)));
        }
    }
    Ok((findings, evidence))
}

/// Who holds a dead credential.
#[derive(Clone, Debug)]
pub enum Holder {
    Client { client: String, container: String },
    Container { container: String, service: String },
    Config { config: String },
}

impl Holder {
    fn describe(&self) -> String {
        match self {
            Holder::Client { client, container } => format!("client {client} ({container})"),
            Holder::Container { container, service } => format!("{container} (service {service})"),
            Holder::Config { config } => format!("swarm config {config}"),
        }
    }
}

/// Pure: `holder` holds `d` (in `form`) at `place`.
fn held(holder: &Holder, place: &Place, d: &DeadCredential, form: &str) -> Finding {
    let f = d.named(Finding::new(FindingKind::CredentialHeld, " ({form})")).fact("form", form);
    let f = match place {
        Place::Env(var) => f.suffixed(" in its environment variable {variable}").fact("variable", var),
        Place::CommandLine => f.suffixed(" in its command line"),
        Place::File(path) => f.suffixed(" in its file {file}").fact("file", path),
        Place::Config => f,
    };
    match holder {
        Holder::Client { client, container } => f
            .suffixed(" ({container})")
            .prefixed("client {client} still holds ")
            .fact("client", client)
            .fact("container", container),
        Holder::Container { container, service } => f
            .prefixed("container {container} (service {service}) still holds ")
            .fact("container", container)
            .fact("service", service),
        Holder::Config { config } => f.prefixed("swarm config {config} holds ").fact("config", config),
    }
}

/// Pure: (place, credential, form) for every value that holds a whole dead credential in
/// some form.
pub fn held_in<'a>(
    values: &'a [(Place, String)],
    secrets: &[(&'a DeadCredential, &Secret)],
) -> Vec<(&'a Place, &'a DeadCredential, &'static str)> {
    let mut out = Vec::new();
    for (place, value) in values {
        for (d, secret) in secrets {
            let forms = named_forms(secret.expose());
            if let Some((form, _)) = forms.iter().find(|(_, f)| contains(value.as_bytes(), f)) {
                out.push((place, *d, *form));
            }
        }
    }
    out
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && haystack.windows(needle.len()).any(|w| w == needle)
}

/// The refusal verdict with this check's own findings and evidence added.
fn merge(refused: Attempt, mut findings: Vec<Finding>, mut evidence: Vec<String>) -> Attempt {
    match refused {
        Attempt::Fail { findings: f, evidence: e } => {
            findings.extend(f);
            evidence.extend(e);
            Attempt::failed(findings, evidence)
        }
        Attempt::NotReady { reason, evidence: e } if findings.is_empty() => {
            evidence.extend(e);
            Attempt::not_ready(reason, evidence)
        }
        other => {
            evidence.extend(other.evidence().iter().cloned());
            Attempt::from_findings(findings, evidence)
        }
    }
}

/// The family, registered once (`checks::FAMILIES`).
pub const SPEC: Spec = Spec { family: Family::Credentials, plan: planned, explain };

fn planned(scenario: &Scenario, _: &Suite) -> Vec<Arc<dyn Check>> {
    plan(scenario)
}

/// What a check of this family proves, and where it looks from (`cordon explain`).
fn explain(_: &CheckName) -> Option<(&'static str, &'static str)> {
    Some((
        "a credential a rotation retired (retired), or one a removed consumer held (revoked), is refused wherever a wrong bearer is, is not the live credential under another name, and no client (for revoked: not the removed client) carries it in its environment",
        "the contract position for the refusals; the engine's view of each client container's environment",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::secret::Redactor;

    #[test]
    fn a_dead_credential_is_found_whole_in_any_form_and_only_whole() {
        let redactor = Redactor::new();
        let old = redactor.register("native-token-old", "Qm9vA7xLkP2sZr4T".into());
        let d = DeadCredential { credential: "native-token-old".into(), client: None };
        assert_eq!(d.label(), "the retired credential native-token-old");
        let env = vec![
            ("NATIVE_TOKEN".to_string(), "Qm9vA7xLkP2sZr4U".to_string()),
            (
                "TOOL_SERVER_CONNECTIONS".to_string(),
                r#"[{"url":"http://native:8000/mcp","key":"Qm9vA7xLkP2sZr4T"}]"#.to_string(),
            ),
            (
                "BASIC".to_string(),
                format!(
                    "Basic {}",
                    base64::Engine::encode(&base64::engine::general_purpose::STANDARD, "u:Qm9vA7xLkP2sZr4T")
                ),
            ),
        ];
        let values: Vec<(Place, String)> = env.into_iter().map(|(k, v)| (Place::Env(k), v)).collect();
        let found: Vec<(&Place, &str)> = held_in(&values, &[(&d, &old)]).into_iter().map(|(p, _, f)| (p, f)).collect();
        // A value that shares all but one character with it is another credential.
        assert_eq!(
            found,
            [(&Place::Env("TOOL_SERVER_CONNECTIONS".into()), "as written"), (&Place::Env("BASIC".into()), "base64")]
        );
    }

    /// A rotation that left the old credential as the current one fails; one that moved
    /// on presents the old one to be refused; a disabled provider's own is neither.
    #[rstest::rstest]
    #[case::rotated("old-secret-value-1", false, 0, 1)]
    #[case::never_rotated("current-secret-value", false, 1, 0)]
    #[case::disabled_own("current-secret-value", true, 0, 0)]
    #[case::disabled_rotated("old-secret-value-1", true, 0, 1)]
    fn a_dead_credential_is_alive_only_while_it_is_the_current_one(
        #[case] dead_value: &str,
        #[case] disabled: bool,
        #[case] alive: usize,
        #[case] presented: usize,
    ) {
        let redactor = Redactor::new();
        let current = redactor.register("native-token", "current-secret-value".into());
        let old = redactor.register("native-token-old", dead_value.into());
        let mut provider = crate::checks::kit::testing::provider_for_tests("native", &["echo"]);
        provider.disabled = disabled;
        let d = DeadCredential { credential: "native-token-old".into(), client: None };
        let (findings, sent) = alive_or_presented(&provider, &current, &[(&d, &old)]);
        assert_eq!((findings.len(), sent.len()), (alive, presented), "{findings:?}");
        if let Some(f) = findings.first() {
            assert_eq!(f.kind, FindingKind::CredentialAlive);
            assert_eq!(f.facts["credential"], "native-token-old");
            assert_eq!(
                f.sentence(),
                "the retired credential native-token-old is provider `native`'s current credential (native-token): nothing was revoked (rotate it, and list the old one under `retired`)"
            );
        }
    }

    #[test]
    fn a_held_credential_is_named_as_retired_or_revoked() {
        let retired = DeadCredential { credential: "native-token-old".into(), client: None };
        let revoked = DeadCredential { credential: "native-token-n8n".into(), client: Some("n8n".into()) };
        let client = Holder::Client { client: "n8n".into(), container: "n8n_1".into() };
        let env = Place::Env("NATIVE_TOKEN".into());
        assert_eq!(
            held(&client, &env, &retired, "base64").sentence(),
            "client n8n still holds the retired credential native-token-old (base64) in its environment variable NATIVE_TOKEN (n8n_1)"
        );
        let provider = Holder::Container { container: "p_native_1".into(), service: "native".into() };
        assert_eq!(
            held(&provider, &Place::File("/run/secrets/old".into()), &retired, "as written").sentence(),
            "container p_native_1 (service native) still holds the retired credential native-token-old (as written) in its file /run/secrets/old"
        );
        assert_eq!(
            held(&provider, &Place::CommandLine, &revoked, "hex").sentence(),
            "container p_native_1 (service native) still holds the credential client n8n held before its removal (native-token-n8n) (hex) in its command line"
        );
        assert_eq!(
            held(&Holder::Config { config: "s_settings".into() }, &Place::Config, &retired, "as written").sentence(),
            "swarm config s_settings holds the retired credential native-token-old (as written)"
        );
        let f = held(&client, &env, &revoked, "as written");
        assert_eq!(
            f.sentence(),
            "client n8n still holds the credential client n8n held before its removal (native-token-n8n) (as written) in its environment variable NATIVE_TOKEN (n8n_1)"
        );
        assert_eq!(
            (f.facts["credential"].as_str(), f.facts["container"].as_str(), f.facts["variable"].as_str()),
            ("native-token-n8n", "n8n_1", "NATIVE_TOKEN")
        );
        assert_eq!(revoked.label(), "the credential client n8n held before its removal (native-token-n8n)");
    }

    #[test]
    fn merged_verdicts_keep_both_sides() {
        let held = vec![Finding::new(FindingKind::CredentialHeld, "client x still holds it")];
        let passed = Attempt::Pass { evidence: vec!["refused everywhere".into()] };
        match merge(passed, held.clone(), vec!["env read".into()]) {
            Attempt::Fail { findings, evidence } => {
                assert_eq!(findings.len(), 1);
                assert_eq!(evidence, ["env read", "refused everywhere"]);
            }
            other => panic!("{other:?}"),
        }
        let waiting = Attempt::not_ready("no answer", vec![]);
        assert!(matches!(merge(waiting.clone(), vec![], vec![]), Attempt::NotReady { .. }));
        assert!(matches!(merge(waiting, held, vec![]), Attempt::Fail { .. }));
    }
}
