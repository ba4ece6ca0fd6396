//! The conditions the platform writes into `enabled:` and `shared:` keys, evaluated as
//! the platform would, against the roles the user says are deployed.
//!
//! Understood (and nothing else): `true`/`false`; `{{ 'role' in group_names }}` and
//! `not in`; `{{ lookup('config', 'role', 'mcp.enabled') }}` (or `mcp.shared`,
//! `services.<key>.enabled`, `services.<key>.shared`), read from the same roles
//! directory, with an optional `| bool`; and `and`, `or`, `not` and parentheses of these.
//! Any other template (an inventory variable, another lookup) is an error that names the
//! file, the line and the expression: guessing it would make a scenario that checks
//! something the platform never deployed.

use std::collections::BTreeSet;

use serde::Deserialize;

/// A condition as the YAML holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Condition {
    Literal(bool),
    Text(String),
}

impl<'de> Deserialize<'de> for Condition {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct ConditionVisitor;
        impl serde::de::Visitor<'_> for ConditionVisitor {
            type Value = Condition;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("true, false, or a `{{ … }}` condition")
            }
            fn visit_bool<E>(self, v: bool) -> Result<Condition, E> {
                Ok(Condition::Literal(v))
            }
            fn visit_str<E>(self, v: &str) -> Result<Condition, E> {
                Ok(Condition::Text(v.to_string()))
            }
        }
        d.deserialize_any(ConditionVisitor)
    }
}

/// A parsed condition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expr {
    Literal(bool),
    /// `'role' in group_names`.
    Deployed(String),
    /// `lookup('config', role, path)`.
    Config {
        role: String,
        path: String,
    },
    Not(Box<Expr>),
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
}

/// Why a text is not a condition cordon evaluates, as the end of a sentence.
pub type ParseError = String;

/// Parses a condition; the error says what was found where.
pub fn parse(condition: &Condition) -> Result<Expr, ParseError> {
    let text = match condition {
        Condition::Literal(b) => return Ok(Expr::Literal(*b)),
        Condition::Text(t) => t,
    };
    let trimmed = text.trim();
    let Some(inner) = trimmed.strip_prefix("{{").and_then(|t| t.strip_suffix("}}")) else {
        return Err("is neither a boolean nor one `{{ … }}` expression".into());
    };
    if inner.contains("{{") || inner.contains("}}") {
        return Err("holds more than one `{{ … }}` expression".into());
    }
    let tokens = tokenize(inner)?;
    let mut parser = Parser { tokens, at: 0 };
    let expr = parser.or()?;
    match parser.peek() {
        None => Ok(expr),
        Some(t) => Err(format!("unexpected {} after a complete condition", t.describe())),
    }
}

/// Where the value of a `lookup('config', …)` comes from.
pub trait ConfigSource {
    /// The condition at `path` of `role`'s metadata, or why there is none.
    fn condition(&self, role: &str, path: &str) -> Result<Condition, String>;
}

/// Evaluates against the deployed roles; nested lookups are followed, a cycle is an error.
pub fn evaluate(expr: &Expr, deployed: &BTreeSet<String>, config: &dyn ConfigSource) -> Result<bool, String> {
    Evaluation { deployed, config, stack: Vec::new() }.eval(expr)
}

struct Evaluation<'a> {
    deployed: &'a BTreeSet<String>,
    config: &'a dyn ConfigSource,
    stack: Vec<(String, String)>,
}

/// Lookups nest at most this deep: real metadata needs two.
const MAX_LOOKUP_DEPTH: usize = 8;

impl Evaluation<'_> {
    fn eval(&mut self, expr: &Expr) -> Result<bool, String> {
        Ok(match expr {
            Expr::Literal(b) => *b,
            Expr::Deployed(role) => self.deployed.contains(role),
            Expr::Not(e) => !self.eval(e)?,
            Expr::And(a, b) => self.eval(a)? && self.eval(b)?,
            Expr::Or(a, b) => self.eval(a)? || self.eval(b)?,
            Expr::Config { role, path } => {
                let key = (role.clone(), path.clone());
                if self.stack.contains(&key) || self.stack.len() >= MAX_LOOKUP_DEPTH {
                    let chain: Vec<String> = self.stack.iter().map(|(r, p)| format!("{r}:{p}")).collect();
                    return Err(format!(
                        "`lookup('config', '{role}', '{path}')` leads back to itself ({} → {role}:{path})",
                        chain.join(" → ")
                    ));
                }
                let condition = self
                    .config
                    .condition(role, path)
                    .map_err(|e| format!("`lookup('config', '{role}', '{path}')`: {e}"))?;
                let inner = parse(&condition)
                    .map_err(|e| format!("`lookup('config', '{role}', '{path}')` reads a value that {e}"))?;
                self.stack.push(key);
                let value = self.eval(&inner);
                self.stack.pop();
                value?
            }
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Str(String),
    Word(String),
    Open,
    Close,
    Comma,
    Pipe,
}

impl Token {
    fn describe(&self) -> String {
        match self {
            Token::Str(s) => format!("the string '{}'", crate::config::strict::echo(s)),
            Token::Word(w) => format!("`{}`", crate::config::strict::echo(w)),
            Token::Open => "`(`".into(),
            Token::Close => "`)`".into(),
            Token::Comma => "`,`".into(),
            Token::Pipe => "`|`".into(),
        }
    }
}

fn tokenize(text: &str) -> Result<Vec<Token>, ParseError> {
    let mut tokens = Vec::new();
    let mut chars = text.chars().peekable();
    while let Some(&c) = chars.peek() {
        match c {
            c if c.is_whitespace() => {
                chars.next();
            }
            '(' | ')' | ',' | '|' => {
                chars.next();
                tokens.push(match c {
                    '(' => Token::Open,
                    ')' => Token::Close,
                    ',' => Token::Comma,
                    _ => Token::Pipe,
                });
            }
            '\'' | '"' => {
                chars.next();
                let mut s = String::new();
                loop {
                    match chars.next() {
                        Some(q) if q == c => break,
                        Some('\\') => return Err("uses a backslash escape in a string".into()),
                        Some(ch) => s.push(ch),
                        None => {
                            return Err(format!("has an unterminated string `{c}{}`", crate::config::strict::echo(&s)));
                        }
                    }
                }
                tokens.push(Token::Str(s));
            }
            c if c.is_ascii_alphanumeric() || c == '_' => {
                let mut w = String::new();
                while let Some(&ch) = chars.peek() {
                    if ch.is_ascii_alphanumeric() || ch == '_' || ch == '.' {
                        w.push(ch);
                        chars.next();
                    } else {
                        break;
                    }
                }
                tokens.push(Token::Word(w));
            }
            other => {
                return Err(format!(
                    "uses `{}`, which no understood condition holds",
                    crate::text::sanitize(&other.to_string())
                ));
            }
        }
    }
    Ok(tokens)
}

struct Parser {
    tokens: Vec<Token>,
    at: usize,
}

impl Parser {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.at)
    }

    fn next(&mut self) -> Option<Token> {
        let t = self.tokens.get(self.at).cloned();
        self.at += 1;
        t
    }

    fn word(&self, w: &str) -> bool {
        matches!(self.peek(), Some(Token::Word(x)) if x == w)
    }

    fn expect(&mut self, want: Token, what: &str) -> Result<(), ParseError> {
        match self.next() {
            Some(t) if t == want => Ok(()),
            Some(t) => Err(format!("expects {what}, found {}", t.describe())),
            None => Err(format!("ends where {what} is expected")),
        }
    }

    fn or(&mut self) -> Result<Expr, ParseError> {
        let mut left = self.and()?;
        while self.word("or") {
            self.next();
            left = Expr::Or(Box::new(left), Box::new(self.and()?));
        }
        Ok(left)
    }

    fn and(&mut self) -> Result<Expr, ParseError> {
        let mut left = self.not()?;
        while self.word("and") {
            self.next();
            left = Expr::And(Box::new(left), Box::new(self.not()?));
        }
        Ok(left)
    }

    fn not(&mut self) -> Result<Expr, ParseError> {
        if self.word("not") {
            self.next();
            return Ok(Expr::Not(Box::new(self.not()?)));
        }
        self.filtered()
    }

    /// An operand with any number of `| bool` filters (which change nothing here: every
    /// operand is already a boolean).
    fn filtered(&mut self) -> Result<Expr, ParseError> {
        let expr = self.operand()?;
        while matches!(self.peek(), Some(Token::Pipe)) {
            self.next();
            match self.next() {
                Some(Token::Word(w)) if w == "bool" => {}
                Some(t) => return Err(format!("applies the filter {}; only `| bool` is understood", t.describe())),
                None => return Err("ends after `|`".into()),
            }
        }
        Ok(expr)
    }

    fn operand(&mut self) -> Result<Expr, ParseError> {
        match self.next() {
            Some(Token::Open) => {
                let inner = self.or()?;
                self.expect(Token::Close, "`)`")?;
                Ok(inner)
            }
            Some(Token::Word(w)) if w.eq_ignore_ascii_case("true") => Ok(Expr::Literal(true)),
            Some(Token::Word(w)) if w.eq_ignore_ascii_case("false") => Ok(Expr::Literal(false)),
            Some(Token::Str(role)) => {
                let negated = self.word("not");
                if negated {
                    self.next();
                }
                if !self.word("in") {
                    return Err(format!(
                        "compares the string '{}' with something other than `in group_names`",
                        crate::config::strict::echo(&role)
                    ));
                }
                self.next();
                match self.next() {
                    Some(Token::Word(w)) if w == "group_names" => {}
                    Some(t) => {
                        return Err(format!("tests membership in {}; only `group_names` is understood", t.describe()));
                    }
                    None => return Err("ends after `in`".into()),
                }
                let test = Expr::Deployed(role);
                Ok(if negated { Expr::Not(Box::new(test)) } else { test })
            }
            Some(Token::Word(w)) if w == "lookup" => self.lookup(),
            Some(t) => Err(format!(
                "uses {}, which is no role test (`'role' in group_names`), `lookup('config', …)` or boolean",
                t.describe()
            )),
            None => Err("is empty".into()),
        }
    }

    fn lookup(&mut self) -> Result<Expr, ParseError> {
        self.expect(Token::Open, "`(`")?;
        let mut args = Vec::new();
        loop {
            match self.next() {
                Some(Token::Str(s)) => args.push(s),
                Some(t) => {
                    return Err(format!("passes {} to `lookup`; only quoted strings are understood", t.describe()));
                }
                None => return Err("ends inside `lookup(`".into()),
            }
            match self.next() {
                Some(Token::Comma) => continue,
                Some(Token::Close) => break,
                Some(t) => return Err(format!("has {} inside `lookup(…)`", t.describe())),
                None => return Err("ends inside `lookup(`".into()),
            }
        }
        match args.as_slice() {
            [kind, role, path] if kind == "config" => Ok(Expr::Config { role: role.clone(), path: path.clone() }),
            [kind, ..] if kind != "config" => Err(format!(
                "uses `lookup('{}', …)`; only `lookup('config', role, path)` is understood",
                crate::config::strict::echo(kind)
            )),
            _ => Err("calls `lookup('config', …)` without exactly a role and a path".into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    struct Config;

    impl ConfigSource for Config {
        fn condition(&self, role: &str, path: &str) -> Result<Condition, String> {
            match (role, path) {
                ("svc-db-qdrant", "mcp.enabled") => Ok(Condition::Literal(false)),
                ("web-app-x", "mcp.enabled") => Ok(Condition::Text("{{ 'web-app-keycloak' in group_names }}".into())),
                ("loop", "mcp.enabled") => Ok(Condition::Text("{{ lookup('config', 'loop', 'mcp.enabled') }}".into())),
                _ => Err(format!("roles/{role} sets no `{path}`")),
            }
        }
    }

    fn eval(text: &str) -> Result<bool, String> {
        let deployed: BTreeSet<String> = ["web-app-keycloak", "web-app-hermes"].iter().map(|s| s.to_string()).collect();
        let expr = parse(&Condition::Text(text.into()))?;
        evaluate(&expr, &deployed, &Config)
    }

    #[rstest]
    #[case("{{ 'web-app-keycloak' in group_names }}", true)]
    #[case("{{ 'web-app-mailu' in group_names }}", false)]
    #[case("{{'web-app-mailu' not in group_names}}", true)]
    #[case("{{ not 'web-app-keycloak' in group_names }}", false)]
    #[case("{{ 'web-app-hermes' in group_names or 'web-app-openclaw' in group_names }}", true)]
    #[case("{{ 'web-app-hermes' in group_names and 'web-app-openclaw' in group_names }}", false)]
    #[case("{{ 'a' in group_names or 'web-app-hermes' in group_names and not 'b' in group_names }}", true)]
    #[case("{{ ('a' in group_names or 'web-app-hermes' in group_names) and 'b' in group_names }}", false)]
    #[case("{{ lookup('config', 'svc-db-qdrant', 'mcp.enabled') | bool }}", false)]
    #[case("{{ not (lookup('config', 'svc-db-qdrant', 'mcp.enabled') | bool) }}", true)]
    #[case("{{ lookup(\"config\", \"web-app-x\", \"mcp.enabled\") }}", true)]
    #[case("  {{ True }} ", true)]
    fn understood_conditions_evaluate(#[case] text: &str, #[case] expected: bool) {
        assert_eq!(eval(text), Ok(expected), "{text}");
    }

    #[rstest]
    #[case("{{ HCAPTCHA_ENABLED | bool }}", "uses `HCAPTCHA_ENABLED`, which is no role test")]
    #[case("yes", "is neither a boolean nor one `{{ … }}` expression")]
    #[case("{{ 'a' in groups['x'] }}", "uses `[`, which no understood condition holds")]
    #[case("{{ 'a' in groups }}", "tests membership in `groups`")]
    #[case("{{ lookup('env', 'X') }}", "only `lookup('config', role, path)` is understood")]
    #[case("{{ 'a' in group_names | default(false) }}", "applies the filter `default`")]
    #[case("{{ 'a' in group_names }} and {{ 'b' in group_names }}", "more than one `{{ … }}` expression")]
    #[case("{{ 'a' == 'b' }}", "uses `=`")]
    #[case("{{ ('a' in group_names }}", "ends where `)` is expected")]
    #[case("{{ }}", "is empty")]
    #[case("{{ lookup('config', 'nowhere', 'mcp.enabled') }}", "roles/nowhere sets no `mcp.enabled`")]
    #[case("{{ lookup('config', 'loop', 'mcp.enabled') }}", "leads back to itself")]
    fn anything_else_is_refused_with_the_reason(#[case] text: &str, #[case] reason: &str) {
        let err = eval(text).unwrap_err();
        assert!(err.contains(reason), "{text}: {err}");
    }
}
