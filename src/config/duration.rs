//! Human durations (`500ms`, `3s`, `2m`) and sizes (`4MiB`, `512KiB`, `1048576`) in YAML.

use std::time::Duration;

use serde::{Deserialize, Deserializer, de};

pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text.find(|c: char| !c.is_ascii_digit() && c != '.').unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let value: f64 = number.parse().map_err(|_| format!("`{text}` is not a duration like 500ms, 3s or 2m"))?;
    let seconds = match unit.trim() {
        "ms" => value / 1000.0,
        "s" => value,
        "m" => value * 60.0,
        "h" => value * 3600.0,
        other => return Err(format!("`{text}`: unknown duration unit `{other}` (use ms, s, m or h)")),
    };
    Ok(Duration::from_secs_f64(seconds))
}

pub fn parse_size(text: &str) -> Result<u64, String> {
    let text = text.trim();
    let split = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let value: u64 = number.parse().map_err(|_| format!("`{text}` is not a size like 4MiB or 65536"))?;
    let factor = match unit.trim() {
        "" | "B" => 1,
        "KiB" => 1 << 10,
        "MiB" => 1 << 20,
        "GiB" => 1 << 30,
        other => return Err(format!("`{text}`: unknown size unit `{other}` (use B, KiB, MiB or GiB)")),
    };
    value.checked_mul(factor).ok_or_else(|| format!("`{text}` is too large"))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HumanDuration(pub Duration);

impl<'de> Deserialize<'de> for HumanDuration {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        parse_duration(&text).map(HumanDuration).map_err(de::Error::custom)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HumanSize(pub u64);

impl<'de> Deserialize<'de> for HumanSize {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Bytes(u64),
            Text(String),
        }
        match Raw::deserialize(d)? {
            Raw::Bytes(n) => Ok(HumanSize(n)),
            Raw::Text(t) => parse_size(&t).map(HumanSize).map_err(de::Error::custom),
        }
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
}
