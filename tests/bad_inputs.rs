//! Replays the bad-input corpus (`tests/bad-inputs/<case>/case.yaml`) against the built
//! binary: each case's exit code and message, within 5 s (or the case's `wall_seconds`)
//! and 100 MB of RSS, with no raw control character and no form of the secret in anything
//! printed or written.
//!
//! A case directory holds `case.yaml` and the files it replaces in `_base/`; `${SECRET}`
//! in any file, argument or variable becomes the run's secret, `${LISTENER}` the port of
//! a local TCP listener that accepts and never answers.

use std::collections::BTreeMap;
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde::Deserialize;

const WALL_LIMIT: Duration = Duration::from_secs(5);
const RSS_LIMIT_KIB: i64 = 100 * 1024;
/// A hung case is killed after this, so a regression fails instead of blocking the suite.
const KILL_AFTER: Duration = Duration::from_secs(20);

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    /// What the case proves, one line.
    about: String,
    /// Arguments after the binary name; default: `run` with the base suite and scenario.
    #[serde(default)]
    args: Option<Vec<String>>,
    exit: i32,
    /// Fragments that must appear in stderr or stdout.
    expect: Vec<String>,
    /// Fragments that must appear nowhere (stdout, stderr, written reports).
    #[serde(default)]
    absent: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    /// Text edits to files copied from `_base/`: `{ file, from, to }`.
    #[serde(default)]
    edits: Vec<Edit>,
    /// Special files made before the run.
    #[serde(default)]
    setup: Vec<Setup>,
    #[serde(default)]
    listener: bool,
    /// Files that must exist after the run (reports written despite an error).
    #[serde(default)]
    written: Vec<String>,
    /// Seconds the case may take where its own timeouts are longer than the default bound
    /// (the built-in suite waits its 1 s connect plus 5 s read for a silent engine).
    #[serde(default)]
    wall_seconds: Option<u64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Edit {
    file: String,
    from: String,
    to: String,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
enum Setup {
    Fifo(String),
    Dir(String),
    Symlink {
        path: String,
        to: String,
    },
    /// A sparse file of this many bytes: huge on paper, nothing on disk.
    Sparse {
        path: String,
        bytes: u64,
    },
    Hex {
        path: String,
        hex: String,
    },
    /// A file with this text (after substitution).
    File {
        path: String,
        text: String,
    },
    /// `head`, then `unit` `count` times, then `tail`.
    Generate {
        path: String,
        head: String,
        unit: String,
        count: usize,
        tail: String,
    },
}

struct Outcome {
    code: i32,
    stdout: String,
    stderr: String,
    wall: Duration,
    max_rss_kib: i64,
}

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/bad-inputs")
}

fn secret() -> String {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    format!("cordon-bad-{nanos:x}-Zq7")
}

/// Every form of the secret that must never be printed: itself, base64 (standard and
/// URL-safe, padded or not) and hex.
fn secret_forms(secret: &str) -> Vec<String> {
    let b64 = base64(secret.as_bytes(), b"+/");
    let b64url = base64(secret.as_bytes(), b"-_");
    vec![
        secret.to_string(),
        b64.clone(),
        b64.trim_end_matches('=').to_string(),
        b64url.clone(),
        b64url.trim_end_matches('=').to_string(),
        hex::encode(secret),
        hex::encode_upper(secret),
    ]
}

fn base64(bytes: &[u8], last_two: &[u8; 2]) -> String {
    let mut alphabet: Vec<u8> = (b'A'..=b'Z').chain(b'a'..=b'z').chain(b'0'..=b'9').collect();
    alphabet.extend_from_slice(last_two);
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk.iter().enumerate().fold(0u32, |n, (i, b)| n | (u32::from(*b) << (16 - 8 * i)));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(alphabet[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

fn substitute(text: &str, vars: &[(&str, &str)]) -> String {
    vars.iter().fold(text.to_string(), |t, (k, v)| t.replace(k, v))
}

fn copy_dir(from: &Path, to: &Path, vars: &[(&str, &str)]) {
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name();
        if name == "case.yaml" {
            continue;
        }
        let target = to.join(&name);
        if entry.file_type().unwrap().is_dir() {
            std::fs::create_dir_all(&target).unwrap();
            copy_dir(&entry.path(), &target, vars);
        } else {
            let bytes = std::fs::read(entry.path()).unwrap();
            let bytes = match String::from_utf8(bytes) {
                Ok(text) => substitute(&text, vars).into_bytes(),
                Err(e) => e.into_bytes(),
            };
            std::fs::write(&target, bytes).unwrap();
        }
    }
}

fn prepare(dir: &Path, case: &Case, vars: &[(&str, &str)]) {
    for edit in &case.edits {
        let path = dir.join(&edit.file);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains(&edit.from), "edit: {:?} not in {}", edit.from, edit.file);
        std::fs::write(&path, text.replacen(&edit.from, &substitute(&edit.to, vars), 1)).unwrap();
    }
    for setup in &case.setup {
        match setup {
            Setup::Fifo(path) => {
                let _ = std::fs::remove_file(dir.join(path));
                nix::unistd::mkfifo(&dir.join(path), nix::sys::stat::Mode::S_IRWXU).unwrap();
            }
            Setup::Dir(path) => std::fs::create_dir_all(dir.join(path)).unwrap(),
            Setup::Symlink { path, to } => {
                let _ = std::fs::remove_file(dir.join(path));
                std::os::unix::fs::symlink(to, dir.join(path)).unwrap();
            }
            Setup::Sparse { path, bytes } => {
                std::fs::File::create(dir.join(path)).unwrap().set_len(*bytes).unwrap();
            }
            Setup::Hex { path, hex } => std::fs::write(dir.join(path), hex::decode(hex).unwrap()).unwrap(),
            Setup::File { path, text } => std::fs::write(dir.join(path), substitute(text, vars)).unwrap(),
            Setup::Generate { path, head, unit, count, tail } => {
                let text = format!("{head}{}{tail}", unit.repeat(*count));
                std::fs::write(dir.join(path), substitute(&text, vars)).unwrap();
            }
        }
    }
}

/// Runs the binary in `dir`, measuring its wall time and peak RSS (from `wait4`).
// The child is reaped by `wait4` (for its rusage), never by `Child::wait`.
#[allow(clippy::zombie_processes)]
fn run(dir: &Path, args: &[String], env: &BTreeMap<String, String>) -> Outcome {
    let mut command = Command::new(env!("CARGO_BIN_EXE_cordon"));
    command
        .args(args)
        .current_dir(dir)
        .env_remove("DOCKER_HOST")
        .env_remove("RUST_BACKTRACE")
        .envs(env)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let started = Instant::now();
    let mut child = command.spawn().expect("start cordon");
    let pid = child.id() as libc::pid_t;
    let readers = [child.stdout.take().map(box_read), child.stderr.take().map(box_read)].map(|r| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(mut r) = r {
                let _ = r.read_to_end(&mut bytes);
            }
            String::from_utf8_lossy(&bytes).into_owned()
        })
    });
    let mut status = 0;
    // SAFETY: rusage is plain data; wait4 fills it for our own child.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: `pid` is our child, not yet reaped (std's Child is never waited on).
        let reaped = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage) };
        if reaped == pid {
            break;
        }
        assert!(reaped == 0, "wait4: {}", std::io::Error::last_os_error());
        if started.elapsed() > KILL_AFTER {
            // SAFETY: kills the process group we made for this child only.
            unsafe { libc::kill(-pid, libc::SIGKILL) };
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let wall = started.elapsed();
    let [stdout, stderr] = readers.map(|r| r.join().unwrap());
    let code = if libc::WIFEXITED(status) { libc::WEXITSTATUS(status) } else { -libc::WTERMSIG(status) };
    Outcome { code, stdout, stderr, wall, max_rss_kib: usage.ru_maxrss }
}

fn box_read<R: Read + Send + 'static>(r: R) -> Box<dyn Read + Send> {
    Box::new(r)
}

fn forging_characters(text: &str) -> Vec<String> {
    text.chars()
        .filter(|&c| {
            let u = c as u32;
            (c.is_control() && c != '\n' && c != '\t')
                || (0x202a..=0x202e).contains(&u)
                || (0x2066..=0x2069).contains(&u)
        })
        .map(|c| format!("U+{:04X}", c as u32))
        .collect()
}

/// A listener that accepts connections and never answers, until the test ends.
fn silent_listener() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for connection in listener.incoming().take(64) {
            held.push(connection);
        }
    });
    port
}

struct Measured {
    name: String,
    code: i32,
    wall: Duration,
    rss_kib: i64,
}

fn replay(case_dir: &Path, secret: &str) -> Result<Measured, String> {
    let name = case_dir.file_name().unwrap().to_string_lossy().into_owned();
    let case: Case = serde_saphyr::from_str(&std::fs::read_to_string(case_dir.join("case.yaml")).unwrap())
        .map_err(|e| format!("{name}: case.yaml: {e}"))?;
    let work = tempfile::tempdir().unwrap();
    let port = if case.listener { silent_listener().to_string() } else { String::new() };
    let vars = [("${SECRET}", secret), ("${LISTENER}", port.as_str())];
    copy_dir(&corpus().join("_base"), work.path(), &vars);
    copy_dir(case_dir, work.path(), &vars);
    prepare(work.path(), &case, &vars);
    let args: Vec<String> = case.args.clone().unwrap_or_else(|| {
        ["run", "--suite", "suite.yaml", "--scenario", "scenario.yaml", "--results", "results"]
            .map(String::from)
            .to_vec()
    });
    let args: Vec<String> = args.iter().map(|a| substitute(a, &vars)).collect();
    let mut env: BTreeMap<String, String> =
        case.env.iter().map(|(k, v)| (k.clone(), substitute(&unescape(v), &vars))).collect();
    env.entry("CORDON_BAD_SECRET".into()).or_insert_with(|| secret.to_string());
    let out = run(work.path(), &args, &env);

    let mut problems = Vec::new();
    let printed = format!("{}\n{}", out.stderr, out.stdout);
    if out.code != case.exit {
        problems.push(format!("exit {} (expected {})", out.code, case.exit));
    }
    for fragment in &case.expect {
        if !printed.contains(&substitute(fragment, &vars)) {
            problems.push(format!("no {fragment:?} in the output"));
        }
    }
    let wall_limit = case.wall_seconds.map(Duration::from_secs).unwrap_or(WALL_LIMIT);
    if out.wall >= wall_limit {
        problems.push(format!("took {:?} (limit {wall_limit:?})", out.wall));
    }
    if out.max_rss_kib >= RSS_LIMIT_KIB {
        problems.push(format!("peak RSS {} KiB (limit {RSS_LIMIT_KIB} KiB)", out.max_rss_kib));
    }
    let mut sinks = vec![("stdout".to_string(), out.stdout.clone()), ("stderr".to_string(), out.stderr.clone())];
    for file in &case.written {
        match std::fs::read(work.path().join(file)) {
            Ok(bytes) => sinks.push((file.clone(), String::from_utf8_lossy(&bytes).into_owned())),
            Err(e) => problems.push(format!("{file} was not written: {e}")),
        }
    }
    for (sink, text) in &sinks {
        let forging = forging_characters(text);
        if !forging.is_empty() {
            problems.push(format!("{sink} holds raw control characters {forging:?}"));
        }
        for form in secret_forms(secret).iter().chain(&case.absent) {
            if text.contains(form.as_str()) {
                problems.push(format!("{sink} holds {form:?} (a secret form, or a fragment that must not appear)"));
            }
        }
    }
    if problems.is_empty() {
        Ok(Measured { name, code: out.code, wall: out.wall, rss_kib: out.max_rss_kib })
    } else {
        Err(format!(
            "{name} ({}):\n  {}\n  stdout: {}\n  stderr: {}",
            case.about,
            problems.join("\n  "),
            out.stdout.trim_end(),
            out.stderr.trim_end()
        ))
    }
}

/// `\n`, `\t`, `\e` and `\xNN` in env values, so a case file can hold a control character
/// without holding it raw.
fn unescape(text: &str) -> String {
    let mut out = String::new();
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('e') => out.push('\u{1b}'),
            Some('x') => {
                let code: String = chars.by_ref().take(2).collect();
                out.push(char::from(u8::from_str_radix(&code, 16).expect("\\xNN")));
            }
            Some(other) => out.push(other),
            None => out.push('\\'),
        }
    }
    out
}

#[test]
fn every_bad_input_is_refused_within_bounds() {
    let secret = secret();
    let mut cases: Vec<PathBuf> = std::fs::read_dir(corpus())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("case.yaml").is_file())
        .collect();
    cases.sort();
    assert!(cases.len() >= 60, "the corpus holds {} cases; at least 60 expected", cases.len());
    let mut failures = Vec::new();
    let mut measured = Vec::new();
    for case in &cases {
        match replay(case, &secret) {
            Ok(m) => measured.push(m),
            Err(e) => failures.push(e),
        }
    }
    for m in &measured {
        println!("{:<44} exit {}  {:>6.0} ms  {:>6} KiB", m.name, m.code, m.wall.as_secs_f64() * 1000.0, m.rss_kib);
    }
    if let Some(slowest) = measured.iter().max_by_key(|m| m.wall) {
        println!("slowest: {} in {:?}", slowest.name, slowest.wall);
    }
    if let Some(largest) = measured.iter().max_by_key(|m| m.rss_kib) {
        println!("largest: {} at {} KiB", largest.name, largest.rss_kib);
    }
    assert!(failures.is_empty(), "{} of {} cases failed:\n{}", failures.len(), cases.len(), failures.join("\n\n"));
}

#[test]
fn base64_matches_the_reference() {
    assert_eq!(base64(b"foobar", b"+/"), "Zm9vYmFy");
    assert_eq!(base64(b"fooba", b"+/"), "Zm9vYmE=");
    assert_eq!(base64(b"\xfb\xff", b"-_"), "-_8=");
}

#[test]
fn the_output_checks_catch_what_they_look_for() {
    assert_eq!(forging_characters("ok\n\ttab \u{1b}[2J \u{85} \u{202e}"), ["U+001B", "U+0085", "U+202E"]);
    let forms = secret_forms("s3cr3t-value");
    for leaked in ["czNjcjN0LXZhbHVl", "7333637233742d76616c7565"] {
        assert!(
            forms.iter().any(|f| leaked.contains(f.as_str()) || f.contains(leaked)),
            "{leaked} not among {forms:?}"
        );
    }
}
