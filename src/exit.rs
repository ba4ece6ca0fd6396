//! How a command ends, and the one table that maps every ending to its exit code.

use serde::Serialize;

/// Every way a cordon command can end. Commands return one; `main` alone turns it into
/// the process's exit code ([`Ending::exit_code`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Ending {
    /// Every selected check passed (or is a known failure that still fails); a listing,
    /// an explanation or an import that matched.
    Passed,
    /// A check failed: the deployment violates its contract, the baseline is stale, or a
    /// scenario no longer matches the metadata it was imported from.
    ChecksFailed,
    /// Bad command line, or an invalid scenario or suite file.
    Usage,
    /// The harness could not get an answer: engine unreachable, namespace not enterable, a
    /// check still unreachable when the suite's deadline passed, a report not written.
    Infrastructure,
    /// Ctrl-C: the run was interrupted and what cordon had made was undone.
    Interrupted,
}

impl Ending {
    pub fn exit_code(self) -> i32 {
        match self {
            Ending::Passed => 0,
            Ending::ChecksFailed => 1,
            Ending::Usage => 2,
            Ending::Infrastructure => 3,
            // 128 + SIGINT, as a shell reports a process that SIGINT ended.
            Ending::Interrupted => 130,
        }
    }

    /// The ending a child cordon (the demo's suite run) reported by its exit code; a code
    /// cordon never uses, or a child killed by a signal, is an infrastructure error.
    pub fn from_exit_code(code: Option<i32>) -> Ending {
        [Ending::Passed, Ending::ChecksFailed, Ending::Usage, Ending::Infrastructure, Ending::Interrupted]
            .into_iter()
            .find(|e| Some(e.exit_code()) == code)
            .unwrap_or(Ending::Infrastructure)
    }
}

/// The exit code a second Ctrl-C ends the process with, from the signal handler (which
/// can call nothing but async-signal-safe functions).
pub const INTERRUPTED_AT_ONCE: i32 = 130;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_ending_has_its_own_code_and_reads_back() {
        let all = [Ending::Passed, Ending::ChecksFailed, Ending::Usage, Ending::Infrastructure, Ending::Interrupted];
        let codes: Vec<i32> = all.iter().map(|e| e.exit_code()).collect();
        assert_eq!(codes, [0, 1, 2, 3, 130]);
        for e in all {
            assert_eq!(Ending::from_exit_code(Some(e.exit_code())), e);
        }
        assert_eq!(Ending::from_exit_code(Some(101)), Ending::Infrastructure);
        assert_eq!(Ending::from_exit_code(None), Ending::Infrastructure);
        assert_eq!(INTERRUPTED_AT_ONCE, Ending::Interrupted.exit_code());
    }
}
