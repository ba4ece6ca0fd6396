//! The HTML report in a real headless browser (Debian's chromium): the reach matrix
//! renders for the reference stack (no LEAK anywhere) and for a broken variant (the LEAK
//! cell visible, in red, with its address), a failing run's checks table leads with what
//! failed, a run with no engine shows every pair as "could not be judged" in its own
//! colour (never broken's orange), and the page makes no request at all.

mod support;

use std::io::Read;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use support::stack::{Stack, repo};

const CHROMIUM: &str = "/usr/bin/chromium";
/// The LEAK cell's fill, #c62828.
const LEAK_RED: [u8; 3] = [0xc6, 0x28, 0x28];

/// Counts every connection made to it: the browser's proxy, so any request the page
/// tries to make (whatever the host) lands here.
struct Recorder {
    port: u16,
    lines: Arc<std::sync::Mutex<Vec<String>>>,
}

impl Recorder {
    fn start() -> Recorder {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let lines = Arc::new(std::sync::Mutex::new(Vec::new()));
        let log = lines.clone();
        std::thread::spawn(move || {
            for mut s in listener.incoming().flatten() {
                let mut buf = [0u8; 1024];
                let n = s.read(&mut buf).unwrap_or(0);
                let first = String::from_utf8_lossy(&buf[..n]).lines().next().unwrap_or("").to_string();
                log.lock().unwrap().push(first);
            }
        });
        Recorder { port, lines }
    }
}

fn chromium(recorder: &Recorder, profile: &Path, extra: &[String], page: &Path) -> String {
    assert!(Path::new(CHROMIUM).exists(), "{CHROMIUM} is missing: apt-get install chromium (.ci/run installs it)");
    let out = Command::new(CHROMIUM)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
            "--no-default-browser-check",
            "--no-pings",
            "--disable-default-apps",
            "--disable-extensions",
            "--disable-domain-reliability",
            "--disable-client-side-phishing-detection",
            "--disable-features=OptimizationHints,Translate,MediaRouter,AutofillServerCommunication",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("--proxy-server=http://127.0.0.1:{}", recorder.port))
        .arg("--proxy-bypass-list=<-loopback>")
        .args(extra)
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("running chromium");
    assert!(out.status.success(), "chromium failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The cells the browser rendered: (client, column, state).
fn cells(dom: &str) -> Vec<(String, String, String)> {
    dom.split("<g class=\"cell\" ")
        .skip(1)
        .map(|chunk| {
            let attr = |name: &str| {
                let start = chunk.find(&format!("{name}=\"")).map(|i| i + name.len() + 2).unwrap();
                chunk[start..].split('"').next().unwrap().to_string()
            };
            (attr("data-client"), attr("data-column"), attr("data-state"))
        })
        .collect()
}

/// Pixels of exactly `rgb`: a matrix cell is about 90×90 of them; the legend's swatch
/// and red text are far fewer.
fn pixels_of(png_path: &Path, rgb: [u8; 3]) -> usize {
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(png_path).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    let channels = info.color_type.samples();
    buf[..info.buffer_size()].chunks(channels).filter(|p| p[..3] == rgb).count()
}

const CELL_PIXELS: usize = 5_000;

/// What the browser made of a report.html: its cells, the verdicts of its checks table
/// in page order, and the screenshot's pixels of each colour asked about.
struct Page {
    cells: Vec<(String, String, String)>,
    verdicts: Vec<String>,
    colours: Vec<usize>,
}

/// Runs cordon on `stack`, renders its report.html headless.
fn render(stack: &Stack, scenario: &Path, colours: &[[u8; 3]]) -> Page {
    let results = tempfile::tempdir().unwrap();
    let (_code, stdout, stderr, _report) = stack.cordon(scenario, results.path(), &[]);
    let page: PathBuf = results.path().join("report.html");
    assert!(page.exists(), "no report.html:\n{stdout}\n{stderr}");
    browse(&page, colours)
}

fn browse(page: &Path, colours: &[[u8; 3]]) -> Page {
    let page = page.to_path_buf();
    let recorder = Recorder::start();
    let profile = tempfile::tempdir().unwrap();
    let dom = chromium(&recorder, profile.path(), &["--dump-dom".into()], &page);
    let shot = profile.path().join("shot.png");
    chromium(
        &recorder,
        profile.path(),
        &[format!("--screenshot={}", shot.display()), "--window-size=1400,1100".into()],
        &page,
    );
    assert!(std::fs::metadata(&shot).map(|m| m.len() > 10_000).unwrap_or(false), "no screenshot");
    // The browser's own housekeeping (updates, time, accounts) goes to Google's service
    // hosts whatever page is open; anything else would have come from the page.
    let own = ["google.com", "googleapis.com", "gstatic.com", "googleusercontent.com"];
    let from_page: Vec<String> = recorder
        .lines
        .lock()
        .unwrap()
        .iter()
        // A connection that sent nothing asked for nothing (a browser preconnect).
        .filter(|l| !l.is_empty())
        .filter(|l| {
            let target = l.split_whitespace().nth(1).unwrap_or("");
            let host = target.trim_start_matches("http://").trim_start_matches("https://");
            let host = host.split(['/', ':']).next().unwrap_or("");
            !own.iter().any(|d| host == *d || host.ends_with(&format!(".{d}")))
        })
        .cloned()
        .collect();
    assert!(from_page.is_empty(), "the page made requests: {from_page:?}");
    let verdicts = dom
        .split("<tr class=\"check\" ")
        .skip(1)
        .filter_map(|row| row.split("data-verdict=\"").nth(1)?.split('"').next().map(str::to_string))
        .collect();
    Page { cells: cells(&dom), verdicts, colours: colours.iter().map(|c| pixels_of(&shot, *c)).collect() }
}

/// Broken's orange (#ef6c00) and could-not-be-judged's yellow (#fff59d).
const BROKEN_ORANGE: [u8; 3] = [0xef, 0x6c, 0x00];
const COULD_NOT_JUDGE: [u8; 3] = [0xff, 0xf5, 0x9d];

#[test]
fn the_reach_matrix_renders_in_a_real_browser_for_a_good_and_a_leaking_stack() {
    let good = Stack::up("html-good", "10.236", None);
    let page = render(&good, &repo().join("scenarios/reference.yaml"), &[LEAK_RED]);
    let (cells, red) = (page.cells, page.colours[0] > CELL_PIXELS);
    assert!(!page.verdicts.is_empty() && page.verdicts.last().map(String::as_str) == Some("passed"));
    drop(good);
    let state = |cells: &[(String, String, String)], client: &str, column: &str| {
        cells.iter().find(|(c, col, _)| c == client && col == column).map(|(_, _, s)| s.clone())
    };
    assert_eq!(state(&cells, "webui", "native").as_deref(), Some("working"), "{cells:?}");
    assert_eq!(state(&cells, "n8n", "native").as_deref(), Some("isolated"), "{cells:?}");
    assert_eq!(state(&cells, "webui", "app:gitea").as_deref(), Some("isolated"), "{cells:?}");
    assert!(!cells.iter().any(|(_, _, s)| s == "LEAK"), "{cells:?}");
    assert!(!red, "no LEAK red on a good stack");

    let variant = repo().join("docker/reference/broken/shared-infra-reach/compose.yaml");
    let leaking = Stack::up("html-leak", "10.237", Some(&variant));
    let page = render(&leaking, &repo().join("scenarios/reference.yaml"), &[LEAK_RED]);
    let (cells, red) = (page.cells, page.colours[0] > CELL_PIXELS);
    // A failing run's page leads with what failed.
    assert_eq!(page.verdicts.first().map(String::as_str), Some("failed"), "{:?}", page.verdicts);
    let first_pass = page.verdicts.iter().position(|v| v == "passed").unwrap();
    assert!(page.verdicts[first_pass..].iter().all(|v| v == "passed"), "{:?}", page.verdicts);
    assert_eq!(state(&cells, "flowise", "legacy").as_deref(), Some("LEAK"), "{cells:?}");
    assert_eq!(state(&cells, "webui", "legacy").as_deref(), Some("working"), "{cells:?}");
    assert!(red, "the LEAK cell is drawn in red");
}

#[test]
fn an_engine_down_run_says_it_could_not_judge_never_broken() {
    // Needs no stack: the scenario's credentials come from the environment.
    let results = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_cordon"));
    cmd.args(["compose", "--project", "cordon-no-engine", "--scenario"])
        .arg(repo().join("scenarios/reference.yaml"))
        .arg("--results")
        .arg(results.path())
        .env("DOCKER_HOST", format!("unix://{}/no-engine.sock", results.path().display()));
    cmd.env(support::stack::STAND_IN_DIGEST.0, support::stack::STAND_IN_DIGEST.1);
    for var in ["GITEA_TOKEN", "LEGACY_TOKEN", "MODERN_TOKEN", "NATIVE_TOKEN", "WIKI_TOKEN"] {
        cmd.env(var, format!("{}-{}", var.to_lowercase(), support::stack::random_token()));
    }
    let out = cmd.output().unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", String::from_utf8_lossy(&out.stderr));
    let page = browse(&results.path().join("report.html"), &[COULD_NOT_JUDGE, BROKEN_ORANGE]);
    assert!(!page.cells.is_empty());
    let judged: Vec<_> =
        page.cells.iter().filter(|(_, _, s)| s != "could not be judged" && s != "dark" && s != "not judged").collect();
    assert!(judged.is_empty(), "with no engine nothing is working, broken, isolated or a leak: {judged:?}");
    assert!(page.cells.iter().any(|(_, _, s)| s == "could not be judged"), "{:?}", page.cells);
    assert!(page.colours[0] > CELL_PIXELS, "the could-not-be-judged yellow is drawn");
    assert!(page.colours[1] < CELL_PIXELS, "no cell in broken's orange");
    assert!(page.verdicts.iter().all(|v| v == "unreachable" || v == "skipped"), "{:?}", page.verdicts);
}
