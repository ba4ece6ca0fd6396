//! How probe plans cross to a carrier: serde for the few types a plan carries that are
//! not serializable themselves (limits, the scenario's provider, secrets).
//!
//! A secret crosses as its value, on the agent's stdin only; the agent registers it with
//! its own redactor on arrival, so it is a [`Secret`] again on the other side.

use std::sync::OnceLock;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use url::Url;

use crate::config::{AppSpec, Boundary, Expectation, Provider, ReadSpec, Refusal, ToolsContract};
use crate::mcp::Transport;
use crate::secret::{Redactor, Secret};

/// The redactor secrets arriving in a plan are registered with (the agent's).
pub fn arrivals() -> &'static Redactor {
    static REDACTOR: OnceLock<Redactor> = OnceLock::new();
    REDACTOR.get_or_init(Redactor::new)
}

/// `#[serde(with = "wire::secret")]`
pub mod secret {
    use super::*;

    #[derive(Serialize, Deserialize)]
    struct Raw {
        label: String,
        value: String,
    }

    pub fn serialize<S: Serializer>(s: &Secret, ser: S) -> Result<S::Ok, S::Error> {
        Raw { label: s.label().to_string(), value: s.expose().to_string() }.serialize(ser)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(de: D) -> Result<Secret, D::Error> {
        let raw = Raw::deserialize(de)?;
        Ok(arrivals().register(&raw.label, raw.value))
    }
}

/// `#[serde(with = "wire::opt_secret")]`
pub mod opt_secret {
    use super::*;

    #[derive(Serialize, Deserialize)]
    struct Wrap(#[serde(with = "super::secret")] Secret);

    pub fn serialize<S: Serializer>(s: &Option<Secret>, ser: S) -> Result<S::Ok, S::Error> {
        s.clone().map(Wrap).serialize(ser)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(de: D) -> Result<Option<Secret>, D::Error> {
        Ok(Option::<Wrap>::deserialize(de)?.map(|w| w.0))
    }
}

/// The scenario's provider, as a plan carries it.
#[derive(Serialize, Deserialize)]
struct ProviderWire {
    id: String,
    url: Url,
    transport: Transport,
    credential: String,
    refusal: Refusal,
    allowed_consumers: Vec<String>,
    allowlist: Vec<String>,
    schema_sha256: Option<String>,
    mutating: Vec<String>,
    mutating_enabled: bool,
    read: Option<(String, serde_json::Value, Expectation)>,
    disabled: bool,
    #[serde(default)]
    served_by_app: bool,
    app_ports: Vec<u16>,
    service: String,
    sidecar_networks: Option<Vec<String>>,
    app: Option<(String, Vec<u16>)>,
    networks: Vec<String>,
    #[serde(default)]
    boundary: Boundary,
}

/// `#[serde(with = "wire::provider")]`
pub mod provider {
    use super::*;

    pub fn serialize<S: Serializer>(p: &Provider, ser: S) -> Result<S::Ok, S::Error> {
        ProviderWire {
            id: p.id.clone(),
            url: p.url.clone(),
            transport: p.transport,
            credential: p.credential.clone(),
            refusal: p.refusal,
            allowed_consumers: p.allowed_consumers.clone(),
            allowlist: p.tools.allowlist.clone(),
            schema_sha256: p.tools.schema_sha256.clone(),
            mutating: p.tools.mutating.clone(),
            mutating_enabled: p.tools.mutating_enabled,
            read: p.read.as_ref().map(|r| (r.tool.clone(), r.arguments.clone(), r.expect.clone())),
            disabled: p.disabled,
            served_by_app: p.served_by_app,
            app_ports: p.app_ports.clone(),
            service: p.service.clone(),
            sidecar_networks: p.sidecar_networks.clone(),
            app: p.app.as_ref().map(|a| (a.service.clone(), a.ports.clone())),
            networks: p.networks.clone(),
            boundary: p.boundary.clone(),
        }
        .serialize(ser)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(de: D) -> Result<Provider, D::Error> {
        let w = ProviderWire::deserialize(de)?;
        Ok(Provider {
            id: w.id,
            url: w.url,
            transport: w.transport,
            credential: w.credential,
            refusal: w.refusal,
            allowed_consumers: w.allowed_consumers,
            tools: ToolsContract {
                allowlist: w.allowlist,
                schema_sha256: w.schema_sha256,
                mutating: w.mutating,
                mutating_enabled: w.mutating_enabled,
            },
            read: w.read.map(|(tool, arguments, expect)| ReadSpec { tool, arguments, expect }),
            disabled: w.disabled,
            served_by_app: w.served_by_app,
            app_ports: w.app_ports,
            service: w.service,
            sidecar_networks: w.sidecar_networks,
            // Judged from the engine's facts in cordon's own process, never in a namespace.
            sidecar_image: None,
            app: w.app.map(|(service, ports)| AppSpec { service, ports }),
            networks: w.networks,
            boundary: w.boundary,
        })
    }
}

/// `#[serde(with = "wire::read")]` for an optional read spec.
pub mod read {
    use super::*;

    pub fn serialize<S: Serializer>(r: &Option<ReadSpec>, ser: S) -> Result<S::Ok, S::Error> {
        r.as_ref().map(|r| (r.tool.clone(), r.arguments.clone(), r.expect.clone())).serialize(ser)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(de: D) -> Result<Option<ReadSpec>, D::Error> {
        let raw = Option::<(String, serde_json::Value, Expectation)>::deserialize(de)?;
        Ok(raw.map(|(tool, arguments, expect)| ReadSpec { tool, arguments, expect }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::Limits;

    #[derive(Serialize, Deserialize)]
    struct Carried {
        limits: Limits,
        #[serde(with = "secret")]
        secret: Secret,
    }

    #[test]
    fn a_secret_crosses_by_value_and_is_registered_on_arrival() {
        let r = Redactor::new();
        let c = Carried { limits: Limits::default(), secret: r.register("tok", "a-long-secret-value".into()) };
        let text = serde_json::to_string(&c).unwrap();
        let back: Carried = serde_json::from_str(&text).unwrap();
        assert_eq!(back.secret.expose(), "a-long-secret-value");
        assert_eq!(back.limits, Limits::default());
        assert_eq!(arrivals().redact("x a-long-secret-value y"), "x «redacted:tok» y");
    }
}
