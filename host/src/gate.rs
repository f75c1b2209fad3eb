//! The gate: every operation is charged, checked, performed and audited here,
//! in that order. Nothing in this file may panic on any input, and no effect
//! happens before the check allows it.

use crate::bound::{MAX_TOOL_INPUT_BYTES, MAX_TOOL_NAME_BYTES, clip, quote, record_target};
use crate::budget::{Clock, MonotonicClock, OutputMeter, Usage, WriteMeter};
use crate::caps::Capabilities;
use crate::error::Error;
use crate::fs::{Access, FsError, MountTable, OpenMount, check_path};
use crate::net::{
    FetchFailure, FetchRequest, FetchTrace, HttpNet, Net, Resolve, SystemResolver, check_request,
    gated_fetch,
};
use crate::op::{Content, ErrorKind, Op, OpError, Output, SandboxResult};
use crate::report::{AuditEvent, DenialRecord, Limits, RunReport, Status};
use crate::tools::{ToolError, ToolLimits, ToolRegistry};
use crate::violation::{Denial, Violation};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::time::Duration;

/// Sets up a [`Sandbox`]. Defaults: [`HttpNet`] for fetches, the
/// [`SystemResolver`] for names, an empty [`ToolRegistry`], and a
/// [`MonotonicClock`].
pub struct SandboxBuilder {
    caps: Capabilities,
    net: Arc<dyn Net>,
    resolver: Arc<dyn Resolve>,
    tools: ToolRegistry,
    clock: Arc<dyn Clock>,
    output: Option<Arc<OutputMeter>>,
    writes: Option<Arc<WriteMeter>>,
}

impl SandboxBuilder {
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

    /// Perform allowed fetches with `net`.
    pub fn net(mut self, net: impl Net + 'static) -> Self {
        self.net = Arc::new(net);
        self
    }

    /// Resolve host names with `resolver` (each fetch resolves once, and the
    /// connection goes to a checked address).
    pub fn resolver(mut self, resolver: impl Resolve + 'static) -> Self {
        self.resolver = Arc::new(resolver);
        self
    }

    /// Run allowed tool calls from `tools` (a tool must be both allowed by
    /// the caps and registered here).
    pub fn tools(mut self, tools: ToolRegistry) -> Self {
        self.tools = tools;
        self
    }

    /// Read wall time from `clock`.
    pub fn clock(mut self, clock: impl Clock + 'static) -> Self {
        self.clock = Arc::new(clock);
        self
    }

    /// Read wall time from a clock shared with other meters.
    pub fn clock_shared(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// Perform allowed fetches with a shared `net`.
    pub fn net_shared(mut self, net: Arc<dyn Net>) -> Self {
        self.net = net;
        self
    }

    /// Resolve names with a shared `resolver`.
    pub fn resolver_shared(mut self, resolver: Arc<dyn Resolve>) -> Self {
        self.resolver = resolver;
        self
    }

    /// Open the mounts and start the wall clock.
    pub fn build(self) -> Result<Sandbox, Error> {
        let mounts = MountTable::open(self.caps.mounts()).map_err(|(m, source)| Error::Mount {
            guest: m.guest.to_string(),
            host: m.host,
            source,
        })?;
        let start = self.clock.now();
        let output = self
            .output
            .unwrap_or_else(|| Arc::new(OutputMeter::new(self.caps.budget().max_output_bytes)));
        let b = self.caps.budget();
        let writes = self
            .writes
            .unwrap_or_else(|| Arc::new(WriteMeter::new(b.max_write_bytes, b.max_files)));
        Ok(Sandbox {
            output,
            writes,
            caps: self.caps,
            mounts,
            net: self.net,
            resolver: self.resolver,
            tools: self.tools,
            clock: self.clock,
            start,
            elapsed: Duration::ZERO,
            seq: 0,
            ops: 0,
            halted: None,
            audit: Vec::new(),
            denials: Vec::new(),
        })
    }
}

/// A capability-gated executor for one run.
///
/// Each [`Sandbox::run`] charges `max_ops` and `max_wall` (hard), checks the
/// capability (soft), performs the effect through the mount handles, the
/// [`Net`] or the [`ToolRegistry`], then charges `max_output_bytes` (hard).
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
    net: Arc<dyn Net>,
    resolver: Arc<dyn Resolve>,
    tools: ToolRegistry,
    clock: Arc<dyn Clock>,
    start: Duration,
    elapsed: Duration,
    seq: u64,
    ops: u64,
    output: Arc<OutputMeter>,
    writes: Arc<WriteMeter>,
    halted: Option<Denial>,
    audit: Vec<AuditEvent>,
    denials: Vec<DenialRecord>,
}

enum Failure {
    Denied(Denial),
    Error(OpError),
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
    /// Start configuring a sandbox for `caps`.
    pub fn builder(caps: Capabilities) -> SandboxBuilder {
        SandboxBuilder {
            caps,
            net: Arc::new(HttpNet::new()),
            resolver: Arc::new(SystemResolver),
            tools: ToolRegistry::new(),
            clock: Arc::new(MonotonicClock::new()),
            output: None,
            writes: None,
        }
    }

    /// A sandbox with the defaults of [`SandboxBuilder`].
    pub fn new(caps: Capabilities) -> Result<Self, Error> {
        Self::builder(caps).build()
    }

    /// The grant.
    pub fn caps(&self) -> &Capabilities {
        &self.caps
    }

    /// The hard violation that halted the run, if any.
    pub fn halted(&self) -> Option<&Denial> {
        self.halted.as_ref()
    }

    /// What the run has used so far.
    pub fn usage(&self) -> Usage {
        Usage {
            ops: self.ops,
            output_bytes: self.output.used(),
            fuel: None,
            wall_ms: u64::try_from(self.elapsed.as_millis()).unwrap_or(u64::MAX),
            memory_peak_bytes: None,
            write_bytes: self.writes.bytes(),
            files: self.writes.files(),
        }
    }

    /// Time on the injected clock since the run started (one reading).
    pub(crate) fn elapsed_now(&self) -> Duration {
        self.clock.now().saturating_sub(self.start)
    }

    /// Every decision so far.
    pub fn audit(&self) -> &[AuditEvent] {
        &self.audit
    }

    /// The report of the run so far.
    pub fn report(&self) -> RunReport {
        RunReport {
            status: if self.halted.is_some() {
                Status::HardLimit
            } else {
                Status::Completed
            },
            exit_code: None,
            violation: self.halted.as_ref().map(|d| d.violation),
            usage: self.usage(),
            limits: Limits::from(self.caps.budget()),
            denials: self.denials.clone(),
            kernel_wall: None,
        }
    }

    /// Decide whether the grant allows `op`, without charging budgets or
    /// performing anything. `Ok` names the rule that allows it. This is the
    /// same check [`Sandbox::run`] applies, request bounds included.
    pub fn check(&self, op: &Op) -> Result<String, Denial> {
        match op {
            Op::FsRead { path } | Op::FsList { path } | Op::FsStat { path } => self
                .resolve(path, Access::ReadOnly)
                .map(|(mount, _)| mount.mount.rule()),
            Op::FsWrite { path, .. } | Op::FsRemove { path } | Op::FsMkdir { path } => self
                .resolve(path, Access::ReadWrite)
                .map(|(mount, _)| mount.mount.rule()),
            Op::NetFetch {
                method,
                url,
                headers,
                body,
            } => {
                // Bounds first: nothing of an oversized request is parsed.
                check_request(method, url, headers, body)?;
                self.caps.egress().check(url).map(|(_, rule)| rule)
            }
            Op::ToolCall { name, input } => {
                if name.len() > MAX_TOOL_NAME_BYTES {
                    Err(Denial::new(
                        Violation::InvalidRequest,
                        format!(
                            "tool name is {} bytes long; at most {MAX_TOOL_NAME_BYTES} are accepted",
                            name.len()
                        ),
                    ))
                } else if input.len() > MAX_TOOL_INPUT_BYTES {
                    Err(Denial::new(
                        Violation::InvalidRequest,
                        format!(
                            "tool input is {} bytes; at most {MAX_TOOL_INPUT_BYTES} are accepted",
                            input.len()
                        ),
                    ))
                } else if !self.caps.tools().contains(name) {
                    Err(Denial::new(
                        Violation::ToolDenied,
                        format!("tool {} is not on the allow-list", quote(name)),
                    ))
                } else if self.tools.get(name).is_none() {
                    Err(Denial::new(
                        Violation::ToolDenied,
                        format!(
                            "tool {} is allowed but no implementation is registered",
                            quote(name)
                        ),
                    ))
                } else {
                    Ok(format!("tool {name}"))
                }
            }
            Op::Invalid { reason, .. } => {
                Err(Denial::new(Violation::InvalidRequest, reason.clone()))
            }
        }
    }

    /// Validate a path and find the mount that decides it, and the path
    /// below that mount.
    fn resolve(&self, raw: &str, access: Access) -> Result<(&OpenMount, String), Denial> {
        let path = check_path(raw)?;
        let (violation, verb) = match access {
            Access::ReadOnly => (Violation::FsReadDenied, "read"),
            Access::ReadWrite => (Violation::FsWriteDenied, "write"),
        };
        let Some((mount, rel)) = self.mounts.find(&path) else {
            return Err(Denial::new(
                violation,
                format!(
                    "{} is outside every mount the guest may {verb}",
                    clip(&path)
                ),
            ));
        };
        if access == Access::ReadWrite && mount.mount.access != Access::ReadWrite {
            return Err(Denial::new(
                violation,
                format!(
                    "{} is in read-only mount {}",
                    clip(&path),
                    mount.mount.guest
                ),
            ));
        }
        Ok((mount, rel))
    }

    /// The check of a filesystem op performed through a descriptor of the
    /// mount at guest path `via` (the WASI door): the effect lands in that
    /// mount's host folder whatever the path string says, so that mount
    /// decides. `via` naming no mount (the empty root) allows nothing.
    fn check_via(&self, op: &Op, via: &str) -> Result<String, Denial> {
        let (raw, access) = match op {
            Op::FsRead { path } | Op::FsList { path } | Op::FsStat { path } => {
                (path, Access::ReadOnly)
            }
            Op::FsWrite { path, .. } | Op::FsRemove { path } | Op::FsMkdir { path } => {
                (path, Access::ReadWrite)
            }
            _ => return self.check(op),
        };
        let path = check_path(raw)?;
        let (violation, verb) = match access {
            Access::ReadOnly => (Violation::FsReadDenied, "read"),
            Access::ReadWrite => (Violation::FsWriteDenied, "write"),
        };
        let outside = || {
            Denial::new(
                violation,
                format!(
                    "{} is outside every mount the guest may {verb}",
                    clip(&path)
                ),
            )
        };
        let Some(mount) = self.mounts.by_guest(via) else {
            return Err(outside());
        };
        if !path.is_under(&mount.mount.guest) {
            return Err(outside());
        }
        if matches!(op, Op::FsRemove { .. }) && path == mount.mount.guest {
            return Err(Denial::new(
                violation,
                format!(
                    "{} is a mount point; it cannot be renamed or removed",
                    clip(&path)
                ),
            ));
        }
        if access == Access::ReadWrite && mount.mount.access != Access::ReadWrite {
            return Err(Denial::new(
                violation,
                format!(
                    "{} is reached through read-only mount {}",
                    clip(&path),
                    mount.mount.guest
                ),
            ));
        }
        Ok(mount.mount.rule())
    }

    /// Charge, check and audit a filesystem op whose effect someone else
    /// performs (the wasm host lets WASI perform it through its preopens).
    /// `Ok` names the rule; `Err` is the denial (hard ones halt the run).
    pub fn admit(&mut self, op: Op) -> Result<String, Denial> {
        let r = self.run_with(op, Mode::Admit(None));
        match r.denial {
            Some(d) => Err(d),
            None => Ok(r.rule.unwrap_or_default()),
        }
    }

    /// [`Sandbox::admit`] for an op performed through a descriptor of the
    /// mount at guest path `via`. `Ok` is the op's sequence number, for
    /// [`Sandbox::refuse_admitted`] should the effect then be refused.
    pub(crate) fn admit_via(&mut self, op: Op, via: &str) -> Result<u64, Denial> {
        let r = self.run_with(op, Mode::Admit(Some(via)));
        match r.denial {
            Some(d) => Err(d),
            None => Ok(r.seq),
        }
    }

    /// Record that admitted op `seq` was refused after all (the file layer
    /// refused it as an escape, or its effect would pass a quota): the
    /// audit then says what happened (a denial), not `allowed`. A hard
    /// refusal halts the run.
    pub(crate) fn refuse_admitted(&mut self, seq: u64, denial: Denial) {
        if denial.hard && self.halted.is_none() {
            self.halted = Some(denial.clone());
        }
        let Some(event) = self.audit.iter_mut().rev().find(|e| e.seq == seq) else {
            return;
        };
        event.decision = "denied".into();
        event.violation = Some(denial.violation);
        event.hard = denial.hard;
        event.detail = Some(denial.message);
        self.denials.push(DenialRecord {
            seq,
            op: event.op.clone(),
            target: event.target.clone(),
            violation: denial.violation,
            hard: denial.hard,
        });
        self.denials.sort_by_key(|d| d.seq);
    }

    /// Whether `guest` (below the mount at `via`) leads outside that mount
    /// through a symbolic link, as the mount's own handle resolves it.
    pub(crate) fn escapes(&self, via: &str, guest: &str) -> bool {
        let (Some(mount), Ok(path)) = (self.mounts.by_guest(via), check_path(guest)) else {
            return false;
        };
        path.strip_base(&mount.mount.guest)
            .is_some_and(|rel| mount.escapes(&rel))
    }

    /// The write quota's meter, for writes that do not pass the gate call by
    /// call (WASI file output streams).
    pub(crate) fn write_meter(&self) -> Arc<WriteMeter> {
        self.writes.clone()
    }

    /// Charge the write quota for an effect performed elsewhere (WASI):
    /// `bytes` written, `files` created. Over the quota, the run halts and
    /// the refusal is recorded against `target`.
    /// When the effect belongs to an admitted op (`admitted` is its
    /// sequence number), that op's record becomes the refusal.
    pub(crate) fn charge_writes(
        &mut self,
        kind: &'static str,
        target: &str,
        (bytes, files): (u64, u64),
        admitted: Option<u64>,
    ) -> Result<(), Denial> {
        let Err(d) = self.quota(bytes, files) else {
            return Ok(());
        };
        if let Some(seq) = admitted {
            self.refuse_admitted(seq, d.clone());
            return Err(d);
        }
        self.seq += 1;
        let op = Op::Invalid {
            op: kind.to_string(),
            reason: String::new(),
        };
        self.finish(&op, None, Err(Failure::Denied(d.clone())));
        // Named as the effect it stopped, not as the placeholder op.
        let target = record_target(target);
        if let Some(ev) = self.audit.last_mut() {
            ev.op = kind.to_string();
            ev.target = target.clone();
        }
        if let Some(rec) = self.denials.last_mut() {
            rec.op = kind.to_string();
            rec.target = target;
        }
        Err(d)
    }

    /// Charge the write quota, or say which part of it is spent.
    fn quota(&self, bytes: u64, files: u64) -> Result<(), Denial> {
        let b = self.caps.budget();
        if bytes > 0 && !self.writes.try_bytes(bytes) {
            return Err(Denial::new(
                Violation::MaxWriteBytes,
                format!(
                    "writing {bytes} bytes would pass max_write_bytes = {} ({} written)",
                    b.max_write_bytes,
                    self.writes.bytes()
                ),
            ));
        }
        if files > 0 && !self.writes.try_files(files) {
            return Err(Denial::new(
                Violation::MaxFiles,
                format!(
                    "creating {files} more would pass max_files = {} ({} created)",
                    b.max_files,
                    self.writes.files()
                ),
            ));
        }
        Ok(())
    }

    /// Run one operation through the gate. Never panics; a denial is a value.
    pub fn run(&mut self, op: Op) -> SandboxResult {
        self.run_with(op, Mode::Perform)
    }

    fn run_with(&mut self, op: Op, mode: Mode<'_>) -> SandboxResult {
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
            return self.finish(&op, None, Err(Failure::Denied(d)));
        }
        self.ops += 1;
        self.elapsed = self.clock.now().saturating_sub(self.start);
        let budget = *self.caps.budget();
        if self.ops > budget.max_ops {
            let d = Denial::new(
                Violation::MaxOps,
                format!(
                    "operation {} exceeds max_ops = {}",
                    self.ops, budget.max_ops
                ),
            );
            return self.finish(&op, None, Err(Failure::Denied(d)));
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
            return self.finish(&op, None, Err(Failure::Denied(d)));
        }
        let checked = match mode {
            Mode::Admit(Some(via)) => self.check_via(&op, via),
            _ => self.check(&op),
        };
        let rule = match checked {
            Ok(rule) => rule,
            Err(d) => return self.finish(&op, None, Err(Failure::Denied(d))),
        };
        if let Mode::Admit(_) = mode {
            return self.finish(&op, Some(rule), Ok(Output::Admitted));
        }
        let (outcome, trace) = self.perform(&op);
        if matches!(op, Op::NetFetch { .. } | Op::ToolCall { .. }) {
            // A fetch or a tool may take most of the budget: the record and
            // the report say when it ended, not when it began. (File ops
            // take no time worth a clock reading: a tick clock advances
            // once per op for them.)
            self.elapsed = self.clock.now().saturating_sub(self.start);
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
        self.finish_traced(&op, Some(rule), outcome, &trace)
    }

    fn output_left(&self) -> u64 {
        self.output.left()
    }

    fn wall_left(&self) -> Duration {
        self.caps.budget().max_wall.saturating_sub(self.elapsed)
    }

    fn output_denial(&self, wanted: u64) -> Denial {
        self.output.mark_breached();
        let more = if wanted == u64::MAX {
            "more than".to_string()
        } else {
            format!("{wanted} bytes,")
        };
        Denial::new(
            Violation::MaxOutputBytes,
            format!(
                "the result is {more} over the {} bytes left of max_output_bytes = {}",
                self.output_left(),
                self.caps.budget().max_output_bytes
            ),
        )
    }

    fn fs_failure(&self, e: FsError, access: Access, path: &str) -> Failure {
        match e {
            FsError::Escape => Failure::Denied(Denial::new(
                match access {
                    Access::ReadOnly => Violation::FsReadDenied,
                    Access::ReadWrite => Violation::FsWriteDenied,
                },
                format!("{path} leads outside its mount through a symbolic link"),
            )),
            FsError::TooLarge => Failure::Denied(self.output_denial(u64::MAX)),
            FsError::MountPoint => Failure::Error(OpError::new(
                ErrorKind::MountPoint,
                format!("{path} is a mount point; it cannot be written or removed"),
            )),
            FsError::Io(e) => Failure::Error(OpError::from_io(&e)),
        }
    }

    fn perform(&self, op: &Op) -> (Result<Output, Failure>, FetchTrace) {
        if let Op::NetFetch {
            method,
            url,
            headers,
            body,
        } = op
        {
            return self.perform_fetch(method, url, headers, body);
        }
        (self.perform_local(op), FetchTrace::default())
    }

    fn perform_fetch(
        &self,
        method: &str,
        url: &str,
        headers: &[(String, String)],
        body: &[u8],
    ) -> (Result<Output, Failure>, FetchTrace) {
        let wall_left = self.wall_left();
        let req = FetchRequest {
            method: method.to_string(),
            url: url.to_string(),
            headers: headers.to_vec(),
            body: body.to_vec(),
        };
        let (egress, resolver, net) = (self.caps.egress(), &*self.resolver, &*self.net);
        let run = || gated_fetch(egress, resolver, net, req, wall_left, self.output_left());
        let (result, trace) = match catch_unwind(AssertUnwindSafe(run)) {
            Ok(r) => r,
            Err(_) => (
                Err(FetchFailure::Failed("the network layer panicked".into())),
                FetchTrace::default(),
            ),
        };
        let outcome = match result {
            Ok(resp) => Ok(Output::response(resp)),
            Err(FetchFailure::Denied(d)) => Err(Failure::Denied(d)),
            Err(FetchFailure::Timeout) => Err(Failure::Denied(Denial::new(
                Violation::MaxWall,
                format!(
                    "fetch ran past the {} ms left of the wall budget",
                    wall_left.as_millis()
                ),
            ))),
            Err(FetchFailure::BodyTooLarge) => Err(Failure::Denied(self.output_denial(u64::MAX))),
            Err(FetchFailure::Failed(e)) => {
                Err(Failure::Error(OpError::new(ErrorKind::Network, e)))
            }
        };
        (outcome, trace)
    }

    fn perform_local(&self, op: &Op) -> Result<Output, Failure> {
        match op {
            Op::FsRead { path }
            | Op::FsList { path }
            | Op::FsStat { path }
            | Op::FsWrite { path, .. }
            | Op::FsRemove { path }
            | Op::FsMkdir { path } => self.perform_fs(op, path),
            Op::NetFetch { .. } => Err(Failure::Error(OpError::new(
                ErrorKind::Network,
                "not a local op",
            ))),
            Op::ToolCall { name, input } => {
                let Some(tool) = self.tools.get(name).cloned() else {
                    return Err(Failure::Denied(Denial::new(
                        Violation::ToolDenied,
                        format!("tool {name:?} is not registered"),
                    )));
                };
                let limits = ToolLimits {
                    timeout: self.wall_left(),
                    max_output_bytes: self.output_left(),
                };
                match catch_unwind(AssertUnwindSafe(|| tool.call(input, limits))) {
                    Ok(Ok(output)) => Ok(Output::ToolOutput { output }),
                    Ok(Err(ToolError::Timeout)) => Err(Failure::Denied(Denial::new(
                        Violation::MaxWall,
                        format!(
                            "tool {name:?} ran past the {} ms left of the wall budget",
                            limits.timeout.as_millis()
                        ),
                    ))),
                    Ok(Err(e)) => Err(Failure::Error(OpError::new(
                        ErrorKind::ToolFailed,
                        format!("tool {name:?} failed: {e}"),
                    ))),
                    Err(_) => Err(Failure::Error(OpError::new(
                        ErrorKind::ToolFailed,
                        format!("tool {name:?} panicked"),
                    ))),
                }
            }
            Op::Invalid { reason, .. } => Err(Failure::Denied(Denial::new(
                Violation::InvalidRequest,
                reason.clone(),
            ))),
        }
    }

    fn perform_fs(&self, op: &Op, raw: &str) -> Result<Output, Failure> {
        let access = match op {
            Op::FsWrite { .. } | Op::FsRemove { .. } | Op::FsMkdir { .. } => Access::ReadWrite,
            _ => Access::ReadOnly,
        };
        // Checked already; resolving again (pure, cheap) gives the handle.
        let (mount, rel) = self.resolve(raw, access).map_err(Failure::Denied)?;
        let fail = |e| self.fs_failure(e, access, raw);
        match op {
            Op::FsRead { .. } => mount
                .read(&rel, self.output_left())
                .map(|b| Output::Data {
                    content: Content(b),
                })
                .map_err(fail),
            Op::FsWrite { content, .. } => {
                let new_file = u64::from(!mount.exists(&rel));
                self.quota(content.len() as u64, new_file)
                    .map_err(Failure::Denied)?;
                mount
                    .write(&rel, content)
                    .map(|()| Output::Written {
                        bytes: content.len() as u64,
                    })
                    .map_err(fail)
            }
            Op::FsList { .. } => mount
                .list(&rel)
                .map(|entries| Output::Entries { entries })
                .map_err(fail),
            Op::FsStat { .. } => mount
                .stat(&rel)
                .map(|stat| Output::Stat { stat })
                .map_err(fail),
            Op::FsRemove { .. } => mount.remove(&rel).map(|()| Output::Removed).map_err(fail),
            Op::FsMkdir { .. } => {
                self.quota(0, mount.missing_dirs(&rel))
                    .map_err(Failure::Denied)?;
                mount.mkdir(&rel).map(|()| Output::Created).map_err(fail)
            }
            _ => Err(Failure::Error(OpError::new(
                ErrorKind::Io,
                "not a filesystem op",
            ))),
        }
    }

    fn finish(
        &mut self,
        op: &Op,
        rule: Option<String>,
        outcome: Result<Output, Failure>,
    ) -> SandboxResult {
        self.finish_traced(op, rule, outcome, &FetchTrace::default())
    }

    fn finish_traced(
        &mut self,
        op: &Op,
        rule: Option<String>,
        outcome: Result<Output, Failure>,
        trace: &FetchTrace,
    ) -> SandboxResult {
        // Records keep a bounded target, whatever the guest passed.
        let mut result = SandboxResult {
            seq: self.seq,
            op: op.kind().to_string(),
            target: record_target(op.target()),
            ok: false,
            rule: None,
            output: None,
            denial: None,
            error: None,
        };
        let mut event = AuditEvent {
            seq: self.seq,
            op: result.op.clone(),
            target: result.target.clone(),
            decision: "denied".into(),
            violation: None,
            hard: false,
            rule: None,
            bytes: 0,
            address: trace.address.map(|a| a.to_string()),
            status: trace.status,
            redirects: (trace.redirects > 0).then_some(trace.redirects),
            detail: (!trace.dropped_headers.is_empty()).then(|| {
                format!(
                    "headers dropped at a cross-origin redirect: {}",
                    trace.dropped_headers.join(", ")
                )
            }),
            elapsed_ms: u64::try_from(self.elapsed.as_millis()).unwrap_or(u64::MAX),
        };
        match outcome {
            Ok(out) => {
                event.decision = "allowed".into();
                event.rule = rule.clone();
                event.bytes = out.charged_bytes();
                result.ok = true;
                result.rule = rule;
                result.output = Some(out);
            }
            Err(Failure::Error(e)) => {
                event.decision = "allowed".into();
                event.rule = rule.clone();
                event.detail = Some(match event.detail.take() {
                    Some(d) => format!("{}; {d}", e.message),
                    None => e.message.clone(),
                });
                result.rule = rule;
                result.error = Some(e);
            }
            Err(Failure::Denied(d)) => {
                // The one place the breaker trips: any hard denial halts.
                if d.hard && self.halted.is_none() {
                    self.halted = Some(d.clone());
                }
                event.violation = Some(d.violation);
                event.hard = d.hard;
                // A fetch halted after its connection keeps the rule that
                // let it connect (and the address, above).
                event.rule = rule;
                event.detail = Some(match event.detail.take() {
                    Some(dd) => format!("{}; {dd}", d.message),
                    None => d.message.clone(),
                });
                self.denials.push(DenialRecord {
                    seq: self.seq,
                    op: result.op.clone(),
                    target: result.target.clone(),
                    violation: d.violation,
                    hard: d.hard,
                });
                result.denial = Some(d);
            }
        }
        self.audit.push(event);
        result
    }
}
