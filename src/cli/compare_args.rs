//! `--compare PATH` and `--flaky-window N`, shared by every subcommand that runs a suite.

use std::path::PathBuf;

use crate::compare::{CompareRequest, DEFAULT_WINDOW};

#[derive(clap::Args, Debug, Clone)]
pub struct CompareArgs {
    /// Say what changed since earlier runs (new failures, fixed, still failing, flaky): a
    /// previous report.json, or a history directory such as results/swarm/history/ whose
    /// newest run is compared with this one. The path must exist
    #[arg(long, value_name = "PATH", conflicts_with = "compare_init")]
    compare: Option<PathBuf>,
    /// As --compare, for a nightly job's history: a path that does not exist yet is the
    /// first night (said in the reports), not an error
    #[arg(long, value_name = "PATH")]
    compare_init: Option<PathBuf>,
    /// With a history directory: the runs, this one included, over which a check whose
    /// verdict flips back and forth is called flaky
    #[arg(long, value_name = "N", default_value_t = DEFAULT_WINDOW as u16, value_parser = clap::value_parser!(u16).range(2..=1000))]
    flaky_window: u16,
}

impl CompareArgs {
    pub fn request(&self) -> Option<CompareRequest> {
        let window = usize::from(self.flaky_window);
        match (&self.compare, &self.compare_init) {
            (Some(path), _) => Some(CompareRequest { path: path.clone(), first_night: false, window }),
            (None, Some(path)) => Some(CompareRequest { path: path.clone(), first_night: true, window }),
            (None, None) => None,
        }
    }
}
