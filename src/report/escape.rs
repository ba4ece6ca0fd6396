//! Escaping for the report sinks that need it (HTML, Markdown), in one place below the
//! renderers that use it: the report, its matrix and its "since last run" section.

use crate::text::sanitize;

/// Text for HTML element content and attribute values, after the common sanitizing.
pub fn escape(text: &str) -> String {
    let clean = sanitize(text);
    let mut out = String::with_capacity(clean.len());
    for c in clean.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// `s` as an inline code span: the fence is one backtick longer than the longest run
/// inside, and padded with spaces where the content would touch it.
pub fn code_span(s: &str) -> String {
    let s = sanitize(s);
    if s.is_empty() {
        return "` `".into();
    }
    let fence = "`".repeat(longest_backtick_run(&s) + 1);
    let pad = s.starts_with('`') || s.ends_with('`') || (s.starts_with(' ') && s.ends_with(' '));
    let space = if pad { " " } else { "" };
    format!("{fence}{space}{s}{space}{fence}")
}

/// `s` as plain Markdown text: every character with a meaning (emphasis, code, links,
/// images, HTML, entities, tables, math, strikethrough) is backslash-escaped.
pub fn text(s: &str) -> String {
    let s = sanitize(s);
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if matches!(c, '\\' | '`' | '*' | '_' | '[' | ']' | '<' | '>' | '!' | '|' | '~' | '&' | '$' | '#') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The longest run of backticks in `s`: a code span or fence must be longer.
pub fn longest_backtick_run(s: &str) -> usize {
    s.split(|c| c != '`').map(str::len).max().unwrap_or(0)
}
