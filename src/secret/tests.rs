//! The redactor masks every form of a secret, and nothing else. The oracle below builds
//! the forms with the `base64` and `hex` crates, independently of [`super::forms`].

use std::time::{Duration, Instant};

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
use proptest::prelude::*;

use super::*;

const MARK: &str = "«redacted:";

/// Every form the redactor promises to mask, built independently.
fn oracle_forms(secret: &str) -> Vec<String> {
    let bytes = secret.as_bytes();
    let mut out = vec![secret.to_string(), hex::encode(bytes), hex::encode_upper(bytes)];
    for offset in 0..3 {
        for engine in [&STANDARD, &URL_SAFE] {
            out.push(engine.encode(&bytes[offset..]));
        }
    }
    out
}

/// The first run of `MIN_SECRET_LEN` characters of any form of `secret` found in `text`.
fn leaked_run(text: &str, secret: &str) -> Option<String> {
    for form in oracle_forms(secret) {
        let chars: Vec<char> = form.chars().collect();
        for window in chars.windows(MIN_SECRET_LEN) {
            let run: String = window.iter().collect();
            if text.contains(&run) {
                return Some(run);
            }
        }
    }
    None
}

fn redactor_with(secrets: &[&str]) -> Redactor {
    let r = Redactor::new();
    for (i, s) in secrets.iter().enumerate() {
        r.register(&format!("s{i}"), s.to_string());
    }
    r
}

#[test]
fn masks_registered_values_longest_first() {
    let r = Redactor::new();
    r.register("short", "abcdefgh".into());
    r.register("long", "xyz-abcdefgh-ijkl".into());
    assert_eq!(r.redact("x xyz-abcdefgh-ijkl y abcdefgh"), "x «redacted:long» y «redacted:short»");
}

#[test]
fn masks_a_secret_cut_short_at_either_end() {
    let r = Redactor::new();
    r.register("tok", "0123456789abcdefghij".into());
    assert_eq!(r.redact("body {\"auth\": \"0123456789ab…"), "body {\"auth\": \"«redacted:tok»…");
    assert_eq!(r.redact("ends in …89abcdefghij\""), "ends in …«redacted:tok»\"");
    assert_eq!(r.redact("middle 3456789abc."), "middle «redacted:tok».");
    assert_eq!(r.redact("0123456 stays, so does hij"), "0123456 stays, so does hij", "7 characters are no leak");
}

#[test]
fn masks_percent_encoded_form_in_either_case() {
    let r = Redactor::new();
    r.register("tok", "se cret/+value".into());
    assert_eq!(r.redact("q=se%20cret%2F%2Bvalue"), "q=«redacted:tok»");
    assert_eq!(r.redact("q=se%20cret%2f%2bvalue&x"), "q=«redacted:tok»&x");
}

#[test]
fn masks_base64_and_hex_of_the_secret_inside_longer_values() {
    let token = "Zq7XkP2mRw9sLt4VbN8c";
    let r = redactor_with(&[token]);
    let echoes = [
        STANDARD.encode(format!("Bearer {token}")),
        URL_SAFE_NO_PAD.encode(format!("user:{token}")),
        STANDARD_NO_PAD.encode(format!("xy{token}z")),
        hex::encode(format!("a{token}")),
        hex::encode_upper(token),
        token[token.len() - 12..].to_string(),
    ];
    for echo in echoes {
        let text = format!("server said <{echo}> and stopped");
        let redacted = r.redact(&text);
        assert!(redacted.contains("«redacted:s0»"), "{echo}: {redacted}");
        assert_eq!(leaked_run(&redacted, token), None, "{echo}: {redacted}");
        assert!(redacted.starts_with("server said <") && redacted.ends_with("> and stopped"), "{redacted}");
    }
}

#[test]
fn a_run_across_multi_byte_characters_masks_whole_characters() {
    let r = redactor_with(&["pässwörd-über-alles"]);
    assert_eq!(r.redact("x wörd-über y"), "x «redacted:s0» y");
}

#[test]
fn printing_a_secret_never_shows_it() {
    let r = Redactor::new();
    let s = r.register("tok", "supersecretvalue".into());
    assert!(!format!("{s} {s:?}").contains("supersecretvalue"));
    assert_eq!(s.expose(), "supersecretvalue");
}

#[test]
fn ordinary_output_is_left_alone_by_random_tokens() {
    let r = redactor_with(&["q3TtZ0b8XnMa1LcVw7Ye5KoR2sPu9HdG", "Jf4Ni6Wg0Bh8Ck2Dl5Em7Fo1Gp3Hq9Ir"]);
    let text = "test contract::gitea::wrong_bearer ... ok\nPOST http://127.0.0.1:41234/mcp → 401, \
                www-authenticate Bearer error=\"invalid_token\", session 3f2a9c0b4d6e8f10a2b4c6d8e0f1a3b5";
    assert_eq!(r.redact(text), text);
}

#[test]
fn four_mebibytes_against_twenty_secrets_well_under_a_second() {
    let secrets: Vec<String> = (0..20).map(|i| random_alnum(32, i)).collect();
    let r = redactor_with(&secrets.iter().map(String::as_str).collect::<Vec<_>>());
    // Letters and digits only: every window is in the alphabet, so every one is looked up.
    let mut text = random_alnum(4 << 20, 99);
    text.replace_range(1000..1032, &secrets[3]);
    let started = Instant::now();
    let redacted = r.redact(&text);
    let took = started.elapsed();
    eprintln!("redacted 4 MiB against 20 secrets in {took:?}");
    assert_eq!(redacted.matches(MARK).count(), 1);
    assert!(took < Duration::from_millis(if cfg!(debug_assertions) { 900 } else { 250 }), "took {took:?}");
}

/// Deterministic letters and digits (xorshift), no `rand` needed.
fn random_alnum(len: usize, seed: u64) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            ALPHABET[(x % ALPHABET.len() as u64) as usize] as char
        })
        .collect()
}

/// How a secret is echoed back.
#[derive(Debug, Clone, Copy)]
enum Echo {
    Raw,
    Base64,
    Base64NoPad,
    Base64Url,
    Base64UrlNoPad,
    HexLower,
    HexUpper,
}

fn echo(how: Echo, bytes: &[u8]) -> String {
    match how {
        Echo::Raw => String::from_utf8_lossy(bytes).into_owned(),
        Echo::Base64 => STANDARD.encode(bytes),
        Echo::Base64NoPad => STANDARD_NO_PAD.encode(bytes),
        Echo::Base64Url => URL_SAFE.encode(bytes),
        Echo::Base64UrlNoPad => URL_SAFE_NO_PAD.encode(bytes),
        Echo::HexLower => hex::encode(bytes),
        Echo::HexUpper => hex::encode_upper(bytes),
    }
}

fn any_echo() -> impl Strategy<Value = Echo> {
    prop_oneof![
        Just(Echo::Raw),
        Just(Echo::Base64),
        Just(Echo::Base64NoPad),
        Just(Echo::Base64Url),
        Just(Echo::Base64UrlNoPad),
        Just(Echo::HexLower),
        Just(Echo::HexUpper),
    ]
}

/// Secrets as credentials look: printable ASCII, at least 8 characters.
fn any_secret() -> impl Strategy<Value = String> {
    "[!-~]{8,48}"
}

/// One leak: `before`, then a form of (`pre` + a cut of the secret + `post`), then `after`.
#[derive(Debug, Clone)]
struct Leak {
    secret_index: usize,
    cut: (usize, usize),
    pre: String,
    post: String,
    how: Echo,
    after: String,
}

fn any_leak() -> impl Strategy<Value = Leak> {
    (any::<usize>(), (any::<usize>(), any::<usize>()), "[ -~]{0,4}", "[ -~]{0,4}", any_echo(), "\\PC{0,40}")
        .prop_map(|(secret_index, cut, pre, post, how, after)| Leak { secret_index, cut, pre, post, how, after })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn no_run_of_any_form_survives(
        secrets in proptest::collection::vec(any_secret(), 1..4),
        head in "\\PC{0,40}",
        leaks in proptest::collection::vec(any_leak(), 1..5),
    ) {
        let r = redactor_with(&secrets.iter().map(String::as_str).collect::<Vec<_>>());
        let mut text = head;
        for leak in &leaks {
            let secret = &secrets[leak.secret_index % secrets.len()];
            // A cut of at least MIN_SECRET_LEN characters anywhere in the secret.
            let len = MIN_SECRET_LEN + leak.cut.0 % (secret.len() - MIN_SECRET_LEN + 1);
            let start = leak.cut.1 % (secret.len() - len + 1);
            let leaked = format!("{}{}{}", leak.pre, &secret[start..start + len], leak.post);
            text.push_str(&echo(leak.how, leaked.as_bytes()));
            text.push_str(&leak.after);
        }
        let redacted = r.redact(&text);
        prop_assert!(redacted.contains(MARK), "nothing masked in {text:?}");
        for secret in &secrets {
            prop_assert_eq!(leaked_run(&redacted, secret), None, "in {:?}", redacted);
        }
    }

    #[test]
    fn text_without_a_secret_is_unchanged(
        secrets in proptest::collection::vec(any_secret(), 1..4),
        text in "\\PC{0,200}",
        near_miss in any::<usize>(),
    ) {
        // A near miss: a secret's first 7 characters, a gap, the next 7.
        let secret = &secrets[near_miss % secrets.len()];
        let text = format!("{text} {} {}", &secret[..7], &secret[1..8]);
        prop_assume!(secrets.iter().all(|s| leaked_run(&text, s).is_none()));
        let r = redactor_with(&secrets.iter().map(String::as_str).collect::<Vec<_>>());
        prop_assert_eq!(r.redact(&text), text);
    }
}

#[test]
fn a_marker_is_never_masked_again() {
    let r = Redactor::new();
    r.register("other-app-token", "other-app-Zq7XkP2mRw9sLt4V".into());
    r.declare_public("other-app");
    let once = r.redact("bearer other-app-Zq7XkP2mRw9sLt4V refused");
    assert_eq!(once, "bearer other-app«redacted:other-app-token» refused");
    assert_eq!(r.redact(&once), once, "a second pass changes nothing");
    // Even with no public name declared, the label inside a marker stays as it is.
    let r = Redactor::new();
    r.register("other-app-token", "other-app-token-Zq7XkP2mRw9s".into());
    let once = r.redact("x other-app-token-Zq7XkP2mRw9s y");
    assert_eq!(once, "x «redacted:other-app-token» y");
    assert_eq!(r.redact(&once), once);
    assert!(!r.redact(&once).contains("«redacted:«"), "{once}");
}

#[test]
fn names_the_scenario_declares_are_never_masked() {
    let r = Redactor::new();
    r.register("gitea-token", "gitea-mcp-Zq7XkP2mRw9sLt4V".into());
    for name in ["gitea-mcp", "roles/gitea-mcp/mcp"] {
        r.declare_public(name);
    }
    for public in ["contract::gitea-mcp::tools", "group roles/gitea-mcp/mcp", "sidecar::gitea-mcp::egress"] {
        assert_eq!(r.redact(public), public);
    }
    // The secret itself is still masked, but for the public name it begins with; a piece
    // of it bordering on that name is masked however short.
    assert_eq!(r.redact("k=gitea-mcp-Zq7XkP2mRw9sLt4V"), "k=gitea-mcp«redacted:gitea-token»");
    r.register("odd-token", "ab-gitea-mcp-Yq7XkP2mRw9sLt4V".into());
    assert_eq!(r.redact("k=ab-gitea-mcp-Yq7X"), "k=«redacted:odd-token»gitea-mcp«redacted:odd-token»");
    // A "name" holding a whole secret would unmask it: it is not taken.
    let r = Redactor::new();
    r.register("t", "Zq7XkP2mRw9sLt4V".into());
    r.declare_public("svc-Zq7XkP2mRw9sLt4V");
    assert_eq!(r.redact("svc-Zq7XkP2mRw9sLt4V"), "svc-«redacted:t»");
}
