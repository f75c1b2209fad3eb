//! The driver: run a whole model-proposed sequence, stop at the first hard
//! limit (the seed's `SandboxedAgent.run_all`).

use crate::gate::Sandbox;
use crate::op::{Op, SandboxResult};
use crate::report::{RunReport, Status};
use serde::{Deserialize, Serialize};

/// The outcome of [`SandboxedAgent::run_all`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentRun {
    /// One result per attempted op, in order; the last is the hard one when
    /// the run stopped on a hard limit.
    pub results: Vec<SandboxResult>,
    /// How it ended: `completed`, `hard_limit` or `cancelled` (the run
    /// report's [`Status`], the one "how it ended" type of every door).
    pub stopped_reason: Status,
    /// The run report.
    pub report: RunReport,
}

/// Drives a [`Sandbox`] through a sequence of ops.
///
/// # Examples
///
/// ```
/// use sbx_wasm::{Capabilities, Op, Sandbox, SandboxedAgent, Status};
///
/// let caps = Capabilities::builder().max_ops(2).build()?;
/// let mut agent = SandboxedAgent::new(Sandbox::new(caps)?);
/// let run = agent.run_all([Op::read("/a"), Op::read("/b"), Op::read("/c"), Op::read("/d")]);
/// assert_eq!(run.stopped_reason, Status::HardLimit);
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
        let mut stopped_reason = Status::Completed;
        for op in ops {
            let r = self.sandbox.run(op);
            let stop = match (r.hard(), r.violation()) {
                (false, _) => None,
                (true, Some(crate::Violation::Cancelled)) => Some(Status::Cancelled),
                (true, _) => Some(Status::HardLimit),
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

    /// [`SandboxedAgent::run_all`] from an async runtime: the ops run on a
    /// thread of their own (a fetch or a tool call blocks it, not one of
    /// the caller's workers), and the agent comes back with the run. `Err`
    /// only when no thread could be started for it.
    /// Dropping the future lets the plan finish in the background; give
    /// the sandbox a [`CancelHandle`](crate::CancelHandle) to stop it.
    ///
    /// # Examples
    ///
    /// ```
    /// use sbx_wasm::{Capabilities, Op, Sandbox, SandboxedAgent};
    ///
    /// let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    /// let agent = SandboxedAgent::new(Sandbox::new(Capabilities::builder().build()?)?);
    /// let (agent, run) = rt.block_on(agent.run_all_async(vec![Op::read("/etc/passwd")]))?;
    /// assert_eq!(run.results[0].violation(), Some(sbx_wasm::Violation::FsReadDenied));
    /// assert_eq!(agent.sandbox().audit().len(), 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[cfg(feature = "wasm")]
    pub async fn run_all_async(
        mut self,
        ops: Vec<Op>,
    ) -> Result<(SandboxedAgent, AgentRun), crate::Error> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let worker = move || {
            let run = self.run_all(ops);
            let _ = tx.send((self, run));
        };
        std::thread::Builder::new()
            .name("sbx-plan".into())
            .spawn(worker)
            .map_err(|e| crate::Error::Setup(format!("cannot start a thread for the plan: {e}")))?;
        rx.await
            .map_err(|_| crate::Error::Setup("the plan's thread ended without a result".into()))
    }
}
