//! Real MCP peers (and deliberately misbehaving servers) for integration tests.
//!
//! Each [`Peer`] is a `tests/peers/peer.py --kind KIND --port 0` child process run with
//! the Python of a venv made by `tests/peers/setup.sh`:
//! `${CORDON_PEERS_DIR:-<crate>/.peers}/mcp1` (mcp 1.30.0) or `.../mcp2` (mcp 2.3.0).
//! The child is killed and reaped when the `Peer` is dropped. Its stderr is inherited,
//! so a failing test shows the peer's own diagnostics.
//!
//! Missing venvs are a hard failure (a panic telling you to run the setup script):
//! tests must never skip silently.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// Which official MCP Python SDK the peer runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sdk {
    /// `mcp==1.30.0` (`FastMCP`).
    V1,
    /// `mcp==2.3.0` (`MCPServer`; also speaks revision 2026-07-28 `server/discover`).
    V2,
}

impl Sdk {
    fn venv(self) -> &'static str {
        match self {
            Sdk::V1 => "mcp1",
            Sdk::V2 => "mcp2",
        }
    }
}

const STARTUP_TIMEOUT: Duration = Duration::from_secs(60);

/// The directory holding the peer venvs.
pub fn peers_dir() -> PathBuf {
    match std::env::var_os("CORDON_PEERS_DIR") {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".peers"),
    }
}

/// The venv's Python interpreter: `${CORDON_PEERS_DIR:-<crate>/.peers}/mcp1|mcp2/bin/python`.
pub fn python(sdk: Sdk) -> PathBuf {
    peers_dir().join(sdk.venv()).join("bin").join("python")
}

/// `tests/peers/peer.py` in this crate.
pub fn peer_script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests").join("peers").join("peer.py")
}

/// A running peer process; killed and waited for on drop.
pub struct Peer {
    /// The MCP endpoint, e.g. `http://127.0.0.1:41234/mcp` (`/sse` for kind `legacy-sse`).
    pub url: String,
    child: Child,
}

impl Peer {
    /// Spawns `peer.py --kind KIND --port 0` with the venv's Python and env `PEER_TOKEN`
    /// (and `PEER_FOREIGN_TOKEN` when given), waits up to 60 s for its
    /// `LISTENING <url>` line and returns the running peer.
    ///
    /// Panics (never skips) when the venv is missing, the peer exits, or it does not
    /// announce itself in time.
    pub fn start(sdk: Sdk, kind: &str, token: &str, foreign_token: Option<&str>) -> Peer {
        let py = python(sdk);
        if !py.exists() {
            panic!(
                "MCP peer venv missing: {} does not exist. Run `tests/peers/setup.sh` \
                 (it creates {}/mcp1 and mcp2; set CORDON_PEERS_DIR to use another place).",
                py.display(),
                peers_dir().display()
            );
        }
        let script = peer_script();
        let mut cmd = Command::new(&py);
        cmd.arg(&script)
            .arg("--kind")
            .arg(kind)
            .arg("--port")
            .arg("0")
            .env("PEER_TOKEN", token)
            .env("PYTHONUNBUFFERED", "1")
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        match foreign_token {
            Some(t) => cmd.env("PEER_FOREIGN_TOKEN", t),
            None => cmd.env_remove("PEER_FOREIGN_TOKEN"),
        };
        let mut child =
            cmd.spawn().unwrap_or_else(|e| panic!("cannot spawn {} {}: {e}", py.display(), script.display()));

        // Read stdout on a thread so the wait can time out; the thread keeps draining
        // stdout after the LISTENING line until the child exits.
        let stdout = child.stdout.take().expect("piped stdout");
        let (tx, rx) = mpsc::channel::<String>();
        std::thread::spawn(move || {
            let mut tx = Some(tx);
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Some(t) = tx.as_ref()
                    && t.send(line).is_err()
                {
                    tx = None;
                }
            }
        });

        let deadline = std::time::Instant::now() + STARTUP_TIMEOUT;
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match rx.recv_timeout(left) {
                Ok(line) => {
                    if let Some(url) = line.strip_prefix("LISTENING ") {
                        return Peer { url: url.trim().to_string(), child };
                    }
                    eprintln!("peer {kind} ({sdk:?}) stdout: {line}");
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    panic!("peer {kind} ({sdk:?}) did not print LISTENING within {STARTUP_TIMEOUT:?}");
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    let status = child.wait();
                    panic!(
                        "peer {kind} ({sdk:?}) exited before listening: {status:?} \
                         (see its stderr above)"
                    );
                }
            }
        }
    }

    /// `http://127.0.0.1:<port>` (the URL without its path).
    pub fn origin(&self) -> String {
        let rest = self.url.strip_prefix("http://").unwrap_or(&self.url);
        let host = rest.split('/').next().unwrap_or(rest);
        format!("http://{host}")
    }

    /// The TCP port the peer listens on.
    pub fn port(&self) -> u16 {
        let origin = self.origin();
        origin
            .rsplit(':')
            .next()
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("no port in peer url {}", self.url))
    }

    /// The peer's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
