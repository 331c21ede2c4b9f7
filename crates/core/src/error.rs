//! The error type of virtlens-core: every error names the input (file) and, where it has one,
//! the 1-based line, and says what was expected there.

use std::path::Path;

/// Why an input could not be read.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The file could not be opened or read.
    #[error("{path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    /// A line did not have the shape the format requires.
    #[error("{path}:{line}: {message}")]
    Parse {
        path: String,
        line: usize,
        message: String,
    },
    /// The input as a whole is not usable (e.g. no table in it, unknown format).
    #[error("{path}: {message}")]
    Input { path: String, message: String },
}

impl Error {
    /// An I/O error on `path`.
    pub fn io(path: &Path, source: std::io::Error) -> Self {
        Error::Io {
            path: path.display().to_string(),
            source,
        }
    }
}

impl Error {
    /// The error for an input in which nothing of the expected format was found: it names the
    /// first line that was not understood (when there was one) and what was `expected`.
    pub fn nothing_found(
        path: &str,
        first_unrecognised: Option<(usize, String)>,
        expected: &str,
    ) -> Self {
        match first_unrecognised {
            Some((line, text)) => Error::Parse {
                path: path.to_string(),
                line,
                message: format!("{expected}; found `{text}`"),
            },
            None => Error::Input {
                path: path.to_string(),
                message: format!("nothing to read ({expected})"),
            },
        }
    }
}

/// Result with the crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
