//! Configuration errors that point at the file, line, column and key.

use std::fmt;
use std::path::{Path, PathBuf};

use serde_saphyr::Location;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    pub file: PathBuf,
    pub line: u64,
    pub column: u64,
    /// Dotted path of the offending key, e.g. `providers.alpha.credential`.
    pub key: String,
    pub message: String,
}

impl ConfigError {
    pub fn at(file: &Path, location: &Location, key: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            file: file.to_path_buf(),
            line: location.line(),
            column: location.column(),
            key: key.into(),
            message: message.into(),
        }
    }

    /// For errors with no place in the file (the file is missing or unreadable).
    pub fn whole_file(file: &Path, message: impl Into<String>) -> Self {
        Self { file: file.to_path_buf(), line: 0, column: 0, key: String::new(), message: message.into() }
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

/// Parses YAML into `T`, turning a parser error into a located [`ConfigError`].
pub fn parse_yaml<T: serde::de::DeserializeOwned>(file: &Path, text: &str) -> Result<T, ConfigError> {
    serde_saphyr::from_str::<T>(text).map_err(|e| {
        let (line, column) = e.location().map(|l| (l.line(), l.column())).unwrap_or((0, 0));
        ConfigError { file: file.to_path_buf(), line, column, key: String::new(), message: first_line(&e.to_string()) }
    })
}

/// serde-saphyr renders "error: line L column C: message" and a snippet; the location
/// is already in our prefix, so keep only the message.
fn first_line(rendered: &str) -> String {
    let line = rendered.lines().next().unwrap_or(rendered).trim();
    let line = line.strip_prefix("error: ").unwrap_or(line);
    match line.strip_prefix("line ").and_then(|rest| rest.split_once(": ")) {
        Some((position, message)) if position.contains(" column ") => plain(message),
        _ => plain(line),
    }
}

/// Rewords the parser's hints that speak to library users rather than to engineers.
fn plain(message: &str) -> String {
    match message.strip_prefix("duplicate mapping key: ") {
        Some(rest) => {
            let key = rest.split(", set DuplicateKeyPolicy").next().unwrap_or(rest);
            format!("`{key}` is defined twice: ids and keys must be unique")
        }
        None => message.to_string(),
    }
}

pub fn read_file(file: &Path) -> Result<String, ConfigError> {
    std::fs::read_to_string(file).map_err(|e| ConfigError::whole_file(file, format!("cannot read the file: {e}")))
}
