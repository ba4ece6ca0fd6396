//! Which roles are deployed: named on the command line, or read as the group names of an
//! Ansible inventory (YAML or INI), which is what `group_names` holds on the platform.
//! The union over all hosts is taken: a scenario describes the whole deployment.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde::Deserialize;

use crate::config::ConfigError;
use crate::config::error::{parse_yaml, read_file};

/// Ansible's implicit groups: never a role.
const IMPLICIT: &[&str] = &["all", "ungrouped"];

/// `--deployed a,b,c`.
pub fn from_list(list: &[String]) -> Result<BTreeSet<String>, String> {
    let mut roles = BTreeSet::new();
    for name in list.iter().map(|s| s.trim()) {
        if name.is_empty() {
            return Err("--deployed holds an empty role name".into());
        }
        if !crate::config::scenario::is_valid_id(name) {
            return Err(format!(
                "--deployed: `{}` is no role name (letters, digits, `-`, `_`, `.`)",
                crate::text::sanitize(name)
            ));
        }
        roles.insert(name.to_string());
    }
    if roles.is_empty() {
        return Err("--deployed names no role".into());
    }
    Ok(roles)
}

#[derive(Deserialize, Default)]
struct Group {
    #[serde(default)]
    children: Option<BTreeMap<String, Option<Group>>>,
}

/// Every group name of an inventory file.
pub fn from_inventory(path: &Path) -> Result<BTreeSet<String>, ConfigError> {
    let text = read_file(path)?;
    let is_ini = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with('#') && !l.starts_with(';') && *l != "---")
        .is_some_and(|l| l.starts_with('['));
    let mut groups = BTreeSet::new();
    if is_ini {
        let mut in_children = false;
        for line in text.lines().map(str::trim) {
            if let Some(header) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
                let (name, kind) = header.split_once(':').unwrap_or((header, ""));
                in_children = kind == "children";
                groups.insert(name.to_string());
            } else if in_children && !line.is_empty() && !line.starts_with('#') && !line.starts_with(';') {
                groups.insert(line.split_whitespace().next().unwrap_or(line).to_string());
            }
        }
    } else {
        let top: BTreeMap<String, Option<Group>> = parse_yaml(path, &text)?;
        let mut stack: Vec<(String, Option<Group>)> = top.into_iter().collect();
        while let Some((name, group)) = stack.pop() {
            groups.insert(name);
            if let Some(children) = group.and_then(|g| g.children) {
                stack.extend(children);
            }
        }
    }
    groups.retain(|g| !IMPLICIT.contains(&g.as_str()));
    if groups.is_empty() {
        return Err(ConfigError::whole_file(path, "holds no group: the deployed roles are an inventory's group names"));
    }
    Ok(groups)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(name: &str, text: &str) -> Result<Vec<String>, String> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        from_inventory(&path).map(|s| s.into_iter().collect()).map_err(|e| e.to_string())
    }

    #[test]
    fn yaml_groups_at_every_depth_are_roles() {
        let text = "all:\n  vars:\n    secret: !vault |\n      $ANSIBLE_VAULT;1.1;AES256\n      6162\n  hosts: { box: }\n  children:\n    web-app-gitea:\n      hosts: { box: }\n    servers:\n      children:\n        web-app-hermes: {}\n        svc-db-postgres:\n";
        assert_eq!(read("inv.yml", text).unwrap(), ["servers", "svc-db-postgres", "web-app-gitea", "web-app-hermes"]);
    }

    #[test]
    fn ini_groups_and_children_are_roles() {
        let text = "# platform\n[web-app-gitea]\nbox ansible_host=10.0.0.1\n[servers:children]\nweb-app-hermes\n[servers:vars]\nx=1\n";
        assert_eq!(read("hosts", text).unwrap(), ["servers", "web-app-gitea", "web-app-hermes"]);
    }

    #[test]
    fn an_inventory_without_groups_is_refused() {
        assert!(read("inv.yml", "all:\n  hosts: { box: }\n").unwrap_err().contains("holds no group"));
        assert!(from_list(&["a".into(), " ".into()]).unwrap_err().contains("empty role name"));
        assert!(from_list(&["a b".into()]).unwrap_err().contains("no role name"));
    }
}
