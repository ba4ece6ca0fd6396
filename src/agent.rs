//! `cordon agent` (hidden): what a carrier container runs. It sits in a task's network
//! and pid namespaces (`network_mode`/`pid: container:<task>`), reads one
//! [`ProbePlan`] as JSON on stdin, runs it with the same code cordon runs after `setns`,
//! and writes the [`ProbeObservation`] as JSON on stdout. Its resolver files are the
//! task's (Docker gives a container that joins another's network that one's resolv.conf
//! and hosts); `/proc/1` is the task's init.
//!
//! Secrets arrive in the plan, on stdin only; nothing the agent prints is shown without
//! passing cordon's redactor on the other side.

use std::io::{Read, Write};
use std::time::Duration;

use crate::checks::plan::ProbePlan;
use crate::exit::Ending;
use crate::netns::{NsPool, Place};

/// Largest plan the agent accepts.
const MAX_PLAN: u64 = 16 * 1024 * 1024;
/// However the plan goes, the agent is gone after this long (its carrier with it).
const LIFETIME: Duration = Duration::from_secs(600);

pub fn main() -> Ending {
    let mut text = Vec::new();
    if let Err(e) = std::io::stdin().take(MAX_PLAN).read_to_end(&mut text) {
        eprintln!("cordon agent: reading the plan: {e}");
        return Ending::Infrastructure;
    }
    let plan: ProbePlan = match serde_json::from_slice(&text) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("cordon agent: the plan is not valid: {e}");
            return Ending::Usage;
        }
    };
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("cordon agent: cannot start a runtime: {e}");
            return Ending::Infrastructure;
        }
    };
    let observed = runtime.block_on(async move {
        let pool = NsPool::new();
        tokio::time::timeout(LIFETIME, pool.run(&Place::Host, move |view| plan.observe(view))).await
    });
    match observed {
        Ok(Ok(observation)) => {
            let mut out = std::io::stdout().lock();
            match serde_json::to_writer(&mut out, &observation).and_then(|_| out.flush().map_err(serde_json::Error::io))
            {
                Ok(()) => Ending::Passed,
                Err(e) => {
                    eprintln!("cordon agent: writing the observation: {e}");
                    Ending::Infrastructure
                }
            }
        }
        Ok(Err(e)) => {
            eprintln!("cordon agent: {e}");
            Ending::Infrastructure
        }
        Err(_) => {
            eprintln!("cordon agent: the plan did not finish within {}s", LIFETIME.as_secs());
            Ending::Infrastructure
        }
    }
}
