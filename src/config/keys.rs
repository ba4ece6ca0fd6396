//! Which key sits at a place in a YAML file: parser errors carry a line and column but not
//! the key, and "invalid value" alone does not tell an engineer where to look.

use serde_saphyr::granit_parser::{Event, Parser};

use super::strict::echo;

enum Frame {
    Map { path: String, key: String, expect_key: bool },
    Seq { path: String, index: usize },
}

fn child(path: &str, key: &str) -> String {
    if path.is_empty() { key.to_string() } else { format!("{path}.{key}") }
}

/// The dotted key path (`providers.alpha.app_ports[1]`) of the last node that starts at or
/// before `line`:`column` (1-based, as serde-saphyr reports them), or `None` at the root or
/// when the file does not parse that far.
pub fn key_at(text: &str, line: u64, column: u64) -> Option<String> {
    let target = (line as usize, (column as usize).saturating_sub(1));
    let mut stack: Vec<Frame> = Vec::new();
    let mut found: Option<String> = None;
    for item in Parser::new_from_str(text) {
        let Ok((event, span)) = item else { break };
        let starts_node =
            matches!(event, Event::Scalar(..) | Event::SequenceStart(..) | Event::MappingStart(..) | Event::Alias(_));
        if starts_node {
            if (span.start.line(), span.start.col()) > target {
                break;
            }
            let scalar = match &event {
                Event::Scalar(text, ..) => Some(echo(text)),
                _ => None,
            };
            let here = match stack.last_mut() {
                None => String::new(),
                Some(Frame::Map { path, key, expect_key: true }) => {
                    *key = scalar.clone().unwrap_or_else(|| "?".into());
                    child(path, key)
                }
                Some(Frame::Map { path, key, expect_key: false }) => child(path, key),
                Some(Frame::Seq { path, index }) => format!("{path}[{index}]"),
            };
            found = Some(here.clone());
            match event {
                Event::SequenceStart(..) => stack.push(Frame::Seq { path: here, index: 0 }),
                Event::MappingStart(..) => stack.push(Frame::Map { path: here, key: String::new(), expect_key: true }),
                _ => complete(&mut stack),
            }
        } else if matches!(event, Event::SequenceEnd | Event::MappingEnd) {
            stack.pop();
            complete(&mut stack);
        }
    }
    found.filter(|p| !p.is_empty())
}

/// A node under the top frame is done: a map moves from key to value and back, a
/// sequence to its next index.
fn complete(stack: &mut [Frame]) {
    match stack.last_mut() {
        Some(Frame::Map { expect_key, .. }) => *expect_key = !*expect_key,
        Some(Frame::Seq { index, .. }) => *index += 1,
        None => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "mode: host\nlimits:\n  max_pages: \"3\"\nproviders:\n  a:\n    app_ports: [80, x]\n    tools: { allowlist: [t] }\n";

    #[test]
    fn names_the_key_at_a_place() {
        assert_eq!(key_at(TEXT, 1, 1).as_deref(), Some("mode"));
        assert_eq!(key_at(TEXT, 1, 7).as_deref(), Some("mode"));
        assert_eq!(key_at(TEXT, 3, 14).as_deref(), Some("limits.max_pages"));
        assert_eq!(key_at(TEXT, 3, 3).as_deref(), Some("limits.max_pages"));
        assert_eq!(key_at(TEXT, 6, 21).as_deref(), Some("providers.a.app_ports[1]"));
        assert_eq!(key_at(TEXT, 6, 17).as_deref(), Some("providers.a.app_ports[0]"));
        assert_eq!(key_at(TEXT, 7, 26).as_deref(), Some("providers.a.tools.allowlist[0]"));
    }

    #[test]
    fn broken_files_give_what_was_read() {
        assert!(key_at("a: [1, 2\nb: {", 9, 1).is_some_and(|k| k.starts_with("a[")));
        assert_eq!(key_at("", 1, 1), None);
    }
}
