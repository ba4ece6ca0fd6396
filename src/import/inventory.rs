//! Which roles are deployed: named on the command line, or read as the group names of an
//! Ansible inventory (YAML or INI), which is what `group_names` holds on the platform.
//! A role is deployed when some host is in its group; each host keeps its own
//! `group_names` for conditions evaluated where the role runs.

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
    hosts: Option<BTreeMap<String, serde::de::IgnoredAny>>,
    #[serde(default)]
    children: Option<BTreeMap<String, Option<Group>>>,
}

/// An inventory as Ansible reads it: every host with its `group_names` (the groups it is
/// in, directly or through `children`), and the roles deployed (the groups of any host).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Inventory {
    pub hosts: BTreeMap<String, BTreeSet<String>>,
    pub deployed: BTreeSet<String>,
}

/// The roles deployed by an inventory file: every group some host is in.
pub fn from_inventory(path: &Path) -> Result<BTreeSet<String>, ConfigError> {
    read(path).map(|i| i.deployed)
}

/// Reads an inventory file (YAML or INI).
pub fn read(path: &Path) -> Result<Inventory, ConfigError> {
    let text = read_file(path)?;
    let is_ini = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with('#') && !l.starts_with(';') && *l != "---")
        .is_some_and(|l| l.starts_with('['));
    // group → its own hosts, and its child groups.
    let mut hosts_in: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut children: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    if is_ini {
        let mut section: Option<(String, String)> = None;
        for line in text.lines().map(str::trim) {
            if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
                continue;
            }
            if let Some(header) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
                let (name, kind) = header.split_once(':').unwrap_or((header, ""));
                hosts_in.entry(name.to_string()).or_default();
                section = Some((name.to_string(), kind.to_string()));
                continue;
            }
            let first = line.split_whitespace().next().unwrap_or(line).to_string();
            match section.as_ref().map(|(n, k)| (n.clone(), k.as_str())) {
                Some((group, "children")) => {
                    children.entry(group).or_default().insert(first);
                }
                Some((group, "")) => {
                    hosts_in.entry(group).or_default().insert(first);
                }
                // `:vars` and anything before the first header name no host.
                _ => {}
            }
        }
    } else {
        let top: BTreeMap<String, Option<Group>> = parse_yaml(path, &text)?;
        let mut stack: Vec<(String, Option<Group>)> = top.into_iter().collect();
        while let Some((name, group)) = stack.pop() {
            let group = group.unwrap_or_default();
            hosts_in.entry(name.clone()).or_default().extend(group.hosts.into_iter().flatten().map(|(h, _)| h));
            for (child, node) in group.children.into_iter().flatten() {
                children.entry(name.clone()).or_default().insert(child.clone());
                stack.push((child, node));
            }
        }
    }
    let mut inventory = Inventory::default();
    for group in hosts_in.keys().filter(|g| !IMPLICIT.contains(&g.as_str())) {
        for host in hosts_of(group, &hosts_in, &children, &mut BTreeSet::new()) {
            inventory.hosts.entry(host).or_default().insert(group.clone());
        }
    }
    inventory.deployed = inventory.hosts.values().flatten().cloned().collect();
    if inventory.deployed.is_empty() {
        return Err(ConfigError::whole_file(
            path,
            "holds no group with a host: the deployed roles are the groups (`group_names`) of an inventory's hosts",
        ));
    }
    Ok(inventory)
}

/// The hosts of a group: its own and its children's (a loop of children is walked once).
fn hosts_of(
    group: &str,
    hosts_in: &BTreeMap<String, BTreeSet<String>>,
    children: &BTreeMap<String, BTreeSet<String>>,
    seen: &mut BTreeSet<String>,
) -> BTreeSet<String> {
    if !seen.insert(group.to_string()) {
        return BTreeSet::new();
    }
    let mut hosts = hosts_in.get(group).cloned().unwrap_or_default();
    for child in children.get(group).into_iter().flatten() {
        hosts.extend(hosts_of(child, hosts_in, children, seen));
    }
    hosts
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
        let text = "all:\n  vars:\n    secret: !vault |\n      $ANSIBLE_VAULT;1.1;AES256\n      6162\n  hosts: { box: }\n  children:\n    web-app-gitea:\n      hosts: { box: }\n    servers:\n      children:\n        web-app-hermes: { hosts: { db: } }\n        svc-db-postgres:\n        web-app-empty: {}\n";
        // A group no host is in deploys nothing.
        assert_eq!(read("inv.yml", text).unwrap(), ["servers", "web-app-gitea", "web-app-hermes"]);
    }

    /// `group_names` is per host (Ansible's meaning), not the union of every host's.
    #[test]
    fn each_host_has_its_own_group_names() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("inv.yml");
        let text = "all:\n  children:\n    web-app-gitea: { hosts: { a: } }\n    web-app-openwebui: { hosts: { a: , b: } }\n    apps: { children: { web-app-x: { hosts: { b: } } } }\n";
        std::fs::write(&path, text).unwrap();
        let i = super::read(&path).unwrap();
        let names = |h: &str| i.hosts[h].iter().cloned().collect::<Vec<_>>();
        assert_eq!(names("a"), ["web-app-gitea", "web-app-openwebui"]);
        assert_eq!(names("b"), ["apps", "web-app-openwebui", "web-app-x"]);
        let ini =
            "[web-app-gitea]\na ansible_host=10.0.0.1\n[apps:children]\nweb-app-x\n[web-app-x]\nb\n[apps:vars]\nx=1\n";
        std::fs::write(&path, ini).unwrap();
        let i = super::read(&path).unwrap();
        assert_eq!(i.hosts["b"].iter().cloned().collect::<Vec<_>>(), ["apps", "web-app-x"]);
        assert_eq!(i.hosts["a"].iter().cloned().collect::<Vec<_>>(), ["web-app-gitea"]);
    }

    #[test]
    fn ini_groups_and_children_are_roles() {
        let text = "# platform\n[web-app-gitea]\nbox ansible_host=10.0.0.1\n[servers:children]\nweb-app-hermes\n[web-app-hermes]\nbox\n[servers:vars]\nx=1\n";
        assert_eq!(read("hosts", text).unwrap(), ["servers", "web-app-gitea", "web-app-hermes"]);
    }

    #[test]
    fn an_inventory_without_groups_is_refused() {
        assert!(read("inv.yml", "all:\n  hosts: { box: }\n").unwrap_err().contains("holds no group"));
        assert!(read("inv.yml", "web-app-x: {}\n").unwrap_err().contains("holds no group with a host"));
        assert!(from_list(&["a".into(), " ".into()]).unwrap_err().contains("empty role name"));
        assert!(from_list(&["a b".into()]).unwrap_err().contains("no role name"));
    }
}
