//! Tool inventory: pagination with guards, result parsing, and the schema hash.

use std::collections::{BTreeMap, HashSet};
use std::fmt::Write as _;

use serde_json::Value;
use sha2::{Digest, Sha256};

use super::{McpError, Tool, ToolResult};

/// One page of `tools/list`.
#[derive(Debug)]
pub(crate) struct Page {
    pub tools: Vec<Tool>,
    pub next_cursor: Option<Value>,
}

impl Page {
    /// From a parsed `result` (the path for replies the typed reader does not take).
    pub fn from_result(page: Value) -> Result<Page, McpError> {
        let tools = parse_page(&page)?;
        let next_cursor = match page {
            Value::Object(mut m) => m.remove("nextCursor"),
            _ => None,
        };
        Ok(Page { tools, next_cursor })
    }

    /// From the JSON text of the reply to request `id`: read straight into tools, each
    /// schema kept as canonical JSON text, so a page costs about its own size in memory
    /// rather than a tree of every small object in it. At most `room + 1` tools are read:
    /// one more than the run still has room for is enough to hit the tool cap, and a
    /// page of 100k tools is then not built (ten checks listing it at once took cordon
    /// past 100 MiB). Replies of another shape (a batch, a malformed item) take the
    /// general path, with its errors.
    pub fn from_reply(text: &[u8], id: u64, room: usize) -> Result<Page, McpError> {
        #[derive(serde::Deserialize)]
        struct Message<'a> {
            #[serde(borrow)]
            result: Option<WirePage<'a>>,
        }
        #[derive(serde::Deserialize)]
        struct WirePage<'a> {
            #[serde(borrow)]
            tools: Vec<&'a serde_json::value::RawValue>,
            #[serde(rename = "nextCursor", default)]
            next_cursor: Option<Value>,
        }
        #[derive(serde::Deserialize)]
        struct WireTool {
            name: String,
            #[serde(default)]
            description: Option<Value>,
            #[serde(rename = "inputSchema", default)]
            input_schema: Option<Schema>,
        }
        let object = text.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{');
        if let Some(Ok(Message { result: Some(page) })) = object.then(|| serde_json::from_slice::<Message>(text)) {
            let read: Result<Vec<WireTool>, _> =
                page.tools.iter().take(room.saturating_add(1)).map(|raw| serde_json::from_str(raw.get())).collect();
            if let Ok(read) = read {
                let tools = read
                    .into_iter()
                    .map(|t| Tool {
                        name: t.name,
                        description: t.description.and_then(|d| d.as_str().map(str::to_string)),
                        input_schema: t.input_schema.unwrap_or_default(),
                    })
                    .collect();
                return Ok(Page { tools, next_cursor: page.next_cursor });
            }
        }
        let result = super::jsonrpc::take_result(text, id)
            .ok_or_else(|| McpError::Protocol { detail: "tools/list reply carries no result".into() })?;
        Page::from_result(result)
    }
}

/// Pages at least this large are parsed on the runtime's blocking pool.
const LARGE_PAGE: usize = 256 * 1024;

impl Page {
    /// [`Page::from_reply`], on the blocking pool when the page is large. A namespace's
    /// probes share one thread: parsing megabytes of schemas there stalled every other
    /// check's connections and timers, so under load a correct server with a big list
    /// "timed out" in the checks beside the listing.
    pub async fn from_large_reply(text: Vec<u8>, id: u64, room: usize) -> Result<Page, McpError> {
        if text.len() < LARGE_PAGE {
            return Page::from_reply(&text, id, room);
        }
        tokio::task::spawn_blocking(move || Page::from_reply(&text, id, room))
            .await
            .unwrap_or_else(|e| Err(McpError::Protocol { detail: format!("parsing a tools/list page: {e}") }))
    }
}

/// Collects every page of `tools/list`. `fetch(cursor, room)` returns one page; `room` is
/// how many more tools the cap allows (a page may stop reading one past it).
///
/// A page without `nextCursor` (absent, null or `""`) ends the list. Fetching stops with
/// `PageCap` when `max_pages` pages were read and there is still a cursor to follow, and
/// with `CursorCycle` when a cursor comes back that was already followed.
pub(crate) async fn paginate<F, Fut>(max_pages: usize, max_tools: usize, mut fetch: F) -> Result<Vec<Tool>, McpError>
where
    F: FnMut(Option<String>, usize) -> Fut,
    Fut: Future<Output = Result<Page, McpError>>,
{
    let mut tools = Vec::new();
    let mut followed = HashSet::new();
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    loop {
        if pages == max_pages {
            return Err(McpError::PageCap { pages });
        }
        let page = fetch(cursor.clone(), max_tools.saturating_sub(tools.len())).await?;
        pages += 1;
        tools.extend(page.tools);
        if tools.len() > max_tools {
            return Err(McpError::ToolCap { limit: max_tools });
        }
        match page.next_cursor.as_ref() {
            None | Some(Value::Null) => return Ok(tools),
            Some(Value::String(c)) if c.is_empty() => return Ok(tools),
            Some(Value::String(c)) => {
                if !followed.insert(c.clone()) {
                    return Err(McpError::CursorCycle { cursor: c.clone() });
                }
                cursor = Some(c.clone());
            }
            Some(other) => {
                return Err(McpError::Protocol { detail: format!("tools/list nextCursor is not a string: {other}") });
            }
        }
    }
}

fn parse_page(page: &Value) -> Result<Vec<Tool>, McpError> {
    let Some(items) = page.get("tools").and_then(Value::as_array) else {
        return Err(McpError::Protocol { detail: "tools/list result has no tools array".into() });
    };
    items
        .iter()
        .map(|raw| {
            let Some(name) = raw.get("name").and_then(Value::as_str) else {
                return Err(McpError::Protocol { detail: format!("tools/list item without a string name: {raw}") });
            };
            Ok(Tool {
                name: name.to_string(),
                description: raw.get("description").and_then(Value::as_str).map(str::to_string),
                input_schema: Schema::from(raw.get("inputSchema").unwrap_or(&Value::Null)),
            })
        })
        .collect()
}

pub(crate) fn parse_tool_result(raw: Value) -> Result<ToolResult, McpError> {
    if !raw.is_object() {
        return Err(McpError::Protocol { detail: format!("tools/call result is not an object: {raw}") });
    }
    let text = raw
        .get("content")
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter(|i| i.get("type").and_then(Value::as_str) == Some("text"))
                .filter_map(|i| i.get("text").and_then(Value::as_str).map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    Ok(ToolResult {
        is_error: raw.get("isError").and_then(Value::as_bool).unwrap_or(false),
        text,
        structured: raw.get("structuredContent").cloned(),
        raw,
    })
}

/// The tools of a `tools` array as a client application stored it (Flowise keeps what
/// it discovered), read like a `tools/list` page.
pub fn parse_tools(tools: &Value) -> Result<Vec<Tool>, McpError> {
    Ok(Page::from_result(serde_json::json!({ "tools": tools }))?.tools)
}

/// Hex SHA-256 of the served tool schemas, independent of server key order.
///
/// Hashes [`canonical_json`] of the object `{ <name>: { "description": <description or
/// null>, "inputSchema": <inputSchema or null> } }`. This equals Python's
/// `hashlib.sha256(json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()).hexdigest()`
/// over the same object, so a pin can be computed with a one-liner. Tool order does not
/// matter; if a name is served twice the later entry wins.
///
/// Note: the platform's `tools.schema_sha256` in `meta/mcp.yml` hashes the adapter's
/// contract file (`input_schema`, `method`, `path`), not what the server serves, so it
/// is not comparable with this value.
pub fn schema_hash(tools: &[Tool]) -> String {
    let by_name: BTreeMap<&str, &Tool> = tools.iter().map(|t| (t.name.as_str(), t)).collect();
    let mut out = String::from("{");
    for (i, (name, t)) in by_name.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        write_string(name, &mut out);
        out.push_str(":{\"description\":");
        match &t.description {
            Some(d) => write_string(d, &mut out),
            None => out.push_str("null"),
        }
        out.push_str(",\"inputSchema\":");
        out.push_str(t.input_schema.as_str());
        out.push('}');
    }
    out.push('}');
    hex::encode(Sha256::digest(out.as_bytes()))
}

/// A tool's `inputSchema` as [`canonical_json`] text: what the schema hash needs, at
/// the size of the text rather than of a tree of small objects.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(transparent)]
pub struct Schema(String);

impl Schema {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Default for Schema {
    /// An absent schema hashes as `null`.
    fn default() -> Self {
        Schema("null".into())
    }
}

impl From<&Value> for Schema {
    fn from(v: &Value) -> Self {
        Schema(canonical_json(v))
    }
}

impl From<Value> for Schema {
    fn from(v: Value) -> Self {
        Schema(canonical_json(&v))
    }
}

/// Reads any JSON value straight into canonical text (keys sorted, later duplicates win,
/// as a parsed object would have them).
impl<'de> serde::Deserialize<'de> for Schema {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(Canonical).map(Schema)
    }
}

struct Canonical;

impl<'de> serde::de::Visitor<'de> for Canonical {
    type Value = String;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<String, E> {
        Ok(v.to_string())
    }

    fn visit_i64<E>(self, v: i64) -> Result<String, E> {
        Ok(v.to_string())
    }

    fn visit_u64<E>(self, v: u64) -> Result<String, E> {
        Ok(v.to_string())
    }

    fn visit_f64<E>(self, v: f64) -> Result<String, E> {
        Ok(serde_json::Number::from_f64(v).map_or_else(|| "null".to_string(), |n| n.to_string()))
    }

    fn visit_str<E>(self, v: &str) -> Result<String, E> {
        let mut out = String::with_capacity(v.len() + 2);
        write_string(v, &mut out);
        Ok(out)
    }

    fn visit_unit<E>(self) -> Result<String, E> {
        Ok("null".into())
    }

    fn visit_none<E>(self) -> Result<String, E> {
        Ok("null".into())
    }

    fn visit_some<D: serde::Deserializer<'de>>(self, d: D) -> Result<String, D::Error> {
        d.deserialize_any(Canonical)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<String, A::Error> {
        let mut out = String::from("[");
        let mut first = true;
        while let Some(Schema(item)) = seq.next_element::<Schema>()? {
            if !first {
                out.push(',');
            }
            first = false;
            out.push_str(&item);
        }
        out.push(']');
        Ok(out)
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<String, A::Error> {
        let mut entries: BTreeMap<String, String> = BTreeMap::new();
        while let Some((key, Schema(value))) = map.next_entry::<String, Schema>()? {
            entries.insert(key, value);
        }
        let mut out = String::from("{");
        for (i, (key, value)) in entries.into_iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            write_string(&key, &mut out);
            out.push(':');
            out.push_str(&value);
        }
        out.push('}');
        Ok(out)
    }
}

/// Canonical JSON: object keys sorted (by code point) at every depth, separators `,`
/// and `:` with no whitespace, and every character outside printable ASCII escaped as
/// `\uXXXX` (lowercase hex, surrogate pairs above U+FFFF), i.e. Python's
/// `json.dumps(v, sort_keys=True, separators=(",", ":"))`. Numbers print as serde_json
/// prints them, which matches Python for integers and for most floats (not for
/// exponent forms such as `1e-07`).
pub fn canonical_json(v: &Value) -> String {
    let mut out = String::new();
    write_canonical(v, &mut out);
    out
}

fn write_canonical(v: &Value, out: &mut String) {
    match v {
        Value::Null | Value::Bool(_) | Value::Number(_) => out.push_str(&v.to_string()),
        Value::String(s) => write_string(s, out),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_string(k, out);
                out.push(':');
                write_canonical(&m[k], out);
            }
            out.push('}');
        }
    }
}

fn write_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            ' '..='~' => out.push(c),
            _ => {
                let mut buf = [0u16; 2];
                for unit in c.encode_utf16(&mut buf) {
                    let _ = write!(out, "\\u{unit:04x}");
                }
            }
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::collections::HashMap;

    fn tool(name: &str, description: Option<&str>, schema: Value) -> Tool {
        Tool { name: name.into(), description: description.map(str::to_string), input_schema: schema.into() }
    }

    fn page(names: &[&str], next: Option<&str>) -> Value {
        let tools: Vec<Value> = names.iter().map(|n| json!({"name": n, "inputSchema": {"type": "object"}})).collect();
        match next {
            Some(c) => json!({"tools": tools, "nextCursor": c}),
            None => json!({"tools": tools}),
        }
    }

    /// Serves pages from a map keyed by the cursor ("" = first page) and counts fetches.
    async fn run(pages: HashMap<&str, Value>, max_pages: usize) -> (Result<Vec<Tool>, McpError>, usize) {
        let mut fetches = 0;
        let result = paginate(max_pages, 1000, |cursor, _| {
            fetches += 1;
            let page = pages.get(cursor.as_deref().unwrap_or("")).cloned();
            async move { page.ok_or(McpError::Protocol { detail: "unknown cursor".into() }).and_then(Page::from_result) }
        })
        .await;
        (result, fetches)
    }

    #[tokio::test]
    async fn follows_next_cursor_to_the_end() {
        let pages = HashMap::from([
            ("", page(&["a", "b"], Some("p2"))),
            ("p2", page(&["c"], Some(""))),
            ("x", page(&[], None)),
        ]);
        let (tools, fetches) = run(pages, 20).await;
        let names: Vec<String> = tools.unwrap().into_iter().map(|t| t.name).collect();
        assert_eq!(names, ["a", "b", "c"]);
        assert_eq!(fetches, 2);
    }

    #[tokio::test]
    async fn a_cursor_seen_twice_is_a_cycle() {
        let pages = HashMap::from([
            ("", page(&["a"], Some("p2"))),
            ("p2", page(&["b"], Some("p3"))),
            ("p3", page(&["c"], Some("p2"))),
        ]);
        let (result, fetches) = run(pages, 20).await;
        assert!(matches!(result, Err(McpError::CursorCycle { cursor }) if cursor == "p2"));
        assert_eq!(fetches, 3);
    }

    #[tokio::test]
    async fn endless_fresh_cursors_hit_the_page_cap() {
        let mut fetches = 0;
        let result = paginate(5, 1000, |cursor, _| {
            fetches += 1;
            let n: u64 = cursor.map(|c| c.parse().unwrap()).unwrap_or(0);
            async move { Page::from_result(page(&["t"], Some(&(n + 1).to_string()))) }
        })
        .await;
        assert!(matches!(result, Err(McpError::PageCap { pages: 5 })));
        assert_eq!(fetches, 5);
    }

    #[tokio::test]
    async fn too_many_tools_hit_the_tool_cap() {
        let result = paginate(20, 2, |_, _| async { Page::from_result(page(&["a", "b", "c"], None)) }).await;
        assert!(matches!(result, Err(McpError::ToolCap { limit: 2 })));
    }

    #[tokio::test]
    async fn exactly_max_pages_is_fine() {
        let pages = HashMap::from([("", page(&["a"], Some("p2"))), ("p2", page(&["b"], None))]);
        assert_eq!(run(pages, 2).await.0.unwrap().len(), 2);
    }

    #[tokio::test]
    async fn bad_pages_are_protocol_errors() {
        let (r, _) = run(HashMap::from([("", json!({"items": []}))]), 20).await;
        assert!(matches!(r, Err(McpError::Protocol { .. })));
        let (r, _) = run(HashMap::from([("", json!({"tools": [{"description": "no name"}]}))]), 20).await;
        assert!(matches!(r, Err(McpError::Protocol { .. })));
        let (r, _) = run(HashMap::from([("", json!({"tools": [], "nextCursor": 3}))]), 20).await;
        assert!(matches!(r, Err(McpError::Protocol { .. })));
    }

    #[test]
    fn schemas_read_straight_to_canonical_text_equal_the_tree_path() {
        for text in [
            r#"{"b":[1,{"z":null,"a":true}],"a":"é\n\"😀\u007f","c":-3,"d":1.5,"e":12345678901234567890}"#,
            r#"{"k":1,"k":2}"#,
            r#"[]"#,
            r#""plain""#,
            r#"{"properties":{"p2":{"type":"integer"},"p10":{"type":"string","enum":["x","y"]}}}"#,
        ] {
            let tree: Value = serde_json::from_str(text).unwrap();
            let direct: Schema = serde_json::from_str(text).unwrap();
            assert_eq!(direct.as_str(), canonical_json(&tree), "{text}");
        }
    }

    #[test]
    fn pages_parse_typed_or_through_the_tree_alike() {
        let text = br#"{"jsonrpc":"2.0","id":7,"result":{"tools":[{"name":"add","description":"d","inputSchema":{"type":"object","a":1},"annotations":{}},{"name":"x"}],"nextCursor":"c"}}"#;
        let typed = Page::from_reply(text, 7, usize::MAX).unwrap();
        let tree = Page::from_result(serde_json::from_slice::<Value>(text).unwrap()["result"].clone()).unwrap();
        assert_eq!(schema_hash(&typed.tools), schema_hash(&tree.tools));
        assert_eq!(typed.next_cursor, Some(json!("c")));
        assert_eq!(typed.tools[1].input_schema.as_str(), "null");
        // A batch takes the general path; a nameless item is still an error there.
        let batch = br#"[{"jsonrpc":"2.0","method":"n"},{"jsonrpc":"2.0","id":7,"result":{"tools":[{"name":"add"}]}}]"#;
        assert_eq!(Page::from_reply(batch, 7, usize::MAX).unwrap().tools[0].name, "add");
        let nameless = br#"{"jsonrpc":"2.0","id":7,"result":{"tools":[{"description":"x"}]}}"#;
        assert!(matches!(Page::from_reply(nameless, 7, usize::MAX), Err(McpError::Protocol { .. })));
    }

    #[tokio::test]
    async fn a_page_past_the_cap_is_read_only_one_tool_past_it() {
        let names: Vec<String> = (0..50).map(|i| format!(r#"{{"name":"t{i}"}}"#)).collect();
        let text = format!(r#"{{"jsonrpc":"2.0","id":7,"result":{{"tools":[{}]}}}}"#, names.join(","));
        let page = Page::from_reply(text.as_bytes(), 7, 3).unwrap();
        let read: Vec<&str> = page.tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(read, ["t0", "t1", "t2", "t3"]);
        assert_eq!(Page::from_reply(text.as_bytes(), 7, 50).unwrap().tools.len(), 50);
        // Across pages the room shrinks: 30 tools, then a page of 50 with room for 10.
        let first =
            format!(r#"{{"jsonrpc":"2.0","id":7,"result":{{"tools":[{}],"nextCursor":"p2"}}}}"#, names[..30].join(","));
        let mut rooms = Vec::new();
        let result = paginate(20, 40, |cursor, room| {
            rooms.push(room);
            let text = if cursor.is_none() { first.clone() } else { text.clone() };
            async move { Page::from_reply(text.as_bytes(), 7, room) }
        })
        .await;
        assert!(matches!(result, Err(McpError::ToolCap { limit: 40 })));
        assert_eq!(rooms, [40, 10]);
    }

    #[test]
    fn canonical_json_sorts_compacts_and_escapes_like_python() {
        let v: Value = serde_json::from_str(r#"{ "b": [1, {"z": null, "a": true}], "a": "é\n\"😀\u007f" }"#).unwrap();
        assert_eq!(canonical_json(&v), r#"{"a":"\u00e9\n\"\ud83d\ude00\u007f","b":[1,{"a":true,"z":null}]}"#);
    }

    #[test]
    fn schema_hash_known_value_matches_python() {
        // python3: json.dumps(obj, sort_keys=True, separators=(",", ":")) then sha256
        let tools = [
            tool(
                "b_tool",
                Some("Zweite é"),
                json!({"type":"object","required":["x"],"properties":{"x":{"type":"integer","minimum":1}}}),
            ),
            tool("a_tool", None, json!({"type":"object"})),
        ];
        assert_eq!(schema_hash(&tools), "efbf1de4d770dbf75347c937eb7eb71ca1a0f6753af2b08022e14d67f02ef651");
    }

    #[test]
    fn schema_hash_ignores_key_and_tool_order() {
        let a: Value = serde_json::from_str(
            r#"{"type":"object","properties":{"q":{"type":"string","minLength":1}},"required":["q"]}"#,
        )
        .unwrap();
        let b: Value = serde_json::from_str(
            r#"{"required":["q"],"properties":{"q":{"minLength":1,"type":"string"}},"type":"object"}"#,
        )
        .unwrap();
        let one = [tool("s", Some("search"), a), tool("t", None, json!({}))];
        let two = [tool("t", None, json!({})), tool("s", Some("search"), b)];
        assert_eq!(schema_hash(&one), schema_hash(&two));
        let changed = [tool("t", None, json!({})), tool("s", Some("search!"), json!({}))];
        assert_ne!(schema_hash(&one), schema_hash(&changed));
    }

    #[test]
    fn tool_result_collects_text_and_structured_content() {
        let r = parse_tool_result(json!({"content":[{"type":"text","text":"5"},{"type":"image","data":""}],"structuredContent":{"result":5},"isError":false})).unwrap();
        assert!(!r.is_error);
        assert_eq!(r.text, ["5"]);
        assert_eq!(r.structured, Some(json!({"result":5})));
        assert!(parse_tool_result(json!({"content":[],"isError":true})).unwrap().is_error);
        assert!(parse_tool_result(json!("x")).is_err());
    }
}
