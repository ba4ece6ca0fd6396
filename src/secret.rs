//! Secrets and the redactor every output passes through.
//!
//! A [`Secret`] can only be created through a [`Redactor`], so a value cannot reach a
//! header without first being registered for redaction. `Debug` and `Display` never show
//! the value; only [`Secret::expose`] does, and only the HTTP layer calls it.

use std::fmt;
use std::sync::{Arc, RwLock};

/// Values shorter than this are not redacted: masking "a" would shred every message.
/// Loading rejects credentials this short, so no real secret slips through.
pub const MIN_SECRET_LEN: usize = 8;

#[derive(Clone, Default)]
pub struct Redactor {
    known: Arc<RwLock<Vec<(String, String)>>>,
}

impl Redactor {
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers `value` under `label` and returns the handle used to send it.
    pub fn register(&self, label: &str, value: String) -> Secret {
        if value.len() >= MIN_SECRET_LEN {
            let mut known = self.known.write().expect("redactor lock poisoned");
            if !known.iter().any(|(_, v)| *v == value) {
                known.push((label.to_string(), value.clone()));
                // Longest first, so a secret that contains another is masked whole.
                known.sort_by_key(|(_, v)| std::cmp::Reverse(v.len()));
            }
        }
        Secret { label: label.to_string(), value: Arc::from(value) }
    }

    /// Replaces every registered value (and its percent-encoded form) with `«label»`, and
    /// also any run of at least [`MIN_SECRET_LEN`] leading characters of a value: excerpts
    /// of echoed bodies may cut a secret short, and a prefix is still a leak.
    pub fn redact(&self, text: &str) -> String {
        let known = self.known.read().expect("redactor lock poisoned");
        let mut out = text.to_string();
        for (label, value) in known.iter() {
            let mask = format!("«redacted:{label}»");
            out = mask_prefixes(&out, value, &mask);
            let encoded = percent_encode(value);
            if encoded != *value && out.contains(&encoded) {
                out = out.replace(&encoded, &mask);
            }
        }
        out
    }

    pub fn len(&self) -> usize {
        self.known.read().expect("redactor lock poisoned").len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Masks every occurrence of `value`, or of a prefix of it at least [`MIN_SECRET_LEN`]
/// bytes long.
fn mask_prefixes(text: &str, value: &str, mask: &str) -> String {
    let Some(head) = value.get(..MIN_SECRET_LEN) else { return text.to_string() };
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(head) {
        let candidate = &rest[at..];
        let matched = candidate.bytes().zip(value.bytes()).take_while(|(a, b)| a == b).count();
        let mut end = matched;
        while !candidate.is_char_boundary(end) {
            end -= 1;
        }
        out.push_str(&rest[..at]);
        out.push_str(mask);
        rest = &candidate[end.max(1)..];
    }
    out.push_str(rest);
    out
}

fn percent_encode(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for byte in value.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// A credential value. Cloning is cheap; printing never shows the value.
#[derive(Clone)]
pub struct Secret {
    label: String,
    value: Arc<str>,
}

impl Secret {
    pub fn label(&self) -> &str {
        &self.label
    }

    /// The raw value, for the `Authorization` header only.
    pub fn expose(&self) -> &str {
        &self.value
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Secret(«redacted:{}»)", self.label)
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "«redacted:{}»", self.label)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_registered_values_longest_first() {
        let r = Redactor::new();
        r.register("short", "abcdefgh".into());
        r.register("long", "xyz-abcdefgh-ijkl".into());
        assert_eq!(r.redact("x xyz-abcdefgh-ijkl y abcdefgh"), "x «redacted:long» y «redacted:short»");
    }

    #[test]
    fn masks_a_secret_cut_short() {
        let r = Redactor::new();
        r.register("tok", "0123456789abcdef".into());
        assert_eq!(r.redact("body {\"auth\": \"0123456789ab…"), "body {\"auth\": \"«redacted:tok»…");
        assert_eq!(r.redact("0123456 stays"), "0123456 stays", "shorter than the minimum is no secret");
    }

    #[test]
    fn masks_percent_encoded_form() {
        let r = Redactor::new();
        r.register("tok", "se cret/+value".into());
        assert_eq!(r.redact("q=se%20cret%2F%2Bvalue"), "q=«redacted:tok»");
    }

    #[test]
    fn printing_a_secret_never_shows_it() {
        let r = Redactor::new();
        let s = r.register("tok", "supersecretvalue".into());
        assert!(!format!("{s} {s:?}").contains("supersecretvalue"));
        assert_eq!(s.expose(), "supersecretvalue");
    }
}
