//! Ctrl-C for the families that change a deployment while they check it (Open WebUI's
//! users and groups, Flowise's API keys and chat records, n8n's executions) and for the
//! carriers a swarm run starts: one SIGINT listener for the whole run
//! (`tokio::signal`), and a registry of cleanups, one per family. On the first
//! Ctrl-C nothing new is made ([`interrupted`]), every registered cleanup runs at once
//! within 90 s, what could not be undone is printed, and the run ends with
//! [`Ending::Interrupted`]: the cleanup asks for the end ([`request_exit`]) and the run,
//! which waits on [`unless_interrupted`], returns that code to `main`. A second Ctrl-C
//! stops at once.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use futures_util::future::BoxFuture;
use tokio::sync::watch;

/// Undoes what one family still has pending; returns what it could not undo.
pub type Cleanup = Arc<dyn Fn() -> BoxFuture<'static, Vec<String>> + Send + Sync>;

const BUDGET: Duration = Duration::from_secs(90);

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// Set once what was made is undone: the run ends then. A channel, so that whoever waits
/// for it wakes when it is set, and whoever asks later sees it set.
fn exit_requested() -> &'static watch::Sender<bool> {
    static EXIT: OnceLock<watch::Sender<bool>> = OnceLock::new();
    EXIT.get_or_init(|| watch::Sender::new(false))
}

/// What was made is undone (or the budget is spent): the run ends now, with
/// [`Ending::Interrupted`]. Library code never exits the process itself.
pub fn request_exit() {
    exit_requested().send_replace(true);
}

/// Runs `work` to its end, or until an exit is requested after Ctrl-C (then `None`: the
/// caller returns [`Ending::Interrupted`]).
pub async fn unless_interrupted<F: std::future::Future>(work: F) -> Option<F::Output> {
    let mut exit = exit_requested().subscribe();
    tokio::select! {
        biased;
        _ = exit.wait_for(|requested| *requested) => None,
        done = work => Some(done),
    }
}

/// True once Ctrl-C was pressed: checks make nothing new after it.
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

fn cleanups() -> &'static Mutex<BTreeMap<&'static str, Cleanup>> {
    static CLEANUPS: OnceLock<Mutex<BTreeMap<&'static str, Cleanup>>> = OnceLock::new();
    CLEANUPS.get_or_init(Default::default)
}

/// Registers `cleanup` for `app` (a later registration for the same app replaces it) and
/// makes sure Ctrl-C is listened to. Call it from the run's tokio runtime.
pub fn on_interrupt(app: &'static str, cleanup: Cleanup) {
    cleanups().lock().expect("cleanup lock").insert(app, cleanup);
    listen();
}

/// Listens for Ctrl-C (SIGINT) for the rest of the process, once: the first one runs
/// every registered cleanup (at once, within [`BUDGET`]) and then ends the run; a second
/// one stops at once. Call it from the run's tokio runtime.
pub fn listen() {
    static LISTENING: OnceLock<()> = OnceLock::new();
    LISTENING.get_or_init(|| {
        let mut sigint = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt()) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("warning: Ctrl-C cannot be caught ({e}): it stops cordon without undoing anything");
                return;
            }
        };
        tokio::spawn(async move {
            if sigint.recv().await.is_none() {
                return;
            }
            INTERRUPTED.store(true, Ordering::SeqCst);
            tokio::spawn(async move {
                if sigint.recv().await.is_some() {
                    std::process::exit(crate::exit::INTERRUPTED_AT_ONCE);
                }
            });
            undo_all().await;
            request_exit();
        });
    });
}

/// Every registered cleanup at once, within the budget; what could not be undone is said.
async fn undo_all() {
    let all: Vec<(&'static str, Cleanup)> =
        cleanups().lock().expect("cleanup lock").iter().map(|(a, c)| (*a, c.clone())).collect();
    if all.is_empty() {
        return;
    }
    let apps: Vec<&str> = all.iter().map(|(a, _)| *a).collect();
    eprintln!("interrupted: undoing what cordon changed in {} (Ctrl-C again to stop at once)", apps.join(", "));
    let undo = futures_util::future::join_all(all.iter().map(|(_, c)| c()));
    match tokio::time::timeout(BUDGET, undo).await {
        Ok(left) => left.into_iter().flatten().for_each(|l| eprintln!("warning: {l}")),
        Err(_) => eprintln!(
            "warning: undoing took longer than {} s; leftovers carry cordon's prefix cordon-eph-",
            BUDGET.as_secs()
        ),
    }
}

/// After Ctrl-C a check that ends waits here: the cleanup ends the run when it is done,
/// and the run must not end first (with the checks' own exit code) while what they made
/// is still being undone. Bounded by the cleanup's budget.
pub async fn hold_if_interrupted() {
    if interrupted() {
        tokio::time::sleep(BUDGET + Duration::from_secs(5)).await;
    }
}

/// What the checks of one family have made and not undone yet, by check: each check
/// opens an entry, notes what it makes, and closes it when it undoes; the Ctrl-C cleanup
/// takes what is still open.
pub struct Ledger<T> {
    open: Mutex<BTreeMap<u64, T>>,
    next: std::sync::atomic::AtomicU64,
}

impl<T: Default> Ledger<T> {
    pub const fn new() -> Ledger<T> {
        Ledger { open: Mutex::new(BTreeMap::new()), next: std::sync::atomic::AtomicU64::new(1) }
    }

    pub fn open(&self) -> u64 {
        let key = self.next.fetch_add(1, Ordering::Relaxed);
        self.open.lock().expect("ledger lock").insert(key, T::default());
        key
    }

    pub fn note(&self, key: u64, change: impl FnOnce(&mut T)) {
        if let Some(entry) = self.open.lock().expect("ledger lock").get_mut(&key) {
            change(entry);
        }
    }

    /// What `key` still has to undo; the entry is gone afterwards.
    pub fn close(&self, key: u64) -> T {
        self.open.lock().expect("ledger lock").remove(&key).unwrap_or_default()
    }

    /// Everything still open, of every check.
    pub fn take_all(&self) -> Vec<T> {
        std::mem::take(&mut *self.open.lock().expect("ledger lock")).into_values().collect()
    }
}

impl<T: Default> Default for Ledger<T> {
    fn default() -> Self {
        Ledger::new()
    }
}
