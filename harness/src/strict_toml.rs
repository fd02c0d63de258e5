//! Strict TOML reading: unknown keys and wrong types are errors that name the
//! file and the key.

use std::fmt;
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;

/// A TOML file that could not be read or did not match its schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TomlError {
    pub file: PathBuf,
    /// Dotted path of the failing key (`model[1].input[0].file`); empty when
    /// the file itself is at fault.
    pub key: String,
    pub message: String,
    /// The line of the file at fault, where the parser knows it.
    pub line: Option<usize>,
}

impl fmt::Display for TomlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: ", self.file.display())?;
        if !self.key.is_empty() {
            write!(f, "key `{}`: ", self.key)?;
        }
        write!(f, "{}", self.message)?;
        match self.line {
            Some(line) => write!(f, " (line {line})"),
            None => Ok(()),
        }
    }
}

impl TomlError {
    /// A file that could not be read at all.
    pub fn unreadable(file: &Path, error: &std::io::Error) -> TomlError {
        TomlError { file: file.to_owned(), key: String::new(), message: format!("cannot read: {error}"), line: None }
    }
}

impl std::error::Error for TomlError {}

/// Parses `text` (read from `file`) into `T`, whose types should all be
/// `deny_unknown_fields`.
pub fn parse<T: DeserializeOwned>(file: &Path, text: &str) -> Result<T, TomlError> {
    let deserializer = toml::Deserializer::new(text);
    serde_path_to_error::deserialize(deserializer).map_err(|err| {
        let key = err.path().to_string();
        let inner = err.into_inner();
        let line = inner.span().map(|span| text[..span.start].matches('\n').count() + 1);
        TomlError {
            file: file.to_owned(),
            key: if key == "." { String::new() } else { key },
            message: inner.message().to_owned(),
            line,
        }
    })
}

/// Reads and parses `file`.
pub fn read<T: DeserializeOwned>(file: &Path) -> Result<T, TomlError> {
    let text = std::fs::read_to_string(file).map_err(|e| TomlError::unreadable(file, &e))?;
    parse(file, &text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Deserialize, Debug)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Outer {
        name: String,
        inner: Vec<Inner>,
    }

    #[derive(Deserialize, Debug)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Inner {
        size: u32,
    }

    #[test]
    fn errors_name_the_key() {
        let file = Path::new("x.toml");
        let err = parse::<Outer>(file, "name = \"a\"\n[[inner]]\nsize = 1\n[[inner]]\nsize = \"big\"\n").unwrap_err();
        assert_eq!(err.key, "inner[1].size");
        assert!(err.to_string().starts_with("x.toml: key `inner[1].size`: "), "{err}");

        let err = parse::<Outer>(file, "name = \"a\"\ncolour = 3\ninner = []\n").unwrap_err();
        assert!(err.message.contains("unknown field `colour`"), "{err}");

        let err = parse::<Outer>(file, "inner = []\n").unwrap_err();
        assert!(err.message.contains("missing field `name`"), "{err}");

        let err = parse::<Outer>(file, "name = \n").unwrap_err();
        assert_eq!(err.line, Some(1), "{err}");
        assert!(err.to_string().ends_with(" (line 1)"), "{err}");
    }
}
