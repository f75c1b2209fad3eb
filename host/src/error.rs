//! Errors of the library. Denials are not errors: they are values in a
//! [`crate::SandboxResult`]. These are for bad configuration and for setup
//! that could not happen.

use std::path::PathBuf;

/// A caps file or builder input that is not a valid grant.
///
/// The message names the file (when there is one), the key, what was wrong
/// and the accepted form.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum CapsError {
    /// The caps file could not be read.
    #[error("cannot read caps file {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not valid TOML, or has an unknown key or a value of the
    /// wrong type (the parser's message shows the line).
    #[error("{}: {message}", path.display())]
    Syntax {
        /// The file.
        path: PathBuf,
        /// The TOML parser's message, with the line.
        message: String,
    },
    /// A key has a value outside what is accepted.
    #[error("{}`{key}`: {message} (accepted: {accepted})", origin(.path))]
    Invalid {
        /// The file, or `None` for a builder.
        path: Option<PathBuf>,
        /// The key, e.g. `fs.read[0].guest` or `budget.max_ops`.
        key: String,
        /// What was wrong.
        message: String,
        /// The accepted form.
        accepted: String,
    },
}

/// ` PATH` for a recording's error, or nothing when there is no file.
fn recording_file(path: &std::path::Path) -> String {
    match path.as_os_str().is_empty() {
        true => String::new(),
        false => format!(" {}", path.display()),
    }
}

fn origin(path: &Option<PathBuf>) -> String {
    match path {
        Some(p) => format!("{}: ", p.display()),
        None => String::new(),
    }
}

impl CapsError {
    pub(crate) fn invalid(
        key: impl Into<String>,
        message: impl Into<String>,
        accepted: impl Into<String>,
    ) -> Self {
        CapsError::Invalid {
            path: None,
            key: key.into(),
            message: message.into(),
            accepted: accepted.into(),
        }
    }

    pub(crate) fn in_file(mut self, file: &std::path::Path) -> Self {
        if let CapsError::Invalid { path, .. } = &mut self {
            *path = Some(file.to_path_buf());
        }
        self
    }
}

/// Errors setting up or running a sandbox.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The grant is invalid.
    #[error(transparent)]
    Caps(#[from] CapsError),
    /// A mount's host folder could not be opened.
    #[error("cannot open mount {guest} (host {}): {source}", host.display())]
    Mount {
        /// Guest path of the mount.
        guest: String,
        /// Host folder.
        host: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A plan file is not a JSON list of operations.
    #[error("{0}")]
    Plan(String),
    /// The run could not be set up (runtime, preopens, fuel).
    #[error("{0}")]
    Setup(String),
    /// A recording could not be read, written or replayed.
    #[error("recording{}: {message}", recording_file(path))]
    Recording {
        /// The recording file (empty when there is none yet).
        path: PathBuf,
        /// What was wrong.
        message: String,
    },
}

/// `v` as a count, or the error naming `key` when it is negative.
pub(crate) fn non_negative(key: &str, v: Option<i64>) -> Result<Option<u64>, CapsError> {
    match v {
        None => Ok(None),
        Some(n) if n >= 0 => Ok(Some(n as u64)),
        Some(n) => Err(CapsError::invalid(
            key,
            format!("{n} is negative"),
            "a non-negative integer",
        )),
    }
}
