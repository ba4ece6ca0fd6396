//! The platform's metadata contract, one role tree per rule: `tests/import/rules/<case>/`
//! holds what that tree changes in `rules/base/roles` (files under `roles/`, `edits`,
//! `remove`, `links` in its `expect.yaml`) and what `cordon import infinito` must then
//! do: its exit code and, for a broken rule, the line naming role, file:line, key and code.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde::Deserialize;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    deployed: Option<Vec<String>>,
    #[serde(default)]
    edits: Vec<Edit>,
    #[serde(default)]
    remove: Vec<String>,
    #[serde(default)]
    links: BTreeMap<String, String>,
    /// An Ansible inventory (YAML) to import with, instead of `--deployed`.
    inventory: Option<String>,
    exit: i32,
    code: Option<String>,
    role: Option<String>,
    key: Option<String>,
    says: Option<String>,
    /// Every error names one of these keys (and nothing else is refused).
    #[serde(default)]
    only_keys: Vec<String>,
    /// Clients the written scenario wires.
    #[serde(default)]
    wired: Vec<String>,
    /// Text the written scenario holds.
    #[serde(default)]
    prints: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Edit {
    file: String,
    from: String,
    to: String,
}

fn rules() -> PathBuf {
    super::repo().join("tests/import/rules")
}

fn cases() -> Vec<(String, PathBuf)> {
    let mut cases: Vec<(String, PathBuf)> = std::fs::read_dir(rules())
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_name() != "base")
        .map(|e| (e.file_name().into_string().unwrap(), e.path()))
        .collect();
    cases.sort();
    cases
}

/// The case's tree in `dir`, and the roles it deploys unless told otherwise.
fn materialize(case: &Case, from: &Path, dir: &Path) -> Vec<String> {
    super::copy_dir(&rules().join("base/roles"), &dir.join("roles"));
    if from.join("roles").is_dir() {
        super::copy_dir(&from.join("roles"), &dir.join("roles"));
    }
    let mut roles: Vec<String> =
        std::fs::read_dir(dir.join("roles")).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    roles.sort();
    for e in &case.edits {
        let path = dir.join(&e.file);
        let text = std::fs::read_to_string(&path).unwrap_or_else(|err| panic!("{}: {err}", e.file));
        assert!(text.contains(&e.from), "{} does not hold {:?}", e.file, e.from);
        std::fs::write(&path, text.replacen(&e.from, &e.to, 1)).unwrap();
    }
    for r in &case.remove {
        std::fs::remove_file(dir.join(r)).unwrap();
    }
    for (link, target) in &case.links {
        std::os::unix::fs::symlink(target, dir.join(link)).unwrap();
    }
    roles
}

fn check(name: &str, from: &Path) -> Result<(), String> {
    let text = std::fs::read_to_string(from.join("expect.yaml")).map_err(|e| format!("{name}: expect.yaml: {e}"))?;
    let case: Case = serde_saphyr::from_str(&text).map_err(|e| format!("{name}: expect.yaml: {e}"))?;
    let dir = tempfile::tempdir().unwrap();
    let roles = materialize(&case, from, dir.path());
    let deployed = case.deployed.clone().unwrap_or(roles);
    let mut cordon = Command::new(env!("CARGO_BIN_EXE_cordon"));
    cordon.args(["import", "infinito", "--roles", "roles"]).current_dir(dir.path());
    match &case.inventory {
        Some(text) => {
            std::fs::write(dir.path().join("inventory.yml"), text).unwrap();
            cordon.args(["--inventory", "inventory.yml"]);
        }
        None => {
            cordon.arg("--deployed").arg(deployed.join(","));
        }
    }
    let out = cordon.output().unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    let seen = || format!("{name}: exit {:?}, stderr:\n{stderr}", out.status.code());
    if out.status.code() != Some(case.exit) {
        return Err(format!("expected exit {}; {}", case.exit, seen()));
    }
    // A reported line: `roles/<role>/...:line:column: key: code: message`.
    let reported = |line: &&str| {
        let role = case.role.as_ref().is_none_or(|r| line.contains(&format!("roles/{r}")));
        let key = case.key.as_ref().is_none_or(|k| line.contains(&format!(": {k}: ")));
        let code = case.code.as_ref().is_none_or(|c| line.contains(&format!(": {c}: ")));
        role && key && code
    };
    if (case.code.is_some() || case.key.is_some()) && !stderr.lines().any(|l| reported(&l)) {
        return Err(format!(
            "expected a line naming {:?}, key {:?}, code {:?}; {}",
            case.role,
            case.key,
            case.code,
            seen()
        ));
    }
    if case.code.is_some() && !stderr.lines().any(|l| reported(&l) && l.contains(".yml:")) {
        return Err(format!("the finding names no file:line; {}", seen()));
    }
    if let Some(says) = &case.says
        && !stderr.contains(says.as_str())
    {
        return Err(format!("expected {says:?}; {}", seen()));
    }
    let errors: Vec<&str> = stderr.lines().filter(|l| l.starts_with("  ") && l.contains(".yml")).collect();
    if !case.only_keys.is_empty() {
        let other: Vec<&&str> =
            errors.iter().filter(|l| !case.only_keys.iter().any(|k| l.contains(&format!(": {k}: ")))).collect();
        if !other.is_empty() || errors.is_empty() {
            return Err(format!("expected errors on {:?} only; {}", case.only_keys, seen()));
        }
    }
    for client in &case.wired {
        let wired = stdout.split("\nclients:\n").nth(1).is_some_and(|c| c.contains(&format!("  {client}:\n")));
        if !wired {
            return Err(format!("{name}: {client} is not wired:\n{stdout}"));
        }
    }
    for text in &case.prints {
        if !stdout.contains(text.as_str()) {
            return Err(format!("{name}: the scenario does not hold {text:?}:\n{stdout}"));
        }
    }
    if case.exit == 0 && !stdout.starts_with("# Generated by `cordon import infinito`") {
        return Err(format!("{name}: exit 0 but no scenario on stdout:\n{stdout}\n{stderr}"));
    }
    Ok(())
}

#[test]
fn every_rule_has_a_role_tree_that_breaks_it() {
    let cases = cases();
    let failures: Vec<String> = cases.iter().filter_map(|(name, path)| check(name, path).err()).collect();
    assert!(failures.is_empty(), "{} of {} cases:\n\n{}", failures.len(), cases.len(), failures.join("\n\n"));
}

#[test]
fn every_code_has_a_tree_and_a_line_in_the_readme() {
    let expects: String =
        cases().iter().map(|(_, p)| std::fs::read_to_string(p.join("expect.yaml")).unwrap()).collect();
    let readme = std::fs::read_to_string(super::repo().join("README.md")).unwrap();
    for (code, _) in cordon::import::codes::RULES {
        assert!(expects.contains(&format!("code: {code}\n")), "no tree under tests/import/rules breaks {code}");
        assert!(readme.contains(&format!("`{code}`")), "README's import section does not list {code}");
    }
}
