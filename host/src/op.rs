//! What the gate answers: an allowed op's [`Output`], an [`OpError`] when
//! the world said no, the whole [`SandboxResult`]. The op itself is
//! [`Op`], one variant per capability (`crate::capability`).

pub use crate::capability::Op;

use crate::fs::{Entry, Stat};
use crate::net::FetchResponse;
use crate::violation::{Denial, Violation};
use base64::Engine as _;
use serde::{Deserialize, Serialize, Serializer};

/// Bytes shown as `{"text": ...}` when they are UTF-8 and `{"base64": ...}`
/// otherwise, so nothing is lost in JSON.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(try_from = "ContentRepr")]
pub struct Content(pub Vec<u8>);

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum ContentRepr {
    Text(String),
    Base64(String),
}

impl TryFrom<ContentRepr> for Content {
    type Error = String;
    fn try_from(r: ContentRepr) -> Result<Self, String> {
        match r {
            ContentRepr::Text(s) => Ok(Content(s.into_bytes())),
            ContentRepr::Base64(s) => base64::engine::general_purpose::STANDARD
                .decode(s)
                .map(Content)
                .map_err(|e| format!("invalid base64: {e}")),
        }
    }
}

impl Serialize for Content {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match std::str::from_utf8(&self.0) {
            Ok(t) => ContentRepr::Text(t.to_string()).serialize(s),
            Err(_) => {
                ContentRepr::Base64(base64::engine::general_purpose::STANDARD.encode(&self.0))
                    .serialize(s)
            }
        }
    }
}

/// What an allowed operation produced.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Output {
    /// File content.
    Data {
        /// The bytes read.
        content: Content,
    },
    /// A write landed.
    Written {
        /// Bytes written.
        bytes: u64,
    },
    /// A folder's entries, sorted by name.
    Entries {
        /// The entries.
        entries: Vec<Entry>,
    },
    /// Metadata.
    Stat {
        /// The metadata.
        stat: Stat,
    },
    /// The file or folder is gone.
    Removed,
    /// The folder exists.
    Created,
    /// An HTTP response.
    Response {
        /// Status code.
        status: u16,
        /// Headers.
        headers: Vec<(String, String)>,
        /// Body.
        body: Content,
    },
    /// A tool's output.
    ToolOutput {
        /// The output.
        output: String,
    },
    /// Allowed; the effect is performed elsewhere (WASI in the wasm host).
    Admitted,
}

impl Output {
    pub(crate) fn response(r: FetchResponse) -> Output {
        Output::Response {
            status: r.status,
            headers: r.headers,
            body: Content(r.body),
        }
    }

    /// Bytes this output returns to the caller (charged to
    /// `max_output_bytes`).
    pub fn charged_bytes(&self) -> u64 {
        match self {
            Output::Data { content } => content.0.len() as u64,
            Output::Entries { entries } => entries.iter().map(|e| e.name.len() as u64 + 1).sum(),
            Output::Response { headers, body, .. } => {
                crate::net::header_bytes(headers) + body.0.len() as u64
            }
            Output::ToolOutput { output } => output.len() as u64,
            Output::Written { .. }
            | Output::Stat { .. }
            | Output::Removed
            | Output::Created
            | Output::Admitted => 0,
        }
    }
}

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
pub(crate) enum Failure {
    Denied(Denial),
    Error(OpError),
}

/// The gate's answer to one operation. Exactly one of `output`, `denial` and
/// `error` is set; `ok` is `true` only with `output`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SandboxResult {
    /// 1-based sequence number within the run.
    pub seq: u64,
    /// The op's name (`fs_read`, ...).
    pub op: String,
    /// Path, URL or tool name.
    pub target: String,
    /// Whether the effect happened.
    pub ok: bool,
    /// The rule that allowed it (for allowed ops).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
    /// What it produced.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output: Option<Output>,
    /// Why it was refused.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub denial: Option<Denial>,
    /// Why an allowed effect failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<OpError>,
}

impl SandboxResult {
    /// The violation, if the op was refused.
    pub fn violation(&self) -> Option<Violation> {
        self.denial.as_ref().map(|d| d.violation)
    }

    /// Whether this result halted the run.
    pub fn hard(&self) -> bool {
        self.denial.as_ref().is_some_and(|d| d.hard)
    }
}
