//! `--compare PATH` and `--flaky-window N`, shared by every subcommand that runs a suite.

use std::path::PathBuf;

use crate::compare::{CompareRequest, DEFAULT_WINDOW};

#[derive(clap::Args, Debug, Clone)]
pub struct CompareArgs {
    /// Say what changed since earlier runs (new failures, fixed, still failing, flaky): a
    /// previous report.json, or a history directory such as results/swarm/history/ whose
    /// newest run is compared with this one
    #[arg(long, value_name = "PATH")]
    compare: Option<PathBuf>,
    /// With a history directory: the runs, this one included, over which a check whose
    /// verdict flips back and forth is called flaky
    #[arg(long, value_name = "N", default_value_t = DEFAULT_WINDOW as u16, value_parser = clap::value_parser!(u16).range(2..=1000))]
    flaky_window: u16,
}

impl CompareArgs {
    pub fn request(&self) -> Option<CompareRequest> {
        self.compare.clone().map(|path| CompareRequest { path, window: usize::from(self.flaky_window) })
    }
}
