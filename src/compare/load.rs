//! Reading the runs `--compare PATH` names: a report.json, a results directory holding
//! one, or a history directory (`results/swarm/history/`, one `<UTC stamp>/` per run,
//! as `outputs.timestamped` writes them), of which the newest N are taken.
//!
//! It is read before this run starts, so "newest" is always an earlier run, and a path
//! that holds no report is refused before anything is probed. A path that does not exist
//! yet is a first night: nothing to compare, and the reports say so.

use std::path::{Path, PathBuf};

use crate::model::RunReport;

/// A report.json larger than this is not one cordon wrote.
const MAX_REPORT_BYTES: u64 = 256 << 20;

/// Earlier runs, oldest first (the last is the one "since last run" compares with).
#[derive(Debug, Clone, Default)]
pub struct Earlier {
    pub compared_with: String,
    pub runs: Vec<(PathBuf, RunReport)>,
    /// What was skipped or missing, for the reports.
    pub notes: Vec<String>,
}

/// Reads up to `window - 1` earlier runs from `path`; `json_name` is the JSON report's
/// file name (`outputs.json`, report.json by default). `Err` is a usage error.
pub fn load(path: &Path, json_name: &str, window: usize) -> Result<Earlier, String> {
    let mut earlier = Earlier { compared_with: path.display().to_string(), ..Default::default() };
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            earlier.notes.push(format!("{} does not exist yet: no earlier run to compare with", path.display()));
            return Ok(earlier);
        }
        Err(e) => return Err(format!("--compare {}: {e}", path.display())),
    };
    if meta.is_file() {
        let report = read(path).map_err(|e| format!("--compare {}: {e}", path.display()))?;
        earlier.runs.push((path.to_path_buf(), report));
        return Ok(earlier);
    }
    if !meta.is_dir() {
        return Err(format!(
            "--compare {}: neither a report.json nor a directory of runs ({})",
            path.display(),
            crate::fsutil::kind_of(&meta)
        ));
    }
    let runs = history_entries(path, json_name).map_err(|e| format!("--compare {}: {e}", path.display()))?;
    if runs.is_empty() {
        // A results directory: its history (the flaky column needs every night), else
        // its own report.
        let history = path.join("history");
        if history.is_dir() && !history_entries(&history, json_name).unwrap_or_default().is_empty() {
            return load(&history, json_name, window);
        }
        let own = path.join(json_name);
        if own.is_file() {
            let report = read(&own).map_err(|e| format!("--compare {}: {e}", own.display()))?;
            earlier.runs.push((own, report));
            return Ok(earlier);
        }
        earlier.notes.push(format!("no earlier run in {}: nothing to compare with", path.display()));
        return Ok(earlier);
    }
    let keep = window.saturating_sub(1).max(1);
    for file in runs.iter().skip(runs.len().saturating_sub(keep)) {
        match read(file) {
            Ok(report) => earlier.runs.push((file.clone(), report)),
            // One night killed while it wrote must not blind every later comparison.
            Err(e) => earlier.notes.push(format!("skipped {}: {e}", file.display())),
        }
    }
    Ok(earlier)
}

/// `<dir>/<run>/<json_name>` for every run directory, oldest first (the stamps sort).
fn history_entries(dir: &Path, json_name: &str) -> std::io::Result<Vec<PathBuf>> {
    let mut runs: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path().join(json_name))
        .filter(|p| p.is_file())
        .collect();
    runs.sort();
    Ok(runs)
}

fn read(path: &Path) -> Result<RunReport, String> {
    let text = crate::fsutil::read_regular_text(path, MAX_REPORT_BYTES).map_err(|e| e.to_string())?;
    RunReport::from_json(&text).map_err(|e| format!("not a report.json cordon wrote: {e}"))
}
