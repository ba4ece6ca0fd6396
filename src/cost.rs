//! What a run asked of the engine and the kernel, counted as it goes, so a bench can
//! show how the work grows with the deployment (report.json's `cost`): engine API calls,
//! reads of a container's `/proc` (listening sockets, routes, addresses), name lookups
//! sent to a namespace's resolver, namespaces entered, carriers started on other
//! nodes' engines, and requests of the MCP client.

use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};

pub struct Counter(AtomicU64);

impl Counter {
    const fn new() -> Counter {
        Counter(AtomicU64::new(0))
    }

    pub fn add(&self, n: u64) {
        self.0.fetch_add(n, Ordering::Relaxed);
    }

    fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

pub static ENGINE_CALLS: Counter = Counter::new();
pub static PROC_READS: Counter = Counter::new();
pub static NAME_LOOKUPS: Counter = Counter::new();
pub static NAMESPACES_ENTERED: Counter = Counter::new();
pub static CARRIERS_STARTED: Counter = Counter::new();
pub static MCP_REQUESTS: Counter = Counter::new();

/// The counters at one moment (a run reads them once, at its end).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cost {
    pub engine_calls: u64,
    pub proc_reads: u64,
    pub name_lookups: u64,
    pub namespaces_entered: u64,
    #[serde(default)]
    pub carriers_started: u64,
    /// HTTP requests the MCP client sent (every era, entry point, bearer and replica).
    #[serde(default)]
    pub mcp_requests: u64,
}

impl Cost {
    pub fn now() -> Cost {
        Cost {
            engine_calls: ENGINE_CALLS.get(),
            proc_reads: PROC_READS.get(),
            name_lookups: NAME_LOOKUPS.get(),
            namespaces_entered: NAMESPACES_ENTERED.get(),
            carriers_started: CARRIERS_STARTED.get(),
            mcp_requests: MCP_REQUESTS.get(),
        }
    }
}
