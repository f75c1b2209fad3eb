//! What a component run needs besides the component ([`RunOptions`]), and
//! what it gives back ([`WasmRun`]).

use super::output::Sink;
use crate::CancelHandle;
use crate::caps::Capabilities;
use crate::events::EventSink;
use crate::report::{AuditEvent, RunReport};
use crate::services::Services;
use crate::tools::ToolRegistry;

/// How to run one component: the grant, and everything around it. Built
/// from [`RunOptions::new`] with one method per setting; `Clone`, so one
/// set of options can start many runs. Every default:
///
/// | setting | default |
/// |---|---|
/// | [`program_name`](RunOptions::program_name) | `agent` (the guest's `argv[0]`) |
/// | [`args`](RunOptions::args) | none |
/// | [`stdin`](RunOptions::stdin) | empty; [`inherit_stdin`](RunOptions::inherit_stdin) off |
/// | [`stdout`](RunOptions::stdout), [`stderr`](RunOptions::stderr) | captured: returned in [`WasmRun::stdout`] and [`WasmRun::stderr`] (bounded by `max_output_bytes`) |
/// | [`services`](RunOptions::services) | [`Services::default`]: [`HttpNet`](crate::net::HttpNet), the system resolver, a [`MonotonicClock`](crate::MonotonicClock) (a 1 ms [`TickClock`](crate::TickClock) when deterministic), no tools, an empty in-memory key-value store |
/// | [`deterministic`](RunOptions::deterministic) | off: real clocks and randomness |
/// | [`cancel`](RunOptions::cancel) | none |
/// | [`events`](RunOptions::events) | none |
/// | [`confine`](RunOptions::confine) | none: no kernel wall |
/// | [`in_place`](RunOptions::in_place) | off: an async run gets a thread of its own |
/// | [`record`](RunOptions::record) | off: [`WasmRun::recording`] is `None` |
/// | [`private_tmp`](RunOptions::private_tmp) | off (the Python doors turn it on) |
/// | [`labels`](RunOptions::labels) | none: the run starts having read nothing labelled |
/// | [`admission`](RunOptions::admission) | wait for a run slot up to the grant's `max_wall` ([`Admission::WaitUpToWall`](super::Admission)) |
///
/// # Examples
///
/// ```
/// use sbx_wasm::{CancelHandle, Capabilities};
/// use sbx_wasm::wasm::RunOptions;
///
/// let cancel = CancelHandle::new();
/// let opts = RunOptions::new(Capabilities::builder().build()?)
///     .args(["--task", "summarize"])
///     .stdin("input text")
///     .cancel(cancel.clone());
/// assert_eq!(opts.caps().budget().max_ops, 10_000);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct RunOptions {
    pub(super) caps: Capabilities,
    /// `agent` unless set: a name of our own costs no copy.
    pub(super) program_name: std::borrow::Cow<'static, str>,
    pub(super) args: Vec<String>,
    /// Shared, not copied, by the guest's stdin stream (empty: none made).
    pub(super) stdin: bytes::Bytes,
    pub(super) inherit_stdin: bool,
    pub(super) stdout: Option<Sink>,
    pub(super) stderr: Option<Sink>,
    /// `None` until given: the defaults are made when the run begins, and
    /// only when no services were given (options given services never
    /// build the defaults only to drop them).
    pub(super) services: Option<Services>,
    pub(super) deterministic: Option<u64>,
    pub(super) cancel: Option<CancelHandle>,
    pub(super) events: Option<EventSink>,
    /// Boxed: nearly every run has none, and the options move.
    pub(super) confine: Option<Box<(crate::confine::Policy, bool)>>,
    pub(super) in_place: bool,
    pub(super) tape: Option<crate::replay::TapeSpec>,
    pub(super) private_tmp: bool,
    pub(super) labels: crate::flow::Mark,
    pub(super) admission: super::Admission,
}

impl RunOptions {
    /// Options for a run under `caps`, with the defaults above.
    pub fn new(caps: Capabilities) -> Self {
        RunOptions {
            caps,
            program_name: std::borrow::Cow::Borrowed("agent"),
            args: Vec::new(),
            stdin: bytes::Bytes::new(),
            inherit_stdin: false,
            stdout: None,
            stderr: None,
            services: None,
            deterministic: None,
            cancel: None,
            events: None,
            confine: None,
            in_place: false,
            tape: None,
            private_tmp: false,
            labels: crate::flow::Mark::default(),
            admission: super::Admission::default(),
        }
    }

    /// How the run waits for a slot when its host runs
    /// [`max_concurrent`](super::WasmHost::max_concurrent) guests already
    /// (see [`Admission`](super::Admission)).
    pub fn admission(mut self, admission: super::Admission) -> Self {
        self.admission = admission;
        self
    }

    /// Start the run holding the labels of `mark` (under the grant's
    /// `[flow]`), as if it had read them: the mark of an earlier run whose
    /// data this one can see (an MCP session's previous calls).
    pub fn labels(mut self, mark: crate::flow::Mark) -> Self {
        self.labels = mark;
        self
    }

    /// Give the guest a fresh, empty, writable folder at `/tmp` (so
    /// Python's `tempfile` works), removed after the run. What is written
    /// there counts against `max_write_bytes` and `max_files` like any write
    /// mount; audit rules name it `write mount /tmp (private to the run)`;
    /// a kernel wall allows it. Nothing when the grant mounts `/tmp` or `/`
    /// itself.
    pub fn private_tmp(mut self) -> Self {
        self.private_tmp = true;
        self
    }

    /// Options that run a component as `replay` recorded it: the recorded
    /// grant over the replay's copies of the mounts, the recorded `argv`,
    /// stdin and seed; fetches and tool calls answered from the recording
    /// (tools registered as stand-ins, never run).
    pub fn replaying(replay: &crate::replay::Replay) -> Self {
        let caps = replay.caps().clone();
        let rec = replay.recording();
        RunOptions::new(caps.clone())
            .program_name(rec.program_name.clone())
            .args(rec.args.clone())
            .stdin(rec.stdin.0.clone())
            .deterministic(rec.seed)
            .services(
                Services::default()
                    .tools(ToolRegistry::stand_ins(caps.tools(), "not run by a replay")),
            )
            .tape(crate::replay::TapeSpec::Replay(replay.shared()))
    }

    /// Lend the script runner at `runner` its own folders
    /// ([`with_runner_mounts`](super::runner::with_runner_mounts)), as a
    /// run of it had them: for a replay, whose recorded grant leaves them
    /// out (they are the runner's, never the grant's).
    pub fn runner_mounts<L: super::runner::Language>(
        mut self,
        runner: &std::path::Path,
    ) -> Result<Self, super::LoadError> {
        self.caps = super::runner::with_runner_mounts::<L>(&self.caps, runner)?;
        Ok(self)
    }

    /// The grant.
    pub fn caps(&self) -> &Capabilities {
        &self.caps
    }

    /// Record the run: [`WasmRun::recording`] then holds what the host
    /// handed the guest (see [`crate::replay`]), keeping at most `limit`
    /// bytes of file contents and listings (past it a file is kept by size
    /// only, and the recording says so). A recorded run is deterministic:
    /// with the seed of [`deterministic`](RunOptions::deterministic) when
    /// set, else a fresh random one. Its stdin must be given as bytes
    /// ([`stdin`](RunOptions::stdin)), not inherited.
    pub fn record(mut self, limit: u64) -> Self {
        self.tape = Some(crate::replay::TapeSpec::Record { limit });
        self
    }

    pub(crate) fn tape(mut self, tape: crate::replay::TapeSpec) -> Self {
        self.tape = Some(tape);
        self
    }

    /// `argv[0]` as the guest sees it.
    pub fn program_name(mut self, name: impl Into<String>) -> Self {
        self.program_name = std::borrow::Cow::Owned(name.into());
        self
    }

    /// Arguments after `argv[0]`.
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.args = args.into_iter().map(Into::into).collect();
        self
    }

    /// Standard input, whole.
    pub fn stdin(mut self, bytes: impl Into<Vec<u8>>) -> Self {
        self.stdin = bytes::Bytes::from(bytes.into());
        self
    }

    /// Give the guest this process's standard input instead, streamed as
    /// the guest reads it (never read ahead, so an open pipe the guest never
    /// reads does not hold the run).
    pub fn inherit_stdin(mut self, inherit: bool) -> Self {
        self.inherit_stdin = inherit;
        self
    }

    /// Stream guest stdout to `sink` as it is written, instead of capturing
    /// it (then [`WasmRun::stdout`] is empty).
    pub fn stdout(mut self, sink: Sink) -> Self {
        self.stdout = Some(sink);
        self
    }

    /// Stream guest stderr to `sink`, instead of capturing it.
    pub fn stderr(mut self, sink: Sink) -> Self {
        self.stderr = Some(sink);
        self
    }

    /// Perform allowed effects with `services` (the network client, the
    /// resolver, the clock, the tools, the key-value store; see [`Services`] for each
    /// default). The clock is the gate's wall meter, the epoch deadline
    /// (read at every epoch tick, every 10 ms, while guest code runs) and
    /// the report's `wall_ms`; whatever it says, a real-time timeout at
    /// `max_wall_ms` around the whole call is the backstop, so a clock
    /// slower than real time never lets a guest outlive it.
    pub fn services(mut self, services: Services) -> Self {
        self.services = Some(services);
        self
    }

    /// The backends given for this run; `None`: the defaults of
    /// [`Services`], made when the run begins.
    pub fn services_ref(&self) -> Option<&Services> {
        self.services.as_ref()
    }

    /// Virtual clocks and randomness seeded with `seed`: the same
    /// component, caps and input give the same output, report and audit
    /// log. The virtual clock advances only when the guest calls the host,
    /// so a guest that never does is bounded by `max_fuel` (the
    /// deterministic budget) and by the real-time backstop at `max_wall_ms`.
    pub fn deterministic(mut self, seed: u64) -> Self {
        self.deterministic = Some(seed);
        self
    }

    /// Let `cancel` end the run from outside, with status `cancelled` and
    /// the report and audit of what was done (see [`CancelHandle`] for how
    /// promptly each part stops).
    pub fn cancel(mut self, cancel: CancelHandle) -> Self {
        self.cancel = Some(cancel);
        self
    }

    /// Send guest output chunks and gate decisions to `sink` as they happen.
    pub fn events(mut self, sink: EventSink) -> Self {
        self.events = Some(sink);
        self
    }

    /// Run the guest of an async run as a task on the caller's runtime
    /// instead of on a thread of its own: for many concurrent guests that
    /// mostly wait (a thousand asleep cost a thousand threads otherwise).
    /// Guest code then yields to the caller's tasks only at epoch ticks
    /// (10 ms), and a fetch or tool call blocks one of the caller's
    /// workers: keep CPU-bound guests off it. A guest's TCP sockets (a
    /// grant's `tcp://` rules) are registered with that runtime, which then
    /// needs IO enabled. Dropping the future still ends the run. No effect
    /// on the blocking API.
    pub fn in_place(mut self, in_place: bool) -> Self {
        self.in_place = in_place;
        self
    }

    /// Confine this process to the grant (the kernel second wall, see
    /// [`crate::confine`]) once the run is set up and before guest code
    /// runs; with `required`, refuse to run the guest unless the kernel
    /// enforced all of it. Irreversible and process-wide: for a process
    /// that exists to run this one grant (the CLI's `run`). The report's
    /// `kernel_wall` says what was enforced.
    pub fn confine(mut self, policy: crate::confine::Policy, required: bool) -> Self {
        self.confine = Some(Box::new((policy, required)));
        self
    }
}

/// The outcome of a component run.
#[non_exhaustive]
#[derive(Debug, Clone)]
pub struct WasmRun {
    /// The run report (status, exit code, violation, usage, limits, denials).
    pub report: RunReport,
    /// Every gated decision.
    pub audit: Vec<AuditEvent>,
    /// The trap message when the guest trapped for another reason than a
    /// limit.
    pub trap: Option<String>,
    /// What the guest wrote to stdout, when captured (the default).
    pub stdout: Vec<u8>,
    /// What the guest wrote to stderr, when captured (the default).
    pub stderr: Vec<u8>,
    /// The recording, when the run was recorded
    /// ([`RunOptions::record`]). Boxed: a run that records nothing
    /// (nearly all) moves its result several times on the way back.
    pub recording: Option<Box<crate::replay::Recording>>,
    /// How long the run waited for a slot before it started
    /// ([`WasmHost::max_concurrent`](super::WasmHost::max_concurrent)).
    pub queued: std::time::Duration,
}
