//! Just enough of the shell to read documented command lines as a shell would: the
//! continuation lines of a command joined, then the words of its first simple command
//! (up to `|`, `&` or `;`) split on blanks with single and double quotes, `$VAR` and
//! `${VAR}` expanded from a given map (an unknown variable is an error, so a typo in a
//! template fails the test instead of becoming an empty word).
#![allow(dead_code)]

use std::collections::BTreeMap;

/// The command that starts on the first line of `text` containing `start`, with its
/// backslash-continued lines joined.
pub fn command_at(text: &str, start: &str) -> Option<String> {
    let mut lines = text.lines().skip_while(|l| !l.contains(start));
    let mut command = String::new();
    for line in lines.by_ref() {
        let line = line.trim();
        match line.strip_suffix('\\') {
            Some(head) => {
                command.push_str(head.trim_end());
                command.push(' ');
            }
            None => {
                command.push_str(line);
                return Some(command);
            }
        }
    }
    (!command.is_empty()).then_some(command)
}

/// Words of `command`, variables expanded from `vars`.
pub fn words(command: &str, vars: &BTreeMap<String, String>) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut word: Option<String> = None;
    let mut chars = command.chars().peekable();
    let mut quote: Option<char> = None;
    while let Some(c) = chars.next() {
        match (quote, c) {
            // A list or pipeline goes on after the command: `cmd || code=$?`.
            (None, '|' | '&' | ';') => break,
            (None, c) if c.is_whitespace() => {
                if let Some(w) = word.take() {
                    out.push(w);
                }
            }
            (None, '\'' | '"') => {
                quote = Some(c);
                word.get_or_insert_with(String::new);
            }
            (Some(q), c) if c == q => quote = None,
            (Some('\''), c) => word.get_or_insert_with(String::new).push(c),
            (_, '\\') => {
                if let Some(next) = chars.next() {
                    word.get_or_insert_with(String::new).push(next);
                }
            }
            (_, '$') => {
                let braced = chars.peek() == Some(&'{');
                if braced {
                    chars.next();
                }
                let mut name = String::new();
                while let Some(&n) = chars.peek() {
                    if n.is_ascii_alphanumeric() || n == '_' {
                        name.push(n);
                        chars.next();
                    } else {
                        break;
                    }
                }
                if braced && chars.next() != Some('}') {
                    return Err(format!("unterminated ${{{name} in {command}"));
                }
                let value = vars.get(&name).ok_or_else(|| format!("${name} is not set (in {command})"))?;
                word.get_or_insert_with(String::new).push_str(value);
            }
            (_, c) => word.get_or_insert_with(String::new).push(c),
        }
    }
    if quote.is_some() {
        return Err(format!("unterminated quote in {command}"));
    }
    out.extend(word);
    Ok(out)
}
