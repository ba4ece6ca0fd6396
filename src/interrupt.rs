//! Ctrl-C for the families that change a deployment while they check it (Open WebUI's
//! users and groups, Flowise's API keys and chat records, n8n's executions): one SIGINT
//! handler for the whole run, and a registry of cleanups, one per family. On the first
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

/// Undoes what one family still has pending; returns what it could not undo.
pub type Cleanup = Arc<dyn Fn() -> BoxFuture<'static, Vec<String>> + Send + Sync>;

const BUDGET: Duration = Duration::from_secs(90);

static INTERRUPTED: AtomicBool = AtomicBool::new(false);
static EXIT_REQUESTED: AtomicBool = AtomicBool::new(false);

/// What was made is undone (or the budget is spent): the run ends now, with
/// [`Ending::Interrupted`]. Library code never exits the process itself.
pub fn request_exit() {
    EXIT_REQUESTED.store(true, Ordering::SeqCst);
}

/// Runs `work` to its end, or until an exit is requested after Ctrl-C (then `None`: the
/// caller returns [`Ending::Interrupted`]).
pub async fn unless_interrupted<F: std::future::Future>(work: F) -> Option<F::Output> {
    let exit_requested = async {
        while !EXIT_REQUESTED.load(Ordering::SeqCst) {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };
    tokio::select! {
        biased;
        () = exit_requested => None,
        done = work => Some(done),
    }
}

/// True once Ctrl-C was pressed: checks make nothing new after it.
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

extern "C" fn on_sigint(_: libc::c_int) {
    if INTERRUPTED.swap(true, Ordering::SeqCst) {
        // A second Ctrl-C: stop at once.
        // SAFETY: _exit is async-signal-safe.
        unsafe { libc::_exit(crate::exit::INTERRUPTED_AT_ONCE) };
    }
}

fn cleanups() -> &'static Mutex<BTreeMap<&'static str, Cleanup>> {
    static CLEANUPS: OnceLock<Mutex<BTreeMap<&'static str, Cleanup>>> = OnceLock::new();
    CLEANUPS.get_or_init(Default::default)
}

/// Registers `cleanup` for `app` (a later registration for the same app replaces it) and
/// installs the handler once. Call it from the run's tokio runtime.
pub fn on_interrupt(app: &'static str, cleanup: Cleanup) {
    cleanups().lock().expect("cleanup lock").insert(app, cleanup);
    static INSTALLED: OnceLock<()> = OnceLock::new();
    INSTALLED.get_or_init(|| {
        use nix::sys::signal::{SaFlags, SigAction, SigHandler, SigSet, Signal, sigaction};
        let action = SigAction::new(SigHandler::Handler(on_sigint), SaFlags::SA_RESTART, SigSet::empty());
        // SAFETY: the handler only touches an atomic and calls _exit.
        if unsafe { sigaction(Signal::SIGINT, &action) }.is_err() {
            return;
        }
        tokio::spawn(async move {
            while !interrupted() {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            let all: Vec<(&'static str, Cleanup)> =
                cleanups().lock().expect("cleanup lock").iter().map(|(a, c)| (*a, c.clone())).collect();
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
            request_exit();
        });
    });
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
