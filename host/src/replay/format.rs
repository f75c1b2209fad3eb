//! The recording file: one JSON document, versioned. Every field is listed
//! in the book (`docs/replay.md`); a reader refuses another format or
//! a newer version rather than guess.

use crate::capability::{Content, Output, Trace};
pub use crate::digest::sha256_hex;
use crate::error::Error;
use crate::op::OpError;
use crate::report::Status;
use crate::violation::{Denial, Violation};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// The `format` field of every recording.
pub const FORMAT: &str = "sbx-wasm-recording";
/// The version this build writes and reads.
pub const VERSION: u32 = 1;

/// Everything the host handed one run's guest, and what the run did with
/// it: enough to run the same component again with nothing real touched.
///
/// Secret values are never in it: the grant is kept as its caps file
/// (which names where a secret comes from, never the value), the guest's
/// env holds placeholders, and fetch answers are kept as the guest got
/// them, echoes already taken out.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Recording {
    /// Always [`FORMAT`].
    pub format: String,
    /// [`VERSION`] when written by this build.
    pub version: u32,
    /// The component run (its path as given, and the SHA-256 of its bytes),
    /// when the caller said which file it was.
    #[serde(default)]
    pub component: Option<Hashed>,
    /// The caps file the grant came from, when the caller said.
    #[serde(default)]
    pub caps_file: Option<Hashed>,
    /// The effective grant, as a caps file (absolute host paths).
    pub caps: String,
    /// The guest's `argv[0]`.
    pub program_name: String,
    /// The guest's arguments after `argv[0]`.
    pub args: Vec<String>,
    /// The guest's standard input, whole.
    pub stdin: Content,
    /// Each secret of the grant by name, with the hosts and headers it is
    /// bound to; never its value.
    #[serde(default)]
    pub secrets: Vec<SecretRecord>,
    /// The seed of the run's virtual clocks and randomness: every clock
    /// reading and random byte the guest got follows from it.
    pub seed: u64,
    /// Each path below a mount as the guest first met it.
    pub files: Vec<FileRecord>,
    /// Each folder the guest listed, as it was then.
    pub listings: Vec<Listing>,
    /// What each performed op (fetch, tool call) answered, by sequence
    /// number.
    pub answers: Vec<Answer>,
    /// Every op the gate decided, in order: what a replay must ask for.
    pub ops: Vec<OpRecord>,
    /// File contents by SHA-256 (hex).
    pub blobs: BTreeMap<String, Content>,
    /// How the recorded run ended.
    pub outcome: Outcome,
    /// What the recording could not keep (a file over the size limit).
    #[serde(default)]
    pub notes: Vec<String>,
}

/// A file named by its path and the SHA-256 of its bytes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hashed {
    /// The path as given.
    pub path: String,
    /// SHA-256 of the content, lower-case hex.
    pub sha256: String,
}

/// A secret of the recorded grant, without its value.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SecretRecord {
    /// Its name.
    pub name: String,
    /// The egress rules it may be sent to.
    pub hosts: Vec<String>,
    /// The request headers it may be put in.
    pub headers: Vec<String>,
}

/// One path below a mount, as the guest first met it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileRecord {
    /// The guest path of the mount it was reached through.
    pub mount: String,
    /// The path below that mount (`""` for the mount itself).
    pub path: String,
    /// `file`, `dir`, `symlink`, `absent` or `other`.
    pub kind: String,
    /// A file's size.
    #[serde(default)]
    pub size: u64,
    /// A file's content, as a key of `blobs`; `None` when not kept.
    #[serde(default)]
    pub blob: Option<String>,
    /// A link's target.
    #[serde(default)]
    pub target: Option<String>,
}

/// A folder's entries when the guest first listed it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Listing {
    /// The guest path of the mount it was reached through.
    pub mount: String,
    /// The folder below that mount.
    pub path: String,
    /// Its entries, sorted by name.
    pub entries: Vec<ListedEntry>,
}

/// One entry of a [`Listing`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListedEntry {
    /// File name.
    pub name: String,
    /// `file`, `dir`, `symlink` or `other`.
    pub kind: String,
    /// A file's size.
    #[serde(default)]
    pub size: u64,
    /// A link's target.
    #[serde(default)]
    pub target: Option<String>,
}

/// What one performed op answered.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Answer {
    /// Its sequence number.
    pub seq: u64,
    /// What it produced.
    pub result: AnswerResult,
    /// What the audit record says beyond the result (fetches: address,
    /// status, redirects, dropped headers, secrets used by name).
    #[serde(default)]
    pub(crate) trace: Trace,
}

/// An answer's result: the output, the failure the world gave, or the
/// refusal met on the way.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AnswerResult {
    /// The effect's output.
    Ok(Output),
    /// Allowed, and the world said no.
    Error(OpError),
    /// Refused on the way (a budget spent during it).
    Denied(Denial),
}

/// One op the gate decided: what a replay must ask for at that point.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OpRecord {
    /// Sequence number.
    pub seq: u64,
    /// Op name.
    pub op: String,
    /// Its target, as the audit log has it.
    pub target: String,
}

/// How the recorded run ended.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Outcome {
    /// The report's status.
    pub status: Status,
    /// The guest's exit code.
    pub exit_code: Option<i32>,
    /// The hard violation that halted it.
    pub violation: Option<Violation>,
}

impl Recording {
    /// Read a recording, refusing another format or version.
    pub fn read(path: impl AsRef<Path>) -> Result<Self, Error> {
        let path = path.as_ref();
        let bad = |message: String| Error::Recording {
            path: path.to_path_buf(),
            message,
        };
        let text = std::fs::read(path).map_err(|e| bad(e.to_string()))?;
        let head: serde_json::Value =
            serde_json::from_slice(&text).map_err(|e| bad(format!("not JSON: {e}")))?;
        if head.get("format").and_then(|f| f.as_str()) != Some(FORMAT) {
            return Err(bad(format!(
                "not an sbx-wasm recording (no \"format\": \"{FORMAT}\")"
            )));
        }
        match head.get("version").and_then(serde_json::Value::as_u64) {
            Some(v) if v == u64::from(VERSION) => {}
            v => {
                return Err(bad(format!(
                    "recording version {} is not {VERSION}, the one this build reads",
                    v.map_or("(none)".to_string(), |v| v.to_string())
                )));
            }
        }
        serde_json::from_value(head).map_err(|e| bad(e.to_string()))
    }

    /// Write the recording as one JSON document.
    pub fn write(&self, path: impl AsRef<Path>) -> Result<(), Error> {
        let path = path.as_ref();
        let text = serde_json::to_vec(self).map_err(|e| Error::Recording {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        std::fs::write(path, text).map_err(|e| Error::Recording {
            path: path.to_path_buf(),
            message: e.to_string(),
        })
    }
}

impl From<Result<Output, crate::failure::Failure>> for AnswerResult {
    fn from(r: Result<Output, crate::failure::Failure>) -> Self {
        match r {
            Ok(o) => AnswerResult::Ok(o),
            Err(crate::failure::Failure::Error(e)) => AnswerResult::Error(e),
            Err(crate::failure::Failure::Denied(d)) => AnswerResult::Denied(d),
        }
    }
}

impl From<AnswerResult> for Result<Output, crate::failure::Failure> {
    fn from(r: AnswerResult) -> Self {
        match r {
            AnswerResult::Ok(o) => Ok(o),
            AnswerResult::Error(e) => Err(crate::failure::Failure::Error(e)),
            AnswerResult::Denied(d) => Err(crate::failure::Failure::Denied(d)),
        }
    }
}
