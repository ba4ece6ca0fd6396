//! Where reports go, checked before any check runs: a report that cannot be written must
//! fail the run at its start, not after minutes of probing.

use std::collections::BTreeMap;
use std::fs::OpenOptions;
use std::path::{Component, Path, PathBuf};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outputs {
    pub dir: PathBuf,
    pub junit: String,
    pub json: String,
    pub markdown: String,
    /// The self-contained HTML report with the reach matrix.
    pub html: String,
    /// Also copy every report into `<dir>/history/<UTC time>/`, so one night's report
    /// is not overwritten by the next.
    pub timestamped: bool,
    /// Where each key was set (`suite.yaml:14:8`, `--results`), by key (`outputs.dir`);
    /// absent for defaults.
    pub origins: BTreeMap<&'static str, String>,
}

impl Default for Outputs {
    fn default() -> Self {
        Self {
            dir: PathBuf::from("results"),
            junit: "junit.xml".into(),
            json: "report.json".into(),
            markdown: "summary.md".into(),
            html: "report.html".into(),
            timestamped: false,
            origins: BTreeMap::new(),
        }
    }
}

pub const DIR_KEY: &str = "outputs.dir";

impl Outputs {
    pub fn junit_path(&self) -> PathBuf {
        self.dir.join(&self.junit)
    }
    pub fn json_path(&self) -> PathBuf {
        self.dir.join(&self.json)
    }
    pub fn markdown_path(&self) -> PathBuf {
        self.dir.join(&self.markdown)
    }
    pub fn html_path(&self) -> PathBuf {
        self.dir.join(&self.html)
    }

    /// The report files, by key.
    pub fn files(&self) -> [(&'static str, &str, PathBuf); 4] {
        [
            ("outputs.junit", self.junit.as_str(), self.junit_path()),
            ("outputs.json", self.json.as_str(), self.json_path()),
            ("outputs.markdown", self.markdown.as_str(), self.markdown_path()),
            ("outputs.html", self.html.as_str(), self.html_path()),
        ]
    }

    /// Sets the directory from the command line.
    pub fn override_dir(&mut self, dir: PathBuf, origin: &str) {
        self.dir = dir;
        self.origins.insert(DIR_KEY, origin.to_string());
    }

    fn describe(&self, key: &str, path: &Path) -> String {
        let origin = match self.origins.get(key) {
            Some(o) if o.starts_with("--") => return format!("{o} `{}`", path.display()),
            Some(o) => format!("{o}: "),
            None => String::new(),
        };
        let default = if self.origins.contains_key(key) { "" } else { " (default)" };
        format!("{origin}{key} `{}`{default}", path.display())
    }

    /// Problems with the file names alone: each must stay inside the directory, and no two
    /// formats may share a file. No filesystem access.
    pub fn name_problems(&self) -> Vec<(&'static str, String)> {
        let mut problems = Vec::new();
        let mut seen: Vec<(&str, PathBuf)> = Vec::new();
        for (key, name, _) in self.files() {
            if let Err(problem) = check_name(name) {
                problems.push((key, problem));
                continue;
            }
            let normal: PathBuf = Path::new(name).components().filter(|c| *c != Component::CurDir).collect();
            if let Some((other, _)) = seen.iter().find(|(_, p)| *p == normal) {
                problems.push((key, format!("is also where {other} goes: two formats cannot share one file")));
            }
            seen.push((key, normal));
        }
        problems
    }

    /// Checks every name, creates the directory, proves it writable, and refuses a report
    /// path that is a directory or anything but a regular file. Each error names the key
    /// and path.
    pub fn prepare(&self) -> Result<(), Vec<String>> {
        let mut errors: Vec<String> = self
            .name_problems()
            .into_iter()
            .map(|(key, problem)| {
                let name = self.files().into_iter().find(|(k, ..)| *k == key).map(|(_, n, _)| n.to_string());
                format!("{}: {problem}", self.describe(key, Path::new(&name.unwrap_or_default())))
            })
            .collect();
        if !errors.is_empty() {
            return Err(errors);
        }
        if let Err(problem) = prepare_dir(&self.dir) {
            return Err(vec![format!("{}: {problem}", self.describe(DIR_KEY, &self.dir))]);
        }
        for (key, _, path) in self.files() {
            let problem = match path.parent() {
                Some(parent) if parent != self.dir => prepare_dir(parent).err(),
                _ => None,
            };
            let problem = problem.or_else(|| match std::fs::metadata(&path) {
                Ok(meta) if meta.is_dir() => Some("is an existing directory, where a report file goes".to_string()),
                Ok(meta) if !meta.is_file() => {
                    Some(format!("is an existing {}, not a regular file", crate::fsutil::kind_of(&meta)))
                }
                _ => None,
            });
            if let Some(problem) = problem {
                errors.push(format!("{}: {problem}", self.describe(key, &path)));
            }
        }
        if errors.is_empty() { Ok(()) } else { Err(errors) }
    }
}

/// A report file name: relative, inside the output directory, naming a file.
pub fn check_name(name: &str) -> Result<(), String> {
    let path = Path::new(name);
    if name.trim().is_empty() {
        return Err("is empty: name the report file".into());
    }
    if name.chars().any(char::is_control) {
        return Err("holds a control character".into());
    }
    if path.is_absolute() {
        return Err(
            "is an absolute path: report files go inside the output directory (set `outputs.dir` for another place)"
                .into(),
        );
    }
    if path.components().any(|c| c == Component::ParentDir) {
        return Err("leaves the output directory (`..`): report files go inside it".into());
    }
    if name.ends_with('/') || path.components().all(|c| c == Component::CurDir) {
        return Err("names a directory, not a file".into());
    }
    Ok(())
}

/// Creates `dir` if needed and proves a file can be created in it.
fn prepare_dir(dir: &Path) -> Result<(), String> {
    match std::fs::metadata(dir) {
        Ok(meta) if !meta.is_dir() => {
            return Err(format!("is an existing {}, not a directory", crate::fsutil::kind_of(&meta)));
        }
        Ok(_) => {}
        Err(_) => std::fs::create_dir_all(dir).map_err(|e| format!("cannot create the directory: {e}"))?,
    }
    let probe = dir.join(format!(".cordon-write-check-{}", std::process::id()));
    match OpenOptions::new().write(true).create_new(true).open(&probe) {
        Ok(_) => {
            let _ = std::fs::remove_file(&probe);
            Ok(())
        }
        Err(e) => Err(format!("is not writable: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outputs(dir: &Path) -> Outputs {
        Outputs { dir: dir.to_path_buf(), ..Outputs::default() }
    }

    #[test]
    fn names_stay_inside_and_apart() {
        for (name, problem) in [
            ("/etc/junit.xml", "absolute path"),
            ("../junit.xml", "leaves the output directory"),
            ("a/../../junit.xml", "leaves the output directory"),
            ("", "is empty"),
            (".", "names a directory"),
            ("sub/", "names a directory"),
        ] {
            assert!(check_name(name).unwrap_err().contains(problem), "{name}");
        }
        assert!(check_name("sub/junit.xml").is_ok());
        let same = Outputs { json: "./junit.xml".into(), ..Outputs::default() };
        let problems = same.name_problems();
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert_eq!(problems[0].0, "outputs.json");
        assert!(problems[0].1.contains("outputs.junit"), "{problems:?}");
    }

    #[test]
    fn existing_directories_and_special_files_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("junit.xml")).unwrap();
        nix::unistd::mkfifo(&dir.path().join("report.json"), nix::sys::stat::Mode::S_IRWXU).unwrap();
        std::fs::write(dir.path().join("summary.md"), "old").unwrap();
        let errors = outputs(dir.path()).prepare().unwrap_err();
        assert_eq!(errors.len(), 2, "an existing regular file is overwritten: {errors:#?}");
        assert!(errors[0].contains("outputs.junit `") && errors[0].contains("existing directory"), "{errors:#?}");
        assert!(errors[1].contains("outputs.json `") && errors[1].contains("FIFO"), "{errors:#?}");
    }

    #[test]
    fn the_directory_is_created_and_must_be_writable() {
        let dir = tempfile::tempdir().unwrap();
        let nested = dir.path().join("a/b");
        outputs(&nested).prepare().unwrap();
        assert!(nested.is_dir());
        assert_eq!(std::fs::read_dir(&nested).unwrap().count(), 0, "the write check leaves nothing behind");
        let mut o = outputs(Path::new("/proc/self/cordon-results"));
        o.override_dir(PathBuf::from("/proc/self/cordon-results"), "--results");
        let errors = o.prepare().unwrap_err();
        assert!(errors[0].starts_with("--results `/proc/self/cordon-results`: cannot create"), "{errors:#?}");
        let file = dir.path().join("file");
        std::fs::write(&file, "x").unwrap();
        let errors = outputs(&file).prepare().unwrap_err();
        assert!(
            errors[0].contains("outputs.dir `") && errors[0].contains("(default): is an existing regular file"),
            "{errors:#?}"
        );
    }
}
