//! [`SandboxBuilder`]: what a run is set up with, every default stated,
//! and the sandbox it builds (the mounts opened, the clock started).

use super::Sandbox;
use crate::CancelHandle;
use crate::budget::{OutputMeter, WriteMeter};
use crate::caps::Capabilities;
use crate::error::Error;
use crate::events::EventSink;
use crate::flow::{FlowState, Mark};
use crate::fs::MountTable;
use crate::net::RunSecrets;
use crate::replay::Tape;
use crate::services::Services;
use std::sync::Arc;
use std::time::Duration;

/// Sets up a [`Sandbox`]. Every default:
///
/// | setting | default |
/// |---|---|
/// | [`services`](SandboxBuilder::services) | [`Services::default`]: [`HttpNet`](crate::net::HttpNet), the system resolver, the system's monotonic clock (as [`MonotonicClock`](crate::MonotonicClock) reads it), the run timed from [`build`](SandboxBuilder::build), no tools, an empty in-memory key-value store |
/// | [`output_meter`](SandboxBuilder::output_meter) | a meter of its own with the caps' `max_output_bytes` |
/// | [`write_meter`](SandboxBuilder::write_meter) | a meter of its own with the caps' `max_write_bytes` and `max_files` |
/// | [`cancel`](SandboxBuilder::cancel) | none: the run cannot be cancelled from outside |
/// | [`events`](SandboxBuilder::events) | none: decisions are only in the audit log |
/// | [`labels`](SandboxBuilder::labels) | none: the run starts having read nothing labelled |
pub struct SandboxBuilder {
    caps: Capabilities,
    /// `None` until set: the defaults are made at `build` only if no
    /// services were given (a run always gives its own; making the
    /// defaults first cost each run three allocations it threw away).
    services: Option<Services>,
    output: Option<Arc<OutputMeter>>,
    sent: Option<Arc<OutputMeter>>,
    writes: Option<Arc<WriteMeter>>,
    cancel: Option<CancelHandle>,
    events: Option<EventSink>,
    secrets: Option<RunSecrets>,
    tape: Option<Tape>,
    labels: Mark,
    flow: Option<Arc<FlowState>>,
    results_to_caller: bool,
}

impl SandboxBuilder {
    /// Start the run holding the labels of `mark`, as if it had read them
    /// (the mark of an earlier run whose data this one can see: an MCP
    /// session's previous calls, through its scratch folder). Default:
    /// none.
    pub fn labels(mut self, mark: Mark) -> Self {
        self.labels = mark;
        self
    }

    /// Share `state` as the run's mark (the wasm host shares it with the
    /// guest's stdout, stderr and file output streams); its op results go
    /// to the guest, not back to the caller. Default: a mark of its own,
    /// started from [`labels`](Self::labels), results to the caller.
    pub(crate) fn guest_flow(mut self, state: Arc<FlowState>) -> Self {
        self.flow = Some(state);
        self.results_to_caller = false;
        self
    }

    /// Record the run, or answer it from a recording (the wasm door's
    /// `record` and `replay`). Default: neither.
    #[cfg_attr(not(feature = "wasm"), allow(dead_code))]
    pub(crate) fn tape(mut self, tape: Tape) -> Self {
        self.tape = Some(tape);
        self
    }

    /// The run's secret placeholders (the wasm door binds them before the
    /// guest's env is made). Default: fresh random ones.
    #[cfg_attr(not(feature = "wasm"), allow(dead_code))]
    pub(crate) fn secrets(mut self, secrets: RunSecrets) -> Self {
        self.secrets = Some(secrets);
        self
    }

    /// Send each decision to `sink` as it is made (see [`EventSink`]).
    /// Default: none.
    pub fn events(mut self, sink: EventSink) -> Self {
        self.events = Some(sink);
        self
    }

    /// Let `cancel` end the run: once cancelled, the next op (or a fetch
    /// or tool call in flight, abandoned) is refused as `cancelled`, a hard
    /// refusal that halts the run (see [`CancelHandle`]). Default: none.
    pub fn cancel(mut self, cancel: CancelHandle) -> Self {
        self.cancel = Some(cancel);
        self
    }

    /// Share `meter` as the write quota (`max_write_bytes`, `max_files`);
    /// the wasm host shares it with the guest's file output streams.
    /// Default: a meter of its own with the caps' budget.
    pub fn write_meter(mut self, meter: Arc<WriteMeter>) -> Self {
        self.writes = Some(meter);
        self
    }

    /// Share `meter` as the `max_output_bytes` meter (the wasm host shares it
    /// with the guest's stdout and stderr). Default: a meter of its own with
    /// the caps' budget.
    pub fn output_meter(mut self, meter: Arc<OutputMeter>) -> Self {
        self.output = Some(meter);
        self
    }

    /// Share `meter` as the `max_sent_bytes` meter (the wasm host shares it
    /// with the guest's sockets, whose writes do not pass the gate call by
    /// call). Default: a meter of its own with the caps' budget.
    #[cfg_attr(not(feature = "wasm"), allow(dead_code))]
    pub(crate) fn sent_meter(mut self, meter: Arc<OutputMeter>) -> Self {
        self.sent = Some(meter);
        self
    }

    /// Perform allowed effects with `services` (the network client, the
    /// resolver, the clock, the tools, the key-value store; see [`Services`] for each
    /// default).
    pub fn services(mut self, services: Services) -> Self {
        self.services = Some(services);
        self
    }

    /// Open the mounts and start the wall clock.
    pub fn build(self) -> Result<Sandbox, Error> {
        let mounts = MountTable::open(self.caps.mounts_shared(), self.caps.folders()).map_err(
            |(m, source)| Error::Mount {
                guest: m.guest.to_string(),
                host: m.host,
                source,
            },
        )?;
        let services = self.services.unwrap_or_default();
        let start = services.now();
        let secrets = self
            .secrets
            .unwrap_or_else(|| RunSecrets::bind(self.caps.secrets(), None));
        let output = self
            .output
            .unwrap_or_else(|| Arc::new(OutputMeter::new(self.caps.budget().max_output_bytes)));
        let b = self.caps.budget();
        let writes = self
            .writes
            .unwrap_or_else(|| Arc::new(WriteMeter::new(b.max_write_bytes, b.max_files)));
        let flow = self
            .flow
            .unwrap_or_else(|| Arc::new(FlowState::new(self.caps.flow().clone(), self.labels)));
        let sent = self
            .sent
            .unwrap_or_else(|| Arc::new(OutputMeter::new(b.max_sent_bytes)));
        Ok(Sandbox {
            flow,
            sent,
            results_to_caller: self.results_to_caller,
            brought: Vec::new(),
            evidence: None,
            output,
            writes,
            caps: self.caps,
            mounts,
            services,
            cancel: self.cancel,
            tool_cancel: std::sync::OnceLock::new(),
            events: self.events,
            start,
            elapsed: Duration::ZERO,
            seq: 0,
            ops: 0,
            halted: None,
            audit: Vec::new(),
            denials: Vec::new(),
            secrets,
            tape: self.tape,
            asked: None,
        })
    }
}

impl Sandbox {
    /// Start configuring a sandbox for `caps`.
    pub fn builder(caps: Capabilities) -> SandboxBuilder {
        SandboxBuilder {
            caps,
            services: None,
            output: None,
            sent: None,
            writes: None,
            cancel: None,
            events: None,
            secrets: None,
            tape: None,
            labels: Mark::default(),
            flow: None,
            results_to_caller: true,
        }
    }

    /// A sandbox with the defaults of [`SandboxBuilder`].
    pub fn new(caps: Capabilities) -> Result<Self, Error> {
        Self::builder(caps).build()
    }
}
