//! A provider's endpoint, resolved as the platform's discovery does:
//! `http://<service_key>:<internal port>/<path>`, with the port read from the service's
//! `ports.internal.<port_key>` in `meta/services.yml`.

use std::path::PathBuf;

use serde_saphyr::Location;

use super::metadata::{McpFile, Scalar, ServiceEntry};
use super::roles::Role;

#[derive(Debug, Clone)]
pub struct Endpoint {
    pub url: String,
    pub service: String,
    /// The service's other internal ports: declared listeners besides the endpoint.
    pub other_ports: Vec<u16>,
}

/// Why no URL could be made, with the place to look.
#[derive(Debug, Clone)]
pub struct Problem {
    pub file: PathBuf,
    pub at: Option<Location>,
    pub key: String,
    pub message: String,
    /// The platform renders this endpoint, but cordon cannot: a credential in its path.
    pub only_cordon: bool,
}

pub fn resolve(role: &Role, m: &McpFile, file: &std::path::Path) -> Result<Endpoint, Problem> {
    let problem = |at: Option<Location>, key: &str, message: String| Problem {
        file: file.to_path_buf(),
        at,
        key: key.to_string(),
        message,
        only_cordon: false,
    };
    let Some(e) = &m.endpoint else {
        return Err(problem(
            None,
            "endpoint",
            "no `endpoint`: a provider names `service_key`, `port_key` and `path`".into(),
        ));
    };
    let at = Some(e.referenced);
    let need = |v: &Option<serde_saphyr::Spanned<String>>, key: &str| {
        v.clone().ok_or_else(|| {
            problem(
                at,
                &format!("endpoint.{key}"),
                format!("no `endpoint.{key}`: the endpoint names `service_key`, `port_key` and `path`"),
            )
        })
    };
    let service_key = need(&e.value.service_key, "service_key")?;
    let port_key = need(&e.value.port_key, "port_key")?;
    let path = need(&e.value.path, "path")?;
    if let Some(k) = &e.value.key_credential {
        let suffix = e.value.suffix.as_deref().map(|s| format!("/{}", s.trim_matches('/'))).unwrap_or_default();
        return Err(Problem {
            only_cordon: true,
            ..problem(
                Some(k.referenced),
                "endpoint.key_credential",
                format!(
                    "the platform puts credential `{}` into the URL path (…{}/<{}>{suffix}); a scenario names \
                     credentials by reference and never carries one in a URL",
                    k.value, path.value, k.value
                ),
            )
        });
    }
    if !path.value.starts_with('/') {
        return Err(problem(Some(path.referenced), "endpoint.path", format!("`{}` must start with `/`", path.value)));
    }
    let services = &role.services;
    let Some(entry) = services.value.get(&service_key.value).map(|s| s.value.as_ref()) else {
        let known: Vec<&str> = services.value.keys().map(String::as_str).collect();
        let message = format!(
            "names service `{}`, which {} does not declare (services: {})",
            service_key.value,
            services.file.display(),
            if known.is_empty() { "none".into() } else { known.join(", ") }
        );
        return Err(problem(Some(service_key.referenced), "endpoint.service_key", message));
    };
    let default = ServiceEntry::default();
    let entry = entry.unwrap_or(&default);
    let ports = internal_ports(entry);
    let port = match ports.iter().find(|(k, _)| *k == port_key.value) {
        Some((_, Ok(p))) => *p,
        Some((_, Err((at, shown)))) => {
            return Err(Problem {
                file: services.file.clone(),
                ..problem(
                    Some(*at),
                    &format!("{}.ports.internal.{}", service_key.value, port_key.value),
                    format!("the endpoint port is {shown}: expected a port number (1 to 65535)"),
                )
            });
        }
        None => {
            let keys: Vec<&str> = ports.iter().map(|(k, _)| k.as_str()).collect();
            let message = format!(
                "service `{}` has no internal port `{}` in {} (ports.internal: {})",
                service_key.value,
                port_key.value,
                services.file.display(),
                if keys.is_empty() { "none".into() } else { keys.join(", ") }
            );
            return Err(problem(Some(port_key.referenced), "endpoint.port_key", message));
        }
    };
    let url = format!("http://{}:{port}{}", service_key.value, path.value);
    if let Err(message) = crate::config::scenario::endpoint_url(&url) {
        return Err(problem(at, "endpoint", format!("makes the URL {message}")));
    }
    let mut other_ports: Vec<u16> =
        ports.iter().filter_map(|(_, p)| p.as_ref().ok().copied()).filter(|p| *p != port).collect();
    other_ports.sort_unstable();
    other_ports.dedup();
    Ok(Endpoint { url, service: service_key.value.clone(), other_ports })
}

type PortValue = Result<u16, (Location, String)>;

/// A service's internal ports by key, each a number or what stood there instead.
pub fn internal_ports(entry: &ServiceEntry) -> Vec<(String, PortValue)> {
    let Some(internal) = entry.ports.as_ref().and_then(|p| p.internal.as_ref()) else { return Vec::new() };
    internal
        .iter()
        .map(|(k, v)| {
            let value = match &v.value {
                Scalar::Number(n) if (1..=65535).contains(n) => Ok(*n as u16),
                Scalar::Number(n) => Err((v.referenced, n.to_string())),
                Scalar::Text(t) => Err((v.referenced, format!("the text `{}`", crate::config::strict::echo(t)))),
                Scalar::Float(_) | Scalar::Other => Err((v.referenced, "not a number".to_string())),
            };
            (k.clone(), value)
        })
        .collect()
}
