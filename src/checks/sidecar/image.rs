//! `sidecar::<provider>::image`: every replica of an adapter sidecar runs the image the
//! platform pins by digest. A tag says what was asked for; the engine's image id and the
//! image's repository digests say what runs.

use std::sync::Arc;

use futures_util::future::BoxFuture;

use crate::check::{Check, Probe, RunContext, named};
use crate::config::image_pin::ImagePin;
use crate::config::{Family, Scenario};
use crate::engine::RunningImage;
use crate::model::{Attempt, CheckName, Finding, FindingKind};

pub fn plan(scenario: &Scenario) -> Vec<Arc<dyn Check>> {
    scenario
        .providers
        .iter()
        .filter(|p| p.sidecar_image.is_some() && !p.disabled)
        .map(|p| {
            let name = CheckName::of_provider(Family::Sidecar, &p.id, Some("image"));
            named(name, ImageCheck { provider: p.id.clone() })
        })
        .collect()
}

struct ImageCheck {
    provider: String,
}

impl Probe for ImageCheck {
    fn run<'a>(&'a self, ctx: &'a RunContext) -> BoxFuture<'a, Attempt> {
        Box::pin(async move {
            let (deployment, provider) = ctx.deployment(&self.provider);
            let Some(pin) = &provider.sidecar_image else {
                return Attempt::Skip { reason: "the scenario pins no image for this sidecar".into() };
            };
            let topology = deployment.topology();
            let targets = match super::running_replicas(&topology, &provider.service) {
                Ok(t) => t,
                Err(attempt) => return attempt,
            };
            let mut findings = Vec::new();
            let mut not_ready = Vec::new();
            let mut evidence = vec![pinned_line(pin)];
            for target in &targets {
                let Some(facts) = topology.hardening.get(&target.id) else {
                    not_ready.push(format!("no engine facts for {}", target.name));
                    continue;
                };
                evidence.push(format!("{}: {}", target.name, running_line(&facts.image)));
                match (judge(pin, &facts.image), &facts.image.inspect_error) {
                    (None, _) => {}
                    // Its repository digests are unknown: the pin may be one of them.
                    (Some(_), Some(error)) => not_ready.push(format!(
                        "{}: its image could not be inspected, so the pin cannot be compared with its repository digests: {error}",
                        target.name
                    )),
                    (Some(finding), None) => findings.push(finding.fact("container", &target.name)),
                }
            }
            Attempt::settle(findings, not_ready, evidence)
        })
    }
}

fn pinned_line(pin: &ImagePin) -> String {
    let named = pin.image.as_ref().map(|i| format!(" ({i})")).unwrap_or_default();
    format!("pinned: {}{named}, from {}", pin.shown(), pin.source)
}

fn running_line(image: &RunningImage) -> String {
    let repo = if image.repo_digests.is_empty() { "none".to_string() } else { image.repo_digests.join(", ") };
    let manifests =
        if image.manifests.is_empty() { String::new() } else { format!(", manifests: {}", image.manifests.join(", ")) };
    format!("runs `{}`, image id {}, repository digests: {repo}{manifests}", image.reference, image.id)
}

/// A finding when no digest that names the running image is the pinned one (a pin of a
/// prefix names every digest that starts with it).
pub fn judge(pin: &ImagePin, running: &RunningImage) -> Option<Finding> {
    if running.digests().iter().any(|d| crate::text::pin_matches(&pin.digest, d)) {
        return None;
    }
    let repo = if running.repo_digests.is_empty() {
        "it has no repository digest: it was built or loaded here, not pulled by a digest".to_string()
    } else {
        format!("its repository digests are {}", running.repo_digests.join(", "))
    };
    Some(
        Finding::new(
            FindingKind::ImageNotPinned,
            "{container} runs `{reference}` (image {id}; {repo}), not the pinned {pinned}",
        )
        .fact("reference", &running.reference)
        .fact("id", &running.id)
        .fact("repo", repo)
        .fact("pinned", pin.shown()),
    )
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    const A: &str = "a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90";
    const B: &str = "0f9e8d7c6b5a49382716f5e4d3c2b1a00f9e8d7c6b5a49382716f5e4d3c2b1a0";

    fn pin(digest: &str) -> ImagePin {
        ImagePin { image: Some("adapter:1.0".into()), digest: digest.into(), source: "the scenario".into() }
    }

    fn running(id: &str, repo: &[&str]) -> RunningImage {
        RunningImage {
            reference: "adapter:1.0".into(),
            id: format!("sha256:{id}"),
            repo_digests: repo.iter().map(|d| format!("registry.example/adapter@sha256:{d}")).collect(),
            manifests: vec![],
            inspect_error: None,
        }
    }

    #[rstest]
    #[case::the_image_id_is_the_pin(A, running(A, &[]))]
    #[case::a_repository_digest_is_the_pin(A, running(B, &[B, A]))]
    #[case::a_prefix_pin_of_twelve_digits(&A[..12], running(A, &[]))]
    #[case::the_platform_manifest_on_a_containerd_store(A, RunningImage { manifests: vec![format!("sha256:{A}")], ..running(B, &[B]) })]
    #[case::upper_case_in_the_engine(A, RunningImage { id: format!("sha256:{}", A.to_uppercase()), ..running(B, &[]) })]
    fn the_pinned_image_passes(#[case] pinned: &str, #[case] image: RunningImage) {
        assert_eq!(judge(&pin(pinned), &image), None);
    }

    #[rstest]
    #[case::another_image_same_tag(A, running(B, &[]), "it has no repository digest")]
    #[case::another_repository_digest(A, running(B, &[B]), "its repository digests are registry.example/adapter@sha256:0f9e")]
    #[case::a_prefix_that_is_no_prefix(&A[1..13], running(A, &[A]), "not the pinned sha256:1b2c3d4e5f60")]
    #[case::the_pin_only_inside_a_digest(&A[8..40], running(A, &[]), "not the pinned")]
    #[case::image_gone_from_the_engine(A, RunningImage { id: String::new(), ..running(B, &[]) }, "image ;")]
    fn another_image_fails_naming_both(#[case] pinned: &str, #[case] image: RunningImage, #[case] words: &str) {
        let finding = judge(&pin(pinned), &image).expect("another image must fail").fact("container", "gitea-mcp-1");
        assert_eq!(finding.kind, FindingKind::ImageNotPinned);
        let sentence = finding.sentence();
        assert!(sentence.contains(words), "{sentence}");
        assert!(sentence.starts_with("gitea-mcp-1 runs `adapter:1.0`"), "{sentence}");
    }
}
