//! The stable names of every refusal, and whether each one halts the run.

use serde::{Deserialize, Serialize};
use std::fmt;

/// Why an operation was refused.
///
/// The `snake_case` names are a contract (reports, audit logs and the wasm
/// `denial` record carry them); they never change meaning. New variants may be
/// added, so match with a wildcard arm.
///
/// A *soft* violation refuses one operation and the run goes on; a *hard* one
/// trips the breaker: the run halts and every later operation is refused.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Violation {
    /// The path had a `..` component (soft).
    PathTraversal,
    /// The path is outside every mount that may be read (soft).
    FsReadDenied,
    /// The path is outside every writable mount (soft).
    FsWriteDenied,
    /// The URL matches no egress rule (soft).
    EgressDenied,
    /// The tool is not on the allow-list, or not registered (soft).
    ToolDenied,
    /// The grant holds no key-value store, or a put would take the store
    /// past its `max_keys` or `max_bytes` (soft).
    KvDenied,
    /// A redirect's next hop would carry a secret's value in its URL (a
    /// bound host echoed the credential into `Location`): the hop is not
    /// dialled (soft).
    SecretInRedirect,
    /// The op would send data carrying a label the grant's `[flow.allow]`
    /// does not let reach its sink (an egress rule, a tool, a write mount,
    /// the key-value store, stdout): nothing is sent (soft).
    FlowDenied,
    /// The request itself is malformed: bad JSON, NUL in a path, a relative
    /// path, an over-long path, an unknown op (soft).
    InvalidRequest,
    /// The operation budget is spent (hard).
    MaxOps,
    /// The output budget is spent (hard).
    MaxOutputBytes,
    /// The wall-time budget is spent (hard).
    MaxWall,
    /// The fuel budget is spent (hard; wasm front door only).
    MaxFuel,
    /// The memory budget is spent (hard; wasm front door only).
    MaxMemory,
    /// The guest overflowed its stack (hard; wasm front door only).
    StackOverflow,
    /// The write quota is spent: more bytes written into write mounts than
    /// `max_write_bytes` (hard).
    MaxWriteBytes,
    /// More files, folders and links created than `max_files` (hard).
    MaxFiles,
    /// More bytes sent to the network than `max_sent_bytes` (hard).
    MaxSentBytes,
    /// The embedder cancelled the run (hard): not the guest's doing. The
    /// report's status is `cancelled`.
    Cancelled,
    /// A replayed run asked for something its recording does not hold (a
    /// different op, or one past its end): the guest or its inputs are not
    /// the recorded ones (hard; `sbx-wasm replay` only).
    ReplayDiverged,
}

impl Violation {
    /// Every violation, soft ones first.
    pub const ALL: [Violation; 20] = [
        Violation::PathTraversal,
        Violation::FsReadDenied,
        Violation::FsWriteDenied,
        Violation::EgressDenied,
        Violation::ToolDenied,
        Violation::KvDenied,
        Violation::SecretInRedirect,
        Violation::FlowDenied,
        Violation::InvalidRequest,
        Violation::MaxOps,
        Violation::MaxOutputBytes,
        Violation::MaxWall,
        Violation::MaxFuel,
        Violation::MaxMemory,
        Violation::StackOverflow,
        Violation::MaxWriteBytes,
        Violation::MaxFiles,
        Violation::MaxSentBytes,
        Violation::Cancelled,
        Violation::ReplayDiverged,
    ];

    /// The stable `snake_case` name.
    pub fn as_str(self) -> &'static str {
        match self {
            Violation::PathTraversal => "path_traversal",
            Violation::FsReadDenied => "fs_read_denied",
            Violation::FsWriteDenied => "fs_write_denied",
            Violation::EgressDenied => "egress_denied",
            Violation::ToolDenied => "tool_denied",
            Violation::KvDenied => "kv_denied",
            Violation::SecretInRedirect => "secret_in_redirect",
            Violation::FlowDenied => "flow_denied",
            Violation::InvalidRequest => "invalid_request",
            Violation::MaxOps => "max_ops",
            Violation::MaxOutputBytes => "max_output_bytes",
            Violation::MaxWall => "max_wall",
            Violation::MaxFuel => "max_fuel",
            Violation::MaxMemory => "max_memory",
            Violation::StackOverflow => "stack_overflow",
            Violation::MaxWriteBytes => "max_write_bytes",
            Violation::MaxFiles => "max_files",
            Violation::MaxSentBytes => "max_sent_bytes",
            Violation::Cancelled => "cancelled",
            Violation::ReplayDiverged => "replay_diverged",
        }
    }

    /// Whether this violation halts the run (a budget), rather than refusing
    /// one operation (a capability).
    pub fn is_hard(self) -> bool {
        matches!(
            self,
            Violation::MaxOps
                | Violation::MaxOutputBytes
                | Violation::MaxWall
                | Violation::MaxFuel
                | Violation::MaxMemory
                | Violation::StackOverflow
                | Violation::MaxWriteBytes
                | Violation::MaxFiles
                | Violation::MaxSentBytes
                | Violation::Cancelled
                | Violation::ReplayDiverged
        )
    }
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A refusal: which rule was broken, whether it halts the run, and a message
/// for people.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Denial {
    /// The stable name of what was broken.
    pub violation: Violation,
    /// `true` when the run is halted (always `violation.is_hard()`).
    pub hard: bool,
    /// What happened, for people; not a contract.
    pub message: String,
}

impl Denial {
    pub(crate) fn new(violation: Violation, message: impl Into<String>) -> Self {
        Denial {
            violation,
            hard: violation.is_hard(),
            message: message.into(),
        }
    }
}

impl fmt::Display for Denial {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = if self.hard { "hard" } else { "soft" };
        write!(f, "{} ({kind}): {}", self.violation, self.message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_match_serde_and_hardness_matches_design() {
        for v in Violation::ALL {
            let json = serde_json::to_string(&v).unwrap();
            assert_eq!(json, format!("\"{}\"", v.as_str()));
        }
        let hard: Vec<_> = Violation::ALL.iter().filter(|v| v.is_hard()).collect();
        assert_eq!(hard.len(), 11);
        assert!(!Violation::EgressDenied.is_hard());
        assert!(Violation::MaxWall.is_hard());
    }
}
