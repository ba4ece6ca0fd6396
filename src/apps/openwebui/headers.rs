//! What Open WebUI 0.12.4 sends an MCP server to authenticate, read off a connection the way
//! its `build_tool_server_headers` builds it: `auth_type: bearer` sends
//! `Authorization: Bearer <key, trimmed>` (nothing for an empty key); `session`,
//! `system_oauth` and `oauth_2.1*` send a token of each user instead; then every custom
//! header of `headers` is sent as given, and one whose name is `authorization` in any case
//! *replaces* that Authorization. `headers` counts only as a JSON object: anything else is
//! ignored. (Cookies are never forwarded to an MCP server, `forward_cookies` or not.)
//! Its HTTP client (httpx2) turns userinfo in the URL into `Authorization: Basic`, which
//! replaces both (unless `auth_type: system_oauth` brings its own auth); a credential in
//! the URL's query goes wherever the URL is logged.
//!
//! A header's value is compared with every scenario credential and dropped: what is kept is
//! its scheme word and which credential (if any) it carries, never the value.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::secret::Secret;

/// A connection's key, compared with every credential of the scenario, never kept.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KeySeen {
    None,
    /// Equal to this scenario credential (its id).
    Credential(String),
    /// A value that is none of the scenario's credentials.
    Unknown,
}

impl KeySeen {
    /// Open WebUI trims a key before it sends it, so a key is compared trimmed.
    pub fn of(key: &str, credentials: &BTreeMap<String, Secret>) -> KeySeen {
        let key = key.trim();
        if key.is_empty() {
            return KeySeen::None;
        }
        match credentials.iter().find(|(_, s)| s.expose() == key) {
            Some((id, _)) => KeySeen::Credential(id.clone()),
            None => KeySeen::Unknown,
        }
    }

    pub fn describe(&self) -> String {
        match self {
            KeySeen::None => "no key".into(),
            KeySeen::Credential(id) => format!("the key of credential `{id}`"),
            KeySeen::Unknown => "a key that is none of the scenario's credentials".into(),
        }
    }
}

/// Shorter credentials are not looked for inside longer values (too easy to match by chance).
const MIN_CONTAINED: usize = 8;

/// Name parts that make a header a carrier of credentials whatever its value.
const CREDENTIAL_NAME_PARTS: [&str; 8] =
    ["auth", "token", "key", "secret", "cookie", "session", "password", "credential"];

/// One custom header of a connection.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HeaderSeen {
    /// As written in the connection.
    pub name: String,
    /// The value's first word when it is followed by another (`Bearer`, `Basic`, `Token`).
    pub scheme: Option<String>,
    /// Which scenario credential the value carries: as a whole, after the scheme word, inside
    /// a `Basic` pair, or anywhere in it.
    pub value: KeySeen,
}

impl HeaderSeen {
    pub fn of(name: &str, value: &str, credentials: &BTreeMap<String, Secret>) -> HeaderSeen {
        let (scheme, token) = split_scheme(value.trim());
        let value = carried(value.trim(), scheme.as_deref(), token, credentials);
        HeaderSeen { name: name.to_string(), scheme, value }
    }

    /// Open WebUI sends it instead of the key's Authorization.
    pub fn overrides_key(&self) -> bool {
        self.name.eq_ignore_ascii_case("authorization")
    }

    /// It carries a credential, or its name says it is meant to.
    pub fn bears_credential(&self) -> bool {
        let lower = self.name.to_ascii_lowercase();
        matches!(self.value, KeySeen::Credential(_)) || CREDENTIAL_NAME_PARTS.iter().any(|p| lower.contains(p))
    }

    /// `` `authorization`: Bearer with the key of credential `files-token` ``.
    pub fn describe(&self) -> String {
        match &self.scheme {
            Some(s) => format!("`{}`: {s} with {}", self.name, self.value.describe()),
            None => format!("`{}`: {}", self.name, self.value.describe()),
        }
    }
}

fn split_scheme(value: &str) -> (Option<String>, &str) {
    match value.split_once(char::is_whitespace) {
        Some((word, rest)) if !rest.trim().is_empty() && word.chars().all(|c| c.is_ascii_alphabetic()) => {
            (Some(word.to_string()), rest.trim())
        }
        _ => (None, value),
    }
}

fn carried(whole: &str, scheme: Option<&str>, token: &str, credentials: &BTreeMap<String, Secret>) -> KeySeen {
    if whole.is_empty() {
        return KeySeen::None;
    }
    let equal = |candidate: &str| credentials.iter().find(|(_, s)| s.expose() == candidate).map(|(id, _)| id.clone());
    let basic = || {
        let pair = String::from_utf8(crate::text::decode_base64(token)?).ok()?;
        let password = pair.split_once(':').map_or(pair.as_str(), |(_, p)| p);
        equal(password).or_else(|| equal(&pair))
    };
    let inside = || {
        credentials
            .iter()
            .find(|(_, s)| s.expose().len() >= MIN_CONTAINED && whole.contains(s.expose()))
            .map(|(id, _)| id.clone())
    };
    let found = equal(token)
        .or_else(|| equal(whole))
        .or_else(|| scheme.filter(|s| s.eq_ignore_ascii_case("basic")).and_then(|_| basic()))
        .or_else(inside);
    found.map_or(KeySeen::Unknown, KeySeen::Credential)
}

/// The custom headers of a connection's `headers`, or why Open WebUI ignores them.
pub fn custom_headers(v: Option<&Value>, credentials: &BTreeMap<String, Secret>) -> (Vec<HeaderSeen>, Option<String>) {
    match v {
        None | Some(Value::Null) => (vec![], None),
        Some(Value::Object(map)) => {
            let headers = map
                .iter()
                .map(|(name, value)| {
                    // Open WebUI sends `str(value)` for anything that is not a string.
                    let text = value.as_str().map_or_else(|| value.to_string(), str::to_string);
                    HeaderSeen::of(name, &text, credentials)
                })
                .collect();
            (headers, None)
        }
        Some(other) => {
            let kind = match other {
                Value::String(_) => "a string",
                Value::Array(_) => "a list",
                _ => "not an object",
            };
            (vec![], Some(format!("`headers` is {kind}, which Open WebUI ignores")))
        }
    }
}

/// Where an Authorization Open WebUI sends comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AuthorizationFrom {
    /// The connection's `key`, as `Bearer <key>`.
    Key(KeySeen),
    /// A token of each user (`auth_type` session, system_oauth, oauth_2.1…).
    UserToken(String),
    /// A custom header that replaces the key's.
    Header(HeaderSeen),
    /// Userinfo in the URL, sent as `Basic` by the HTTP client, replacing the rest.
    UrlUserinfo(HeaderSeen),
}

/// A URL with its credentials taken out: userinfo (as a `Basic` pair) and every query
/// parameter that carries a scenario credential or whose name says it is one. The URL
/// kept has no userinfo and `…` for those values.
pub fn url_credentials(
    url: &str,
    credentials: &BTreeMap<String, Secret>,
) -> (String, Option<HeaderSeen>, Vec<HeaderSeen>) {
    let Ok(mut parsed) = url::Url::parse(url) else { return (url.to_string(), None, vec![]) };
    let userinfo = (!parsed.username().is_empty() || parsed.password().is_some()).then(|| {
        let user = percent_decoded(parsed.username());
        let password = parsed.password().map(percent_decoded).unwrap_or_default();
        let pair = format!("{user}:{password}");
        let value = match carried(&password, None, &password, credentials) {
            KeySeen::Credential(id) => KeySeen::Credential(id),
            _ => carried(&pair, None, &pair, credentials),
        };
        HeaderSeen { name: "userinfo".into(), scheme: Some("Basic".into()), value }
    });
    let _ = parsed.set_username("");
    let _ = parsed.set_password(None);
    let mut query = Vec::new();
    let pairs: Vec<(String, String)> = parsed.query_pairs().into_owned().collect();
    if !pairs.is_empty() {
        let mut kept = url::form_urlencoded::Serializer::new(String::new());
        for (name, value) in &pairs {
            let seen = HeaderSeen::of(name, value, credentials);
            if seen.bears_credential() && seen.value != KeySeen::None {
                kept.append_pair(name, "…");
                query.push(seen);
            } else {
                kept.append_pair(name, value);
            }
        }
        parsed.set_query(Some(&kept.finish()));
    }
    let text = if userinfo.is_none() && query.is_empty() { url.to_string() } else { parsed.to_string() };
    (text, userinfo, query)
}

fn percent_decoded(s: &str) -> String {
    url::form_urlencoded::parse(format!("x={}", s.replace('+', "%2B")).as_bytes())
        .next()
        .map(|(_, v)| v.into_owned())
        .unwrap_or_default()
}

/// The Authorization headers Open WebUI may send for a connection (more than one only
/// when several custom headers spell `authorization` differently: which one wins depends
/// on their order, so each is judged), given its `auth_type`, `key` and custom headers.
pub fn sent_authorization(
    auth_type: &str,
    key: &KeySeen,
    headers: &[HeaderSeen],
    userinfo: Option<&HeaderSeen>,
) -> Vec<AuthorizationFrom> {
    if let Some(u) = userinfo.filter(|_| auth_type != "system_oauth") {
        return vec![AuthorizationFrom::UrlUserinfo(u.clone())];
    }
    let overriding: Vec<AuthorizationFrom> =
        headers.iter().filter(|h| h.overrides_key()).cloned().map(AuthorizationFrom::Header).collect();
    if !overriding.is_empty() {
        return overriding;
    }
    match auth_type {
        "bearer" if *key != KeySeen::None => vec![AuthorizationFrom::Key(key.clone())],
        "bearer" | "none" => vec![],
        other => vec![AuthorizationFrom::UserToken(other.to_string())],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::secret::Redactor;

    fn credentials() -> BTreeMap<String, Secret> {
        let r = Redactor::new();
        BTreeMap::from([
            ("files-token".to_string(), r.register("files-token", "filesSecretValue0123".into())),
            ("native-token".to_string(), r.register("native-token", "nativeSecretValue0123".into())),
        ])
    }

    #[test]
    fn a_value_is_told_by_the_credential_it_carries() {
        let c = credentials();
        let files = KeySeen::Credential("files-token".into());
        // base64 of `user:filesSecretValue0123`
        let basic = "Basic dXNlcjpmaWxlc1NlY3JldFZhbHVlMDEyMw==";
        let cases: Vec<(&str, Option<&str>, KeySeen)> = vec![
            ("Bearer filesSecretValue0123", Some("Bearer"), files.clone()),
            ("bearer   filesSecretValue0123 ", Some("bearer"), files.clone()),
            ("filesSecretValue0123", None, files.clone()),
            ("Token filesSecretValue0123", Some("Token"), files.clone()),
            (basic, Some("Basic"), files.clone()),
            ("prefix-filesSecretValue0123-suffix", None, files.clone()),
            ("Bearer something-else", Some("Bearer"), KeySeen::Unknown),
            ("  ", None, KeySeen::None),
        ];
        for (value, scheme, expected) in cases {
            let h = HeaderSeen::of("Authorization", value, &c);
            assert_eq!((h.scheme.as_deref(), &h.value), (scheme, &expected), "{value:?}");
            assert!(!format!("{h:?} {}", h.describe()).contains("SecretValue"), "{value:?}");
        }
    }

    #[test]
    fn names_that_bear_credentials() {
        let c = credentials();
        for name in ["Authorization", "authorization", "X-Api-Key", "x-auth-token", "Cookie", "Proxy-Authorization"] {
            assert!(HeaderSeen::of(name, "whatever", &c).bears_credential(), "{name}");
        }
        assert!(!HeaderSeen::of("X-Tenant", "acme", &c).bears_credential());
        assert!(HeaderSeen::of("X-Tenant", "nativeSecretValue0123", &c).bears_credential(), "by its value");
    }

    #[test]
    fn a_custom_authorization_in_any_case_replaces_the_key() {
        let c = credentials();
        let native = KeySeen::Credential("native-token".into());
        let (headers, ignored) = custom_headers(
            Some(&serde_json::json!({"authorization": "Bearer filesSecretValue0123", "X-Trace": "1"})),
            &c,
        );
        assert!(ignored.is_none());
        let sent = sent_authorization("bearer", &native, &headers, None);
        assert_eq!(sent.len(), 1);
        assert!(
            matches!(&sent[0], AuthorizationFrom::Header(h) if h.value == KeySeen::Credential("files-token".into()))
        );
        assert_eq!(sent_authorization("bearer", &native, &[], None), vec![AuthorizationFrom::Key(native.clone())]);
        assert!(sent_authorization("bearer", &KeySeen::None, &[], None).is_empty(), "an empty key sends nothing");
        assert!(sent_authorization("none", &native, &[], None).is_empty(), "auth_type none sends no key");
        assert_eq!(
            sent_authorization("session", &native, &[], None),
            vec![AuthorizationFrom::UserToken("session".into())]
        );
        let (two, _) =
            custom_headers(Some(&serde_json::json!({"Authorization": "Bearer a", "AUTHORIZATION": "Bearer b"})), &c);
        assert_eq!(sent_authorization("bearer", &native, &two, None).len(), 2, "each spelling is judged");
    }

    #[test]
    fn credentials_in_the_url_are_taken_out_and_told() {
        let c = credentials();
        let (url, userinfo, query) =
            url_credentials("http://u:filesSecretValue0123@native:8000/mcp?token=nativeSecretValue0123&x=1", &c);
        assert_eq!(url, "http://native:8000/mcp?token=%E2%80%A6&x=1");
        let userinfo = userinfo.expect("userinfo");
        assert_eq!(
            (userinfo.scheme.as_deref(), &userinfo.value),
            (Some("Basic"), &KeySeen::Credential("files-token".into()))
        );
        assert_eq!(
            query,
            vec![HeaderSeen { name: "token".into(), scheme: None, value: KeySeen::Credential("native-token".into()) }]
        );
        let native = KeySeen::Credential("native-token".into());
        // httpx2 sends userinfo as Basic, in place of the key and any custom header.
        let sent = sent_authorization("bearer", &native, &[], Some(&userinfo));
        assert!(matches!(&sent[..], [AuthorizationFrom::UrlUserinfo(_)]));
        assert_eq!(sent_authorization("system_oauth", &native, &[], Some(&userinfo)).len(), 1);
        let (same, none, empty) = url_credentials("http://native:8000/mcp?page=2", &c);
        assert_eq!((same.as_str(), none, empty.len()), ("http://native:8000/mcp?page=2", None, 0));
    }

    #[test]
    fn headers_that_are_not_an_object_are_ignored_as_open_webui_does() {
        let c = credentials();
        let (h, why) = custom_headers(Some(&serde_json::json!("{\"Authorization\": \"Bearer x\"}")), &c);
        assert!(h.is_empty());
        assert_eq!(why.as_deref(), Some("`headers` is a string, which Open WebUI ignores"));
        let (h, why) = custom_headers(Some(&serde_json::json!({"X-Count": 5})), &c);
        assert_eq!((h[0].value.clone(), why), (KeySeen::Unknown, None));
    }
}
