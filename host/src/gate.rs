//! The gate: every operation is charged, checked, performed and audited here,
//! in that order. Nothing in this file may panic on any input, and no effect
//! happens before the check allows it.

use crate::budget::{Clock, MonotonicClock, OutputMeter, Usage};
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
}

impl SandboxBuilder {
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
        Ok(Sandbox {
            output,
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
    halted: Option<Denial>,
    audit: Vec<AuditEvent>,
    denials: Vec<DenialRecord>,
}

enum Failure {
    Denied(Denial),
    Error(OpError),
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
        }
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
    /// same check [`Sandbox::run`] applies.
    pub fn check(&self, op: &Op) -> Result<String, Denial> {
        match op {
            Op::FsRead { path } | Op::FsList { path } | Op::FsStat { path } => self
                .resolve(path, Access::ReadOnly)
                .map(|(mount, _)| mount.mount.rule()),
            Op::FsWrite { path, .. } | Op::FsRemove { path } | Op::FsMkdir { path } => self
                .resolve(path, Access::ReadWrite)
                .map(|(mount, _)| mount.mount.rule()),
            Op::NetFetch { url, .. } => self.caps.egress().check(url).map(|(_, rule)| rule),
            Op::ToolCall { name, .. } => {
                if !self.caps.tools().contains(name) {
                    Err(Denial::new(
                        Violation::ToolDenied,
                        format!("tool {name:?} is not on the allow-list"),
                    ))
                } else if self.tools.get(name).is_none() {
                    Err(Denial::new(
                        Violation::ToolDenied,
                        format!("tool {name:?} is allowed but no implementation is registered"),
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
                format!("{path} is outside every mount the guest may {verb}"),
            ));
        };
        if access == Access::ReadWrite && mount.mount.access != Access::ReadWrite {
            return Err(Denial::new(
                violation,
                format!("{path} is in read-only mount {}", mount.mount.guest),
            ));
        }
        Ok((mount, rel))
    }

    /// Charge, check and audit a filesystem op whose effect someone else
    /// performs (the wasm host lets WASI perform it through its preopens).
    /// `Ok` names the rule; `Err` is the denial (hard ones halt the run).
    pub fn admit(&mut self, op: Op) -> Result<String, Denial> {
        let r = self.run_with(op, false);
        match r.denial {
            Some(d) => Err(d),
            None => Ok(r.rule.unwrap_or_default()),
        }
    }

    /// Run one operation through the gate. Never panics; a denial is a value.
    pub fn run(&mut self, op: Op) -> SandboxResult {
        self.run_with(op, true)
    }

    fn run_with(&mut self, op: Op, perform: bool) -> SandboxResult {
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
        let rule = match self.check(&op) {
            Ok(rule) => rule,
            Err(d) => return self.finish(&op, None, Err(Failure::Denied(d))),
        };
        if !perform {
            return self.finish(&op, Some(rule), Ok(Output::Admitted));
        }
        let (outcome, trace) = self.perform(&op);
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
        if let Err(d) = check_request(method, headers, body) {
            return (Err(Failure::Denied(d)), FetchTrace::default());
        }
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
            Op::FsWrite { content, .. } => mount
                .write(&rel, content)
                .map(|()| Output::Written {
                    bytes: content.len() as u64,
                })
                .map_err(fail),
            Op::FsList { .. } => mount
                .list(&rel)
                .map(|entries| Output::Entries { entries })
                .map_err(fail),
            Op::FsStat { .. } => mount
                .stat(&rel)
                .map(|stat| Output::Stat { stat })
                .map_err(fail),
            Op::FsRemove { .. } => mount.remove(&rel).map(|()| Output::Removed).map_err(fail),
            Op::FsMkdir { .. } => mount.mkdir(&rel).map(|()| Output::Created).map_err(fail),
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
        let mut result = SandboxResult {
            seq: self.seq,
            op: op.kind().to_string(),
            target: op.target().to_string(),
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
            detail: None,
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
                event.detail = Some(e.message.clone());
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
                event.detail = Some(d.message.clone());
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
