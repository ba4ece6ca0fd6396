//! Incremental Server-Sent Events parser (WHATWG "event stream interpretation").
//!
//! Bytes arrive in arbitrary chunks, so a line, a CRLF pair or a UTF-8 sequence may be
//! split across two chunks; the parser keeps the partial line and a "skip the next LF"
//! flag between calls instead of assuming chunk boundaries mean anything.

/// One dispatched event. `event` defaults to `message` as the spec says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SseEvent {
    pub event: String,
    pub data: String,
    pub id: Option<String>,
}

#[derive(Debug, Default)]
pub(crate) struct SseParser {
    line: Vec<u8>,
    /// A CR ended the previous line; an LF right after it belongs to the same line end,
    /// even when it arrives in the next chunk.
    skip_lf: bool,
    bom_checked: bool,
    event: String,
    data: String,
    has_data: bool,
    last_id: Option<String>,
}

impl SseParser {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn feed(&mut self, mut chunk: &[u8]) -> Vec<SseEvent> {
        let mut out = Vec::new();
        if !self.bom_checked && !chunk.is_empty() {
            // The BOM may itself be split; only decide once three bytes are buffered.
            let mut probe = self.line.clone();
            probe.extend_from_slice(&chunk[..chunk.len().min(3)]);
            if probe.len() >= 3 || !b"\xEF\xBB\xBF".starts_with(&probe) {
                self.bom_checked = true;
                if probe.starts_with(b"\xEF\xBB\xBF") {
                    let from_chunk = 3 - self.line.len();
                    self.line.clear();
                    chunk = &chunk[from_chunk..];
                }
            } else {
                self.line.extend_from_slice(chunk);
                return out;
            }
        }
        for &b in chunk {
            if self.skip_lf {
                self.skip_lf = false;
                if b == b'\n' {
                    continue;
                }
            }
            match b {
                b'\r' => {
                    self.skip_lf = true;
                    self.end_line(&mut out);
                }
                b'\n' => self.end_line(&mut out),
                _ => self.line.push(b),
            }
        }
        out
    }

    fn end_line(&mut self, out: &mut Vec<SseEvent>) {
        let line = std::mem::take(&mut self.line);
        if line.is_empty() {
            self.dispatch(out);
            return;
        }
        if line[0] == b':' {
            return; // comment, e.g. a keep-alive ": ping"
        }
        let line = String::from_utf8_lossy(&line);
        let (field, value) = match line.find(':') {
            Some(i) => {
                let v = &line[i + 1..];
                (&line[..i], v.strip_prefix(' ').unwrap_or(v))
            }
            None => (&line[..], ""),
        };
        match field {
            "event" => self.event = value.to_string(),
            "data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
            }
            "id" if !value.contains('\0') => self.last_id = Some(value.to_string()),
            _ => {} // retry and unknown fields carry nothing a client here needs
        }
    }

    fn dispatch(&mut self, out: &mut Vec<SseEvent>) {
        let event = std::mem::take(&mut self.event);
        if !self.has_data {
            return;
        }
        self.has_data = false;
        out.push(SseEvent {
            event: if event.is_empty() { "message".to_string() } else { event },
            data: std::mem::take(&mut self.data),
            id: self.last_id.clone(),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn ev(event: &str, data: &str) -> SseEvent {
        SseEvent { event: event.into(), data: data.into(), id: None }
    }

    fn feed_all(chunks: &[&[u8]]) -> Vec<SseEvent> {
        let mut p = SseParser::new();
        chunks.iter().flat_map(|c| p.feed(c)).collect()
    }

    #[rstest]
    #[case::lf("event: endpoint\ndata: /messages/?session_id=1\n\n")]
    #[case::crlf("event: endpoint\r\ndata: /messages/?session_id=1\r\n\r\n")]
    #[case::cr("event: endpoint\rdata: /messages/?session_id=1\r\r")]
    #[case::no_space("event:endpoint\ndata:/messages/?session_id=1\n\n")]
    fn line_endings(#[case] text: &str) {
        assert_eq!(feed_all(&[text.as_bytes()]), vec![ev("endpoint", "/messages/?session_id=1")]);
    }

    #[test]
    fn every_split_point_gives_the_same_events() {
        let text = b"\xEF\xBB\xBF: ping\r\nevent: message\r\ndata: {\"a\":\r\ndata: 1}\r\n\r\ndata: two\r\n\r\n";
        let whole = feed_all(&[text]);
        assert_eq!(whole, vec![ev("message", "{\"a\":\n1}"), ev("message", "two")]);
        for i in 0..text.len() {
            for j in i..text.len() {
                let got = feed_all(&[&text[..i], &text[i..j], &text[j..]]);
                assert_eq!(got, whole, "split at {i},{j}");
            }
        }
    }

    #[test]
    fn comments_only_dispatch_nothing() {
        assert!(feed_all(&[b": ping\n\n: ping\n\n"]).is_empty());
    }

    #[test]
    fn multi_line_data_is_joined_with_newline() {
        assert_eq!(feed_all(&[b"data: a\ndata: b\ndata\n\n"]), vec![ev("message", "a\nb\n")]);
    }

    #[test]
    fn id_is_kept_and_unterminated_event_is_dropped() {
        let got = feed_all(&[b"id: 7\ndata: x\n\ndata: never finished\n"]);
        assert_eq!(got, vec![SseEvent { event: "message".into(), data: "x".into(), id: Some("7".into()) }]);
    }

    #[test]
    fn event_type_resets_after_dispatch() {
        let got = feed_all(&[b"event: endpoint\ndata: /m\n\ndata: {}\n\n"]);
        assert_eq!(got, vec![ev("endpoint", "/m"), ev("message", "{}")]);
    }
}
