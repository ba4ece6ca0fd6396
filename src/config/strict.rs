//! Booleans and whole numbers read strictly: a quoted `"yes"` or `"4"` is text, not a flag
//! or a count, and saying so beats guessing what was meant.
//!
//! serde-saphyr hands a quoted scalar to a `bool` or integer field as if it were plain, so
//! these types ask for `deserialize_any`, where a quoted scalar stays a string, and accept
//! only what the YAML itself typed.

use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, Deserialize, Deserializer, Visitor};

pub use crate::text::echo;

/// A boolean written as YAML `true` or `false`, unquoted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Flag(pub bool);

impl<'de> Deserialize<'de> for Flag {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct FlagVisitor;
        impl<'de> Visitor<'de> for FlagVisitor {
            type Value = Flag;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a boolean (true or false)")
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<Flag, E> {
                Ok(Flag(v))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Flag, E> {
                let looks_boolean = ["true", "false", "yes", "no", "on", "off", "y", "n"]
                    .iter()
                    .any(|w| w.eq_ignore_ascii_case(v.trim()));
                Err(E::custom(if looks_boolean {
                    format!("expected a boolean, got the text `{}`: write true or false, without quotes", echo(v))
                } else {
                    format!("expected a boolean (true or false), got `{}`", echo(v))
                }))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Flag, E> {
                Err(E::custom(format!("expected a boolean (true or false), got the number {v}")))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Flag, E> {
                Err(E::custom(format!("expected a boolean (true or false), got the number {v}")))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Flag, E> {
                Err(E::custom(format!("expected a boolean (true or false), got the number {v}")))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Flag, E> {
                Err(E::custom("expected a boolean (true or false), got nothing"))
            }
        }
        d.deserialize_any(FlagVisitor)
    }
}

/// A whole number of type `T` within `MIN..=MAX`, written unquoted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Whole<T, const MIN: u64, const MAX: u64>(pub T);

/// A TCP port: 1 to 65535.
pub type Port = Whole<u16, 1, 65535>;

impl<'de, T, const MIN: u64, const MAX: u64> Deserialize<'de> for Whole<T, MIN, MAX>
where
    T: TryFrom<u64>,
{
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(WholeVisitor::<T, MIN, MAX>(PhantomData))
    }
}

struct WholeVisitor<T, const MIN: u64, const MAX: u64>(PhantomData<T>);

impl<T, const MIN: u64, const MAX: u64> WholeVisitor<T, MIN, MAX> {
    fn range() -> String {
        format!("a whole number from {MIN} to {MAX}")
    }
}

impl<'de, T: TryFrom<u64>, const MIN: u64, const MAX: u64> Visitor<'de> for WholeVisitor<T, MIN, MAX> {
    type Value = Whole<T, MIN, MAX>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(&Self::range())
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        if !(MIN..=MAX).contains(&v) {
            return Err(E::custom(format!("expected {}, got {v}", Self::range())));
        }
        T::try_from(v).map(Whole).map_err(|_| E::custom(format!("expected {}, got {v}", Self::range())))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        match u64::try_from(v) {
            Ok(v) => self.visit_u64(v),
            Err(_) => Err(E::custom(format!("expected {}, got the negative number {v}", Self::range()))),
        }
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
        if v >= u64::MAX as f64 {
            return Err(E::custom(format!("expected {}, got a number far too large", Self::range())));
        }
        Err(E::custom(format!("expected {}, got {v}", Self::range())))
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
        Err(E::custom(format!("expected {}, got the boolean {v}", Self::range())))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        // A plain number never reaches here: only quoted text, or words.
        let numeric = !v.trim().is_empty() && v.trim().bytes().all(|b| b.is_ascii_digit() || b"+-._".contains(&b));
        Err(E::custom(if numeric {
            format!("expected {}, got the text `{}`: write the number without quotes", Self::range(), echo(v))
        } else {
            format!("expected {}, got `{}`", Self::range(), echo(v))
        }))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Err(E::custom(format!("expected {}, got nothing", Self::range())))
    }
}
