//! What one container carries that a credential may hide in: its environment and
//! command line as the engine shows them, and its mounted secrets: every file under
//! `/run/secrets` of a running container of this host (read through `/proc/<pid>/root`,
//! where the container's own mounts are), and the host files bind-mounted there (which
//! a stopped container still names). Values are compared in memory, never kept or shown.

use std::path::Path;

use crate::engine::logs::SECRETS_DIR;
use crate::engine::{Engine, Target};
use crate::fsutil::{read_in_root, read_regular_text};

/// Files read under a container's secrets directory, at most.
const MAX_FILES: usize = 64;
/// Bytes read of one file, at most: a secret is small; a larger file is said unread.
const MAX_FILE_BYTES: u64 = 256 << 10;

/// Where a container carries a value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Place {
    Env(String),
    CommandLine,
    /// A file, by its path in the container.
    File(String),
    /// A swarm config's data.
    Config,
}

/// Everything read of one container, and what could not be.
#[derive(Debug, Default)]
pub struct Carried {
    pub values: Vec<(Place, String)>,
    /// Files not read, and why (`not running here`, a read error).
    pub unread: Vec<String>,
}

impl Carried {
    /// For evidence: how much was read.
    pub fn describe(&self) -> String {
        let count = |f: fn(&Place) -> bool| self.values.iter().filter(|(p, _)| f(p)).count();
        let mut line = format!(
            "{} environment variable(s), the command line, {} mounted secret file(s) read",
            count(|p| matches!(p, Place::Env(_))),
            count(|p| matches!(p, Place::File(_)))
        );
        if !self.unread.is_empty() {
            line.push_str(&format!(" ({})", self.unread.join("; ")));
        }
        line
    }
}

/// Reads what `target` carries. `on_this_host`: its pid and its bind mounts' sources are
/// this host's (not a container of another node).
pub async fn read(engine: &Engine, target: &Target, on_this_host: bool) -> Result<Carried, String> {
    let seen = engine.carried(&target.id).await.map_err(|e| e.to_string())?;
    let mut carried = Carried::default();
    carried.values.extend(seen.env.into_iter().map(|(k, v)| (Place::Env(k), v)));
    carried.values.push((Place::CommandLine, seen.command.join(" ")));
    if !on_this_host {
        carried.unread.push("its files are on another node".into());
        return Ok(carried);
    }
    // A running container's own files, read inside its root (its symlinks never lead to
    // the host's files); a stopped one's bind-mounted host files, as the engine names them.
    let mut inside_root: Vec<String> = Vec::new();
    if target.running && target.pid != 0 {
        let root = Path::new("/proc").join(target.pid.to_string()).join("root");
        match list_files(&root, SECRETS_DIR) {
            Ok(found) => inside_root = found,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => carried.unread.push(format!("{SECRETS_DIR}: {e}")),
        }
    }
    let binds = seen.secret_binds.into_iter().filter(|(inside, _)| !inside_root.contains(inside));
    let reads = inside_root
        .iter()
        .map(|inside| (inside.clone(), read_in_root(target.pid, inside, MAX_FILE_BYTES)))
        .chain(binds.map(|(inside, host)| (inside, read_regular_text(Path::new(&host), MAX_FILE_BYTES))));
    for (inside, read) in reads.take(MAX_FILES) {
        match read {
            Ok(text) => carried.values.push((Place::File(inside), text)),
            Err(e) => carried.unread.push(format!("{inside}: {e}")),
        }
    }
    Ok(carried)
}

/// The regular files under `dir` (a path in the container) of the root `root`, as paths
/// in the container, one level deep and then one more (swarm puts secrets flat; a
/// compose bind may be a directory).
fn list_files(root: &Path, dir: &str) -> std::io::Result<Vec<String>> {
    let mut out = Vec::new();
    let mut dirs = vec![dir.to_string()];
    for depth in 0..2 {
        let mut next = Vec::new();
        for d in dirs {
            for entry in std::fs::read_dir(root.join(&d[1..]))? {
                let entry = entry?;
                let inside = format!("{d}/{}", entry.file_name().to_string_lossy());
                let kind = entry.file_type()?;
                if kind.is_file() {
                    out.push(inside);
                } else if kind.is_dir() && depth == 0 {
                    next.push(inside);
                }
            }
        }
        dirs = next;
    }
    out.sort();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_files_are_listed_as_the_container_names_them() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("run/secrets");
        std::fs::create_dir_all(dir.join("nested")).unwrap();
        std::fs::write(dir.join("native"), "value").unwrap();
        std::fs::write(dir.join("nested/old"), "value").unwrap();
        assert_eq!(list_files(root.path(), SECRETS_DIR).unwrap(), ["/run/secrets/native", "/run/secrets/nested/old"]);
    }
}
