//! The driver: run a whole model-proposed sequence, stop at the first hard
//! limit (the seed's `SandboxedAgent.run_all`).

use crate::gate::Sandbox;
use crate::op::{Op, SandboxResult};
use crate::report::RunReport;
use serde::{Deserialize, Serialize};

/// Why a sequence stopped.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StoppedReason {
    /// Every op was decided.
    Completed,
    /// A budget halted the run; later ops were not attempted.
    HardLimit,
    /// The run was cancelled ([`SandboxBuilder::cancel`](crate::SandboxBuilder::cancel));
    /// later ops were not attempted.
    Cancelled,
}

impl StoppedReason {
    /// `completed`, `hard_limit` or `cancelled`.
    pub fn as_str(self) -> &'static str {
        match self {
            StoppedReason::Completed => "completed",
            StoppedReason::HardLimit => "hard_limit",
            StoppedReason::Cancelled => "cancelled",
        }
    }
}

/// The outcome of [`SandboxedAgent::run_all`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentRun {
    /// One result per attempted op, in order; the last is the hard one when
    /// the run stopped on a hard limit.
    pub results: Vec<SandboxResult>,
    /// Why it stopped.
    pub stopped_reason: StoppedReason,
    /// The run report.
    pub report: RunReport,
}

/// Drives a [`Sandbox`] through a sequence of ops.
///
/// # Examples
///
/// ```
/// use sbx_wasm::{Capabilities, Op, Sandbox, SandboxedAgent, StoppedReason};
///
/// let caps = Capabilities::builder().max_ops(2).build()?;
/// let mut agent = SandboxedAgent::new(Sandbox::new(caps)?);
/// let run = agent.run_all([Op::read("/a"), Op::read("/b"), Op::read("/c"), Op::read("/d")]);
/// assert_eq!(run.stopped_reason, StoppedReason::HardLimit);
/// assert_eq!(run.results.len(), 3);
/// assert!(run.results.last().unwrap().hard());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct SandboxedAgent {
    sandbox: Sandbox,
}

impl SandboxedAgent {
    /// Drive `sandbox`.
    pub fn new(sandbox: Sandbox) -> Self {
        SandboxedAgent { sandbox }
    }

    /// The sandbox, for its audit log and usage.
    pub fn sandbox(&self) -> &Sandbox {
        &self.sandbox
    }

    /// Run ops in order; stop after the first hard result.
    pub fn run_all(&mut self, ops: impl IntoIterator<Item = Op>) -> AgentRun {
        let mut results = Vec::new();
        let mut stopped_reason = StoppedReason::Completed;
        for op in ops {
            let r = self.sandbox.run(op);
            let stop = match (r.hard(), r.violation()) {
                (false, _) => None,
                (true, Some(crate::Violation::Cancelled)) => Some(StoppedReason::Cancelled),
                (true, _) => Some(StoppedReason::HardLimit),
            };
            results.push(r);
            if let Some(reason) = stop {
                stopped_reason = reason;
                break;
            }
        }
        AgentRun {
            results,
            stopped_reason,
            report: self.sandbox.report(),
        }
    }
}
