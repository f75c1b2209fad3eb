//! The audit log (one event per gated decision) and the run report.

use crate::budget::{Budget, Usage};
use crate::violation::Violation;
use serde::{Deserialize, Serialize};

/// One gated decision, allowed or denied. Written as one JSON line each.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditEvent {
    /// 1-based sequence number within the run.
    pub seq: u64,
    /// The op (written as its name: `fs_read`, `stdout`, ...); compare it
    /// with an [`OpKind`](crate::OpKind) or a name.
    pub op: crate::OpName,
    /// Path, URL or tool name.
    pub target: String,
    /// `allowed`; `denied` (refused: not performed); or `interrupted`
    /// (allowed, begun, then cut short by a budget or a cancel: it may have
    /// taken effect, and `detail` says how far it is known to have got).
    pub decision: Decision,
    /// The violation, when denied or interrupted.
    pub violation: Option<Violation>,
    /// Whether the decision halted the run.
    pub hard: bool,
    /// The rule that allowed it.
    pub rule: Option<String>,
    /// Bytes returned to the caller.
    pub bytes: u64,
    /// For fetches: the address actually dialled (last hop).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub address: Option<String>,
    /// For fetches: the HTTP status received (last hop).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// For fetches: redirects followed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redirects: Option<u32>,
    /// For fetches: the secrets put into the request (names only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub secrets: Vec<String>,
    /// The labels (the grant's `[flow]`) what the op read carries: the
    /// run holds them from then on.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub labels: Vec<String>,
    /// For a send, when the grant asks for evidence (`[flow] evidence`):
    /// the label of labelled bytes found in what it sends, and their form
    /// (`customer (base64)`). A note, never the decision.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence: Option<String>,
    /// Why an allowed effect failed, or the denial message.
    pub detail: Option<String>,
    /// Milliseconds since the run started, on the injected clock.
    pub elapsed_ms: u64,
}

/// A refused op, as listed in the report.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DenialRecord {
    /// Sequence number.
    pub seq: u64,
    /// The op (written as its name: `fs_read`, `stdout`, ...); compare it
    /// with an [`OpKind`](crate::OpKind) or a name.
    pub op: crate::OpName,
    /// Path, URL or tool name.
    pub target: String,
    /// What was broken.
    pub violation: Violation,
    /// Whether it halted the run.
    pub hard: bool,
}

/// Limits, under the same keys as [`Usage`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limits {
    /// `max_ops`.
    pub ops: u64,
    /// `max_output_bytes`.
    pub output_bytes: u64,
    /// `max_fuel`; `None` for a wall-only grant (fuel not metered).
    pub fuel: Option<u64>,
    /// `max_wall_ms`.
    pub wall_ms: u64,
    /// `max_memory_bytes`.
    pub memory_peak_bytes: u64,
    /// `max_write_bytes`.
    #[serde(default)]
    pub write_bytes: u64,
    /// `max_files`.
    #[serde(default)]
    pub files: u64,
    /// `max_sent_bytes`.
    #[serde(default)]
    pub sent_bytes: u64,
}

impl RunReport {
    /// The report of a run refused before its guest started, for `why`,
    /// under `budget`'s limits (nothing used).
    pub fn refused(budget: &Budget, why: impl Into<String>) -> RunReport {
        RunReport {
            status: Status::Refused,
            exit_code: None,
            violation: None,
            usage: Usage::default(),
            limits: Limits::from(budget),
            denials: Vec::new(),
            kernel_wall: None,
            notes: vec![why.into()],
            labels: Default::default(),
            secret_uses: Vec::new(),
            error: None,
        }
    }
}

impl From<&Budget> for Limits {
    fn from(b: &Budget) -> Self {
        Limits {
            ops: b.max_ops,
            output_bytes: b.max_output_bytes,
            fuel: b.meter_fuel.then_some(b.max_fuel),
            wall_ms: u64::try_from(b.max_wall.as_millis()).unwrap_or(u64::MAX),
            memory_peak_bytes: b.max_memory_bytes,
            write_bytes: b.max_write_bytes,
            files: b.max_files,
            sent_bytes: b.max_sent_bytes,
        }
    }
}

/// How a run ended, and the exit code `sbx-wasm run` gives for it:
///
/// | status | `exit_code` | `sbx-wasm run` exits |
/// |---|---|---|
/// | `completed` | `Some(0)` for a guest whose `main` returned (`None` for a plan) | 0 |
/// | `exited` | the guest's code: a script's own (`sys.exit(3)`, `process.exit(3)`: its runner tells the host), 1 for a component that exits with WASI 0.2's failure | that code (1 when its low 8 bits are 0) |
/// | `hard_limit` | `None` | 124 (`exec`: 3) |
/// | `trapped` | `None` | 123 |
/// | `cancelled` | `None` | 130 |
/// | `refused` | `None` | 125 |
///
/// A run that handled its soft denials still `completed`: a denial is a
/// value the guest sees, not how the run ended. A script that ended on an
/// uncaught exception is `exited` 1 with [`RunReport::error`] set.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Every op was decided; none halted the run.
    Completed,
    /// A budget halted the run.
    HardLimit,
    /// The guest trapped (wasm front door only).
    Trapped,
    /// The guest exited with a code (wasm front door only).
    Exited,
    /// The embedder cancelled the run ([`crate::CancelHandle`]); the
    /// report and audit hold what was done before.
    Cancelled,
    /// The guest never started: the component, the grant or the setup was
    /// refused before the run (the report's `notes` say why). Written by
    /// the command line when a report was asked for.
    Refused,
}

impl Status {
    /// The stable `snake_case` name (as in reports).
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Completed => "completed",
            Status::HardLimit => "hard_limit",
            Status::Trapped => "trapped",
            Status::Exited => "exited",
            Status::Cancelled => "cancelled",
            Status::Refused => "refused",
        }
    }
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The report of one run. Always produced, also after a hard halt.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunReport {
    /// How the run ended.
    pub status: Status,
    /// The guest's exit code (wasm front door only).
    pub exit_code: Option<i32>,
    /// The hard violation that halted the run, if any.
    pub violation: Option<Violation>,
    /// What was used.
    pub usage: Usage,
    /// What was allowed.
    pub limits: Limits,
    /// Every refused op.
    pub denials: Vec<DenialRecord>,
    /// Whether the kernel second wall was up for this run (wasm front door
    /// with confinement asked for; see `sbx_wasm::confine`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel_wall: Option<KernelWall>,
    /// What else happened that a reader should know (wasm front door: a
    /// stdout or stderr whose reader went away).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// The labels the run read (see `[flow]`), each with the op that
    /// brought it in; what a later run that sees this one's data should
    /// start from ([`SandboxBuilder::labels`](crate::SandboxBuilder::labels)).
    #[serde(default, skip_serializing_if = "crate::flow::Mark::is_empty")]
    pub labels: crate::flow::Mark,
    /// Which secrets each fetch carried (names only), in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub secret_uses: Vec<SecretUse>,
    /// For a script that ended on an uncaught exception (status `exited`),
    /// the exception as its runner reported it: its type, message and the
    /// script's line. The script's stderr has the whole traceback.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ScriptError>,
}

/// The exception a script ended on, as the script's runner reported it
/// ([`RunReport::error`]). Each field is what the guest said (bounded):
/// a hostile script can make it say anything, as it can its stderr.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScriptError {
    /// The exception's type (`ValueError`, `json.decoder.JSONDecodeError`,
    /// `TypeError`, `SyntaxError`).
    pub kind: String,
    /// Its message.
    pub message: String,
    /// The script's line it was raised at, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
}

/// The secrets one fetch carried.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SecretUse {
    /// The fetch's sequence number.
    pub seq: u64,
    /// Its URL (as recorded in the audit log).
    pub target: String,
    /// The secrets' names.
    pub secrets: Vec<String>,
}

/// What the gate decided about one op (`snake_case` on the wire). Compares
/// equal to its name (`event.decision == "denied"`).
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// Allowed, and performed.
    Allowed,
    /// Refused: not performed.
    Denied,
    /// Allowed and begun, then cut short by a budget or a cancel: it may
    /// have taken effect.
    Interrupted,
}

impl Decision {
    /// The `snake_case` name.
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Allowed => "allowed",
            Decision::Denied => "denied",
            Decision::Interrupted => "interrupted",
        }
    }
}

impl std::fmt::Display for Decision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq<str> for Decision {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for Decision {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

/// Landlock's verdict on a run's kernel wall (`snake_case` on the wire).
#[non_exhaustive]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Landlock {
    /// Every right asked for is enforced.
    FullyEnforced,
    /// This kernel's Landlock enforces some of them.
    PartiallyEnforced,
    /// Nothing is enforced (no Landlock, or it failed).
    #[default]
    NotEnforced,
    /// The wall was not asked for (`--no-kernel-confinement`).
    Off,
}

impl Landlock {
    /// The `snake_case` name.
    pub fn as_str(self) -> &'static str {
        match self {
            Landlock::FullyEnforced => "fully_enforced",
            Landlock::PartiallyEnforced => "partially_enforced",
            Landlock::NotEnforced => "not_enforced",
            Landlock::Off => "off",
        }
    }
}

impl std::fmt::Display for Landlock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What the kernel enforced around a run, besides wasm isolation.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KernelWall {
    /// Everything asked for is enforced.
    pub up: bool,
    /// Landlock's verdict.
    pub landlock: Landlock,
    /// Files: reads only beneath read mounts, writes only beneath write
    /// mounts (plus the listed runtime paths).
    pub filesystem: bool,
    /// TCP connect: `ports 80, 443`, `none`, or `not restricted (why)`.
    pub network: String,
    /// `PR_SET_NO_NEW_PRIVS` is set.
    pub no_new_privs: bool,
    /// The seccomp filter (no process creation, no kernel-facing admin
    /// calls) is installed on every thread.
    pub seccomp: bool,
    /// What else to know: runtime paths granted and why, what could not be
    /// enforced.
    pub notes: Vec<String>,
}
