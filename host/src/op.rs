//! What the gate answers: [`SandboxResult`], with an allowed op's
//! [`Output`], or the denial, or the [`OpError`] when the world said no.
//! The op itself is [`Op`], one variant per capability
//! (`crate::capability`).

pub(crate) use crate::capability::{Op, Output};
pub(crate) use crate::failure::Failure;
pub use crate::failure::{ErrorKind, OpError};
use crate::violation::{Denial, Violation};
use serde::{Deserialize, Serialize};

/// The gate's answer to one operation. Exactly one of `output`, `denial` and
/// `error` is set; `ok` is `true` only with `output`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SandboxResult {
    /// 1-based sequence number within the run.
    pub seq: u64,
    /// The op (written as its name: `fs_read`, ...).
    pub op: crate::OpName,
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
