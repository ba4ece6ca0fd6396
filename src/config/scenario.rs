//! The scenario file: one deployment under test.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_saphyr::Spanned;
use url::Url;

use super::boundary::{self, Boundary, LimitsFile, ProviderContext, ProviderKeys, RevokedFacts};
use super::credential::{self, Source, mask_userinfo};
use super::error::{ConfigError, ConfigErrors, parse_yaml, read_file};
use super::strict::{Flag, Port};
use crate::mcp::Transport;
use crate::secret::{Redactor, Secret};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ScenarioFile {
    name: String,
    /// The compose project (or swarm stack) the scenario describes; `--project` overrides.
    project: Option<String>,
    #[serde(default)]
    credentials: BTreeMap<String, Spanned<CredentialRef>>,
    /// Optional here so that an empty or missing list gets its own words.
    providers: Option<Spanned<BTreeMap<String, Spanned<ProviderFile>>>>,
    #[serde(default)]
    clients: BTreeMap<String, Spanned<ClientFile>>,
}

/// Where a credential's value lives; never the value itself.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
enum CredentialRef {
    Env(String),
    File(PathBuf),
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ProviderFile {
    url: Spanned<String>,
    #[serde(default = "default_transport")]
    transport: Transport,
    credential: Spanned<String>,
    #[serde(default)]
    refusal: Refusal,
    #[serde(default)]
    allowed_consumers: Vec<Spanned<String>>,
    tools: Spanned<ToolsFile>,
    read: Option<Spanned<ReadFile>>,
    #[serde(default)]
    disabled: Flag,
    /// A disabled surface whose address is the app's own, which keeps running: only its
    /// MCP path must go dark (the name resolves and TCP opens).
    #[serde(default)]
    served_by_app: Flag,
    #[serde(default)]
    app_ports: Vec<Port>,
    service: Option<String>,
    sidecar: Option<Spanned<SidecarFile>>,
    app: Option<AppFile>,
    /// The compose networks the provider lives on: for a disabled provider, containers on
    /// them are probe positions besides the clients.
    #[serde(default)]
    networks: Vec<String>,
    // The boundary behind the handshake (see `boundary`).
    #[serde(default)]
    denied_tools: Vec<Spanned<String>>,
    #[serde(default)]
    strict_arguments: Flag,
    limits: Option<Spanned<LimitsFile>>,
    limit_probes: Option<Spanned<boundary::LimitProbesFile>>,
    #[serde(default)]
    retired: Vec<Spanned<String>>,
    specification: Option<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SidecarFile {
    /// The networks it may sit on: its provider's network and the declared upstream one.
    networks: Vec<String>,
    /// The image the platform pins for it (`name:version`), shown beside the digest.
    image: Option<String>,
    /// The digest it must run (see [`super::image_pin`]).
    digest: Option<Spanned<super::image_pin::DigestRef>>,
}

/// The application behind an adapter sidecar: its containers count as the provider's
/// for lateral reach.
#[derive(Debug, Clone)]
pub struct AppSpec {
    pub service: String,
    /// Required: an app with no listed port would never be probed for lateral reach.
    pub ports: Vec<u16>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct AppFile {
    service: String,
    ports: Vec<Port>,
}

fn default_transport() -> Transport {
    Transport::StreamableHttp
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ToolsFile {
    allowlist: Vec<String>,
    schema_sha256: Option<Spanned<String>>,
    #[serde(default)]
    mutating: Vec<String>,
    #[serde(default)]
    mutating_enabled: Flag,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ReadFile {
    tool: String,
    #[serde(default = "empty_object")]
    arguments: serde_json::Value,
    expect: Expectation,
}

fn empty_object() -> serde_json::Value {
    serde_json::Value::Object(Default::default())
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ClientFile {
    service: Option<String>,
    /// provider id → credential id the client holds for it.
    #[serde(default)]
    credentials: BTreeMap<String, Spanned<String>>,
    openwebui: Option<Spanned<crate::apps::openwebui::config::OpenWebuiFile>>,
    flowise: Option<Spanned<crate::apps::flowise::config::FlowiseFile>>,
    n8n: Option<Spanned<crate::apps::n8n::config::N8nFile>>,
    /// provider id → the credential the client held before the provider stopped admitting it.
    #[serde(default)]
    revoked: BTreeMap<String, Spanned<String>>,
}

/// How a provider says "no": by HTTP status (the default), or — for the few apps that
/// answer 200 — by a JSON-RPC error that carries no session and no tool inventory.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Refusal {
    #[default]
    HttpStatus,
    JsonrpcError,
}

/// What the deterministic read must return.
#[derive(Debug, Clone, PartialEq, Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Expectation {
    /// Some text content item contains this string.
    TextContains(String),
    /// `structuredContent` (or the text content parsed as JSON) contains this JSON.
    JsonSubset(serde_json::Value),
}

#[derive(Debug, Clone)]
pub struct Scenario {
    pub name: String,
    pub project: Option<String>,
    pub file: PathBuf,
    pub providers: Vec<Provider>,
    pub clients: Vec<Client>,
    pub credentials: BTreeMap<String, Secret>,
    /// Credentials of providers outside the scenario, valid elsewhere, to present as
    /// foreign bearers (used by `cordon probe --foreign-bearer-env`).
    pub foreign_credentials: Vec<String>,
    /// `sha256:<hex>` of the text it was read from: reports record which scenario judged.
    pub sha256: String,
}

#[derive(Debug, Clone)]
pub struct Provider {
    pub id: String,
    pub url: Url,
    pub transport: Transport,
    pub credential: String,
    pub refusal: Refusal,
    pub allowed_consumers: Vec<String>,
    pub tools: ToolsContract,
    pub read: Option<ReadSpec>,
    pub disabled: bool,
    /// Disabled, with the endpoint's address the running app's: only the path goes dark.
    pub served_by_app: bool,
    pub app_ports: Vec<u16>,
    pub service: String,
    /// Set when the endpoint is an adapter sidecar: the networks it may be attached to.
    pub sidecar_networks: Option<Vec<String>>,
    /// Set when the scenario pins the sidecar's image by digest.
    pub sidecar_image: Option<super::image_pin::ImagePin>,
    pub app: Option<AppSpec>,
    pub networks: Vec<String>,
    pub boundary: Boundary,
}

#[derive(Debug, Clone, Default)]
pub struct ToolsContract {
    pub allowlist: Vec<String>,
    pub schema_sha256: Option<String>,
    pub mutating: Vec<String>,
    pub mutating_enabled: bool,
}

#[derive(Debug, Clone)]
pub struct ReadSpec {
    pub tool: String,
    pub arguments: serde_json::Value,
    pub expect: Expectation,
}

#[derive(Debug, Clone)]
pub struct Client {
    pub id: String,
    pub service: String,
    pub credentials: BTreeMap<String, String>,
    /// Set when the client is an Open WebUI whose own state cordon checks.
    pub openwebui: Option<crate::apps::openwebui::config::OpenWebui>,
    /// Set when the client is a Flowise whose registry and chatflows cordon checks.
    pub flowise: Option<crate::apps::flowise::config::Flowise>,
    /// Set when the client is an n8n whose workflows cordon checks.
    pub n8n: Option<crate::apps::n8n::config::N8n>,
    /// provider id → credential id the client held before it was removed as a consumer.
    pub revoked: BTreeMap<String, String>,
}

impl Scenario {
    pub fn provider(&self, id: &str) -> Option<&Provider> {
        self.providers.iter().find(|p| p.id == id)
    }

    pub fn secret(&self, credential: &str) -> &Secret {
        &self.credentials[credential]
    }

    /// Loads, validates and resolves every credential, registering each with `redactor`.
    pub fn load(path: &Path, redactor: &Redactor) -> Result<Scenario, ConfigErrors> {
        let text = read_file(path)?;
        Self::from_text(path, &text, redactor)
    }

    /// [`Scenario::load`] of text already read; credential files resolve relative to `path`.
    pub fn from_text(path: &Path, text: &str, redactor: &Redactor) -> Result<Scenario, ConfigErrors> {
        Self::from_text_with(path, text, redactor, false)
    }

    /// [`Scenario::load`] for `--list`: planning needs no credential value, so one whose
    /// variable or file is missing is left unresolved (a placeholder that opens nothing)
    /// instead of an error. Every other rule of the scenario still holds.
    pub fn load_for_listing(path: &Path, redactor: &Redactor) -> Result<Scenario, ConfigErrors> {
        let text = read_file(path)?;
        Self::from_text_with(path, &text, redactor, true)
    }

    fn from_text_with(
        path: &Path,
        text: &str,
        redactor: &Redactor,
        unresolved_ok: bool,
    ) -> Result<Scenario, ConfigErrors> {
        let raw: ScenarioFile = parse_yaml(path, text)?;
        let mut scenario = Validator { file: path, errors: Vec::new(), unresolved_ok }.resolve(raw, redactor)?;
        scenario.sha256 = crate::text::sha256_of(text.as_bytes());
        Ok(scenario)
    }
}

/// True for ids that are safe inside a check name (`family::subject::aspect`).
pub fn is_valid_id(id: &str) -> bool {
    !id.is_empty() && id.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
}

/// The ids a scenario defines, for the errors that list them.
struct Ids<'r> {
    credentials: Vec<&'r String>,
    clients: Vec<&'r String>,
    providers: Vec<&'r String>,
}

struct Validator<'a> {
    file: &'a Path,
    errors: Vec<ConfigError>,
    /// Listing: a credential that cannot be read is a placeholder, not an error.
    unresolved_ok: bool,
}

impl Validator<'_> {
    fn error(&mut self, location: &serde_saphyr::Location, key: String, message: String) {
        self.errors.push(ConfigError::at(self.file, location, key, message));
    }

    fn resolve(mut self, raw: ScenarioFile, redactor: &Redactor) -> Result<Scenario, ConfigErrors> {
        let empty = BTreeMap::new();
        let provider_map = raw.providers.as_ref().map_or(&empty, |p| &p.value);
        if provider_map.is_empty() {
            let message = "no provider is listed: the scenario would check nothing".to_string();
            match &raw.providers {
                Some(p) => self.error(&p.referenced, "providers".into(), message),
                None => self
                    .errors
                    .push(ConfigError { key: "providers".into(), ..ConfigError::whole_file(self.file, message) }),
            }
        }
        let ids = Ids {
            credentials: raw.credentials.keys().collect(),
            clients: raw.clients.keys().collect(),
            providers: provider_map.keys().collect(),
        };

        let providers: Vec<Provider> =
            provider_map.iter().filter_map(|(id, spanned)| self.resolve_provider(id, spanned, &raw, &ids)).collect();
        let clients: Vec<Client> = raw
            .clients
            .iter()
            .map(|(id, spanned)| self.resolve_client(id, spanned, &raw, provider_map, &ids))
            .collect();
        self.check_one_of_each_app(&raw);
        let credentials = self.read_credentials(&raw, redactor);

        if self.errors.is_empty() {
            Ok(Scenario {
                name: raw.name,
                project: raw.project,
                file: self.file.to_path_buf(),
                providers,
                clients,
                credentials,
                foreign_credentials: Vec::new(),
                sha256: String::new(),
            })
        } else {
            Err(ConfigErrors(self.errors))
        }
    }

    /// One provider entry: every rule it breaks is recorded; the provider, when its URL
    /// is one.
    fn resolve_provider(
        &mut self,
        id: &String,
        spanned: &Spanned<ProviderFile>,
        raw: &ScenarioFile,
        ids: &Ids<'_>,
    ) -> Option<Provider> {
        let at = &spanned.referenced;
        let p = &spanned.value;
        let key = format!("providers.{id}");
        if !is_valid_id(id) {
            self.error(at, key.clone(), format!("provider id `{id}` may hold only letters, digits, `-`, `_` and `.`"));
        }
        let url = match endpoint_url(&p.url.value) {
            Ok(u) => Some(u),
            Err(message) => {
                self.error(&p.url.referenced, format!("{key}.url"), message);
                None
            }
        };
        if !raw.credentials.contains_key(&p.credential.value) {
            self.error(
                &p.credential.referenced,
                format!("{key}.credential"),
                format!(
                    "credential `{}` is not defined under `credentials` (defined: {})",
                    p.credential.value,
                    list(&ids.credentials)
                ),
            );
        }
        self.check_provider_entry(&key, at, p, raw, ids);
        let keys = ProviderKeys {
            denied_tools: &p.denied_tools,
            strict_arguments: p.strict_arguments,
            limits: p.limits.as_ref(),
            limit_probes: p.limit_probes.as_ref(),
            retired: &p.retired,
            specification: p.specification.as_ref(),
        };
        let context = ProviderContext {
            key: &key,
            credential: &p.credential.value,
            allowlist: &p.tools.value.allowlist,
            credential_ids: &ids.credentials,
        };
        let boundary = boundary::resolve_provider(self.file, &keys, &context)
            .map_err(|e| self.errors.extend(e))
            .unwrap_or_default();
        let sidecar_image = p.sidecar.as_ref().and_then(|s| self.image_pin(&key, s));
        Some(Provider {
            id: id.clone(),
            url: url?,
            transport: p.transport,
            credential: p.credential.value.clone(),
            refusal: p.refusal,
            allowed_consumers: p.allowed_consumers.iter().map(|c| c.value.clone()).collect(),
            tools: ToolsContract {
                allowlist: p.tools.value.allowlist.clone(),
                schema_sha256: p.tools.value.schema_sha256.as_ref().map(|h| h.value.to_ascii_lowercase()),
                mutating: p.tools.value.mutating.clone(),
                mutating_enabled: p.tools.value.mutating_enabled.0,
            },
            read: p.read.as_ref().map(|r| ReadSpec {
                tool: r.value.tool.clone(),
                arguments: r.value.arguments.clone(),
                expect: r.value.expect.clone(),
            }),
            disabled: p.disabled.0,
            served_by_app: p.served_by_app.0,
            app_ports: p.app_ports.iter().map(|p| p.0).collect(),
            service: p.service.clone().unwrap_or_else(|| id.clone()),
            sidecar_networks: p.sidecar.as_ref().map(|s| s.value.networks.clone()),
            sidecar_image,
            app: p
                .app
                .as_ref()
                .map(|a| AppSpec { service: a.service.clone(), ports: a.ports.iter().map(|p| p.0).collect() }),
            networks: p.networks.clone(),
            boundary,
        })
    }

    /// The rules of one provider entry that build nothing: admitted clients exist, tool
    /// names and the pinned hash are well formed, the read is an allowlisted tool with a
    /// mapping of arguments, a sidecar declares a network, an app its ports.
    fn check_provider_entry(
        &mut self,
        key: &str,
        at: &serde_saphyr::Location,
        p: &ProviderFile,
        raw: &ScenarioFile,
        ids: &Ids<'_>,
    ) {
        for consumer in &p.allowed_consumers {
            if !raw.clients.contains_key(&consumer.value) {
                self.error(
                    &consumer.referenced,
                    format!("{key}.allowed_consumers"),
                    format!("`{}` is not a client of this scenario (clients: {})", consumer.value, list(&ids.clients)),
                );
            }
        }
        self.check_tools(key, p);
        if p.served_by_app.0 && !p.disabled.0 {
            self.error(
                at,
                format!("{key}.served_by_app"),
                "`served_by_app: true` says which part of a disabled surface goes dark; this provider is not `disabled: true`".to_string(),
            );
        }
        if let Some(hash) = &p.tools.value.schema_sha256
            && (hash.value.len() != 64 || !hash.value.bytes().all(|b| b.is_ascii_hexdigit()))
        {
            self.error(
                &hash.referenced,
                format!("{key}.tools.schema_sha256"),
                format!("`{}` is not a hex sha256 (64 hex digits)", hash.value),
            );
        }
        if let Some(read) = &p.read {
            if !p.tools.value.allowlist.contains(&read.value.tool) {
                self.error(
                    &read.referenced,
                    format!("{key}.read.tool"),
                    format!(
                        "read tool `{}` is not in the allowlist ({})",
                        read.value.tool,
                        p.tools.value.allowlist.join(", ")
                    ),
                );
            }
            if !read.value.arguments.is_object() {
                self.error(&read.referenced, format!("{key}.read.arguments"), "arguments must be a mapping".into());
            }
        }
        if let Some(sidecar) = &p.sidecar
            && sidecar.value.networks.is_empty()
        {
            self.error(
                &sidecar.referenced,
                format!("{key}.sidecar.networks"),
                "a sidecar must declare at least its provider's network".into(),
            );
        }
        if p.app.as_ref().is_some_and(|a| a.ports.is_empty()) {
            self.error(
                at,
                format!("{key}.app.ports"),
                "list the ports the app listens on: reach checks probe exactly those".into(),
            );
        }
    }

    /// One client entry, and its application blocks (Open WebUI, Flowise, n8n).
    fn resolve_client(
        &mut self,
        id: &String,
        spanned: &Spanned<ClientFile>,
        raw: &ScenarioFile,
        provider_map: &BTreeMap<String, Spanned<ProviderFile>>,
        ids: &Ids<'_>,
    ) -> Client {
        let key = format!("clients.{id}");
        if !is_valid_id(id) {
            self.error(
                &spanned.referenced,
                key.clone(),
                format!("client id `{id}` may hold only letters, digits, `-`, `_` and `.`"),
            );
        }
        for (provider, credential) in &spanned.value.credentials {
            if !provider_map.contains_key(provider) {
                self.error(
                    &credential.referenced,
                    format!("{key}.credentials.{provider}"),
                    format!("`{provider}` is not a provider of this scenario (providers: {})", list(&ids.providers)),
                );
            }
            if !raw.credentials.contains_key(&credential.value) {
                self.error(
                    &credential.referenced,
                    format!("{key}.credentials.{provider}"),
                    format!(
                        "credential `{}` is not defined under `credentials` (defined: {})",
                        credential.value,
                        list(&ids.credentials)
                    ),
                );
            }
            if let Some(p) = provider_map.get(provider) {
                let k = format!("{key}.credentials.{provider}");
                self.errors.extend(boundary::held_retired(self.file, &k, provider, credential, &p.value.retired));
            }
        }
        let facts: Vec<RevokedFacts> = provider_map
            .iter()
            .map(|(p, f)| RevokedFacts {
                id: p,
                // A disabled provider admits nobody: its `allowed_consumers` are former ones.
                admits_client: !f.value.disabled.0 && f.value.allowed_consumers.iter().any(|c| &c.value == id),
            })
            .collect();
        let revoked = boundary::resolve_revoked(
            self.file,
            &key,
            &spanned.value.revoked,
            &spanned.value.credentials,
            &facts,
            &ids.credentials,
        )
        .map_err(|e| self.errors.extend(e))
        .unwrap_or_default();
        let openwebui = spanned.value.openwebui.as_ref().and_then(|block| {
            let facts = provider_map.iter().map(|(p, f)| crate::apps::openwebui::config::ProviderFacts {
                id: p,
                admits_client: f.value.allowed_consumers.iter().any(|c| &c.value == id),
                disabled: f.value.disabled.0,
                read_arguments: f.value.read.as_ref().map(|r| &r.value.arguments),
            });
            let facts: Vec<_> = facts.collect();
            crate::apps::openwebui::config::resolve(
                self.file,
                &format!("{key}.openwebui"),
                block,
                &facts,
                &ids.credentials,
            )
            .map_err(|e| self.errors.extend(e))
            .ok()
        });
        let service = spanned.value.service.clone().unwrap_or_else(|| id.clone());
        let flowise = spanned.value.flowise.as_ref().and_then(|block| {
            let providers: Vec<&str> = ids.providers.iter().map(|p| p.as_str()).collect();
            crate::apps::flowise::config::resolve(
                self.file,
                &format!("{key}.flowise"),
                block,
                &providers,
                &ids.credentials,
            )
            .map_err(|e| self.errors.extend(e))
            .ok()
        });
        let n8n = spanned.value.n8n.as_ref().and_then(|block| {
            let facts: Vec<_> = provider_map
                .iter()
                .map(|(p, f)| crate::apps::n8n::config::ProviderFacts {
                    id: p,
                    service: f.value.service.as_deref().unwrap_or(p),
                })
                .collect();
            crate::apps::n8n::config::resolve(
                self.file,
                &format!("{key}.n8n"),
                block,
                &service,
                &facts,
                &ids.credentials,
            )
            .map_err(|e| self.errors.extend(e))
            .ok()
        });
        Client {
            id: id.clone(),
            service,
            credentials: spanned.value.credentials.iter().map(|(p, c)| (p.clone(), c.value.clone())).collect(),
            openwebui,
            flowise,
            n8n,
            revoked,
        }
    }

    /// One Open WebUI, one Flowise and one n8n per scenario at most.
    fn check_one_of_each_app(&mut self, raw: &ScenarioFile) {
        let webuis: Vec<_> =
            raw.clients.iter().filter_map(|(id, c)| c.value.openwebui.as_ref().map(|b| (id, b.referenced))).collect();
        self.errors.extend(crate::apps::openwebui::config::at_most_one(self.file, &webuis));
        let flowises: Vec<_> =
            raw.clients.iter().filter_map(|(id, c)| c.value.flowise.as_ref().map(|b| (id, b.referenced))).collect();
        self.errors.extend(super::apps::at_most_one(self.file, "flowise", &flowises));
        let n8ns: Vec<_> =
            raw.clients.iter().filter_map(|(id, c)| c.value.n8n.as_ref().map(|b| (id, b.referenced))).collect();
        self.errors.extend(super::apps::at_most_one(self.file, "n8n", &n8ns));
    }

    /// Every credential's value, each registered with the redactor before anything uses it.
    /// The sidecar's pinned image; an image named without a digest pins nothing, and says so.
    fn image_pin(&mut self, key: &str, sidecar: &Spanned<SidecarFile>) -> Option<super::image_pin::ImagePin> {
        let s = &sidecar.value;
        let Some(digest) = &s.digest else {
            if let Some(image) = &s.image {
                let message = format!(
                    "image `{}` is named without a digest, which pins nothing (a tag can move to other content): add `digest: sha256:…`",
                    super::strict::echo(image)
                );
                self.error(&sidecar.referenced, format!("{key}.sidecar.digest"), message);
            }
            return None;
        };
        super::image_pin::resolve(s.image.as_ref(), &digest.value, self.unresolved_ok)
            .map_err(|message| self.error(&digest.referenced, format!("{key}.sidecar.digest"), message))
            .ok()
    }

    fn read_credentials(&mut self, raw: &ScenarioFile, redactor: &Redactor) -> BTreeMap<String, Secret> {
        let mut credentials = BTreeMap::new();
        for (id, reference) in &raw.credentials {
            match self.read_credential(&reference.value) {
                Ok(value) => {
                    credentials.insert(id.clone(), redactor.register(id, value));
                }
                Err(_) if self.unresolved_ok => {
                    credentials.insert(id.clone(), redactor.register(id, format!("cordon-unresolved-credential-{id}")));
                }
                Err(message) => self.error(&reference.referenced, format!("credentials.{id}"), message),
            }
        }
        credentials
    }

    fn check_tools(&mut self, key: &str, p: &ProviderFile) {
        let mut seen = Vec::new();
        for tool in &p.tools.value.allowlist {
            if seen.contains(&tool) {
                self.error(
                    &p.tools.referenced,
                    format!("{key}.tools.allowlist"),
                    format!("tool `{tool}` is listed twice"),
                );
            }
            seen.push(tool);
            if p.tools.value.mutating.contains(tool) && !p.tools.value.mutating_enabled.0 {
                self.error(&p.tools.referenced, format!("{key}.tools.allowlist"), format!("tool `{tool}` is listed as mutating while `mutating_enabled` is false: the contract contradicts itself"));
            }
        }
    }

    fn read_credential(&self, reference: &CredentialRef) -> Result<String, String> {
        match reference {
            CredentialRef::Env(var) => credential::load(Source::Env(var)),
            CredentialRef::File(path) => {
                let path = if path.is_absolute() {
                    path.clone()
                } else {
                    self.file.parent().unwrap_or(Path::new(".")).join(path)
                };
                credential::load(Source::File(&path))
            }
        }
    }
}

/// An MCP endpoint URL: http or https, with a host, and no credentials in it (they belong
/// in credential references, where they are redacted). The error never echoes a password.
pub fn endpoint_url(text: &str) -> Result<Url, String> {
    let shown = super::strict::echo(&mask_userinfo(text));
    if text.chars().any(char::is_control) {
        return Err(format!("`{shown}` holds a control character: no URL does"));
    }
    let url = Url::parse(text).map_err(|e| format!("`{shown}` is not a URL: {e}"))?;
    if !url.username().is_empty() || url.password().is_some() || credential::has_userinfo(text) {
        return Err(format!(
            "`{shown}` carries a user name or password: put the secret in a credential reference (`{{ env: VAR }}` or `{{ file: path }}`), never in the URL"
        ));
    }
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none_or(str::is_empty) {
        return Err(format!("`{shown}` must be an http or https URL with a host (got scheme `{}`)", url.scheme()));
    }
    Ok(url)
}

fn list(ids: &[&String]) -> String {
    if ids.is_empty() { "none".into() } else { ids.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ") }
}
