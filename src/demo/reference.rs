//! The demo's first stage: the reference stack's scenario imported from its role
//! metadata (`docker/reference/roles`), as a platform engineer would after a deploy, and
//! compared with the checked-in `scenarios/reference.yaml`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::exit::Ending;
use crate::import::args::{Pins, generate};
use crate::import::{Request, inventory};

pub const ROLES: &str = "docker/reference/roles";
pub const INVENTORY: &str = "docker/reference/inventory.yml";
pub const CHECKED_IN: &str = "scenarios/reference.yaml";
const PROJECT: &str = "cordon-reference";

/// The reference builds its adapter image (`docker/build-images.sh`) on every deploy, so
/// its digest exists only after the build: the demo and the tests export it as
/// [`FIXTURE_DIGEST_VAR`], and the scenario reads gitea's pin from there.
pub fn pins() -> Pins {
    Pins { image_digest_env: BTreeMap::from([("gitea".into(), FIXTURE_DIGEST_VAR.into())]), ..Pins::default() }
}

/// The variable the fixture image's id is exported in.
pub const FIXTURE_DIGEST_VAR: &str = "CORDON_FIXTURE_DIGEST";

/// The id of the image `tag` names, as the engine has it: what [`FIXTURE_DIGEST_VAR`]
/// holds after a build.
pub fn image_id(tag: &str) -> Result<String, String> {
    let out = std::process::Command::new("docker")
        .args(["image", "inspect", "--format", "{{.Id}}", tag])
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| format!("cannot run the docker CLI: {e}"))?;
    if !out.status.success() {
        return Err(format!("docker image inspect {tag}: {}", String::from_utf8_lossy(&out.stderr).trim()));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// Imports into `<results>/scenario.yaml`; the path written and a one-line account, or
/// the exit code when the metadata is wrong (its errors already printed).
pub fn import(results: &Path) -> Result<(PathBuf, String), Ending> {
    let inventory = inventory::read(Path::new(INVENTORY)).map_err(|e| {
        eprintln!("error: {e}");
        Ending::Usage
    })?;
    let request = Request {
        roles_dir: PathBuf::from(ROLES),
        deployed: inventory.deployed,
        hosts: inventory.hosts,
        project: Some(PROJECT.into()),
        scenario_dir: results.to_path_buf(),
        ..Request::default()
    };
    let (import, text) = generate(&request, &pins())?;
    let _ = std::fs::create_dir_all(results);
    let path = results.join("scenario.yaml");
    std::fs::write(&path, &text).map_err(|e| {
        eprintln!("error: cannot write {}: {e}", path.display());
        Ending::Infrastructure
    })?;
    let same = std::fs::read_to_string(CHECKED_IN).is_ok_and(|t| t == text);
    let account = format!(
        "scenario imported from {ROLES}: {} providers, {} clients, {} pairs left out by code; {}",
        import.providers.len(),
        import.clients.len(),
        import.rejections.len(),
        if same {
            format!("matches {CHECKED_IN}")
        } else {
            format!("DIFFERS from {CHECKED_IN} (run `cordon import infinito … --check {CHECKED_IN}` to see how)")
        }
    );
    Ok((path, account))
}
