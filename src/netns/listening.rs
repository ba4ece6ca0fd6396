//! The listening sockets of containers, read once and shared by every check that asks
//! within [`MAX_AGE`].
//!
//! Why: a read of `/proc/<pid>/net/tcp` makes the kernel walk its whole established-
//! connections hash (one table for all namespaces, filtered as it goes), a few ms of
//! system time each, on the thread that reads. Every route and reach check reads every
//! replica of its provider, so 200 pairs read the same ten providers hundreds of times:
//! that was most of cordon's CPU, spent on the runtime's worker threads. Now the first
//! asker reads on a blocking thread, concurrent askers wait for that read, and later
//! askers reuse it while it is fresh. A retried attempt comes back after at least a
//! retry interval, so it still sees a provider that started listening since.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::listener::Listener;
use super::procfs;

/// How old a shared read may be.
pub const MAX_AGE: Duration = Duration::from_millis(250);

type Read = Result<Vec<Listener>, String>;
/// The last read of one namespace and when it began; locked while a read is in flight.
type Slot = Arc<tokio::sync::Mutex<Option<(Instant, Read)>>>;

/// Listener reads of one run, keyed by process and network namespace.
#[derive(Default)]
pub struct ListenerMemo {
    entries: Mutex<HashMap<(u32, Option<u64>), Slot>>,
}

impl ListenerMemo {
    pub fn new() -> Self {
        Self::default()
    }

    /// The listeners in the network namespace of `pid` (discovered as `netns`), read at
    /// most [`MAX_AGE`] before the call.
    pub async fn listeners(&self, pid: u32, netns: Option<u64>) -> Read {
        self.shared(pid, netns, |pid| procfs::listeners(pid).map_err(|e| e.to_string())).await
    }

    async fn shared(&self, pid: u32, netns: Option<u64>, read: impl FnOnce(u32) -> Read + Send + 'static) -> Read {
        let asked = Instant::now();
        let entry = self.entries.lock().expect("memo lock").entry((pid, netns)).or_default().clone();
        // Concurrent askers queue here and find the read the first one made.
        let mut slot = entry.lock().await;
        if let Some((read_at, shared)) = slot.as_ref()
            && asked.saturating_duration_since(*read_at) < MAX_AGE
        {
            return shared.clone();
        }
        let read_at = Instant::now();
        let fresh = tokio::task::spawn_blocking(move || read(pid))
            .await
            .unwrap_or_else(|e| Err(format!("reading the sockets of pid {pid} failed: {e}")));
        *slot = Some((read_at, fresh.clone()));
        fresh
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    #[tokio::test]
    async fn concurrent_askers_share_one_read_and_a_stale_one_is_read_again() {
        let memo = ListenerMemo::new();
        let reads = Arc::new(AtomicUsize::new(0));
        let ask = || {
            let reads = reads.clone();
            memo.shared(7, Some(1), move |_| {
                reads.fetch_add(1, Ordering::SeqCst);
                std::thread::sleep(Duration::from_millis(20));
                Ok(vec![Listener::at("0.0.0.0:8000".parse().unwrap())])
            })
        };
        let got = futures_util::future::join_all((0..20).map(|_| ask())).await;
        assert_eq!(reads.load(Ordering::SeqCst), 1, "one read for twenty concurrent askers");
        assert!(got.iter().all(|r| r.as_ref().unwrap().len() == 1));
        tokio::time::sleep(MAX_AGE).await;
        ask().await.unwrap();
        assert_eq!(reads.load(Ordering::SeqCst), 2, "a read older than MAX_AGE is not reused");
        memo.shared(8, Some(1), |_| Ok(vec![])).await.unwrap();
        assert_eq!(reads.load(Ordering::SeqCst), 2, "another process has its own entry");
    }

    #[tokio::test]
    async fn reads_this_process() {
        let memo = ListenerMemo::new();
        assert!(memo.listeners(std::process::id(), None).await.is_ok());
    }
}
