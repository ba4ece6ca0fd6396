//! YAML scalars and flow collections written so the scenario loader reads back exactly
//! the value written: a string that could read as anything else (a boolean, a number,
//! a null, YAML syntax) is double-quoted, with JSON's escapes (valid YAML).

use serde_json::Value;

/// `s` as a YAML scalar; `in_flow` when it sits inside `[…]` or `{…}`.
pub fn scalar(s: &str, in_flow: bool) -> String {
    if is_plain(s, in_flow) { s.to_string() } else { quoted(s) }
}

pub fn quoted(s: &str) -> String {
    serde_json::to_string(s).expect("a string serialises")
}

fn is_plain(s: &str, in_flow: bool) -> bool {
    let Some(first) = s.chars().next() else { return false };
    if !(first.is_ascii_alphabetic() || matches!(first, '/' | '_' | '.')) {
        return false;
    }
    let reserved = ["true", "false", "null", "yes", "no", "on", "off", "y", "n", "~", ".inf", ".nan"];
    if reserved.iter().any(|r| r.eq_ignore_ascii_case(s)) {
        return false;
    }
    let bytes = s.as_bytes();
    bytes.iter().enumerate().all(|(i, &b)| match b {
        b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'_' | b'.' | b'/' | b'-' | b'+' | b'@' => true,
        // `key: value` needs a space after the colon; a URL's colons have none.
        b':' => !in_flow && bytes.get(i + 1).is_some_and(|n| *n != b' '),
        _ => false,
    })
}

/// `[a, b, c]`.
pub fn flow_list<S: AsRef<str>>(items: &[S]) -> String {
    let parts: Vec<String> = items.iter().map(|s| scalar(s.as_ref(), true)).collect();
    format!("[{}]", parts.join(", "))
}

/// A JSON value in YAML flow style: `{ a: 2, b: [x] }`, keys sorted.
pub fn flow_json(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => scalar(s, true),
        Value::Array(items) => {
            let parts: Vec<String> = items.iter().map(flow_json).collect();
            format!("[{}]", parts.join(", "))
        }
        Value::Object(map) if map.is_empty() => "{}".into(),
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let parts: Vec<String> =
                keys.iter().map(|k| format!("{}: {}", scalar(k, true), flow_json(&map[*k]))).collect();
            format!("{{ {} }}", parts.join(", "))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn strings_that_could_read_as_something_else_are_quoted() {
        for (s, expected) in [
            ("native", "native"),
            ("http://native:8000/mcp", "http://native:8000/mcp"),
            ("roles/web-app-gitea/mcp", "roles/web-app-gitea/mcp"),
            ("true", "\"true\""),
            ("No", "\"No\""),
            ("8000", "\"8000\""),
            ("", "\"\""),
            ("a: b", "\"a: b\""),
            ("#x", "\"#x\""),
            ("tab\there", "\"tab\\there\""),
            ("-x", "\"-x\""),
            ("../roles/x/tools.json", "../roles/x/tools.json"),
            (".NaN", "\".NaN\""),
        ] {
            assert_eq!(scalar(s, false), expected, "{s:?}");
        }
        assert_eq!(scalar("sha256:ab", true), "\"sha256:ab\"");
        assert_eq!(flow_list(&["a", "b c", "2"]), "[a, \"b c\", \"2\"]");
        assert_eq!(
            flow_json(&json!({"b": [1, "x"], "a": {"c": true}, "e": {}})),
            "{ a: { c: true }, b: [1, x], e: {} }"
        );
    }

    #[test]
    fn what_is_written_reads_back_the_same() {
        #[derive(serde::Deserialize)]
        struct Doc {
            v: Value,
            s: String,
        }
        for value in [json!({"a": 2, "b": "3", "c": ["yes", "null", ""], "d": {"e": "x: y"}}), json!([1.5, -2, "ü"])] {
            for s in ["plain", "true", "09", "a, b", "{x}", "k: v", "ü", " lead", "../a/b.json", ".inf"] {
                let text = format!("v: {}\ns: {}\n", flow_json(&value), scalar(s, false));
                let doc: Doc = serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{text}: {e}"));
                assert_eq!(doc.v, value, "{text}");
                assert_eq!(doc.s, s, "{text}");
            }
        }
    }
}
