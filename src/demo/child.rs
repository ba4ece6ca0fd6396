//! The suite run of either demo: cordon itself as a child process, its results on the
//! console (one dot per check unless the user chose a format), its notes (discovery,
//! waiting) in the demo log, Ctrl-C stopping the suite but not the demo (the stack must
//! still come down). Its console closes with the failures and the reach matrix.

use std::process::{Command, Stdio};

use nix::sys::signal::{SigHandler, Signal, signal};

use super::Stages;
use crate::exit::Ending;

/// Runs `cordon <suite_args> <extra>` with `env`; its exit code.
pub(super) fn run_suite(
    stages: &mut Stages,
    suite_args: &[&str],
    extra: &[String],
    env: &[(String, String)],
) -> Ending {
    let exe = std::env::current_exe().expect("path of the running cordon binary");
    let mut child = Command::new(exe);
    child.args(suite_args).args(extra).envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    let chose_format = extra.iter().any(|a| a.starts_with("--format") || a == "-q" || a == "--quiet" || a == "--list");
    if !stages.verbose && !chose_format {
        // One dot per check keeps a passing demo on one screen; failures still print their
        // reasons and proof.
        child.args(["--format", "terse"]);
    }
    if stages.verbose && !extra.iter().any(|a| a.starts_with("--evidence") || a == "--verbose") {
        child.arg("--verbose");
    }
    if !stages.verbose
        && let Some(log) = stages.log.as_ref().and_then(|l| l.try_clone().ok())
    {
        // The suite's notes (discovery, waiting) go to the log; its results to the console.
        child.stderr(Stdio::from(log));
    }
    let child = child.spawn();
    // Ctrl-C stops the suite (the child), not the demo: the stack must still come down.
    // SIGINT is ignored only after the spawn, so the child keeps the default.
    // SAFETY: no other thread of this process installs signal handlers.
    let previous = unsafe { signal(Signal::SIGINT, SigHandler::SigIgn) };
    let code = Ending::from_exit_code(child.and_then(|mut c| c.wait()).ok().and_then(|s| s.code()));
    if let Ok(handler) = previous {
        // SAFETY: as above; restores the disposition found before.
        let _ = unsafe { signal(Signal::SIGINT, handler) };
    }
    if code == Ending::Usage || code == Ending::Infrastructure {
        stages.show_tail();
    }
    code
}
