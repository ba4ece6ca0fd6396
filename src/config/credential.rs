//! Credential values: read from where a reference points, and refused when they could not
//! travel in an `Authorization` header. Errors name the credential and its source, never
//! the value.

use std::path::Path;

use crate::secret::MIN_SECRET_LEN;

/// The largest credential file read: a bearer is a line, not a file of megabytes.
pub const MAX_CREDENTIAL_BYTES: u64 = 64 << 10;

/// Where a credential came from, as an error names it.
pub enum Source<'a> {
    Env(&'a str),
    File(&'a Path),
}

impl Source<'_> {
    fn describe(&self) -> String {
        match self {
            Source::Env(var) => format!("environment variable `{var}`"),
            Source::File(path) => format!("file `{}`", path.display()),
        }
    }
}

/// Reads a credential value and checks it; the error says which source and what is wrong.
pub fn load(source: Source) -> Result<String, String> {
    let raw = match &source {
        Source::Env(var) => match std::env::var(var) {
            Ok(v) => v,
            Err(std::env::VarError::NotPresent) => return Err(format!("environment variable `{var}` is not set")),
            Err(std::env::VarError::NotUnicode(_)) => {
                return Err(format!("environment variable `{var}` is not UTF-8 text: a bearer is visible ASCII"));
            }
        },
        Source::File(path) => crate::fsutil::read_regular_text(path, MAX_CREDENTIAL_BYTES).map_err(|e| {
            format!("cannot read credential file `{}`: it {}", path.display(), super::error::read_error_words(&e))
        })?,
    };
    // One trailing line break (as `echo` and editors write) is not part of the value.
    let value = raw.trim_matches(|c| c == ' ' || c == '\t' || c == '\n' || c == '\r');
    check_bearer(value).map_err(|problem| format!("the value from {} {problem}", source.describe()))?;
    Ok(value.to_string())
}

/// Why `value` cannot be sent as `Authorization: Bearer <value>`, as the end of a sentence
/// about it; never quotes the value.
pub fn check_bearer(value: &str) -> Result<(), String> {
    for (i, c) in value.chars().enumerate() {
        let position = i + 1;
        let problem = match c {
            '\n' | '\r' => "a line break",
            ' ' | '\t' => "a space",
            c if c.is_control() => "a control character",
            c if !c.is_ascii() => "a non-ASCII character",
            _ => continue,
        };
        return Err(format!(
            "holds {problem} at character {position}: a bearer must be one word of visible ASCII, valid in an HTTP header"
        ));
    }
    if value.len() < MIN_SECRET_LEN {
        return Err(format!(
            "is shorter than {MIN_SECRET_LEN} characters, too short to be a real secret (and to be redacted safely)"
        ));
    }
    Ok(())
}

/// `text` with the userinfo of a URL-like string (`scheme://user:pass@host/…`) replaced by
/// `***`, for echoing a URL or an engine address that may carry a password. Works on text
/// that does not parse as a URL too.
pub fn mask_userinfo(text: &str) -> String {
    let Some(scheme_end) = text.find("://") else { return text.to_string() };
    let authority_start = scheme_end + 3;
    let rest = &text[authority_start..];
    let authority_len = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    match rest[..authority_len].rfind('@') {
        Some(at) => format!("{}***{}", &text[..authority_start], &rest[at..]),
        None => text.to_string(),
    }
}

/// True when a URL-like string carries userinfo (`user@` or `user:pass@`).
pub fn has_userinfo(text: &str) -> bool {
    mask_userinfo(text) != text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearers_must_fit_a_header() {
        assert!(check_bearer("abcdefgh-1234_~+/=").is_ok());
        for (value, problem) in [
            ("abcd\nefghij", "a line break at character 5"),
            ("abcdefgh\r", "a line break"),
            ("abc defghij", "a space"),
            ("abcdefgh\u{7}", "a control character"),
            ("abcdefgh\u{7f}", "a control character"),
            ("abcdefgh\u{85}", "a control character"),
            ("abcdéfghij", "a non-ASCII character at character 5"),
            ("abc", "shorter than 8"),
        ] {
            let err = check_bearer(value).unwrap_err();
            assert!(err.contains(problem), "{value:?}: {err}");
            assert!(!err.contains(value), "the value is never quoted: {err}");
        }
    }

    #[test]
    fn userinfo_is_masked() {
        assert_eq!(mask_userinfo("http://user:pa55@host:8/mcp?x=@"), "http://***@host:8/mcp?x=@");
        assert_eq!(mask_userinfo("tcp://a@b@10.0.0.1:2375"), "tcp://***@10.0.0.1:2375");
        assert_eq!(mask_userinfo("http://host/p@th"), "http://host/p@th");
        assert_eq!(mask_userinfo("unix:///var/run/docker.sock"), "unix:///var/run/docker.sock");
        assert!(has_userinfo("https://:secret@h/") && !has_userinfo("host:1"));
    }

    #[test]
    fn sources_are_named_and_files_are_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let big = dir.path().join("big");
        std::fs::write(&big, vec![b'a'; (MAX_CREDENTIAL_BYTES + 1) as usize]).unwrap();
        let err = load(Source::File(&big)).unwrap_err();
        assert!(err.contains("larger than the 65536-byte limit") && err.contains("big"), "{err}");
        let err = load(Source::File(Path::new("/dev/zero"))).unwrap_err();
        assert!(err.contains("not a regular file"), "{err}");
        let bad = dir.path().join("bad");
        std::fs::write(&bad, "good-part\nsecond-line\n").unwrap();
        let err = load(Source::File(&bad)).unwrap_err();
        assert!(err.contains("file `") && err.contains("a line break at character 10"), "{err}");
        let ok = dir.path().join("ok");
        std::fs::write(&ok, "good-token-value\n").unwrap();
        assert_eq!(load(Source::File(&ok)).unwrap(), "good-token-value");
    }
}
