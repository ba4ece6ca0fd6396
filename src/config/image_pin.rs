//! A sidecar's `image` and `digest`: the image the platform pins for it, which
//! `sidecar::<provider>::image` compares with what the engine runs.

use std::collections::BTreeMap;

use serde::Deserialize;

/// What the scenario writes for `sidecar.digest`: the pin itself, or the variable a deploy
/// that builds the image exports its digest in (the pin exists only after that build).
#[derive(Debug, Clone)]
pub(super) enum DigestRef {
    Written(String),
    Env(EnvRef),
}

#[derive(Debug, Clone)]
pub(super) struct EnvRef {
    env: String,
}

const EXPECTED: &str = "expected a digest (`sha256:` and hex digits) or `{ env: VAR }`";

impl<'de> Deserialize<'de> for DigestRef {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Text(String),
            Map(BTreeMap<String, String>),
        }
        match Raw::deserialize(d).map_err(|_| D::Error::custom(EXPECTED))? {
            Raw::Text(text) => Ok(DigestRef::Written(text)),
            Raw::Map(map) => match map.get("env") {
                Some(env) if map.len() == 1 => Ok(DigestRef::Env(EnvRef { env: env.clone() })),
                _ => {
                    let keys: Vec<&str> = map.keys().map(String::as_str).collect();
                    Err(D::Error::custom(format!("{EXPECTED}, got a mapping of `{}`", keys.join("`, `"))))
                }
            },
        }
    }
}

/// The image a sidecar must run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImagePin {
    /// The reference the platform names it by (`name:version`); evidence, not judged: a
    /// tag can be moved to other content, a digest cannot.
    pub image: Option<String>,
    /// Lowercase hex of the pinned digest: all 64 digits, or a prefix of at least 12.
    pub digest: String,
    /// Where the pin was read: `the scenario`, or `environment variable `VAR``.
    pub source: String,
}

impl ImagePin {
    /// `sha256:<hex>` as the pin names it.
    pub fn shown(&self) -> String {
        format!("sha256:{}", self.digest)
    }
}

/// The pin a `digest:` names, or why it names none. `unresolved_ok` (listing) accepts a
/// variable that is not set: planning needs no value.
pub(super) fn resolve(image: Option<&String>, digest: &DigestRef, unresolved_ok: bool) -> Result<ImagePin, String> {
    let (text, source) = match digest {
        DigestRef::Written(text) => (text.clone(), "the scenario".to_string()),
        DigestRef::Env(EnvRef { env }) => match std::env::var(env) {
            Ok(value) => (value.trim().to_string(), format!("environment variable `{env}`")),
            Err(_) if unresolved_ok => (format!("sha256:{}", "f".repeat(64)), format!("environment variable `{env}`")),
            Err(std::env::VarError::NotPresent) => {
                return Err(format!(
                    "environment variable `{env}` is not set: it holds the digest of the image this deploy built"
                ));
            }
            Err(std::env::VarError::NotUnicode(_)) => {
                return Err(format!("environment variable `{env}` is not UTF-8 text: a digest is `sha256:` and hex"));
            }
        },
    };
    if unresolved_ok && matches!(digest, DigestRef::Env(_)) && crate::text::sha256_hex(&text).is_err() {
        // Listing plans checks and reads no pin: a variable a later build fills is no error yet.
        return Ok(ImagePin { image: image.cloned(), digest: "f".repeat(64), source });
    }
    let digest = crate::text::sha256_hex(&text).map_err(|problem| match digest {
        DigestRef::Written(_) => problem,
        // Never the value: a variable named here by mistake may hold a credential.
        DigestRef::Env(EnvRef { env }) => format!(
            "environment variable `{env}` holds no digest (its value is not shown): expected `sha256:` and 64 hex digits (or at least 12, a prefix)"
        ),
    })?;
    Ok(ImagePin { image: image.cloned(), digest, source })
}

#[cfg(test)]
mod tests {
    use super::*;

    const FULL: &str = "sha256:b7296e278a1b16a32e4bb262f726d0b134cbb7db75a89d17d1f2628c17e9b897";

    #[test]
    fn a_written_pin_is_its_hex() {
        let pin = resolve(Some(&"adapter:1.2".into()), &DigestRef::Written(FULL.into()), false).unwrap();
        assert_eq!(pin.shown(), FULL);
        assert_eq!(pin.image.as_deref(), Some("adapter:1.2"));
        assert_eq!(pin.source, "the scenario");
    }

    #[test]
    fn a_pin_that_is_no_digest_is_refused_with_why() {
        for (text, words) in [
            ("latest", "is not a digest"),
            ("sha256:abc", "is not a digest"),
            (&*format!("sha256:{}", "0".repeat(64)), "placeholder"),
        ] {
            let e = resolve(None, &DigestRef::Written(text.into()), false).unwrap_err();
            assert!(e.contains(words), "{text}: {e}");
        }
    }

    #[test]
    fn a_pin_from_the_environment_names_its_variable() {
        let var = "CORDON_TEST_IMAGE_PIN_UNSET_4f1c";
        let reference = DigestRef::Env(EnvRef { env: var.into() });
        let e = resolve(None, &reference, false).unwrap_err();
        assert!(e.contains(var) && e.contains("is not set"), "{e}");
        assert!(resolve(None, &reference, true).is_ok(), "listing needs no value");
    }

    #[test]
    fn a_variable_that_holds_no_digest_is_refused_without_its_value() {
        let var = "CORDON_TEST_IMAGE_PIN_HOLDS_A_TOKEN_7d2e";
        // SAFETY: a variable of this test alone, set before it is read.
        unsafe { std::env::set_var(var, "tok-s3cr3t-value-not-a-digest") };
        let e = resolve(None, &DigestRef::Env(EnvRef { env: var.into() }), false).unwrap_err();
        assert!(e.contains(var) && e.contains("holds no digest"), "{e}");
        assert!(!e.contains("s3cr3t"), "the value was shown: {e}");
    }
}
