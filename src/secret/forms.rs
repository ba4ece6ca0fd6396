//! The forms in which a secret can be echoed back, each as bytes whose every run of
//! [`super::MIN_SECRET_LEN`] or more characters counts as a leak.

const STANDARD: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const URL_SAFE: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

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
    let bytes = value.as_bytes();
    let mut out = vec![bytes.to_vec()];
    let percent = percent_encode(bytes);
    if percent != bytes {
        out.push(lowercase_escapes(&percent));
        out.push(percent);
    }
    let json = serde_json::to_string(value).expect("a string always serializes");
    let json = json.as_bytes()[1..json.len() - 1].to_vec();
    if json != bytes {
        out.push(json);
    }
    for offset in 0..3.min(bytes.len()) {
        out.push(base64(&bytes[offset..], STANDARD));
        out.push(base64(&bytes[offset..], URL_SAFE));
    }
    let hex = hex::encode(bytes).into_bytes();
    out.push(hex.to_ascii_uppercase());
    out.push(hex);
    out.retain(|f| f.len() >= super::MIN_SECRET_LEN);
    out.sort();
    out.dedup();
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

fn base64(bytes: &[u8], alphabet: &[u8; 64]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk.iter().enumerate().fold(0u32, |n, (i, &b)| n | u32::from(b) << (16 - 8 * i));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(alphabet[(n >> (18 - 6 * i) & 63) as usize]);
            } else {
                out.push(b'=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use base64::Engine;
    use base64::engine::general_purpose::{STANDARD as B64, URL_SAFE as B64URL};

    use super::*;

    #[test]
    fn base64_matches_the_reference_encoder() {
        for len in 0..10 {
            let bytes: Vec<u8> = (0..len).map(|i| (i * 37 + 250) as u8).collect();
            assert_eq!(base64(&bytes, STANDARD), B64.encode(&bytes).into_bytes(), "len {len}");
            assert_eq!(base64(&bytes, URL_SAFE), B64URL.encode(&bytes).into_bytes(), "len {len}");
        }
    }

    #[test]
    fn percent_forms_in_both_cases() {
        let f = forms("se cret/+value");
        assert!(f.contains(&b"se%20cret%2F%2Bvalue".to_vec()));
        assert!(f.contains(&b"se%20cret%2f%2bvalue".to_vec()));
    }
}
