//! The three files of a role the importer reads, as typed data that keeps every value's
//! place in its file: `meta/mcp.yml` (or, in the platform's later layout, the `mcp:`
//! entry of `meta/services.yml`; read strictly: an unknown key is an error, since cordon
//! interprets all of it), and `meta/services.yml` and `meta/networks.yml` (read leniently:
//! they hold much more than MCP, and only the keys named here are looked at).

use std::collections::BTreeMap;

use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_saphyr::Spanned;

use super::condition::Condition;
use crate::config::Expectation;
use crate::config::strict::{Flag, Whole};

/// `meta/mcp.yml`: the role's MCP audit entry and, for a deployable classification, its
/// served contract. Only `classification` is required by the platform; what else is
/// needed depends on what the role is and whether it is enabled.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpFile {
    pub enabled: Option<Spanned<Condition>>,
    /// A service flag of the `mcp:` entry in `meta/services.yml`; no meaning here.
    #[serde(rename = "bond")]
    _bond: Option<IgnoredAny>,
    /// Why an audit-only classification cannot serve, in prose.
    pub notes: Option<Spanned<IgnoredAny>>,
    pub shared: Option<Spanned<Condition>>,
    pub classification: Option<Spanned<String>>,
    /// Why an audit-only classification cannot serve.
    pub reason: Option<Spanned<String>>,
    pub direction: Option<Spanned<String>>,
    pub source_url: Option<Spanned<String>>,
    /// The exact version (or commit) the mapping was verified with.
    pub supported_version: Option<Spanned<Text>>,
    #[serde(rename = "minimum_version")]
    _minimum_version: Option<IgnoredAny>,
    pub transport: Option<Spanned<String>>,
    pub exposure: Option<Spanned<String>>,
    pub auth: Option<Spanned<String>>,
    pub auth_subject: Option<Spanned<String>>,
    #[serde(rename = "delegation")]
    _delegation: Option<IgnoredAny>,
    pub implementation: Option<Spanned<String>>,
    /// How far the surface has come (`experimental`, ...): recorded, not interpreted.
    #[serde(rename = "maturity")]
    _maturity: Option<IgnoredAny>,
    /// The artifacts an enabled mutation is proven by (human confirmation, authorization,
    /// idempotency, audit, rollback): required when `tools.mutating_tools_enabled`.
    pub mutating_proofs: Option<Spanned<IgnoredAny>>,
    pub credential: Option<Spanned<CredentialDecl>>,
    pub allowed_consumers: Option<Spanned<Vec<Spanned<String>>>>,
    pub supported_transports: Option<Spanned<Vec<Spanned<String>>>>,
    pub supported_auths: Option<Spanned<Vec<Spanned<String>>>>,
    pub endpoint: Option<Spanned<EndpointDecl>>,
    pub adapter: Option<Spanned<AdapterDecl>>,
    pub limits: Option<Spanned<LimitsDecl>>,
    pub tools: Option<Spanned<ToolsDecl>>,
}

/// Which principal the provider authenticates as and where its secret lives. Fields are
/// optional here: an incomplete declaration is the platform's `credential_missing`, not a
/// parse error.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CredentialDecl {
    pub owner: Option<String>,
    pub source: Option<String>,
    pub key: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EndpointDecl {
    pub service_key: Option<Spanned<String>>,
    pub path: Option<Spanned<String>>,
    pub port_key: Option<Spanned<String>>,
    /// A credential whose value the platform puts into the URL path.
    pub key_credential: Option<Spanned<String>>,
    pub suffix: Option<String>,
    #[serde(rename = "health_path")]
    _health_path: Option<IgnoredAny>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AdapterDecl {
    #[serde(rename = "type")]
    pub kind: Option<Spanned<String>>,
    pub image: Option<Spanned<String>>,
    pub version: Option<Spanned<Text>>,
    pub digest: Option<Spanned<String>>,
    pub upstream_api_version: Option<Spanned<Text>>,
    /// Relative to the platform checkout (the roles directory's parent).
    pub specification_path: Option<Spanned<String>>,
    pub specification_sha256: Option<Spanned<String>>,
    #[serde(rename = "scope")]
    _scope: Option<IgnoredAny>,
    /// cordon's extension: the network the sidecar reaches its app on, where that is not
    /// the role's own network (the platform's sidecars share the role's network).
    pub upstream_network: Option<Spanned<String>>,
}

/// The limits, in the ranges the scenario loader accepts (`config::boundary`): a limit
/// cordon could not test is an error here, at its place in the metadata, rather than a
/// scenario that does not load.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LimitsDecl {
    pub request_bytes: Option<Whole<u64, 1, { crate::config::boundary::MAX_REQUEST_BYTES }>>,
    pub response_bytes: Option<Whole<u64, 1, { crate::config::suite::MAX_RESPONSE_BYTES_LIMIT }>>,
    pub timeout_seconds: Option<Whole<u64, 1, 3600>>,
    pub concurrent_requests: Option<Whole<u32, 1, { crate::config::boundary::MAX_CONCURRENT_REQUESTS }>>,
    pub page_size: Option<Whole<u32, 1, 100_000>>,
    pub result_items: Option<Whole<u32, 1, 1_000_000>>,
    pub stream_seconds: Option<Whole<u64, 1, 86_400>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolsDecl {
    pub allowlist: Option<Spanned<Vec<Spanned<String>>>>,
    /// What a writer consumer may call: the names beyond `allowlist` are the mutating ones.
    pub writer_allowlist: Option<Vec<String>>,
    /// What the upstream server behind a passthrough adapter serves: a list, or `dynamic`.
    pub upstream_serves: Option<Spanned<UpstreamServes>>,
    #[serde(rename = "categories")]
    _categories: Option<IgnoredAny>,
    pub schema_sha256: Option<Spanned<String>>,
    pub read_only_default: Option<Spanned<Flag>>,
    pub mutating_tools_enabled: Option<Spanned<Flag>>,
    pub mutating: Option<Vec<String>>,
    pub read_probe: Option<Spanned<ReadProbe>>,
    /// Calls that push the limits past their bounds (cordon's extension, beside
    /// `read_probe`): `slow` (longer than `timeout_seconds`) and `large` (over
    /// `result_items` and `response_bytes`).
    pub limit_probes: Option<Spanned<LimitProbesDecl>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LimitProbesDecl {
    pub slow: Option<Spanned<ProbeCallDecl>>,
    pub large: Option<Spanned<ProbeCallDecl>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProbeCallDecl {
    pub tool: Spanned<String>,
    pub arguments: Option<serde_json::Value>,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum UpstreamServes {
    Names(Vec<String>),
    /// `dynamic`: the upstream decides at run time, so no list can be pinned.
    Word(String),
}

/// The deterministic read. `expect` is cordon's extension (the scenario's own
/// expectation); without it only `isError: false` is asked of the read.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReadProbe {
    pub tool: Spanned<String>,
    pub arguments: Option<serde_json::Value>,
    pub expect: Option<Expectation>,
}

/// A scalar read as text whatever YAML typed it (`version: 1.2` is a float to YAML, a
/// version to the platform).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Text(pub String);

impl<'de> Deserialize<'de> for Text {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Scalar::deserialize(d)? {
            Scalar::Text(t) => Ok(Text(t)),
            Scalar::Number(n) => Ok(Text(n.to_string())),
            Scalar::Float(f) => Ok(Text(f)),
            Scalar::Other => Err(serde::de::Error::custom("expected a version (a string or a number)")),
        }
    }
}

/// `meta/services.yml`: one entry per service key.
pub type ServicesFile = BTreeMap<String, Spanned<Option<ServiceEntry>>>;

#[derive(Debug, Default, Deserialize)]
pub struct ServiceEntry {
    pub enabled: Option<Spanned<Condition>>,
    pub shared: Option<Spanned<Condition>>,
    pub ports: Option<Ports>,
}

#[derive(Debug, Default, Deserialize)]
pub struct Ports {
    /// Container ports by key: what another container on the network connects to.
    pub internal: Option<BTreeMap<String, Spanned<Scalar>>>,
}

/// A value read as YAML typed it; checked only where it is used, so an odd value in a
/// key cordon never needs cannot stop an import.
#[derive(Debug, Clone)]
pub enum Scalar {
    Number(u64),
    Text(String),
    /// A float, as written in the shortest form that reads back (`1.2`).
    Float(String),
    Other,
}

impl<'de> Deserialize<'de> for Scalar {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct ScalarVisitor;
        impl<'de> serde::de::Visitor<'de> for ScalarVisitor {
            type Value = Scalar;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a scalar")
            }
            fn visit_u64<E>(self, v: u64) -> Result<Scalar, E> {
                Ok(Scalar::Number(v))
            }
            fn visit_i64<E>(self, _: i64) -> Result<Scalar, E> {
                Ok(Scalar::Other)
            }
            fn visit_f64<E>(self, v: f64) -> Result<Scalar, E> {
                Ok(Scalar::Float(v.to_string()))
            }
            fn visit_bool<E>(self, _: bool) -> Result<Scalar, E> {
                Ok(Scalar::Other)
            }
            fn visit_str<E>(self, v: &str) -> Result<Scalar, E> {
                Ok(Scalar::Text(v.to_string()))
            }
            fn visit_unit<E>(self) -> Result<Scalar, E> {
                Ok(Scalar::Other)
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Scalar, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Scalar::Other)
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Scalar, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Scalar::Other)
            }
        }
        d.deserialize_any(ScalarVisitor)
    }
}

/// `meta/networks.yml`: the role's own network.
#[derive(Debug, Default, Deserialize)]
pub struct NetworksFile {
    pub local: Option<LocalNetwork>,
}

#[derive(Debug, Default, Deserialize)]
pub struct LocalNetwork {
    pub subnet: Option<String>,
    /// cordon's extension: the network's name where it is not the role's entity name
    /// (the platform's convention).
    pub name: Option<String>,
}

/// The limits a provider's metadata declares, as the scenario holds them.
pub(super) fn limits(decl: Option<&LimitsDecl>) -> crate::config::ProviderLimits {
    let Some(l) = decl else { return crate::config::ProviderLimits::default() };
    crate::config::ProviderLimits {
        request_bytes: l.request_bytes.map(|v| v.0),
        response_bytes: l.response_bytes.map(|v| v.0),
        timeout_seconds: l.timeout_seconds.map(|v| v.0),
        concurrent_requests: l.concurrent_requests.map(|v| v.0),
        page_size: l.page_size.map(|v| v.0),
        result_items: l.result_items.map(|v| v.0),
        stream_seconds: l.stream_seconds.map(|v| v.0),
    }
}
