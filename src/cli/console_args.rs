//! `--verbose` and `--evidence`, shared by every subcommand that runs a suite: how much of
//! a failed check's evidence the console prints (the reports always hold all of it).

use crate::report::failure::EvidenceLevel;

#[derive(clap::Args, Debug, Clone, Copy)]
pub struct ConsoleArgs {
    /// Print every line of a failed check's evidence on the console, not only what proves
    /// the failure (the same as `--evidence all`)
    #[arg(long)]
    verbose: bool,
    /// How much of a failed check's evidence the console prints: `proof` (the reason, the
    /// exchanges or connects that broke the rule and where the probe ran) or `all`
    #[arg(long, value_enum, value_name = "LEVEL", default_value_t = EvidenceLevel::Proof)]
    evidence: EvidenceLevel,
}

impl ConsoleArgs {
    pub fn level(&self) -> EvidenceLevel {
        if self.verbose { EvidenceLevel::All } else { self.evidence }
    }
}
