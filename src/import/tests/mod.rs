//! The importer on small role trees written per test: a provider `web-app-p` that
//! admits the client `web-app-c`, changed one file at a time.

mod errors;
mod rejections;
mod wiring;

use std::path::PathBuf;

use super::decide::{Request, import};
use super::model::Import;

pub const PROVIDER_MCP: &str = "---
enabled: true
shared: true
classification: native_server
direction: server
transport: streamable_http
exposure: internal
auth: bearer_token
auth_subject: service_account
implementation: native
credential:
  owner: mcp-web-app-p
  source: credentials
  key: mcp_bearer
allowed_consumers:
  - web-app-c
endpoint:
  service_key: p
  path: /mcp
  port_key: http
tools:
  allowlist:
    - read_thing
  read_only_default: true
  mutating_tools_enabled: false
source_url: https://example.test/p/source
supported_version: 1.2.3
";

pub const PROVIDER_SERVICES: &str = "---
p:
  enabled: true
  shared: true
  ports:
    internal:
      http: 8000
";

pub const CLIENT_MCP: &str = "---
enabled: true
shared: true
classification: native_client
direction: client
implementation: native
supported_transports:
  - streamable_http
supported_auths:
  - bearer_token
source_url: https://example.test/c/source
supported_version: 4.5.6
";

pub struct Tree {
    dir: tempfile::TempDir,
}

impl Tree {
    /// The provider and the client, both deployable.
    pub fn new() -> Tree {
        let tree = Tree { dir: tempfile::tempdir().unwrap() };
        tree.write("web-app-p", "meta/mcp.yml", PROVIDER_MCP);
        tree.write("web-app-p", "meta/services.yml", PROVIDER_SERVICES);
        tree.write("web-app-c", "meta/mcp.yml", CLIENT_MCP);
        tree.write("web-app-c", "meta/services.yml", "c:\n  enabled: true\n");
        tree
    }

    pub fn roles(&self) -> PathBuf {
        self.dir.path().join("roles")
    }

    pub fn write(&self, role: &str, file: &str, text: &str) {
        let path = self.roles().join(role).join(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    /// Replaces `from` with `to` in a file that holds it.
    pub fn edit(&self, role: &str, file: &str, from: &str, to: &str) {
        let path = self.roles().join(role).join(file);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains(from), "{role}/{file} does not hold {from:?}");
        std::fs::write(path, text.replacen(from, to, 1)).unwrap();
    }

    pub fn request(&self, deployed: &[&str]) -> Request {
        Request {
            roles_dir: self.roles(),
            deployed: deployed.iter().map(|s| s.to_string()).collect(),
            scenario_dir: self.dir.path().to_path_buf(),
            ..Request::default()
        }
    }

    /// The import, or its errors as a user sees them, with paths from `roles/`.
    pub fn import(&self, deployed: &[&str]) -> Result<Import, Vec<String>> {
        self.import_with(self.request(deployed))
    }

    pub fn import_with(&self, request: Request) -> Result<Import, Vec<String>> {
        let root = format!("{}/", self.dir.path().display());
        let shown = |e: &[crate::config::ConfigError]| e.iter().map(|e| e.to_string().replace(&root, "")).collect();
        // Findings of the metadata contract fail an import as errors do (nothing is written).
        match import(&request) {
            Ok(i) if !i.lint.is_empty() => Err(shown(&i.lint)),
            Ok(i) => Ok(i),
            Err(e) => Err(shown(&e.0)),
        }
    }
}

/// Both roles of [`Tree::new`].
pub const BOTH: &[&str] = &["web-app-p", "web-app-c"];
