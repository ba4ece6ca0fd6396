//! Configuration errors that point at the file, line, column and key.

use std::fmt;
use std::path::{Path, PathBuf};

use serde_saphyr::Location;

use crate::text::sanitize;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    pub file: PathBuf,
    pub line: u64,
    pub column: u64,
    /// Dotted path of the offending key, e.g. `providers.alpha.credential`.
    pub key: String,
    pub message: String,
    /// A stable code for the rule broken, where the rule has one (the importer's
    /// metadata contract: `missing_field`, `empty_allowlist`, ...).
    pub code: Option<&'static str>,
}

impl ConfigError {
    /// Keys and messages quote what the file holds (ids, names, values): any control
    /// character in them is escaped here, once for every sink.
    pub fn at(file: &Path, location: &Location, key: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            file: file.to_path_buf(),
            line: location.line(),
            column: location.column(),
            key: sanitize(&key.into()),
            message: sanitize(&message.into()),
            code: None,
        }
    }

    /// For errors with no place in the file (the file is missing or unreadable).
    pub fn whole_file(file: &Path, message: impl Into<String>) -> Self {
        Self {
            file: file.to_path_buf(),
            line: 0,
            column: 0,
            key: String::new(),
            message: sanitize(&message.into()),
            code: None,
        }
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if self.line > 0 {
            write!(f, ":{}:{}", self.line, self.column)?;
        }
        if !self.key.is_empty() {
            write!(f, ": {}", self.key)?;
        }
        if let Some(code) = self.code {
            write!(f, ": {code}")?;
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for ConfigError {}

/// Every problem found in one pass, so an engineer fixes a file in one round trip.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigErrors(pub Vec<ConfigError>);

impl fmt::Display for ConfigErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{e}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ConfigErrors {}

impl From<ConfigError> for ConfigErrors {
    fn from(e: ConfigError) -> Self {
        Self(vec![e])
    }
}

/// The largest scenario or suite file read: far beyond any real one, small enough that a
/// wrong path (a log, an image) fails at once instead of filling memory.
pub const MAX_CONFIG_BYTES: u64 = 4 << 20;

/// Parser budgets for a configuration file, a few orders of magnitude beyond real ones.
fn options() -> serde_saphyr::Options {
    let mut budget = serde_saphyr::Budget::default();
    budget.max_depth = 32;
    budget.max_nodes = 100_000;
    budget.max_events = 400_000;
    budget.max_aliases = 1_000;
    budget.max_anchors = 1_000;
    budget.max_documents = 1;
    budget.max_merge_keys = 100;
    budget.max_total_scalar_bytes = MAX_CONFIG_BYTES as usize;
    budget.max_recorded_anchor_events = 100_000;
    let mut options = serde_saphyr::Options::default();
    options.budget = Some(budget);
    options.alias_limits.max_total_replayed_events = 100_000;
    options.alias_limits.max_replay_stack_depth = 32;
    // YAML 1.1's `yes`/`no`/`on`/`off` are text: only `true` and `false` are booleans.
    options.strict_booleans = true;
    options.with_snippet = false;
    options.duplicate_keys = serde_saphyr::DuplicateKeyPolicy::Error;
    // `.nan` and `.inf` reach a key as text, and get that key's own error.
    options.non_finite_float_policy = serde_saphyr::NonFiniteFloatPolicy::AsString;
    options
}

/// Parses YAML into `T`, turning a parser error into a [`ConfigError`] located at the
/// file, line, column and key.
pub fn parse_yaml<T: serde::de::DeserializeOwned>(file: &Path, text: &str) -> Result<T, ConfigError> {
    serde_saphyr::from_str_with_options::<T>(text, options()).map_err(|e| {
        let (line, column) = e.location().map(|l| (l.line(), l.column())).unwrap_or((0, 0));
        let (message, is_budget) = match budget_words(&e) {
            Some(words) => (words, true),
            None => (first_line(&e.to_string()), false),
        };
        // A budget breach may sit anywhere in a hostile file: no second walk over it.
        let key = if is_budget || line == 0 { None } else { super::keys::key_at(text, line, column) };
        ConfigError { file: file.to_path_buf(), line, column, key: key.unwrap_or_default(), message, code: None }
    })
}

fn original(mut err: &serde_saphyr::Error) -> &serde_saphyr::Error {
    use serde_saphyr::Error as E;
    loop {
        match err {
            E::WithSnippet { error, .. } | E::AliasError { error, .. } => err = error,
            other => return other,
        }
    }
}

/// Which parser limit a file broke, in words; `None` for any other error.
fn budget_words(err: &serde_saphyr::Error) -> Option<String> {
    use serde_saphyr::Error as E;
    use serde_saphyr::budget::BudgetBreach as B;
    let limit = |what: String| Some(format!("the file exceeds a parser limit: {what}"));
    match original(err) {
        E::Budget { breach, .. } => match breach {
            B::Depth { depth } => limit(format!("it nests deeper than {} levels (depth {depth})", depth - 1)),
            B::Nodes { nodes } => limit(format!("it holds more than {} values (nodes)", nodes - 1)),
            B::Events { events } => limit(format!("it holds more than {} parser events", events - 1)),
            B::Aliases { aliases } => limit(format!("it uses more than {} aliases (`*name`)", aliases - 1)),
            B::Anchors { anchors } => limit(format!("it defines more than {} anchors (`&name`)", anchors - 1)),
            B::Documents { documents } => {
                limit(format!("it holds {documents} YAML documents (`---`); a configuration file is one document"))
            }
            B::ScalarBytes { total_scalar_bytes } => {
                limit(format!("its text values add up to more than {total_scalar_bytes} bytes"))
            }
            B::MergeKeys { merge_keys } => limit(format!("it uses more than {} merge keys (`<<`)", merge_keys - 1)),
            B::AliasAnchorRatio { aliases, anchors } => limit(format!(
                "{aliases} aliases expand only {anchors} anchors: an alias expansion (\"billion laughs\") is refused"
            )),
            B::RecordedAnchorEvents { .. } | B::RecordedAnchorBytes { .. } => limit(
                "its anchors (`&name`) hold too much to copy for their aliases: an alias expansion (\"billion laughs\") is refused".into(),
            ),
            B::CommentBytes { .. } => limit("its comments are too long".into()),
            B::InputBytes { .. } => limit("it is too large".into()),
            other => limit(format!("{other:?}")),
        },
        E::AliasReplayLimitExceeded { max_total_replayed_events, .. } => limit(format!(
            "aliases expand to more than {max_total_replayed_events} values: an alias expansion (\"billion laughs\") is refused"
        )),
        E::AliasExpansionLimitExceeded { max_expansions_per_anchor, .. } => {
            limit(format!("one anchor is expanded more than {max_expansions_per_anchor} times"))
        }
        E::AliasReplayStackDepthExceeded { max_depth, .. } => {
            limit(format!("aliases nest deeper than {max_depth} levels"))
        }
        _ => None,
    }
}

/// serde-saphyr renders "error: line L column C: message" and a snippet; the location
/// is already in our prefix, so keep only the message.
fn first_line(rendered: &str) -> String {
    let line = rendered.lines().next().unwrap_or(rendered).trim();
    let line = line.strip_prefix("error: ").unwrap_or(line);
    let message = match line.strip_prefix("line ").and_then(|rest| rest.split_once(": ")) {
        Some((position, message)) if position.contains(" column ") => message,
        _ => line,
    };
    let message = match message.rfind(" at line ") {
        Some(at) if message[at..].contains(", column ") => &message[..at],
        _ => message,
    };
    sanitize(&plain(message))
}

/// Rewords the parser's hints that speak to library users rather than to engineers.
fn plain(message: &str) -> String {
    if let Some(rest) = message.strip_prefix("duplicate mapping key: ") {
        let key = rest.split(", set DuplicateKeyPolicy").next().unwrap_or(rest);
        return format!("`{key}` is defined twice: ids and keys must be unique");
    }
    match message {
        "expected sequence start" => return "expected a list (`[a, b]`, or one `- item` a line)".into(),
        "expected mapping start" => return "expected a mapping (`key: value` lines, or `{ key: value }`)".into(),
        "expected string scalar" => return "expected text (one value, not a list or a mapping)".into(),
        "expected end of mapping after enum variant value" => {
            return "holds more than one choice: give exactly one key here".into();
        }
        _ => {}
    }
    if let Some(ty) = message.strip_prefix("invalid ").filter(|t| !t.contains(' ')) {
        return format!("expected {}", type_words(ty));
    }
    message.to_string()
}

fn type_words(ty: &str) -> String {
    match ty {
        "boolean" | "bool" => "a boolean (true or false)".into(),
        "u8" | "u16" | "u32" | "u64" | "usize" => format!("a whole number (fits in {ty})"),
        "i8" | "i16" | "i32" | "i64" | "isize" => format!("an integer (fits in {ty})"),
        "f32" | "f64" | "floating" => "a number".into(),
        other => format!("a value of type {other}"),
    }
}

/// Reads a scenario or suite file: a regular file of at most [`MAX_CONFIG_BYTES`], UTF-8.
pub fn read_file(file: &Path) -> Result<String, ConfigError> {
    crate::fsutil::read_regular_text(file, MAX_CONFIG_BYTES)
        .map_err(|e| ConfigError::whole_file(file, format!("cannot read the file: it {}", read_error_words(&e))))
}

/// A [`crate::fsutil::ReadError`] as the rest of a sentence that starts with "it".
pub fn read_error_words(e: &crate::fsutil::ReadError) -> String {
    match e {
        crate::fsutil::ReadError::Io(io) => format!("cannot be opened ({io})"),
        other => other.to_string(),
    }
}
