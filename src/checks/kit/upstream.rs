//! What a provider's upstream app saw. An adapter runs a tool by sending its app the
//! operation the tool stands for, so a call whose arguments carry a nonce leaves that
//! nonce in the app's own log when it ran, and nowhere when it did not. An allowed call
//! with a nonce of its own is the control: only when the app logged that one does the
//! absence of another prove anything. Proof by what the app received, never by what the
//! gateway said.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{Map, Value};

use crate::deployment::Deployment;
use crate::engine::logs::LogOf;

/// The last lines of each app container's log searched for nonces.
const LOG_TAIL: usize = 4000;
const LOG_MAX_BYTES: u64 = 8 << 20;
/// An app may write its log a moment after it answered: the log is read again, this long
/// apart and this often, until the control's nonce shows.
const LOG_AGAIN_AFTER: Duration = Duration::from_millis(400);
const LOG_AGAIN: usize = 5;

/// A value no log holds by chance, in characters every URL carries as they are.
pub fn nonce() -> String {
    format!("cordon-nonce-{:016x}", rand::random::<u64>())
}

/// Arguments for a call of a tool whose input schema is `schema`: every free string
/// property (no `enum`) holds `nonce`. `None` when there is none, or when a required
/// property is anything else: a number or a choice could name something that exists
/// (item 1, `visibility: public`), and a denied call must touch nothing if it runs.
pub fn nonce_arguments(schema: &Value, nonce: &str) -> Option<Value> {
    let properties = schema.get("properties").and_then(Value::as_object)?;
    let required: Vec<&str> =
        schema.get("required").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect();
    let free = |p: &Value| p.get("type").and_then(Value::as_str) == Some("string") && p.get("enum").is_none();
    if required.iter().any(|r| !properties.get(*r).is_some_and(free)) {
        return None;
    }
    let out: Map<String, Value> = properties
        .iter()
        .filter(|(_, p)| free(p))
        .map(|(name, _)| (name.clone(), Value::String(nonce.to_string())))
        .collect();
    (!out.is_empty()).then_some(Value::Object(out))
}

/// A string argument of `schema` is a parameter of the operation's `path` template
/// (`/repos/{repo}`): its nonce travels in the request line every access log shows.
pub fn carried_in_path(schema: &Value, path: &str) -> bool {
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else { return false };
    properties.iter().any(|(name, p)| {
        p.get("type").and_then(Value::as_str) == Some("string")
            && p.get("enum").is_none()
            && path.contains(&format!("{{{name}}}"))
    })
}

/// What the app's containers logged of the nonces sent.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct UpstreamLog {
    /// The app's compose service (or swarm service).
    pub app: String,
    /// The containers whose logs were read.
    pub containers: Vec<String>,
    /// nonce → the container whose log holds it.
    pub seen: BTreeMap<String, String>,
    /// Containers whose log could not be read, each with why.
    pub unread: Vec<String>,
    /// The tools whose nonce travels in the request line (a path parameter): only for
    /// these does a nonce missing from a log that holds the control's prove the call was
    /// never sent (an app logs its request lines, rarely its bodies).
    pub in_path: std::collections::BTreeSet<String>,
}

impl UpstreamLog {
    pub fn holds(&self, nonce: &str) -> Option<&str> {
        self.seen.get(nonce).map(String::as_str)
    }
}

/// Reads the logs of every running container of `app` for `nonces`, again while a
/// `controls` nonce is not there yet (an app writes its log after it answers).
pub async fn read_app_logs(
    deployment: &Deployment,
    app: &str,
    nonces: &[String],
    controls: &[String],
    in_path: std::collections::BTreeSet<String>,
) -> UpstreamLog {
    let targets = deployment.topology().running(app).to_vec();
    let mut log = UpstreamLog { app: app.to_string(), in_path, ..UpstreamLog::default() };
    let nonces: Vec<&str> = nonces.iter().chain(controls).map(String::as_str).collect();
    for round in 0..=LOG_AGAIN {
        log.containers.clear();
        log.unread.clear();
        for target in &targets {
            let engine = match deployment.engine_of(target) {
                Ok(e) => e,
                Err(why) => {
                    log.unread.push(format!("{}: {why}", target.name));
                    continue;
                }
            };
            let read = engine
                .log_lines(LogOf::Container(&target.id), LOG_TAIL, LOG_MAX_BYTES, |_, _, text| {
                    for nonce in nonces.iter().filter(|n| text.contains(**n)) {
                        log.seen.entry(nonce.to_string()).or_insert_with(|| target.name.clone());
                    }
                })
                .await;
            match read {
                // The cap drops the newest lines: a nonce may be among them.
                Ok(r) if r.cut => log.unread.push(format!(
                    "{}: its last {LOG_TAIL} lines are over {} MiB, the newest not read",
                    target.name,
                    LOG_MAX_BYTES >> 20
                )),
                Ok(_) => log.containers.push(target.name.clone()),
                Err(e) => log.unread.push(format!("{}: {e}", target.name)),
            }
        }
        if controls.iter().all(|c| log.holds(c).is_some()) || round == LOG_AGAIN {
            break;
        }
        tokio::time::sleep(LOG_AGAIN_AFTER).await;
    }
    log
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn free_strings_carry_the_nonce_and_nothing_else_is_sent() {
        let schema = json!({
            "type": "object",
            "properties": {
                "repo": {"type": "string"},
                "owner": {"type": "string"},
                "force": {"type": "boolean"},
                "mode": {"type": "string", "enum": ["soft", "hard"]}
            },
            "required": ["repo"]
        });
        assert_eq!(nonce_arguments(&schema, "n1"), Some(json!({"repo": "n1", "owner": "n1"})));
    }

    #[test]
    fn a_required_number_or_choice_could_name_something_that_exists() {
        for required in
            [json!({"type": "integer"}), json!({"type": "string", "enum": ["public"]}), json!({"type": "boolean"})]
        {
            let schema = json!({"properties": {"repo": {"type": "string"}, "x": required}, "required": ["repo", "x"]});
            assert_eq!(nonce_arguments(&schema, "n1"), None, "{schema}");
        }
    }

    #[test]
    fn a_nonce_in_the_path_is_in_every_access_log() {
        let schema =
            json!({"properties": {"repo": {"type": "string"}, "body": {"type": "string"}, "n": {"type": "integer"}}});
        assert!(carried_in_path(&schema, "/api/v1/repos/{repo}"));
        assert!(!carried_in_path(&schema, "/api/v1/issues"), "a body is not in the request line");
        assert!(!carried_in_path(&schema, "/api/v1/items/{n}"), "a number carries no nonce");
    }

    #[test]
    fn no_free_string_carries_no_nonce() {
        for schema in [
            json!({"type": "object"}),
            json!({"type": "object", "properties": {"id": {"type": "integer"}}}),
            json!({"type": "object", "properties": {"mode": {"type": "string", "enum": ["a"]}}}),
        ] {
            assert_eq!(nonce_arguments(&schema, "n1"), None, "{schema}");
        }
    }
}
