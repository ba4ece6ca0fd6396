//! Human durations (`500ms`, `3s`, `2m`) and sizes (`4MiB`, `512KiB`, `1048576`) in YAML.

use std::fmt;
use std::time::Duration;

use serde::de::{self, Deserialize, Deserializer, Visitor};

use super::strict::echo;

/// The longest duration any key accepts: a run bounded by more than a day is not bounded.
pub const MAX_DURATION: Duration = Duration::from_secs(24 * 3600);

pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let shown = echo(text);
    let split = text.find(|c: char| !c.is_ascii_digit() && c != '.').unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let not_a_duration = || format!("`{shown}` is not a duration like 500ms, 3s or 2m");
    if number.is_empty() || number.matches('.').count() > 1 || !number.bytes().any(|b| b.is_ascii_digit()) {
        return Err(not_a_duration());
    }
    let value: f64 = number.parse().map_err(|_| not_a_duration())?;
    let factor = match unit.trim() {
        "ms" => 0.001,
        "s" => 1.0,
        "m" => 60.0,
        "h" => 3600.0,
        "" => return Err(format!("`{shown}` has no unit: write 500ms, 3s, 2m or 1h")),
        other => {
            return Err(format!("`{shown}`: unknown duration unit `{}` (use ms, s, m or h)", echo(other)));
        }
    };
    let seconds = value * factor;
    // Also catches digits beyond f64's range, which parse as infinity.
    if !seconds.is_finite() || seconds > MAX_DURATION.as_secs_f64() {
        return Err(format!("`{shown}` is longer than the limit of {}h", MAX_DURATION.as_secs() / 3600));
    }
    Ok(Duration::from_secs_f64(seconds))
}

pub fn parse_size(text: &str) -> Result<u64, String> {
    let text = text.trim();
    let shown = echo(text);
    let split = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    if number.is_empty() {
        return Err(format!("`{shown}` is not a size like 4MiB, 512KiB or 65536"));
    }
    let factor: u64 = match unit.trim() {
        "" | "B" => 1,
        "KiB" => 1 << 10,
        "MiB" => 1 << 20,
        "GiB" => 1 << 30,
        other => return Err(format!("`{shown}`: unknown size unit `{}` (use B, KiB, MiB or GiB)", echo(other))),
    };
    let too_large = || format!("`{shown}` is too large");
    let value: u64 = number.parse().map_err(|_| too_large())?;
    value.checked_mul(factor).ok_or_else(too_large)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HumanDuration(pub Duration);

impl<'de> Deserialize<'de> for HumanDuration {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct DurationVisitor;
        impl<'de> Visitor<'de> for DurationVisitor {
            type Value = HumanDuration;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a duration like 500ms, 3s or 2m")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<HumanDuration, E> {
                parse_duration(v).map(HumanDuration).map_err(E::custom)
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<HumanDuration, E> {
                Err(E::custom(format!("`{v}` has no unit: write {v}s or {v}ms")))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<HumanDuration, E> {
                Err(E::custom(format!("`{v}` is negative: a duration is like 500ms, 3s or 2m")))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<HumanDuration, E> {
                Err(E::custom(format!("`{v}` is not a duration like 500ms, 3s or 2m")))
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<HumanDuration, E> {
                Err(E::custom(format!("expected a duration like 500ms, 3s or 2m, got the boolean {v}")))
            }
            fn visit_unit<E: de::Error>(self) -> Result<HumanDuration, E> {
                Err(E::custom("expected a duration like 500ms, 3s or 2m, got nothing"))
            }
        }
        d.deserialize_any(DurationVisitor)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HumanSize(pub u64);

impl<'de> Deserialize<'de> for HumanSize {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct SizeVisitor;
        impl<'de> Visitor<'de> for SizeVisitor {
            type Value = HumanSize;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a size like 4MiB, 512KiB or 65536")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<HumanSize, E> {
                Ok(HumanSize(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<HumanSize, E> {
                Err(E::custom(format!("`{v}` is negative: a size is like 4MiB, 512KiB or 65536")))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<HumanSize, E> {
                Err(E::custom(if v >= u64::MAX as f64 {
                    "the size is too large".to_string()
                } else {
                    format!("`{v}` is not a whole number of bytes")
                }))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<HumanSize, E> {
                if !v.trim().is_empty() && v.trim().bytes().all(|b| b.is_ascii_digit()) {
                    // A plain number arrives as one: digits alone as text were quoted.
                    return Err(E::custom(format!(
                        "expected a size, got the text `{}`: write the number without quotes",
                        echo(v)
                    )));
                }
                parse_size(v).map(HumanSize).map_err(E::custom)
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<HumanSize, E> {
                Err(E::custom(format!("expected a size like 4MiB, got the boolean {v}")))
            }
            fn visit_unit<E: de::Error>(self) -> Result<HumanSize, E> {
                Err(E::custom("expected a size like 4MiB, got nothing"))
            }
        }
        d.deserialize_any(SizeVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case("500ms", 500)]
    #[case("3s", 3000)]
    #[case("1.5s", 1500)]
    #[case("2m", 120_000)]
    fn parses_durations(#[case] text: &str, #[case] millis: u128) {
        assert_eq!(parse_duration(text).unwrap().as_millis(), millis);
    }

    #[rstest]
    #[case("3")]
    #[case("3 days")]
    #[case("s")]
    #[case("99999999999999999999999s")]
    #[case("NaN")]
    #[case("nans")]
    #[case("infs")]
    #[case("-1s")]
    #[case("1.2.3s")]
    #[case(".s")]
    #[case("25h")]
    #[case("1e3s")]
    fn rejects_bad_durations(#[case] text: &str) {
        assert!(parse_duration(text).is_err());
    }

    #[rstest]
    #[case("4MiB", 4 << 20)]
    #[case("512KiB", 512 << 10)]
    #[case("100", 100)]
    fn parses_sizes(#[case] text: &str, #[case] bytes: u64) {
        assert_eq!(parse_size(text).unwrap(), bytes);
    }

    #[test]
    fn absurd_inputs_are_errors_not_panics() {
        let digits = "9".repeat(400);
        for text in [format!("{digits}s"), format!("{digits}.5ms"), format!("0.{digits}s")] {
            let _ = parse_duration(&text);
        }
        let err = parse_duration(&format!("{digits}s")).unwrap_err();
        assert!(err.len() < 200, "the echo is cut short: {err}");
        assert!(parse_size(&format!("{digits}MiB")).unwrap_err().contains("too large"));
        assert!(parse_size("17179869184GiB").unwrap_err().contains("too large"));
        assert_eq!(parse_duration("24h").unwrap().as_secs(), 86_400);
    }
}
