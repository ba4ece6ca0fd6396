//! The roles directory, read once: every role's `meta/mcp.yml`, `meta/services.yml` and
//! `meta/networks.yml`, parsed with the scenario loader's parser (same limits, same
//! file:line:column errors), every file's problems collected in one pass.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::condition::{Condition, ConfigSource};
use super::metadata::{McpFile, NetworksFile, ServicesFile};
use crate::config::error::{parse_yaml, read_file};
use crate::config::{ConfigError, ConfigErrors};

/// A parsed file and where it came from (as the user named the roles directory).
#[derive(Debug)]
pub struct Loaded<T> {
    pub file: PathBuf,
    pub value: T,
}

#[derive(Debug)]
pub struct Role {
    pub id: String,
    /// `meta/mcp.yml`, or the `mcp:` entry of `meta/services.yml`; absent when the role
    /// declares no MCP surface.
    pub mcp: Option<Loaded<McpFile>>,
    pub services: Loaded<ServicesFile>,
    pub networks: Loaded<NetworksFile>,
}

/// Every role under a roles directory, by id.
#[derive(Debug)]
pub struct Roles {
    pub dir: PathBuf,
    pub by_id: BTreeMap<String, Role>,
}

impl Roles {
    /// Reads every role directory (one with a `meta/` directory) under `dir`.
    pub fn load(dir: &Path) -> Result<Roles, ConfigErrors> {
        let entries = std::fs::read_dir(dir).map_err(|e| {
            ConfigError::whole_file(dir, format!("cannot read the roles directory: {e} (give the platform's `roles/`)"))
        })?;
        let mut errors = Vec::new();
        let mut ids: Vec<String> = Vec::new();
        for entry in entries.filter_map(|e| e.ok()) {
            let meta = entry.path().join("meta");
            // A link that leads nowhere (or round in a loop) is a role cordon cannot read,
            // never a role that declares nothing.
            for path in [entry.path(), meta.clone()] {
                if let Some(problem) = broken_link(&path) {
                    errors.push(ConfigError::whole_file(&path, problem));
                }
            }
            if meta.is_dir() {
                ids.extend(entry.file_name().into_string().ok());
            }
        }
        if !errors.is_empty() {
            return Err(ConfigErrors(errors));
        }
        ids.sort();
        if ids.is_empty() {
            return Err(ConfigError::whole_file(
                dir,
                "holds no role (no `<role>/meta/` directory): give the platform's `roles/`",
            )
            .into());
        }
        let mut by_id = BTreeMap::new();
        for id in ids {
            let meta = dir.join(&id).join("meta");
            let services = optional::<ServicesFile>(&meta.join("services.yml"), &mut errors);
            let mcp = match optional::<McpFile>(&meta.join("mcp.yml"), &mut errors) {
                Some(file) => {
                    if let Some(entry) = services.as_ref().and_then(|s| s.value.get("mcp")) {
                        let message = "the MCP entry is declared twice, here and in meta/mcp.yml: keep one";
                        errors.push(ConfigError::at(&meta.join("services.yml"), &entry.referenced, "mcp", message));
                    }
                    Some(file)
                }
                None if services.as_ref().is_some_and(|s| s.value.contains_key("mcp")) => {
                    mcp_service(&meta.join("services.yml"), &mut errors)
                }
                None => None,
            };
            let networks = optional::<NetworksFile>(&meta.join("networks.yml"), &mut errors);
            let role = Role {
                id: id.clone(),
                mcp,
                services: or_default(services, &meta.join("services.yml")),
                networks: or_default(networks, &meta.join("networks.yml")),
            };
            by_id.insert(id, role);
        }
        if errors.is_empty() { Ok(Roles { dir: dir.to_path_buf(), by_id }) } else { Err(ConfigErrors(errors)) }
    }

    pub fn get(&self, id: &str) -> Option<&Role> {
        self.by_id.get(id)
    }

    /// The platform checkout: where `specification_path` values are relative to.
    pub fn platform_root(&self) -> PathBuf {
        let named = matches!(self.dir.components().next_back(), Some(std::path::Component::Normal(_)));
        match self.dir.parent() {
            Some(p) if named && !p.as_os_str().is_empty() => p.to_path_buf(),
            Some(_) if named => PathBuf::from("."),
            // `--roles .` or `--roles ..`: only the absolute path has a parent to name.
            _ => std::path::absolute(&self.dir)
                .ok()
                .and_then(|a| a.parent().map(Path::to_path_buf))
                .unwrap_or_else(|| PathBuf::from("..")),
        }
    }
}

/// The platform's later layout: the MCP entry as the `mcp:` service of
/// `meta/services.yml` rather than a file of its own.
fn mcp_service(path: &Path, errors: &mut Vec<ConfigError>) -> Option<Loaded<McpFile>> {
    #[derive(serde::Deserialize)]
    struct WithMcp {
        mcp: Option<McpFile>,
    }
    let text = read_file(path).map_err(|e| errors.push(e)).ok()?;
    match parse_yaml::<WithMcp>(path, &text) {
        Ok(w) => w.mcp.map(|value| Loaded { file: path.to_path_buf(), value }),
        Err(e) => {
            errors.push(newer_key(e));
            None
        }
    }
}

/// Why `path` is a symbolic link cordon cannot follow (dangling, or a loop); `None` for
/// anything else, a missing path included.
fn broken_link(path: &Path) -> Option<String> {
    let link = std::fs::symlink_metadata(path).ok()?;
    if !link.file_type().is_symlink() {
        return None;
    }
    match std::fs::metadata(path) {
        Ok(_) => None,
        Err(e) => {
            let target = std::fs::read_link(path).map(|t| t.display().to_string()).unwrap_or_default();
            Some(format!(
                "is a symbolic link to `{}` that cannot be followed ({}): a dangling link or a loop, not an absent file",
                crate::text::sanitize(&target),
                e
            ))
        }
    }
}

/// An unknown key of the MCP entry may be one a later platform schema added: the error
/// says which cordon read it, so "upgrade cordon" is an answer the reader can find.
fn newer_key(mut e: ConfigError) -> ConfigError {
    if e.message.starts_with("unknown field") {
        e.message = format!(
            "{}; cordon {} reads the metadata schema of requirement 035, which has no such key: if the platform's schema added it, a newer cordon reads it",
            e.message,
            env!("CARGO_PKG_VERSION")
        );
    }
    e
}

/// A file that is absent declares nothing.
fn or_default<T: Default>(loaded: Option<Loaded<T>>, path: &Path) -> Loaded<T> {
    loaded.unwrap_or_else(|| Loaded { file: path.to_path_buf(), value: T::default() })
}

fn optional<T: serde::de::DeserializeOwned + Default>(path: &Path, errors: &mut Vec<ConfigError>) -> Option<Loaded<T>> {
    if let Some(problem) = broken_link(path) {
        errors.push(ConfigError::whole_file(path, problem));
        return None;
    }
    if !path.exists() {
        return None;
    }
    let text = match read_file(path) {
        Ok(t) => t,
        Err(e) => {
            errors.push(e);
            return None;
        }
    };
    // An empty file (or one holding only `---` and comments) declares nothing.
    let is_blank = text.lines().all(|l| {
        let l = l.trim();
        l.is_empty() || l == "---" || l.starts_with('#')
    });
    if is_blank {
        return Some(Loaded { file: path.to_path_buf(), value: T::default() });
    }
    match parse_yaml::<T>(path, &text) {
        Ok(value) => Some(Loaded { file: path.to_path_buf(), value }),
        Err(e) => {
            errors.push(newer_key(e));
            None
        }
    }
}

/// `lookup('config', role, path)` reads the same metadata: `mcp.enabled`/`mcp.shared`
/// from `meta/mcp.yml`, `services.<key>.enabled`/`.shared` from `meta/services.yml`.
impl ConfigSource for Roles {
    fn condition(&self, role: &str, path: &str) -> Result<Condition, String> {
        let r = self.get(role).ok_or_else(|| format!("there is no role `{role}` under {}", self.dir.display()))?;
        let parts: Vec<&str> = path.split('.').collect();
        let missing = |file: &Path| format!("{} sets no `{path}`", file.display());
        match parts.as_slice() {
            ["mcp", flag @ ("enabled" | "shared")] => {
                let loaded = r.mcp.as_ref().ok_or_else(|| format!("role `{role}` declares no MCP entry"))?;
                let value = if *flag == "enabled" { &loaded.value.enabled } else { &loaded.value.shared };
                value.as_ref().map(|v| v.value.clone()).ok_or_else(|| missing(&loaded.file))
            }
            ["services", key, flag @ ("enabled" | "shared")] => {
                let entry = r.services.value.get(*key).and_then(|e| e.value.as_ref());
                let value = entry.and_then(|e| if *flag == "enabled" { e.enabled.as_ref() } else { e.shared.as_ref() });
                value.map(|v| v.value.clone()).ok_or_else(|| missing(&r.services.file))
            }
            _ => Err(format!(
                "cordon reads only `mcp.enabled`, `mcp.shared`, `services.<key>.enabled` and `services.<key>.shared`, not `{path}`"
            )),
        }
    }
}
