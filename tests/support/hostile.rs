//! The hostile MCP server (`cordon-fixture hostile --mode M`) as a child process, cordon
//! run under measurement (wall time, peak RSS of the child through `wait4`), and the
//! scans every output must survive: no secret in any form, no raw control character.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Condvar, Mutex, OnceLock, mpsc};
use std::time::{Duration, Instant};

/// The static fixture binary, built once per test binary with the same flags as
/// `docker/build-images.sh` (so the image build reuses it), found where cargo says it put
/// it. `CORDON_FIXTURE_BIN` overrides (a binary built some other way).
pub fn fixture_bin() -> PathBuf {
    static BIN: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let bin = BIN.get_or_init(|| {
        if let Some(p) = std::env::var_os("CORDON_FIXTURE_BIN") {
            return Ok(PathBuf::from(p));
        }
        let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/Cargo.toml");
        let out = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
            .args(["build", "--release", "--locked", "--target", "x86_64-unknown-linux-gnu", "--message-format=json"])
            .arg("--manifest-path")
            .arg(&manifest)
            .env("RUSTFLAGS", "-C target-feature=+crt-static")
            .stderr(Stdio::inherit())
            .output()
            .map_err(|e| format!("cannot run cargo: {e}"))?;
        if !out.status.success() {
            return Err(format!("building the fixtures failed (exit {:?})", out.status.code()));
        }
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .filter(|m| m["reason"] == "compiler-artifact" && m["target"]["name"] == "cordon-fixture")
            .find_map(|m| m["executable"].as_str().map(PathBuf::from))
            .ok_or_else(|| "cargo reported no cordon-fixture executable".to_string())
    });
    bin.clone().unwrap_or_else(|e| panic!("the cordon-fixture binary is not available: {e}"))
}

/// A running hostile server; killed and reaped on drop.
pub struct Hostile {
    pub mode: String,
    /// `127.0.0.1:<port>`
    pub addr: String,
    child: Child,
}

impl Hostile {
    /// `cordon-fixture hostile --listen 127.0.0.1:0 --mode MODE` with `token` as the valid
    /// bearer and `foreign` as the one `foreign-bearer` also honours.
    pub fn start(mode: &str, token: &str, foreign: &str) -> Hostile {
        let mut child = Command::new(fixture_bin())
            .args(["hostile", "--listen", "127.0.0.1:0", "--mode", mode, "--foreign-env", "HOSTILE_FOREIGN"])
            .env("HOSTILE_TOKEN", token)
            .env("HOSTILE_FOREIGN", foreign)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn cordon-fixture hostile");
        let stdout = child.stdout.take().expect("piped");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        match rx.recv_timeout(Duration::from_secs(10)) {
            Ok(line) if line.starts_with("LISTENING ") => {
                Hostile { mode: mode.into(), addr: line["LISTENING ".len()..].trim().into(), child }
            }
            other => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("hostile --mode {mode} did not announce itself: {other:?}");
            }
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }
}

impl Drop for Hostile {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A finished child with its measurements.
pub struct Measured {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
    pub wall: Duration,
    /// Peak resident set size of the child, in KiB: its `VmHWM`, polled every 5 ms.
    /// (`wait4`'s `ru_maxrss` is no use here: exec records the pre-exec address space's
    /// peak, which for a spawned child is the test process's own.)
    pub max_rss_kib: i64,
}

fn vm_hwm_kib(pid: u32) -> Option<i64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Runs `cmd` to its end (killing it after `limit`), measuring wall time and peak RSS.
pub fn run_measured(mut cmd: Command, limit: Duration) -> Measured {
    let started = Instant::now();
    let mut child = cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("spawn");
    let drain = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = r.read_to_end(&mut buf);
            String::from_utf8_lossy(&buf).into_owned()
        })
    };
    let out = drain(Box::new(child.stdout.take().expect("piped")));
    let err = drain(Box::new(child.stderr.take().expect("piped")));
    let mut peak = 0;
    let mut killed = false;
    let status = loop {
        // Sampled before the exit check, so the last sample is as late as it can be.
        peak = peak.max(vm_hwm_kib(child.id()).unwrap_or(0));
        if let Some(status) = child.try_wait().expect("try_wait") {
            break status;
        }
        if !killed && started.elapsed() > limit {
            let _ = child.kill();
            killed = true;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let wall = started.elapsed();
    Measured {
        code: if killed { -9 } else { status.code().unwrap_or(-1) },
        stdout: out.join().unwrap_or_default(),
        stderr: err.join().unwrap_or_default(),
        wall,
        max_rss_kib: peak,
    }
}

/// Every form of `secret` a hostile server may echo and the redactor must mask: as is,
/// base64 (standard and URL-safe, with and without padding), hex (both cases), and its
/// last 12 characters.
pub fn secret_forms(secret: &str) -> Vec<(String, String)> {
    let b = secret.as_bytes();
    let std64 = base64(b);
    let url64 = std64.replace('+', "-").replace('/', "_");
    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
    let tail: String = secret.chars().skip(secret.chars().count().saturating_sub(12)).collect();
    vec![
        ("raw".into(), secret.to_string()),
        ("base64".into(), std64.clone()),
        ("base64 unpadded".into(), std64.trim_end_matches('=').to_string()),
        ("base64url".into(), url64.trim_end_matches('=').to_string()),
        ("hex".into(), hex.clone()),
        ("HEX".into(), hex.to_uppercase()),
        ("last 12 characters".into(), tail),
    ]
}

fn base64(bytes: &[u8]) -> String {
    const T: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for c in bytes.chunks(3) {
        let n = (c[0] as u32) << 16 | (*c.get(1).unwrap_or(&0) as u32) << 8 | *c.get(2).unwrap_or(&0) as u32;
        for i in 0..4 {
            out.push(if i <= c.len() { T[(n >> (18 - 6 * i) & 63) as usize] as char } else { '=' });
        }
    }
    out
}

/// Characters no output may carry raw: C0 controls but newline and tab, DEL, C1, bidi
/// controls and the non-characters an XML parser rejects.
pub fn is_forbidden(c: char) -> bool {
    matches!(c, '\u{0}'..='\u{8}' | '\u{b}'..='\u{1f}' | '\u{7f}'..='\u{9f}')
        || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}')
        || matches!(c, '\u{fdd0}'..='\u{fdef}' | '\u{fffe}' | '\u{ffff}')
}

/// What is wrong with one output text: `(what, where)` for each secret form and each
/// raw forbidden character found.
pub fn scan(name: &str, text: &str, secrets: &[(&str, &str)]) -> Vec<String> {
    let mut problems = Vec::new();
    for (who, secret) in secrets {
        for (form, value) in secret_forms(secret) {
            if value.len() >= 8 && text.contains(&value) {
                problems.push(format!("{name}: the {who} token appears ({form})"));
            }
        }
    }
    for (line_no, line) in text.lines().enumerate() {
        if let Some(c) = line.chars().find(|c| is_forbidden(*c)) {
            problems.push(format!("{name}:{}: raw control character U+{:04X} in {line:?}", line_no + 1, c as u32));
            break;
        }
    }
    for (line_no, line) in text.lines().enumerate() {
        let t = line.trim_start();
        if t.starts_with("# INJECTED") || t.starts_with("test FAKE") || t.starts_with("test contract::forged") {
            problems.push(format!("{name}:{}: a forged line {line:?}", line_no + 1));
        }
    }
    problems
}

/// Every output of a run (console and each report file) with its problems.
pub fn scan_outputs(console: &str, results: &Path, secrets: &[(&str, &str)]) -> Vec<String> {
    let mut problems = scan("console", console, secrets);
    for file in ["junit.xml", "report.json", "summary.md"] {
        match std::fs::read(results.join(file)) {
            Ok(bytes) => problems.extend(scan(file, &String::from_utf8_lossy(&bytes), secrets)),
            Err(e) => problems.push(format!("{file}: not written ({e})")),
        }
    }
    problems
}

/// At most `n` holders at once: cordon's wall time is part of what the tests assert, and
/// the machine has two cores.
pub struct Gate {
    free: Mutex<usize>,
    cv: Condvar,
}

pub struct Pass<'a>(&'a Gate);

impl Gate {
    pub const fn new(n: usize) -> Gate {
        Gate { free: Mutex::new(n), cv: Condvar::new() }
    }

    pub fn enter(&self) -> Pass<'_> {
        let mut free = self.free.lock().unwrap_or_else(|e| e.into_inner());
        while *free == 0 {
            free = self.cv.wait(free).unwrap_or_else(|e| e.into_inner());
        }
        *free -= 1;
        Pass(self)
    }
}

impl Drop for Pass<'_> {
    fn drop(&mut self) {
        *self.0.free.lock().unwrap_or_else(|e| e.into_inner()) += 1;
        self.0.cv.notify_one();
    }
}
