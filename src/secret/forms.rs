//! The forms in which a secret can be echoed back, each as bytes whose every run of
//! [`super::MIN_SECRET_LEN`] or more characters counts as a leak.

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE};

/// Every form of `value` that is masked:
/// - the value itself (so any substring: a prefix cut short, the last characters);
/// - percent-encoded, with upper- and lower-case hex digits;
/// - JSON-string-escaped (a `"` or `\` in the value), when that differs;
/// - base64 in the standard and the URL-safe alphabet, padded (a run that stops before
///   the padding is a substring too), of the value's bytes from offset 0, 1 and 2: the
///   value embedded in a longer text starts at one of the three byte alignments of a
///   base64 group, and from there on encodes exactly as at that offset;
/// - hex of the value's bytes, lower and upper case.
pub fn forms(value: &str) -> Vec<Vec<u8>> {
    let mut out: Vec<Vec<u8>> = named_forms(value).into_iter().map(|(_, f)| f).collect();
    out.sort();
    out.dedup();
    out
}

/// [`forms`], each with the name a finding gives it ("as written", "base64", "hex", …),
/// in that order.
pub fn named_forms(value: &str) -> Vec<(&'static str, Vec<u8>)> {
    let bytes = value.as_bytes();
    let mut out = vec![("as written", bytes.to_vec())];
    let percent = percent_encode(bytes);
    if percent != bytes {
        out.push(("percent-encoded", lowercase_escapes(&percent)));
        out.push(("percent-encoded", percent));
    }
    let json = serde_json::to_string(value).expect("a string always serializes");
    let json = json.as_bytes()[1..json.len() - 1].to_vec();
    if json != bytes {
        out.push(("JSON-escaped", json));
    }
    for offset in 0..3.min(bytes.len()) {
        out.push(("base64", STANDARD.encode(&bytes[offset..]).into_bytes()));
        out.push(("base64url", URL_SAFE.encode(&bytes[offset..]).into_bytes()));
    }
    let hex = hex::encode(bytes).into_bytes();
    out.push(("hex", hex.to_ascii_uppercase()));
    out.push(("hex", hex));
    out.retain(|(_, f)| f.len() >= super::MIN_SECRET_LEN);
    out
}

fn percent_encode(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len());
    for &b in bytes {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b);
        } else {
            out.extend_from_slice(format!("%{b:02X}").as_bytes());
        }
    }
    out
}

/// `%2F` → `%2f`, leaving the unescaped characters as they are.
fn lowercase_escapes(percent: &[u8]) -> Vec<u8> {
    let mut out = percent.to_vec();
    let mut i = 0;
    while i < out.len() {
        if out[i] == b'%' {
            out[i + 1..i + 3].make_ascii_lowercase();
            i += 3;
        } else {
            i += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percent_forms_in_both_cases() {
        let f = forms("se cret/+value");
        assert!(f.contains(&b"se%20cret%2F%2Bvalue".to_vec()));
        assert!(f.contains(&b"se%20cret%2f%2bvalue".to_vec()));
    }
}
