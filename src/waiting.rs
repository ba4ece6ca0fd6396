//! `waiting:` lines for a wait on the deployment (containers not running yet, a stack
//! still converging): one when what is waited for changes, otherwise one every few
//! seconds at most, each with the time waited so far. A retry every second must not print
//! the same line ten times.

use std::time::{Duration, Instant};

/// The longest a wait stays silent while nothing changes.
pub const EVERY: Duration = Duration::from_secs(5);

#[derive(Debug, Default)]
pub struct WaitNotes {
    last: Option<(String, Instant)>,
}

impl WaitNotes {
    pub fn new() -> Self {
        Self::default()
    }

    /// The line to print for waiting on `what` (`elapsed` of `deadline`), if one is due.
    pub fn line(&mut self, what: &str, elapsed: Duration, deadline: Duration) -> Option<String> {
        self.line_at(Instant::now(), what, elapsed, deadline)
    }

    fn line_at(&mut self, now: Instant, what: &str, elapsed: Duration, deadline: Duration) -> Option<String> {
        let due = match &self.last {
            Some((said, at)) => said != what || now.saturating_duration_since(*at) >= EVERY,
            None => true,
        };
        if !due {
            return None;
        }
        self.last = Some((what.to_string(), now));
        Some(format!("waiting: {what} ({:.0}s of {:.0}s)", elapsed.as_secs_f64(), deadline.as_secs_f64()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_on_change_and_otherwise_every_five_seconds() {
        let start = Instant::now();
        let mut notes = WaitNotes::new();
        let deadline = Duration::from_secs(60);
        let mut printed = Vec::new();
        // A retry every second for 12 s: the same three services for 8 s, then one of them.
        for second in 0..12u64 {
            let what = if second < 8 { "webui, n8n, flowise" } else { "webui" };
            let at = start + Duration::from_secs(second);
            if let Some(line) = notes.line_at(at, what, Duration::from_secs(second), deadline) {
                printed.push(line);
            }
        }
        assert_eq!(
            printed,
            [
                "waiting: webui, n8n, flowise (0s of 60s)",
                "waiting: webui, n8n, flowise (5s of 60s)",
                "waiting: webui (8s of 60s)",
            ]
        );
    }
}
