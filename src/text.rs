//! Text that came from the network or from a file, made safe to show: control
//! characters, bidi overrides and XML non-characters become visible escapes, and binary
//! is summarised, never copied. Every observation passes its strings through here before
//! they reach the result model; each reporter adds its own sink's escaping on top.

use std::fmt::Write as _;

/// Characters that can forge or hide output: C0 and C1 controls, DEL, bidi controls,
/// the Unicode line and paragraph separators (a line break to some viewers), and the
/// non-characters XML forbids.
pub fn is_dangerous(c: char) -> bool {
    let u = c as u32;
    u < 0x20
        || (0x7f..=0x9f).contains(&u)
        || (0x202a..=0x202e).contains(&u)
        || (0x2066..=0x2069).contains(&u)
        || u == 0x200e
        || u == 0x200f
        || u == 0x061c
        || u == 0x2028
        || u == 0x2029
        || (0xfdd0..=0xfdef).contains(&u)
        || (u & 0xfffe) == 0xfffe
}

/// `s` with every dangerous character shown as `\u{XXXX}` (and `\n`, `\r`, `\t` by
/// their usual escapes), on one line.
pub fn sanitize(s: &str) -> String {
    if !s.chars().any(is_dangerous) {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if is_dangerous(c) => {
                let _ = write!(out, "\\u{{{:04x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    out
}

/// Standard base64, padding optional (a `Basic` credential pair, a swarm config's data).
pub fn decode_base64(text: &str) -> Option<Vec<u8>> {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD_NO_PAD.decode(text.trim_end_matches('=')).ok()
}

/// Multi-line text with each line sanitized (line breaks kept).
pub fn sanitize_lines(text: &str) -> String {
    text.split('\n').map(sanitize).collect::<Vec<_>>().join("\n")
}

/// Does this look like binary rather than text? NUL bytes, invalid UTF-8 beyond a cut
/// multi-byte tail, or many control bytes.
pub fn is_binary(bytes: &[u8]) -> bool {
    if bytes.contains(&0) {
        return true;
    }
    let valid = match std::str::from_utf8(bytes) {
        Ok(_) => true,
        // A prefix may end inside a character: only the last 3 bytes may be cut.
        Err(e) => e.error_len().is_none() && bytes.len() - e.valid_up_to() < 4,
    };
    if !valid {
        return true;
    }
    let controls = bytes.iter().filter(|b| **b < 0x20 && !matches!(b, b'\n' | b'\r' | b'\t')).count();
    controls * 10 > bytes.len().max(1)
}

/// At most `max_chars` characters of a body for evidence: sanitized text, or for binary
/// a summary (length and a hex prefix), never the raw bytes.
pub fn body_excerpt(bytes: &[u8], max_chars: usize) -> String {
    if is_binary(bytes) {
        let prefix: String = bytes.iter().take(16).map(|b| format!("{b:02x}")).collect();
        return format!("<{} bytes of binary data, starting {prefix}…>", bytes.len());
    }
    let text = String::from_utf8_lossy(bytes);
    let cut: String = text.chars().take(max_chars).collect();
    let mut out = sanitize(&cut);
    if text.chars().count() > max_chars {
        out.push('…');
    }
    out
}

/// A list of names for evidence: at most `max` of them, then how many more.
pub fn name_list<'a>(names: impl IntoIterator<Item = &'a str>, max: usize) -> String {
    let mut shown = Vec::new();
    let mut more = 0usize;
    for n in names {
        if shown.len() < max {
            shown.push(sanitize(n));
        } else {
            more += 1;
        }
    }
    let mut out = shown.join(", ");
    if more > 0 {
        let _ = write!(out, ", … and {more} more");
    }
    out
}

/// Longest excerpt of an offending value echoed back in an error.
const ECHO_CHARS: usize = 32;

/// A value quoted back in an error: short and with every control character escaped.
pub fn echo(value: &str) -> String {
    let mut cut: String = value.chars().take(ECHO_CHARS).collect();
    if cut.len() < value.len() {
        cut.push('…');
    }
    sanitize(&cut)
}

/// `sha256:<64 hex digits>` of `bytes`: how reports name the scenario and suite a run read.
pub fn sha256_of(bytes: &[u8]) -> String {
    use sha2::Digest as _;
    format!("sha256:{}", hex::encode(sha2::Sha256::digest(bytes)))
}

/// The hex digits of a `sha256:<hex>` pin, or why it is not one. A pin shorter than 64
/// digits (at least 12, as the requirement's own example writes them) is a prefix of the
/// digest, compared as such.
pub fn sha256_hex(text: &str) -> Result<String, String> {
    let not_a_digest =
        || format!("`{}` is not a digest: expected `sha256:` and 64 hex digits (or at least 12, a prefix)", echo(text));
    let hex = text.strip_prefix("sha256:").ok_or_else(not_a_digest)?;
    if !(MIN_PIN_DIGITS..=64).contains(&hex.len()) || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(not_a_digest());
    }
    if hex.bytes().all(|b| b == b'0') {
        return Err("a placeholder digest (all zeros), not a pin: expected the sha256 of what is pinned".into());
    }
    Ok(hex.to_ascii_lowercase())
}

/// The shortest prefix of a digest accepted as a pin (what `docker` shows of an id).
pub const MIN_PIN_DIGITS: usize = 12;

/// Whether the full hex `actual` is what `pinned` (full or a prefix) names.
pub fn pin_matches(pinned: &str, actual: &str) -> bool {
    actual.starts_with(pinned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forging_characters_become_visible() {
        assert_eq!(sanitize("add\ntest FAKE ... ok"), "add\\ntest FAKE ... ok");
        assert_eq!(sanitize("a\u{1b}[31mred"), "a\\u{001b}[31mred");
        assert_eq!(sanitize("evil\u{202e}txt.exe"), "evil\\u{202e}txt.exe");
        assert_eq!(sanitize("x\u{fffe}y\u{85}z\u{7f}"), "x\\u{fffe}y\\u{0085}z\\u{007f}");
        assert_eq!(sanitize("plain é ✓"), "plain é ✓");
    }

    #[test]
    fn binary_is_summarised() {
        let gz = [0x1f, 0x8b, 0x08, 0x00, 0xff, 0x00, 0x01];
        assert_eq!(body_excerpt(&gz, 100), "<7 bytes of binary data, starting 1f8b0800ff0001…>");
        assert_eq!(body_excerpt(b"{\"error\":\"x\"}", 100), "{\"error\":\"x\"}");
        assert_eq!(body_excerpt("héllo wörld".as_bytes(), 5), "héllo…");
        assert!(!is_binary(&"é".as_bytes()[..1]), "a cut character is still text");
    }

    #[test]
    fn every_class_of_dangerous_character_is_escaped() {
        let dangerous = [
            '\0',
            '\x1b',
            '\x1f',
            '\x7f',
            '\u{80}',
            '\u{9f}',
            '\u{200e}',
            '\u{200f}',
            '\u{061c}',
            '\u{202a}',
            '\u{202e}',
            '\u{2066}',
            '\u{2069}',
            '\u{2028}',
            '\u{2029}',
            '\u{fdd0}',
            '\u{fdef}',
            '\u{fffe}',
            '\u{ffff}',
            '\u{1fffe}',
            '\u{10ffff}',
        ];
        for c in dangerous {
            let shown = sanitize(&format!("a{c}b"));
            assert!(!shown.contains(c) && shown.starts_with("a\\") && shown.ends_with('b'), "{c:?}: {shown}");
        }
        for c in ['é', '✓', '\u{a0}', '\u{fdcf}', '\u{fdf0}', '\u{fffd}', '\u{1f600}'] {
            assert_eq!(sanitize(&format!("a{c}b")), format!("a{c}b"), "{c:?} is harmless");
        }
    }

    proptest::proptest! {
        #[test]
        fn nothing_dangerous_survives(s in "\\PC*|[\\x00-\\x{ffff}]*", bytes in proptest::collection::vec(0u8.., 0..64)) {
            proptest::prop_assert!(!sanitize(&s).chars().any(is_dangerous));
            proptest::prop_assert!(!body_excerpt(s.as_bytes(), 40).chars().any(is_dangerous));
            proptest::prop_assert!(!body_excerpt(&bytes, 40).chars().any(is_dangerous));
            proptest::prop_assert!(!name_list([s.as_str(), "x"], 3).chars().any(is_dangerous));
        }
    }

    #[test]
    fn long_lists_are_cut() {
        let names: Vec<String> = (0..10).map(|i| format!("t{i}")).collect();
        assert_eq!(name_list(names.iter().map(String::as_str), 3), "t0, t1, t2, … and 7 more");
    }
}
