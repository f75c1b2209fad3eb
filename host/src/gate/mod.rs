//! The gate: every operation is charged, checked, performed and audited here,
//! in that order: the pipeline is [`Sandbox::run`] in this file; its setup
//! is `builder.rs`, the check `check.rs`, the flow rules `flow.rs`, the
//! effects `effect.rs`, the records `record.rs`, and the entry points of a
//! door that performs effects itself (the wasm host's WASI) `door.rs`.
//! Nothing here may panic on any input, and no effect happens before the
//! check allows it.

mod ask;
mod builder;
mod check;
#[cfg(feature = "wasm")]
mod door;
mod effect;
mod flow;
mod record;

pub use builder::SandboxBuilder;
pub(crate) use record::Decided;

use crate::CancelHandle;
use crate::budget::{OutputMeter, Usage, WriteMeter};
use crate::capability::Trace;
use crate::caps::Capabilities;
use crate::events::EventSink;
use crate::flow::{FlowState, Mark};
use crate::fs::MountTable;
use crate::net::RunSecrets;
use crate::op::{Failure, Op, Output, SandboxResult};
use crate::replay::Tape;
use crate::report::{AuditEvent, DenialRecord, Limits, RunReport, Status};
use crate::services::Services;
use crate::violation::{Denial, Violation};
use std::sync::Arc;
use std::time::Duration;

/// A capability-gated executor for one run.
///
/// Each [`Sandbox::run`] charges `max_ops` and `max_wall` (hard), checks the
/// capability (soft), performs the effect through the mount handles, the
/// [`Net`](crate::net::Net) or the [`ToolRegistry`](crate::tools::ToolRegistry), then charges `max_output_bytes` (hard).
/// After a hard violation every later op is refused with `hard = true`.
///
/// # Examples
///
/// ```
/// use sbx_wasm::{Capabilities, Op, Sandbox, Violation};
///
/// let data = tempfile::tempdir()?;
/// std::fs::write(data.path().join("a.txt"), "hello")?;
/// let caps = Capabilities::builder().read_mount(data.path(), "/work").build()?;
/// let mut sandbox = Sandbox::new(caps)?;
///
/// assert!(sandbox.run(Op::read("/work/a.txt")).ok);
/// let denied = sandbox.run(Op::read("/etc/passwd"));
/// assert_eq!(denied.violation(), Some(Violation::FsReadDenied));
/// assert!(!denied.hard());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Sandbox {
    caps: Capabilities,
    mounts: MountTable,
    /// The backends, whole: capabilities take what they need from them
    /// (`Held`), so a new backend adds nothing here.
    services: Services,
    cancel: Option<CancelHandle>,
    /// The switch a tool is lent when the run has no cancel switch: made
    /// at the run's first tool call and lent to each after (a new one per
    /// call was an allocation per call). Nothing outside throws it; a tool
    /// that throws its own reaches only this run's later tool calls.
    tool_cancel: std::sync::OnceLock<CancelHandle>,
    events: Option<EventSink>,
    start: Duration,
    elapsed: Duration,
    seq: u64,
    ops: u64,
    output: Arc<OutputMeter>,
    /// `max_sent_bytes`'s meter, shared with the wasm host's sockets.
    sent: Arc<OutputMeter>,
    writes: Arc<WriteMeter>,
    halted: Option<Denial>,
    audit: Vec<AuditEvent>,
    denials: Vec<DenialRecord>,
    secrets: RunSecrets,
    tape: Option<Tape>,
    /// What the run asked for (the grant's `[ask]`) and was answered.
    asked: Option<Box<ask::Asked>>,
    /// The run's label mark under the grant's `[flow]`.
    flow: Arc<FlowState>,
    /// Whether op results go back to the caller (a plan) rather than to a
    /// guest: then what an op brings in must be able to reach `stdout`.
    results_to_caller: bool,
    /// The labels the op being decided brought in, for its record.
    brought: Vec<String>,
    /// Labelled bytes found in what the op being decided sends.
    evidence: Option<String>,
}

/// How [`Sandbox::run_with`] treats an op that passes the check.
#[derive(Clone, Copy)]
enum Mode<'a> {
    /// Perform its effect here.
    Perform,
    /// Someone else performs it (WASI); check it against the mount the
    /// descriptor it goes through belongs to, when given.
    Admit(Option<&'a str>),
}

impl Sandbox {
    /// Each secret's name and this run's placeholder for it: what a
    /// guest's env var of that name holds. A plan may use the placeholder
    /// or `{{secret:NAME}}`.
    pub fn secret_placeholders(&self) -> Vec<(String, String)> {
        self.secrets.placeholders()
    }

    /// The grant.
    pub fn caps(&self) -> &Capabilities {
        &self.caps
    }

    /// The hard violation that halted the run, if any.
    pub fn halted(&self) -> Option<&Denial> {
        self.halted.as_ref()
    }

    /// Whether the run's cancel switch was thrown.
    pub fn cancelled(&self) -> bool {
        crate::cancel::is_cancelled(self.cancel.as_ref())
    }

    /// What the run has used so far.
    pub fn usage(&self) -> Usage {
        Usage {
            ops: self.ops,
            output_bytes: self.output.used(),
            fuel: None,
            wall_ms: u64::try_from(self.elapsed.as_millis()).unwrap_or(u64::MAX),
            wall_us: u64::try_from(self.elapsed.as_micros()).unwrap_or(u64::MAX),
            memory_peak_bytes: None,
            write_bytes: self.writes.bytes(),
            files: self.writes.files(),
            sent_bytes: self.sent.used(),
        }
    }

    /// The labels the run has read so far, and what brought each in
    /// (empty when the grant labels nothing).
    pub fn labels(&self) -> Mark {
        self.flow.mark()
    }

    /// Every decision so far.
    pub fn audit(&self) -> &[AuditEvent] {
        &self.audit
    }

    /// The audit log, moved out (the wasm door hands it to the caller at
    /// the end of a run instead of copying every record).
    #[cfg_attr(not(feature = "wasm"), allow(dead_code))]
    pub(crate) fn take_audit(&mut self) -> Vec<AuditEvent> {
        self.record_stream_refusals();
        std::mem::take(&mut self.audit)
    }

    /// The report of the run so far.
    pub fn report(&self) -> RunReport {
        self.report_with(self.denials.clone())
    }

    /// The report at the end of a run, its denial list moved out rather
    /// than copied (the wasm door; the sandbox is dropped next).
    #[cfg_attr(not(feature = "wasm"), allow(dead_code))]
    pub(crate) fn take_report(&mut self) -> RunReport {
        self.record_stream_refusals();
        let denials = std::mem::take(&mut self.denials);
        self.report_with(denials)
    }

    fn report_with(&self, denials: Vec<DenialRecord>) -> RunReport {
        RunReport {
            status: match &self.halted {
                Some(d) if d.violation == Violation::Cancelled => Status::Cancelled,
                Some(_) => Status::HardLimit,
                None => Status::Completed,
            },
            exit_code: None,
            violation: self.halted.as_ref().map(|d| d.violation),
            usage: self.usage(),
            limits: Limits::from(self.caps.budget()),
            denials,
            kernel_wall: None,
            notes: match self.events.as_ref().map(EventSink::dropped) {
                Some(n) if n > 0 => vec![format!(
                    "{n} events were dropped: the event channel was full or closed"
                )],
                _ => Vec::new(),
            },
            labels: self.flow.mark(),
            secret_uses: self
                .audit
                .iter()
                .filter(|e| !e.secrets.is_empty())
                .map(|e| crate::report::SecretUse {
                    seq: e.seq,
                    target: e.target.clone(),
                    secrets: e.secrets.clone(),
                })
                .collect(),
            error: None,
        }
    }

    /// Charge, check and audit a filesystem op whose effect someone else
    /// performs (the wasm host lets WASI perform it through its preopens).
    /// `Ok` names the rule; `Err` is the denial (hard ones halt the run).
    pub fn admit(&mut self, op: Op) -> Result<String, Denial> {
        match self.run_with(op, Mode::Admit(None)).outcome {
            Err(Failure::Denied(d)) => Err(d),
            _ => Ok(self
                .audit
                .last()
                .and_then(|e| e.rule.clone())
                .unwrap_or_default()),
        }
    }

    /// Run one operation through the gate. Never panics; a denial is a value.
    pub fn run(&mut self, op: Op) -> SandboxResult {
        let decided = self.run_with(op, Mode::Perform);
        self.dress(decided)
    }

    /// [`Sandbox::run`] for a door that needs only the outcome (the wasm
    /// imports): the same charges, check, effect and record, without
    /// copying the record's strings into a result.
    #[cfg_attr(not(feature = "wasm"), allow(dead_code))]
    pub(crate) fn decide(&mut self, op: Op) -> Decided {
        self.run_with(op, Mode::Perform)
    }

    fn run_with(&mut self, op: Op, mode: Mode<'_>) -> Decided {
        self.record_stream_refusals();
        self.seq += 1;
        if let Some(h) = &self.halted {
            let d = Denial {
                violation: h.violation,
                hard: true,
                message: format!(
                    "the run was halted by {}; no further operations",
                    h.violation
                ),
            };
            return self.finish(op, None, Err(Failure::Denied(d)));
        }
        if self.cancelled() {
            let d = Denial::new(
                Violation::Cancelled,
                "the run was cancelled; nothing was performed",
            );
            return self.finish(op, None, Err(Failure::Denied(d)));
        }
        if let Some(Tape::Replay(rec)) = &self.tape
            && let Some(d) = crate::replay::diverges(rec, self.seq, &op)
        {
            return self.finish(op, None, Err(Failure::Denied(d)));
        }
        self.ops += 1;
        self.elapsed = self.services.now().saturating_sub(self.start);
        let budget = *self.caps.budget();
        if self.ops > budget.max_ops {
            let d = Denial::new(
                Violation::MaxOps,
                format!(
                    "operation {} exceeds max_ops = {}",
                    self.ops, budget.max_ops
                ),
            );
            return self.finish(op, None, Err(Failure::Denied(d)));
        }
        if self.elapsed > budget.max_wall {
            let d = Denial::new(
                Violation::MaxWall,
                format!(
                    "{} ms elapsed, over max_wall_ms = {}",
                    self.elapsed.as_millis(),
                    budget.max_wall.as_millis()
                ),
            );
            return self.finish(op, None, Err(Failure::Denied(d)));
        }
        let checked = match mode {
            Mode::Admit(Some(via)) => self.check_via(&op, via),
            _ => self.check(&op),
        };
        let mut permit = match checked.or_else(|d| self.ask(&op, d)) {
            Ok(permit) => permit,
            Err(d) => return self.finish(op, None, Err(Failure::Denied(d))),
        };
        let admitted = matches!(mode, Mode::Admit(_));
        let incoming = match self.flow_check(&op, &permit, permit.rule(), admitted) {
            Ok(incoming) => incoming,
            Err(d) => return self.finish(op, None, Err(Failure::Denied(d))),
        };
        let rule = self.mark(permit.take_rule());
        if admitted {
            self.flow_raise(&op, incoming, &Trace::default());
            let mut decided = self.finish(op, Some(rule), Ok(Output::Admitted));
            decided.permit = Some(permit);
            return decided;
        }
        if let Some(sink) = &self.events {
            sink.send(crate::events::Event::Started {
                seq: self.seq,
                op: op.name(),
                target: crate::bound::record_target(op.target()),
            });
        }
        let scripted = match &mut self.tape {
            Some(Tape::Script(script)) => script.next(&op),
            _ => None,
        };
        let (outcome, trace) = match (&self.tape, scripted) {
            // Answered as recorded, or as scripted: nothing performed.
            (_, Some(answer)) => answer,
            (Some(Tape::Replay(rec)), None) => {
                let (outcome, trace) = crate::replay::answer(rec, self.seq);
                // What the recorded run sent counts as sent again: the
                // replay's report is the recording's. (It fitted the same
                // grant's budget then.)
                let _ = self.charge_sent(trace.sent_bytes);
                (outcome, trace)
            }
            _ => self.perform(&op, permit),
        };
        if let Some(Tape::Record(rec)) = &mut self.tape {
            rec.answer(self.seq, &outcome, &trace);
        }
        self.flow_raise(&op, incoming, &trace);
        if let Ok(out) = &outcome {
            self.flow_fingerprint(out);
        }
        if op.request().is_some_and(|r| r.slow()) {
            // A fetch or a tool may take most of the budget: the record and
            // the report say when it ended, not when it began. (File ops
            // take no time worth a clock reading: a tick clock advances
            // once per op for them.)
            self.elapsed = self.services.now().saturating_sub(self.start);
        }
        let rule = trace.rule.clone().unwrap_or(rule);
        let outcome = match outcome {
            Ok(out) => {
                let bytes = out.charged_bytes();
                if self.output.try_charge(bytes) {
                    Ok(out)
                } else {
                    Err(Failure::Denied(self.output_denial(bytes)))
                }
            }
            Err(f) => Err(f),
        };
        self.finish_traced(op, Some(rule), outcome, &trace)
    }
}

#[cfg(test)]
mod tests;
