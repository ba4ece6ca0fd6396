//! The login form an identity provider shows a browser (Keycloak's `kc-form-login`, or any
//! HTML form with a password field), read well enough to fill in and send: its action,
//! its hidden fields, the user-name and password fields. Pure, tested on pages.

/// One login form.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoginForm {
    /// Where it posts (relative to the page), entities decoded.
    pub action: String,
    /// Hidden and pre-filled fields, sent as they are.
    pub fields: Vec<(String, String)>,
    pub user_field: String,
    pub password_field: String,
}

impl LoginForm {
    /// The form body with the user name and password filled in.
    pub fn filled(&self, user: &str, password: &str) -> String {
        let mut out = url::form_urlencoded::Serializer::new(String::new());
        for (name, value) in &self.fields {
            out.append_pair(name, value);
        }
        out.append_pair(&self.user_field, user);
        out.append_pair(&self.password_field, password);
        out.finish()
    }
}

/// The first form of `page` with a password field.
pub fn login_form(page: &str) -> Option<LoginForm> {
    let lower = page.to_ascii_lowercase();
    let mut from = 0;
    while let Some(start) = lower[from..].find("<form").map(|i| i + from) {
        let end = lower[start..].find("</form").map_or(page.len(), |i| i + start);
        let open_end = lower[start..].find('>').map_or(end, |i| i + start);
        if let Some(form) = read_form(&page[start..open_end], &page[open_end..end]) {
            return Some(form);
        }
        from = end.min(page.len() - 1).max(start + 1);
    }
    None
}

fn read_form(open_tag: &str, inner: &str) -> Option<LoginForm> {
    let action = attribute(open_tag, "action").unwrap_or_default();
    let mut fields = Vec::new();
    let (mut user, mut password) = (None, None);
    for tag in tags(inner, "input") {
        let Some(name) = attribute(tag, "name") else { continue };
        let kind = attribute(tag, "type").unwrap_or_else(|| "text".into()).to_ascii_lowercase();
        match kind.as_str() {
            "password" if password.is_none() => password = Some(name),
            "text" | "email" if user.is_none() => user = Some(name),
            "submit" | "button" | "checkbox" | "radio" => {}
            _ => fields.push((name, attribute(tag, "value").unwrap_or_default())),
        }
    }
    Some(LoginForm { action, fields, user_field: user?, password_field: password? })
}

/// Every `<name ...>` tag of `html`.
fn tags<'a>(html: &'a str, name: &str) -> Vec<&'a str> {
    let lower = html.to_ascii_lowercase();
    let open = format!("<{name}");
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(start) = lower[from..].find(&open).map(|i| i + from) {
        let end = lower[start..].find('>').map_or(html.len(), |i| i + start);
        out.push(&html[start..end]);
        from = end;
    }
    out
}

/// An attribute's value (quoted or not), entities decoded.
fn attribute(tag: &str, name: &str) -> Option<String> {
    let lower = tag.to_ascii_lowercase();
    let mut from = 0;
    while let Some(i) = lower[from..].find(name).map(|i| i + from) {
        let before = lower[..i].chars().next_back();
        let rest = lower[i + name.len()..].trim_start();
        if before.is_some_and(char::is_whitespace) && rest.starts_with('=') {
            let offset = tag.len() - rest.len() + 1;
            let value = tag[offset..].trim_start();
            let raw = match value.chars().next() {
                Some(q @ ('"' | '\'')) => value[1..].split(q).next().unwrap_or_default(),
                _ => value.split(|c: char| c.is_whitespace() || c == '/').next().unwrap_or_default(),
            };
            return Some(decode_entities(raw));
        }
        from = i + name.len();
    }
    None
}

fn decode_entities(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find('&') {
        out.push_str(&rest[..i]);
        let tail = &rest[i..];
        let Some(end) = tail.find(';').filter(|e| *e <= 10) else {
            out.push('&');
            rest = &tail[1..];
            continue;
        };
        let entity = &tail[1..end];
        let decoded = match entity {
            "amp" => Some('&'),
            "lt" => Some('<'),
            "gt" => Some('>'),
            "quot" => Some('"'),
            "apos" => Some('\''),
            e if e.starts_with("#x") || e.starts_with("#X") => {
                u32::from_str_radix(&e[2..], 16).ok().and_then(char::from_u32)
            }
            e if e.starts_with('#') => e[1..].parse().ok().and_then(char::from_u32),
            _ => None,
        };
        match decoded {
            Some(c) => {
                out.push(c);
                rest = &tail[end + 1..];
            }
            None => {
                out.push('&');
                rest = &tail[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// What a login page says (Keycloak's error message, or the title), for evidence.
pub fn page_message(page: &str) -> String {
    let lower = page.to_ascii_lowercase();
    for marker in ["kc-feedback-text", "alert-error", "id=\"input-error\"", "<title"] {
        if let Some(i) = lower.find(marker) {
            let after = &page[i..];
            let text: String = after
                .split_once('>')
                .map(|(_, t)| t.split('<').next().unwrap_or_default())
                .unwrap_or_default()
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ");
            if !text.is_empty() {
                return crate::text::sanitize(&decode_entities(&text)).chars().take(160).collect();
            }
        }
    }
    "no message".into()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shape of Keycloak 2x's login page (trimmed).
    const KEYCLOAK: &str = r#"<!DOCTYPE html><html><head><title>Sign in to platform</title></head><body>
<form id="kc-form-login" onsubmit="login.disabled = true; return true;" action="http://kc:8080/realms/platform/login-actions/authenticate?session_code=abc&amp;execution=e1&amp;client_id=open-webui&amp;tab_id=t1" method="post">
  <label for="username">Username or email</label>
  <input tabindex="2" id="username" class="pf-c-form-control" name="username" value="" type="text" autofocus autocomplete="username" />
  <input tabindex="3" id="password" class="pf-c-form-control" name="password" type="password" autocomplete="current-password" />
  <input type="checkbox" id="rememberMe" name="rememberMe">
  <input type="hidden" id="id-hidden-input" name="credentialId"/>
  <input tabindex="7" class="pf-c-button" name="login" id="kc-login" type="submit" value="Sign In"/>
</form></body></html>"#;

    #[test]
    fn keycloaks_form_is_read_and_filled() {
        let f = login_form(KEYCLOAK).expect("a login form");
        assert_eq!(
            f.action,
            "http://kc:8080/realms/platform/login-actions/authenticate?session_code=abc&execution=e1&client_id=open-webui&tab_id=t1"
        );
        assert_eq!((f.user_field.as_str(), f.password_field.as_str()), ("username", "password"));
        assert_eq!(f.fields, vec![("credentialId".to_string(), String::new())]);
        assert_eq!(f.filled("u@x.test", "p&w"), "credentialId=&username=u%40x.test&password=p%26w");
    }

    #[test]
    fn pages_without_a_password_form_have_none() {
        assert_eq!(login_form("<form action=/search><input name=q></form>"), None);
        assert_eq!(login_form("<p>no form</p>"), None);
        let two = "<form action='/a'><input name=q></form><FORM ACTION='/login'><input type=email name=mail><input type=password name=pw></FORM>";
        let f = login_form(two).unwrap();
        assert_eq!((f.action.as_str(), f.user_field.as_str(), f.password_field.as_str()), ("/login", "mail", "pw"));
    }

    #[test]
    fn the_pages_message_is_shown() {
        let page = r#"<title>x</title><span id="input-error" class="e">Invalid username or password.</span>"#;
        assert_eq!(page_message(page), "Invalid username or password.");
        assert_eq!(page_message(KEYCLOAK), "Sign in to platform");
        assert_eq!(decode_entities("a&amp;b&#x2F;c&#47;&bogus;"), "a&b/c/&bogus;");
    }
}
