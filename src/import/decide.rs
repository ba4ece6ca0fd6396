//! The import itself: every role's standing, its provider or client, and the wiring of
//! each client to each provider under the platform's rules (the provider admits the
//! client, the client speaks the provider's transport and auth scheme), with everything
//! left out listed by its code.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use super::context::{Context, Standing, direction, standing};
use super::model::{Code, CredentialRef, Import, ImportedClient, ImportedProvider, OpenWebuiBlock, Subject};
use super::provider::{self, Mode};
use super::roles::{Role, Roles};
use super::vocabulary as words;
use super::{codes, lint, validate};
use crate::config::{ConfigError, ConfigErrors};

/// What to import, from where, for which deployment.
#[derive(Debug, Clone, Default)]
pub struct Request {
    pub roles_dir: PathBuf,
    pub deployed: BTreeSet<String>,
    pub project: Option<String>,
    /// The Open WebUI admin its checks act as.
    pub openwebui_admin: Option<String>,
    /// The directory the scenario is written to (specification paths are relative to it).
    pub scenario_dir: PathBuf,
    /// `deployed` was named one by one (`--deployed`), so each must be a role; an
    /// inventory's groups also name hosts' groups that are no role.
    pub deployed_are_roles: bool,
    /// Each inventory host's `group_names` (empty for `--deployed`).
    pub hosts: BTreeMap<String, BTreeSet<String>>,
}

/// The credential id of the Open WebUI admin's password, and its variable.
pub const OPENWEBUI_PASSWORD: (&str, &str) = ("openwebui-admin-password", "OPENWEBUI_ADMIN_PASSWORD");

/// The providers imported so far, with their credentials, and which principal (owner) and
/// which secret (source, owner or role, key) each credential is: a principal is never
/// shared, and two secrets whose variable names collide are never merged into one.
#[derive(Default)]
struct Ledger {
    /// owner → (provider, where its secret lives).
    principals: BTreeMap<String, (String, String)>,
    /// variable → provider.
    secrets: BTreeMap<String, String>,
    providers: BTreeMap<String, ImportedProvider>,
    credentials: BTreeMap<String, CredentialRef>,
    notes: Vec<String>,
}

impl Ledger {
    fn admit(&mut self, ctx: &mut Context, role: &Role, mut p: ImportedProvider, mut credential: CredentialRef) {
        let decl = role.mcp.as_ref().and_then(|m| m.value.credential.as_ref());
        let at = decl.map(|c| c.referenced);
        let file = role.mcp.as_ref().map(|m| m.file.clone()).unwrap_or_default();
        let owner = decl.and_then(|c| c.value.owner.clone()).unwrap_or_default().trim().to_string();
        if let Some((other, origin)) = self.principals.get(&owner) {
            let message = format!(
                "authenticates as principal `{owner}`, as provider `{other}` does ({origin}): every provider needs its own principal, so revoking one cannot disarm the others",
            );
            ctx.lint(codes::PRINCIPAL_SHARED, &file, at.as_ref(), "credential.owner", message);
            return;
        }
        self.principals.insert(owner, (p.id.clone(), credential.origin.clone()));
        if let Some(holder) = self.secrets.get(&credential.env) {
            // Another principal's secret under the same variable name (`a-b`/`c` and
            // `a`/`b-c` both spell A_B_C): this one gets a name of its own.
            let env = provider::distinct_env(&credential.env, &credential.origin);
            self.notes.push(format!(
                "{}: its credential ({}) and {holder}'s would share the variable {}; it is read from {env} instead",
                p.id, credential.origin, credential.env
            ));
            credential.env = env;
            p.credential = provider::credential_id(&credential.env);
        }
        self.secrets.insert(credential.env.clone(), p.id.clone());
        self.credentials.insert(p.credential.clone(), credential);
        self.providers.insert(p.id.clone(), p);
    }
}

/// Roles first, by id; then client-provider pairs, by client and provider.
fn rejection_order(r: &super::model::Rejection) -> (u8, String, u8, String, Code) {
    match &r.subject {
        Subject::Role => (0, r.role.clone(), 0, String::new(), r.code),
        Subject::Provider => (0, r.role.clone(), 1, String::new(), r.code),
        Subject::Client => (0, r.role.clone(), 2, String::new(), r.code),
        Subject::PairWith(client) => (1, client.clone(), 0, r.role.clone(), r.code),
    }
}

/// Every name `--deployed` gives is a role of the tree.
fn deployed_are_roles(request: &Request, roles: &Roles) -> Result<(), ConfigErrors> {
    let unknown: Vec<ConfigError> = request
        .deployed
        .iter()
        .filter(|d| roles.get(d).is_none())
        .map(|d| {
            ConfigError::whole_file(
                &request.roles_dir,
                format!("--deployed names `{d}`, which is no role here (no `{d}/meta/` directory)"),
            )
        })
        .collect();
    if unknown.is_empty() { Ok(()) } else { Err(ConfigErrors(unknown)) }
}

pub fn import(request: &Request) -> Result<Import, ConfigErrors> {
    let roles = Roles::load(&request.roles_dir)?;
    if request.deployed_are_roles {
        deployed_are_roles(request, &roles)?;
    }
    let errors = validate::metadata(&roles);
    if !errors.is_empty() {
        return Err(ConfigErrors(errors));
    }
    let mut ctx = Context::new(&roles, &request.deployed, &request.hosts);
    for role in roles.by_id.values() {
        lint::every_role(&mut ctx, role);
    }
    let mut ledger = Ledger::default();
    let mut clients: Vec<&Role> = Vec::new();
    for role in roles.by_id.values() {
        let stand = standing(&mut ctx, role);
        let (serves, consumes) = (words::is_server(direction(role)), words::is_client(direction(role)));
        let mode = match stand {
            Standing::Out => continue,
            Standing::Active => Mode::Active,
            Standing::Off => {
                if consumes {
                    ctx.reject(
                        &role.id,
                        Subject::Client,
                        Code::NotEnabled,
                        "`enabled` is false: the client is switched off",
                    );
                }
                if !serves {
                    continue;
                }
                match provider::endpoint_goes_dark(&mut ctx, role) {
                    Ok(true) => Mode::Dark,
                    Ok(false) => Mode::DarkPath,
                    Err(why) => {
                        let detail = format!("`enabled` is false, but {why}; not imported");
                        ctx.reject(&role.id, Subject::Provider, Code::NotEnabled, detail);
                        continue;
                    }
                }
            }
        };
        if consumes && mode == Mode::Active {
            lint::enabled_client(&mut ctx, role);
            clients.push(role);
        }
        if serves && mode == Mode::Active {
            lint::enabled_provider(&mut ctx, role);
        }
        if !serves {
            continue;
        }
        let Some((p, credential)) = provider::resolve(&mut ctx, role, mode, &request.scenario_dir) else {
            continue;
        };
        ledger.admit(&mut ctx, role, p, credential);
    }
    let Ledger { mut providers, mut credentials, mut notes, .. } = ledger;
    let mut imported: BTreeMap<String, ImportedClient> = BTreeMap::new();
    for role in &clients {
        imported.insert(role.id.clone(), client(role));
    }
    wire(&mut ctx, &mut providers, &mut imported, &clients);
    for role in &clients {
        if is_openwebui(role) {
            openwebui(role, &providers, imported.get_mut(&role.id), request, &mut credentials, &mut notes);
        }
    }
    if !ctx.errors.is_empty() {
        return Err(ConfigErrors(ctx.errors));
    }
    let mut rejections = ctx.rejections;
    rejections.sort_by_key(rejection_order);
    Ok(Import {
        name: platform_name(&request.roles_dir),
        project: request.project.clone(),
        deployed: request.deployed.iter().cloned().collect(),
        networks: networks(&roles, &providers),
        credentials,
        providers,
        clients: imported,
        rejections,
        notes,
        lint: ctx.lint,
    })
}

fn client(role: &Role) -> ImportedClient {
    ImportedClient {
        id: role.id.clone(),
        service: words::entity(&role.id).to_string(),
        credentials: BTreeMap::new(),
        openwebui: None,
        revoked: BTreeMap::new(),
    }
}

/// Wires every client to every provider as the platform's discovery would, in its order
/// of checks; an authorized pair the client cannot speak is an error, as it is there.
fn wire(
    ctx: &mut Context,
    providers: &mut BTreeMap<String, ImportedProvider>,
    clients: &mut BTreeMap<String, ImportedClient>,
    client_roles: &[&Role],
) {
    let roles = ctx.roles;
    for p in providers.values_mut() {
        let Some(mcp) = roles.get(&p.id).and_then(|r| r.mcp.as_ref()) else { continue };
        let admitted = mcp.value.allowed_consumers.as_ref().map(|l| l.value.as_slice()).unwrap_or_default();
        let admitted_ids: Vec<&str> = admitted.iter().map(|c| c.value.as_str()).collect();
        for c in client_roles.iter().filter(|c| c.id != p.id) {
            let Some(index) = admitted_ids.iter().position(|a| *a == c.id) else {
                if !p.disabled {
                    let detail = format!("{} admits [{}], not {}", p.id, admitted_ids.join(", "), c.id);
                    ctx.reject(&p.id, Subject::PairWith(c.id.clone()), Code::ConsumerNotAllowed, detail);
                }
                continue;
            };
            if p.disabled {
                // Its former consumers: where a leftover would be reachable from.
                p.allowed_consumers.push(c.id.clone());
                continue;
            }
            let Some(cm) = c.mcp.as_ref() else { continue };
            let transport = mcp.value.transport.as_ref().map_or("streamable_http", |t| t.value.as_str());
            let auth = mcp.value.auth.as_ref().map_or("", |a| a.value.as_str());
            let speaks = |list: &Option<serde_saphyr::Spanned<Vec<serde_saphyr::Spanned<String>>>>| -> Vec<String> {
                list.as_ref().map(|l| l.value.iter().map(|s| s.value.clone()).collect()).unwrap_or_default()
            };
            let (transports, auths) = (speaks(&cm.value.supported_transports), speaks(&cm.value.supported_auths));
            let failure = if !transports.iter().any(|t| t == transport) {
                Some((Code::TransportUnsupported, format!("speaks `{transport}`"), "supported_transports", transports))
            } else if !auths.iter().any(|a| a == auth) {
                Some((Code::AuthUnsupported, format!("authenticates with `{auth}`"), "supported_auths", auths))
            } else {
                None
            };
            if let Some((code, what, key, supported)) = failure {
                let message = format!(
                    "{} admits {} here and {what}, but {} lists only [{}] under `{key}` ({}): an authorized connection that cannot be rendered (the platform aborts its deploy on it too)",
                    p.id,
                    c.id,
                    c.id,
                    supported.join(", "),
                    cm.file.display()
                );
                let at = admitted[index].referenced;
                let code = if code == Code::TransportUnsupported {
                    codes::TRANSPORT_UNSUPPORTED
                } else {
                    codes::AUTH_UNSUPPORTED
                };
                ctx.lint(code, &mcp.file, Some(&at), &format!("allowed_consumers[{index}]"), message);
                continue;
            }
            p.allowed_consumers.push(c.id.clone());
            if let Some(client) = clients.get_mut(&c.id) {
                client.credentials.insert(p.id.clone(), p.credential.clone());
            }
        }
    }
}

fn is_openwebui(role: &Role) -> bool {
    role.id == words::OPENWEBUI_ROLE
}

/// The `openwebui:` block: the group each admitted provider's connection is granted to
/// is the platform's `roles/<provider>/mcp`.
fn openwebui(
    role: &Role,
    providers: &BTreeMap<String, ImportedProvider>,
    client: Option<&mut ImportedClient>,
    request: &Request,
    credentials: &mut BTreeMap<String, CredentialRef>,
    notes: &mut Vec<String>,
) {
    let Some(client) = client else { return };
    let groups: BTreeMap<String, String> = providers
        .values()
        .filter(|p| !p.disabled && p.allowed_consumers.contains(&role.id))
        .map(|p| (p.id.clone(), format!("roles/{}/mcp", p.id)))
        .collect();
    if groups.is_empty() {
        return;
    }
    let Some(email) = &request.openwebui_admin else {
        notes.push(format!(
            "{}: its own checks (openwebui::*) are off: give --openwebui-admin EMAIL (the admin they act as; password from {})",
            role.id, OPENWEBUI_PASSWORD.1
        ));
        return;
    };
    credentials.insert(
        OPENWEBUI_PASSWORD.0.to_string(),
        CredentialRef {
            env: OPENWEBUI_PASSWORD.1.to_string(),
            origin: format!("the password of {email}, Open WebUI's admin"),
        },
    );
    client.openwebui =
        Some(OpenWebuiBlock { admin_email: email.clone(), admin_password: OPENWEBUI_PASSWORD.0.to_string(), groups });
}

/// Every network named in the scenario, with the subnet of the role that declares it.
fn networks(roles: &Roles, providers: &BTreeMap<String, ImportedProvider>) -> BTreeMap<String, Option<String>> {
    let names: BTreeSet<&String> =
        providers.values().flat_map(|p| p.networks.iter().chain(p.sidecar_networks.iter().flatten())).collect();
    names
        .into_iter()
        .map(|name| {
            let subnet = roles
                .by_id
                .values()
                .filter(|r| &provider::network_name(r) == name)
                .find_map(|r| r.networks.value.local.as_ref().and_then(|l| l.subnet.clone()));
            (name.clone(), subnet)
        })
        .collect()
}

/// The scenario's name: the platform checkout's directory (the roles directory's parent).
fn platform_name(roles_dir: &Path) -> String {
    let absolute = std::path::absolute(roles_dir).unwrap_or_else(|_| roles_dir.to_path_buf());
    absolute
        .parent()
        .and_then(|p| p.file_name())
        .and_then(|n| n.to_str())
        .filter(|n| crate::config::scenario::is_valid_id(n))
        .unwrap_or("platform")
        .to_string()
}
