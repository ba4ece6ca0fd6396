//! Which checks a known failure speaks for: one check by its exact name, or every check a
//! pattern matches (`sidecar::*::hardening`: that finding on any sidecar).
//!
//! A pattern exists for rules of a platform rather than of one deployment (swarm cannot
//! set no-new-privileges on any service), so a suite shipped with cordon can carry it to
//! stacks whose providers it does not know. It is matched segment by segment (`::`
//! separates segments; `*` stands for any run of characters inside one segment), and its
//! family must be written out: `*::*` would silence a whole run.

use std::fmt;

use super::Family;
use crate::model::CheckName;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CheckPattern {
    /// One check; naming none the suite plans is an error (a typo would hide nothing).
    Exact(String),
    /// Every check it matches; matching none is allowed (a stack without sidecars).
    Glob(String),
}

impl CheckPattern {
    /// `text` as written in `known_failures[].check`.
    pub fn parse(text: &str) -> Result<CheckPattern, String> {
        if !text.contains('*') {
            return Ok(CheckPattern::Exact(text.to_string()));
        }
        let family = text.split("::").next().unwrap_or_default();
        if family.contains('*') || Family::from_name(family).is_none() {
            return Err(format!(
                "the pattern `{}` must start with a family written out (e.g. `sidecar::*::hardening`): a pattern spans checks of one family, never the whole run",
                crate::text::sanitize(text)
            ));
        }
        if !text.contains("::") {
            return Err(format!("the pattern `{}` names no check below its family", crate::text::sanitize(text)));
        }
        Ok(CheckPattern::Glob(text.to_string()))
    }

    pub fn is_pattern(&self) -> bool {
        matches!(self, CheckPattern::Glob(_))
    }

    pub fn as_str(&self) -> &str {
        match self {
            CheckPattern::Exact(s) | CheckPattern::Glob(s) => s,
        }
    }

    /// Whether the check `name` is one this entry speaks for: an exact entry by the name
    /// it shows, a pattern segment by segment of its identity (family, subject, aspect).
    pub fn matches(&self, name: &CheckName) -> bool {
        match self {
            CheckPattern::Exact(exact) => *exact == name.to_string(),
            CheckPattern::Glob(pattern) => {
                let (mut want, mut have) = (pattern.split("::"), name.segments().into_iter());
                loop {
                    match (want.next(), have.next()) {
                        (None, None) => return true,
                        (Some(w), Some(h)) if segment_matches(w, h) => {}
                        _ => return false,
                    }
                }
            }
        }
    }
}

/// `*` matches any run of characters (none included); everything else is literal.
fn segment_matches(pattern: &str, text: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    let (first, rest) = parts.split_first().expect("split yields one part at least");
    let Some(mut left) = text.strip_prefix(first) else { return false };
    let Some((last, middle)) = rest.split_last() else { return left.is_empty() };
    for part in middle {
        match left.find(part) {
            Some(at) => left = &left[at + part.len()..],
            None => return false,
        }
    }
    left.len() >= last.len() && left.ends_with(last)
}

impl fmt::Display for CheckPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq<&str> for CheckPattern {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[rstest::rstest]
    #[case::exact("sidecar::gitea::hardening", "sidecar::gitea::hardening", true)]
    #[case::exact_is_not_a_prefix("sidecar::gitea::hardening", "sidecar::gitea::hardening2", false)]
    #[case::any_sidecar("sidecar::*::hardening", "sidecar::gitea::hardening", true)]
    #[case::any_sidecar_other_name("sidecar::*::hardening", "sidecar::notes-mcp::hardening", true)]
    #[case::other_aspect("sidecar::*::hardening", "sidecar::gitea::interfaces", false)]
    #[case::other_family("sidecar::*::hardening", "contract::gitea::hardening", false)]
    #[case::star_stays_in_its_segment("sidecar::*", "sidecar::gitea::hardening", false)]
    #[case::star_never_spans_segments("openwebui::*::oidc", "openwebui::access::last_group_removed::oidc", false)]
    #[case::segments_counted("openwebui::access::*::oidc", "openwebui::access::last_group_removed::oidc", true)]
    #[case::inside_a_segment("reach::*-/->gitea", "reach::n8n-/->gitea", true)]
    #[case::inside_a_segment_no_match("reach::*-/->gitea", "reach::n8n-/->legacy", false)]
    #[case::two_stars("reach::*-/->*", "reach::n8n-/->legacy", true)]
    #[case::star_may_be_empty("contract::gitea*::tools", "contract::gitea::tools", true)]
    #[case::suffix_not_reused("contract::*ab*ab::tools", "contract::xab::tools", false)]
    fn patterns_match_segment_by_segment(#[case] pattern: &str, #[case] name: &str, #[case] want: bool) {
        let name = CheckName::parse(name).unwrap();
        assert_eq!(CheckPattern::parse(pattern).unwrap().matches(&name), want, "{pattern} vs {name}");
    }

    #[rstest::rstest]
    #[case::whole_run("*")]
    #[case::any_family("*::*::hardening")]
    #[case::partial_family("side*::x::hardening")]
    #[case::unknown_family("sidecars::*::hardening")]
    #[case::no_segment("sidecar*")]
    fn a_pattern_names_its_family(#[case] pattern: &str) {
        let error = CheckPattern::parse(pattern).unwrap_err();
        assert!(error.contains(pattern), "{error}");
    }

    #[test]
    fn plain_names_stay_exact() {
        let exact = CheckPattern::parse("sidecar::gitea::hardening").unwrap();
        assert!(!exact.is_pattern());
        assert!(CheckPattern::parse("sidecar::*::hardening").unwrap().is_pattern());
    }
}
