//! The live console: each check's line is printed the moment it finishes (in libtest's
//! shape), with a progress line on a terminal — done/total, elapsed, and what is waiting
//! and why — and plain `waiting:` lines when output is not a terminal or runs in CI.
//! It listens to the runner's events; it never probes or decides.

use std::collections::BTreeMap;
use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use libtest_mimic::Arguments;

use super::console::{self, Style, Tally};
use super::failure::EvidenceLevel;
use crate::model::{CheckName, CheckResult};
use crate::runner::Events;
use crate::secret::Redactor;
use crate::text::{sanitize, sanitize_lines};

struct State {
    started: Instant,
    planned: usize,
    done: usize,
    running: usize,
    waiting: BTreeMap<String, String>,
    tally: Tally,
    /// A progress line is on screen and must be cleared before anything else is printed.
    drawn: bool,
}

pub struct LiveConsole {
    style: Style,
    redactor: Redactor,
    name_width: usize,
    /// Draw a progress line (stderr is a terminal and this is not CI).
    progress: bool,
    out: Mutex<Box<dyn Write + Send>>,
    state: Mutex<State>,
    ticking: Arc<AtomicBool>,
}

impl LiveConsole {
    /// `planned` are the names of the checks that will run (for the column width).
    pub fn new(args: &Arguments, evidence: EvidenceLevel, planned: &[String], redactor: Redactor) -> Arc<LiveConsole> {
        let style = Style::from_args(args, evidence);
        let out: Box<dyn Write + Send> = match args.logfile.as_ref().and_then(|p| std::fs::File::create(p).ok()) {
            Some(file) => Box::new(file),
            None => Box::new(std::io::stdout()),
        };
        let progress = std::io::stderr().is_terminal()
            && std::env::var_os("CI").is_none()
            && style.format == libtest_mimic::FormatSetting::Pretty;
        Arc::new(LiveConsole {
            style,
            redactor,
            name_width: planned.iter().map(|n| sanitize(n).chars().count()).max().unwrap_or(0),
            progress,
            out: Mutex::new(out),
            state: Mutex::new(State {
                started: Instant::now(),
                planned: planned.len(),
                done: 0,
                running: 0,
                waiting: BTreeMap::new(),
                tally: Tally::default(),
                drawn: false,
            }),
            ticking: Arc::new(AtomicBool::new(false)),
        })
    }

    fn print(&self, state: &mut State, text: &str) {
        self.clear(state);
        let mut out = self.out.lock().expect("console lock");
        let _ = out.write_all(self.redactor.redact(text).as_bytes());
        let _ = out.flush();
        drop(out);
        self.draw(state);
    }

    fn clear(&self, state: &mut State) {
        if state.drawn {
            eprint!("\r\x1b[2K");
            state.drawn = false;
        }
    }

    /// `[ 23/44] 1.2s · 5 running · 2 waiting: route::a->b (no answer yet), …`
    fn draw(&self, state: &mut State) {
        if !self.progress || state.done == state.planned {
            return;
        }
        let mut line = format!(
            "[{:>3}/{}] {:.1}s · {} running",
            state.done,
            state.planned,
            state.started.elapsed().as_secs_f64(),
            state.running
        );
        if !state.waiting.is_empty() {
            let first: Vec<String> = state.waiting.iter().take(2).map(|(c, why)| format!("{c} ({why})")).collect();
            line.push_str(&format!(" · {} waiting: {}", state.waiting.len(), first.join(", ")));
        }
        let width: usize = std::env::var("COLUMNS").ok().and_then(|c| c.parse().ok()).unwrap_or(100);
        let line: String = sanitize(&self.redactor.redact(&line)).chars().take(width.saturating_sub(1)).collect();
        eprint!("\r\x1b[2K{line}");
        state.drawn = true;
    }

    /// The failures, the reach matrix (`matrix`, when the run has one) and the summary;
    /// stops the progress line.
    pub fn finish(&self, filtered_out: usize, seconds: f64, matrix: Option<&str>) {
        self.ticking.store(false, Ordering::Relaxed);
        let mut state = self.state.lock().expect("console lock");
        self.clear(&mut state);
        let text =
            console::tail(&state.tally, filtered_out, seconds, self.style, matrix.map(sanitize_lines).as_deref());
        let mut out = self.out.lock().expect("console lock");
        let _ = out.write_all(self.redactor.redact(&text).as_bytes());
        let _ = out.flush();
    }

    /// Redraws the progress line every half second while the run lasts.
    fn tick(self: &Arc<Self>) {
        if !self.progress {
            return;
        }
        self.ticking.store(true, Ordering::Relaxed);
        let me = Arc::downgrade(self);
        let ticking = self.ticking.clone();
        std::thread::spawn(move || {
            while ticking.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(500));
                let Some(me) = me.upgrade() else { return };
                let mut state = me.state.lock().expect("console lock");
                if ticking.load(Ordering::Relaxed) {
                    me.draw(&mut state);
                }
            }
        });
    }
}

/// The events the live console shows, behind an `Arc` so the ticker can share it.
pub struct LiveEvents(pub Arc<LiveConsole>);

impl Events for LiveEvents {
    fn run_started(&self, planned: usize) {
        let console = &self.0;
        let mut state = console.state.lock().expect("console lock");
        state.planned = planned;
        state.started = Instant::now();
        console.print(&mut state, &console::header(planned, console.style));
        drop(state);
        console.tick();
    }

    fn check_started(&self, _check: &CheckName) {
        let mut state = self.0.state.lock().expect("console lock");
        state.running += 1;
    }

    fn waiting(&self, check: &str, reason: &str, elapsed: Duration, deadline: Duration) {
        let console = &self.0;
        let mut state = console.state.lock().expect("console lock");
        state.waiting.insert(check.to_string(), reason.chars().take(80).collect());
        if console.progress {
            console.draw(&mut state);
        } else {
            let left = deadline.saturating_sub(elapsed);
            eprintln!(
                "{}",
                sanitize(&console.redactor.redact(&format!(
                    "waiting: {check} not ready after {:.0}s ({reason}); retrying for {:.0}s more",
                    elapsed.as_secs_f64(),
                    left.as_secs_f64()
                )))
            );
        }
    }

    fn check_finished(&self, result: &CheckResult) {
        let console = &self.0;
        let redacted = super::redacted_result(result, &console.redactor);
        let mut state = console.state.lock().expect("console lock");
        state.done += 1;
        state.running = state.running.saturating_sub(1);
        state.waiting.remove(&result.name);
        let kind_width = console::kind_width(std::slice::from_ref(&redacted));
        let text = console::line(&redacted, console.style, console.name_width, kind_width, &mut state.tally);
        console.print(&mut state, &text);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Family;
    use crate::model::Verdict;

    struct Buffer(Arc<Mutex<Vec<u8>>>);
    impl Write for Buffer {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn lines_appear_as_checks_finish_and_the_summary_counts_them() {
        let buffer = Arc::new(Mutex::new(Vec::new()));
        let args = Arguments::from_iter(["cordon"]);
        let console = LiveConsole::new(
            &args,
            EvidenceLevel::Proof,
            &["route::a->b".into(), "reach::c-/->b".into()],
            Redactor::new(),
        );
        *console.out.lock().unwrap() = Box::new(Buffer(buffer.clone()));
        let events = LiveEvents(console.clone());
        events.run_started(2);
        let name = CheckName::pair(Family::Reach, "c", crate::model::Relation::NotAdmitted, "b");
        events.check_finished(&CheckResult::new(&name, Verdict::Failed, "opened TCP"));
        let first = String::from_utf8(buffer.lock().unwrap().clone()).unwrap();
        assert!(first.contains("test reach::c-/->b ... FAILED"), "{first}");
        events.check_finished(&CheckResult::new(
            &CheckName::pair(Family::Route, "a", crate::model::Relation::Admitted, "b"),
            Verdict::Passed,
            "",
        ));
        console.finish(0, 1.25, None);
        let all = String::from_utf8(buffer.lock().unwrap().clone()).unwrap();
        assert!(all.contains("test route::a->b   ... ok"), "{all}");
        assert!(all.contains("1 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 1.25s"), "{all}");
        assert!(all.contains("---- reach::c-/->b ----\nopened TCP"), "{all}");
    }
}
