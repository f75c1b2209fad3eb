//! Why an allowed effect produced no output: the world said no
//! ([`OpError`]), or a budget or the file layer refused it on the way
//! ([`Failure::Denied`]).

use crate::violation::Denial;
use serde::{Deserialize, Serialize};

/// Why an allowed operation failed. Not a violation: the grant allowed it and
/// the world said no.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// No such file or folder.
    NotFound,
    /// It exists already.
    AlreadyExists,
    /// A folder where a file was needed.
    IsADirectory,
    /// A file where a folder was needed.
    NotADirectory,
    /// The folder is not empty.
    NotEmpty,
    /// The host OS refused (file modes).
    PermissionDenied,
    /// The operation cannot apply to a mount point itself.
    MountPoint,
    /// A network failure.
    Network,
    /// A time limit the request itself set ran out (a budget's is a
    /// violation, not this).
    TimedOut,
    /// The tool failed or timed out.
    ToolFailed,
    /// Any other I/O failure.
    Io,
}

/// An effect that was allowed but did not happen.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OpError {
    /// What kind of failure.
    pub kind: ErrorKind,
    /// Details, for people.
    pub message: String,
}

impl OpError {
    pub(crate) fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        OpError {
            kind,
            message: message.into(),
        }
    }

    pub(crate) fn from_io(e: &std::io::Error) -> Self {
        use std::io::ErrorKind as K;
        let kind = match e.kind() {
            K::NotFound => ErrorKind::NotFound,
            K::AlreadyExists => ErrorKind::AlreadyExists,
            K::IsADirectory => ErrorKind::IsADirectory,
            K::NotADirectory => ErrorKind::NotADirectory,
            K::DirectoryNotEmpty => ErrorKind::NotEmpty,
            K::PermissionDenied => ErrorKind::PermissionDenied,
            _ => ErrorKind::Io,
        };
        OpError::new(kind, e.to_string())
    }
}

/// Why an effect produced no output: refused on the way (a budget spent
/// during it, an escape the file layer caught), or allowed and failed.
#[derive(Clone, Debug)]
pub(crate) enum Failure {
    Denied(Denial),
    Error(OpError),
}
