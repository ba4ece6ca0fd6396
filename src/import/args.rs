//! The command line of `cordon import`, and what it does: import, then write, print or
//! compare, with a summary of what was left out on standard error.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use super::decide::{Request, import};
use super::model::{Import, ImportedProvider};
use super::{check, emit, inventory};
use crate::exit::Ending;

#[derive(clap::Subcommand)]
pub enum Platform {
    /// Infinito.Nexus: reads roles/<role>/meta/{mcp,services,networks}.yml and the
    /// adapters' files/mcp/tools.json.
    Infinito(ImportArgs),
}

#[derive(clap::Args)]
pub struct ImportArgs {
    /// The platform's roles directory.
    #[arg(long)]
    roles: PathBuf,
    /// The deployed roles (what `group_names` holds on the platform), comma-separated.
    #[arg(long, value_delimiter = ',', required_unless_present = "inventory", conflicts_with = "inventory")]
    deployed: Vec<String>,
    /// An Ansible inventory (YAML or INI): its group names are the deployed roles.
    #[arg(long)]
    inventory: Option<PathBuf>,
    /// The compose project (or swarm stack) the scenario describes.
    #[arg(long)]
    project: Option<String>,
    /// Write the scenario to this file (default: standard output).
    #[arg(long, conflicts_with = "check")]
    out: Option<PathBuf>,
    /// Compare with this scenario instead: exit 1 with a diff when it no longer matches.
    #[arg(long)]
    check: Option<PathBuf>,
    /// The Open WebUI admin its checks act as (password from OPENWEBUI_ADMIN_PASSWORD).
    #[arg(long, value_name = "EMAIL")]
    openwebui_admin: Option<String>,
    /// Pin a provider's served-tools hash (cordon's, from a trusted run's
    /// `contract::<provider>::tools` evidence); repeatable.
    #[arg(long = "pin-schema", value_name = "PROVIDER=SHA256")]
    pin_schema: Vec<String>,
    /// A provider whose adapter image this deploy builds itself, so its digest is known
    /// only after the build: the scenario reads the pin from VAR when cordon runs, not
    /// from the metadata; repeatable.
    #[arg(long = "image-digest-env", value_name = "PROVIDER=VAR")]
    image_digest_env: Vec<String>,
}

/// What the command line adds to the metadata.
#[derive(Debug, Default, Clone)]
pub struct Pins {
    /// provider → cordon's served-tools hash (`--pin-schema`).
    pub schema: BTreeMap<String, String>,
    /// provider → the variable its adapter image's digest is read from (`--image-digest-env`).
    pub image_digest_env: BTreeMap<String, String>,
}

pub fn run(platform: Platform) -> Ending {
    let Platform::Infinito(args) = platform;
    let read = match (&args.inventory, args.deployed.as_slice()) {
        (Some(path), _) => inventory::read(path).map(|i| (i.deployed, i.hosts)).map_err(|e| e.to_string()),
        (None, list) => inventory::from_list(list).map(|d| (d, BTreeMap::new())),
    };
    let (deployed, hosts) = match read {
        Ok(d) => d,
        Err(e) => return usage(&e),
    };
    let pins = match parse_pins(&args.pin_schema)
        .and_then(|schema| Ok(Pins { schema, image_digest_env: parse_digest_env(&args.image_digest_env)? }))
    {
        Ok(p) => p,
        Err(e) => return usage(&e),
    };
    let target = args.check.as_ref().or(args.out.as_ref());
    let request = Request {
        roles_dir: args.roles.clone(),
        deployed,
        project: args.project.clone(),
        openwebui_admin: args.openwebui_admin.clone(),
        deployed_are_roles: args.inventory.is_none(),
        hosts,
        scenario_dir: target
            .and_then(|t| t.parent())
            .filter(|p| !p.as_os_str().is_empty())
            .map_or(PathBuf::from("."), Path::to_path_buf),
    };
    let (import, text) = match generate(&request, &pins) {
        Ok(x) => x,
        Err(code) => return code,
    };
    summarize(&import, &args.roles);
    if let Some(path) = &args.check {
        return match check::drift(path, &text) {
            Ok(None) => {
                eprintln!("{} matches the role metadata", path.display());
                Ending::Passed
            }
            Ok(Some(diff)) => {
                println!("{diff}");
                eprintln!(
                    "error: {} no longer matches the role metadata (diff above: - the file, + the metadata); regenerate it with --out",
                    path.display()
                );
                Ending::ChecksFailed
            }
            Err(e) => usage(&e.to_string()),
        };
    }
    match &args.out {
        Some(path) => match std::fs::write(path, &text) {
            Ok(()) => {
                eprintln!("wrote {}", path.display());
                Ending::Passed
            }
            Err(e) => usage(&format!("cannot write {}: {e}", path.display())),
        },
        None => {
            print!("{text}");
            Ending::Passed
        }
    }
}

/// Imports and renders; on failure, the errors are printed and the exit code returned.
pub fn generate(request: &Request, pins: &Pins) -> Result<(Import, String), Ending> {
    let mut import = match import(request) {
        Ok(i) => i,
        Err(errors) => {
            eprintln!("error: invalid role metadata:");
            for e in &errors.0 {
                eprintln!("  {e}");
            }
            return Err(Ending::Usage);
        }
    };
    if let Err(e) = apply(&mut import, pins) {
        return Err(usage(&e));
    }
    if !import.lint.is_empty() {
        summarize(&import, &request.roles_dir);
        eprintln!(
            "error: the role metadata breaks the platform's metadata contract ({} finding(s), each with its code; nothing was written):",
            import.lint.len()
        );
        for e in &import.lint {
            eprintln!("  {e}");
        }
        return Err(Ending::ChecksFailed);
    }
    let text = emit::scenario(&import);
    Ok((import, text))
}

/// Adds the command line's pins to an import; an id that is no enabled provider (or, for
/// an image, no provider with a pinned adapter image) is an error naming those there are.
pub fn apply(import: &mut Import, pins: &Pins) -> Result<(), String> {
    let live = |import: &Import, has: fn(&ImportedProvider) -> bool| {
        let ids: Vec<String> =
            import.providers.values().filter(|p| !p.disabled && has(p)).map(|p| p.id.clone()).collect();
        if ids.is_empty() { "none".to_string() } else { ids.join(", ") }
    };
    for (id, hash) in &pins.schema {
        match import.providers.get_mut(id) {
            Some(p) if !p.disabled => p.schema_sha256 = Some(hash.clone()),
            _ => {
                return Err(format!(
                    "--pin-schema {id}: no enabled provider of that id was imported (enabled providers: {})",
                    live(import, |_| true)
                ));
            }
        }
    }
    for (id, var) in &pins.image_digest_env {
        match import.providers.get_mut(id).filter(|p| !p.disabled).and_then(|p| p.sidecar_image.as_mut()) {
            Some(image) => image.digest_env = Some(var.clone()),
            None => {
                return Err(format!(
                    "--image-digest-env {id}: no enabled provider of that id with a pinned adapter image was imported (those with one: {})",
                    live(import, |p| p.sidecar_image.is_some())
                ));
            }
        }
    }
    Ok(())
}

fn parse_digest_env(pairs: &[String]) -> Result<BTreeMap<String, String>, String> {
    let mut out = BTreeMap::new();
    for pair in pairs {
        let parsed = pair.split_once('=').filter(|(id, var)| {
            !id.is_empty() && !var.is_empty() && var.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
        });
        let Some((id, var)) = parsed else {
            return Err(format!(
                "--image-digest-env `{}`: expected PROVIDER=VAR (a variable name: letters, digits, `_`)",
                crate::text::sanitize(pair)
            ));
        };
        out.insert(id.to_string(), var.to_string());
    }
    Ok(out)
}

fn parse_pins(pins: &[String]) -> Result<BTreeMap<String, String>, String> {
    let mut out = BTreeMap::new();
    for pin in pins {
        let Some((id, hash)) = pin.split_once('=') else {
            return Err(format!("--pin-schema `{}`: expected PROVIDER=SHA256", crate::text::sanitize(pin)));
        };
        let hash = hash.strip_prefix("sha256:").unwrap_or(hash);
        if hash.len() != 64 || !hash.bytes().all(|b| b.is_ascii_hexdigit()) || hash.bytes().all(|b| b == b'0') {
            return Err(format!(
                "--pin-schema {id}: `{}` is not a sha256 (64 hex digits)",
                crate::text::sanitize(hash)
            ));
        }
        out.insert(id.to_string(), hash.to_ascii_lowercase());
    }
    Ok(out)
}

fn usage(message: &str) -> Ending {
    eprintln!("error: {}", crate::text::sanitize(message));
    Ending::Usage
}

/// What was imported and what was not, on standard error.
fn summarize(import: &Import, roles: &Path) {
    let dark = import.providers.values().filter(|p| p.disabled).count();
    let deployed: BTreeSet<&String> = import.deployed.iter().collect();
    eprintln!(
        "imported from {} ({} deployed roles): {} providers ({dark} switched off, checked dark), {} clients",
        roles.display(),
        deployed.len(),
        import.providers.len(),
        import.clients.len()
    );
    if !import.rejections.is_empty() {
        eprintln!(
            "left out ({}), by the platform's codes (a client a provider does not admit is still checked: reach:: proves it cannot connect):",
            import.rejections.len()
        );
        for r in &import.rejections {
            eprintln!("  {}", crate::text::sanitize(&r.to_string()));
        }
    }
    for n in &import.notes {
        eprintln!("note: {}", crate::text::sanitize(n));
    }
}
