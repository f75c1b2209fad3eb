//! A run: the store (gate, WASI context, limits, output meters, deadline),
//! the call, and how it ended, as a report.

use super::clocks::{FixedWallClock, TickMonotonic, seed_bytes};
use super::limits::MemoryLimiter;
use super::output::{MeteredOutput, Sink};
use super::{FUEL_SLICE, HardLimit, HostState, LoadError, PreparedAgent, WasmHost, setup};
use crate::budget::{Clock, MonotonicClock, OutputMeter, TickClock};
use crate::caps::Capabilities;
use crate::fs::Access;
use crate::gate::Sandbox;
use crate::net::{Net, Resolve};
use crate::report::{AuditEvent, RunReport, Status};
use crate::tools::ToolRegistry;
use crate::violation::Violation;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use wasmtime::component::{Component, ResourceTable};
use wasmtime::{Engine, Store, Trap, UpdateDeadline};
use wasmtime_wasi::p2::pipe::MemoryInputPipe;
use wasmtime_wasi::{FsPerms, I32Exit, WasiCtx, WasiCtxBuilder};

/// Each output stream's name and whether its reader went away.
type Closed = [(&'static str, Arc<std::sync::atomic::AtomicBool>); 2];

impl WasmHost {
    /// Run `component` under `opts`, blocking the calling thread (a
    /// current-thread tokio runtime drives the async WASI inside).
    pub fn run(&self, component: &Component, opts: RunOptions) -> Result<WasmRun, LoadError> {
        let agent = self.prepare(component)?;
        self.run_prepared(&agent, opts)
    }

    /// Run `component` under `opts` on the caller's tokio runtime.
    pub async fn run_async(
        &self,
        component: &Component,
        opts: RunOptions,
    ) -> Result<WasmRun, LoadError> {
        let agent = self.prepare(component)?;
        self.run_prepared_async(&agent, opts).await
    }

    /// Run a prepared agent under `opts`, blocking the calling thread: the
    /// fast path for an embedder running one component many times.
    ///
    /// ```no_run
    /// use sbx_wasm::Capabilities;
    /// use sbx_wasm::wasm::{PoolSizes, RunOptions, WasmHost};
    ///
    /// let caps = Capabilities::from_file("caps.toml")?;
    /// let host = WasmHost::with_pool(PoolSizes::for_caps(&caps, 16)).map_err(|e| format!("{e:#}"))?;
    /// let agent = host.prepare(&host.load("agent.wasm".as_ref())?)?;
    /// for _ in 0..100 {
    ///     let run = host.run_prepared(&agent, RunOptions::new(caps.clone()))?;
    ///     assert!(run.trap.is_none());
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn run_prepared(
        &self,
        agent: &PreparedAgent,
        opts: RunOptions,
    ) -> Result<WasmRun, LoadError> {
        // One runtime per thread, reused by every run on it: building one
        // per run cost more than the rest of a small run's setup.
        thread_local! {
            static RUNTIME: std::cell::OnceCell<tokio::runtime::Runtime> =
                const { std::cell::OnceCell::new() };
        }
        RUNTIME.with(|cell| {
            if cell.get().is_none() {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_time()
                    .build()
                    .map_err(|e| setup(format!("cannot start the runtime: {e}")))?;
                let _ = cell.set(rt);
            }
            let rt = cell.get().expect("set above");
            rt.block_on(self.run_prepared_async(agent, opts))
        })
    }

    /// Run a prepared agent under `opts` on the caller's tokio runtime.
    pub async fn run_prepared_async(
        &self,
        agent: &PreparedAgent,
        opts: RunOptions,
    ) -> Result<WasmRun, LoadError> {
        if !Engine::same(&agent.engine, &self.engine) {
            return Err(setup(
                "this agent was prepared by another WasmHost; prepare it on this one".into(),
            ));
        }
        let budget = *opts.caps.budget();
        let deterministic = opts.deterministic;
        let meter = Arc::new(OutputMeter::new(budget.max_output_bytes));
        let mut opts = opts;
        let (wasi, closed) = self.wasi_context(&mut opts, &meter)?;
        let RunOptions {
            caps,
            tools,
            net,
            resolver,
            clock,
            confine,
            require_confinement,
            ..
        } = opts;
        let clock: Arc<dyn Clock> = match (clock, deterministic) {
            (Some(c), _) => c,
            (None, true) => Arc::new(TickClock::new(Duration::from_millis(1))),
            (None, false) => Arc::new(MonotonicClock::new()),
        };
        let mut gate = Sandbox::builder(caps)
            .tools(tools)
            .output_meter(meter.clone())
            .clock_shared(clock);
        if let Some(net) = net {
            gate = gate.net_shared(net);
        }
        if let Some(r) = resolver {
            gate = gate.resolver_shared(r);
        }
        let state = HostState {
            wasi,
            table: ResourceTable::new(),
            gate: gate.build()?,
            limiter: MemoryLimiter::new(budget.max_memory_bytes),
            fs_paths: std::collections::HashMap::new(),
            deterministic,
        };
        let mut store = self.store(state, deterministic)?;
        let kernel_wall = match &confine {
            Some(policy) => Some(self.confined(policy, require_confinement)?),
            None => None,
        };
        let call = async {
            let command = agent.pre.instantiate_async(&mut store).await?;
            command.wasi_cli_run().call_run(&mut store).await
        };
        // The real-time backstop, whatever the run's clock says.
        let end = match tokio::time::timeout(budget.max_wall, call).await {
            Err(_) => End::Limit(Violation::MaxWall),
            Ok(Ok(Ok(()))) => End::Exit(0),
            Ok(Ok(Err(()))) => End::Exit(1),
            Ok(Err(e)) => classify(&e, &store),
        };
        let mut run = finish(store, end, &meter, kernel_wall);
        for (name, flag) in closed {
            if flag.load(std::sync::atomic::Ordering::SeqCst) {
                run.report.notes.push(format!(
                    "{name}: its reader went away; the guest's later writes to it were \
                     refused as a closed stream"
                ));
            }
        }
        Ok(run)
    }

    /// The guest's WASI: the empty root and the mounts preopened, the caps'
    /// env, args, stdin, metered stdout and stderr, and under
    /// `deterministic` virtual clocks and seeded randomness. Nothing
    /// inherited but what `opts` asks for.
    fn wasi_context(
        &self,
        opts: &mut RunOptions,
        meter: &Arc<OutputMeter>,
    ) -> Result<(WasiCtx, Closed), LoadError> {
        let mut wasi = WasiCtxBuilder::new();
        // The grant's mounts first: a program that takes "the directory it
        // was given" takes the first preopen.
        for m in opts.caps.mounts() {
            let perms = match m.access {
                Access::ReadOnly => FsPerms::ReadOnly,
                Access::ReadWrite => FsPerms::ReadWrite,
            };
            wasi.preopened_dir(&m.host, m.guest.as_str(), perms)
                .map_err(|e| setup(format!("cannot preopen {}: {e:#}", m.host.display())))?;
        }
        // Then the empty root, last, unless the grant mounts a folder at `/`
        // (which then plays its part): it makes absolute paths outside
        // every mount reach the host, where they are refused and recorded.
        let root_mounted = opts.caps.mounts().iter().any(|m| m.guest.as_str() == "/");
        if !root_mounted
            && wasi
                .preopened_dir(self.empty_root()?, "/", FsPerms::ReadOnly)
                .is_err()
        {
            // Gone behind our back (no /proc, and a tmp cleaner): make a
            // new one, once.
            self.drop_empty_root();
            wasi.preopened_dir(self.empty_root()?, "/", FsPerms::ReadOnly)
                .map_err(|e| setup(format!("cannot preopen the empty root: {e:#}")))?;
        }
        let env: Vec<(&String, &String)> = opts.caps.env().iter().collect();
        wasi.envs(&env);
        let mut argv = vec![opts.program_name.clone()];
        argv.extend(opts.args.iter().cloned());
        wasi.args(&argv);
        if opts.inherit_stdin {
            // Streamed as the guest reads it, never read ahead: a guest that
            // never reads is not held by an open pipe, and one blocked
            // reading ends at max_wall like any blocked call.
            wasi.inherit_stdin();
        } else {
            wasi.stdin(MemoryInputPipe::new(std::mem::take(&mut opts.stdin)));
        }
        let (stdout, stderr) = (
            MeteredOutput::new(meter.clone(), opts.stdout.clone()),
            MeteredOutput::new(meter.clone(), opts.stderr.clone()),
        );
        let closed = [
            ("stdout", stdout.closed_flag()),
            ("stderr", stderr.closed_flag()),
        ];
        wasi.stdout(stdout);
        wasi.stderr(stderr);
        if opts.deterministic {
            wasi.wall_clock(FixedWallClock);
            wasi.monotonic_clock(TickMonotonic::default());
            wasi.secure_random(wasmtime_wasi::Deterministic::new(seed_bytes(opts.seed)));
            wasi.insecure_random(wasmtime_wasi::Deterministic::new(seed_bytes(
                opts.seed ^ 0x5eed,
            )));
            wasi.insecure_random_seed(u128::from(opts.seed));
        }
        Ok((wasi.build(), closed))
    }

    /// The store with the run's limits: memory, fuel (in slices), and the
    /// wall deadline read from the run's clock at every epoch tick.
    fn store(&self, state: HostState, deterministic: bool) -> Result<Store<HostState>, LoadError> {
        let budget = *state.gate.caps().budget();
        let mut store = Store::new(&self.engine, state);
        store.limiter(|s| &mut s.limiter);
        store
            .set_fuel(budget.max_fuel)
            .map_err(|e| setup(format!("fuel: {e:#}")))?;
        // Compiled code keeps its fuel count in a register and writes it
        // back to the store only on calls and on running out of a slice, not
        // at an epoch check: a spinning guest halted by the wall deadline
        // would report the fuel of its last call. Slices of this size make
        // the count in the store at most one slice stale (and give the
        // runtime a yield point per slice).
        store
            .fuel_async_yield_interval(Some(FUEL_SLICE))
            .map_err(|e| setup(format!("fuel: {e:#}")))?;
        // The wall budget is the run's clock's, the same the gate charges:
        // at every epoch tick the guest's time is read from it, so an
        // injected clock decides when a spinning guest has spent its wall.
        // Under --deterministic the virtual clock moves only when the guest
        // calls the host (reading it here would make the readings depend on
        // real timing): fuel is the deterministic budget there. Either way,
        // the timeout around the call is the real-time backstop.
        store.set_epoch_deadline(1);
        store.epoch_deadline_callback(move |ctx| {
            if !deterministic && ctx.data().gate.elapsed_now() > budget.max_wall {
                Err(wasmtime::Error::new(HardLimit(Violation::MaxWall)))
            } else {
                Ok(UpdateDeadline::Yield(1))
            }
        });
        Ok(store)
    }

    /// Apply the kernel wall; with `required`, a wall not fully up is a
    /// setup error.
    fn confined(
        &self,
        policy: &crate::confine::Policy,
        required: bool,
    ) -> Result<crate::KernelWall, LoadError> {
        let wall = self.confine(policy);
        if required && !wall.up {
            return Err(setup(format!(
                "kernel confinement was required and is not fully enforced \
                 (landlock {}, seccomp {}, no_new_privs {}, tcp {}): {}",
                wall.landlock,
                wall.seccomp,
                wall.no_new_privs,
                wall.network,
                wall.notes.join("; ")
            )));
        }
        Ok(wall)
    }
}

/// The report of a run that ended as `end`.
fn finish(
    store: Store<HostState>,
    end: End,
    meter: &OutputMeter,
    kernel_wall: Option<crate::KernelWall>,
) -> WasmRun {
    let fuel_left = store.get_fuel().unwrap_or(0);
    let state = store.into_data();
    let budget = *state.gate.caps().budget();
    let mut report = state.gate.report();
    report.kernel_wall = kernel_wall;
    report.usage.fuel = Some(budget.max_fuel.saturating_sub(fuel_left));
    report.usage.memory_peak_bytes = Some(state.limiter.peak_bytes as u64);
    report.usage.output_bytes = meter.used();
    if !state.deterministic {
        // The run's clock, read once more: the real time a run took, or
        // the injected clock's when there is one.
        report.usage.wall_ms =
            u64::try_from(state.gate.elapsed_now().as_millis()).unwrap_or(u64::MAX);
    }
    let mut trap = None;
    match end {
        End::Exit(0) => {
            report.status = Status::Completed;
            report.exit_code = Some(0);
        }
        End::Exit(code) => {
            report.status = Status::Exited;
            report.exit_code = Some(code);
        }
        End::Limit(v) => {
            report.status = Status::HardLimit;
            report.violation = Some(v);
        }
        End::Trap(message) => {
            report.status = Status::Trapped;
            trap = Some(message);
        }
    }
    WasmRun {
        report,
        audit: state.gate.audit().to_vec(),
        trap,
    }
}

pub(super) enum End {
    Exit(i32),
    Limit(Violation),
    Trap(String),
}

/// Map how the call failed onto a violation, an exit or a trap message.
fn classify(e: &wasmtime::Error, store: &Store<HostState>) -> End {
    let halted = store.data().gate.halted().map(|d| d.violation);
    classify_error(e, halted, store.data().limiter.hit)
}

/// The shared part of trap mapping: `halted` is the gate's tripped
/// violation, `memory_hit` whether the limiter refused a growth.
pub(super) fn classify_error(
    e: &wasmtime::Error,
    halted: Option<Violation>,
    memory_hit: bool,
) -> End {
    if let Some(exit) = e.downcast_ref::<I32Exit>() {
        return End::Exit(exit.0);
    }
    if let Some(HardLimit(v)) = e.downcast_ref::<HardLimit>() {
        return End::Limit(*v);
    }
    if let Some(v) = halted {
        return End::Limit(v);
    }
    if memory_hit {
        return End::Limit(Violation::MaxMemory);
    }
    match e.downcast_ref::<Trap>() {
        Some(Trap::OutOfFuel) => End::Limit(Violation::MaxFuel),
        Some(Trap::Interrupt) => End::Limit(Violation::MaxWall),
        Some(Trap::StackOverflow) => End::Limit(Violation::StackOverflow),
        _ => End::Trap(format!("{e:#}")),
    }
}

/// What a component run needs besides the component.
pub struct RunOptions {
    /// The grant.
    pub caps: Capabilities,
    /// `argv[0]` as the guest sees it.
    pub program_name: String,
    /// Arguments after `argv[0]`.
    pub args: Vec<String>,
    /// Standard input, whole (unless `inherit_stdin`).
    pub stdin: Vec<u8>,
    /// Give the guest this process's standard input instead of `stdin`,
    /// streamed as the guest reads it (never read ahead, so an open pipe
    /// the guest never reads does not hold the run).
    pub inherit_stdin: bool,
    /// Where guest stdout goes.
    pub stdout: Sink,
    /// Where guest stderr goes.
    pub stderr: Sink,
    /// Tools the guest may call (if the caps allow them).
    pub tools: ToolRegistry,
    /// The network for allowed fetches (default [`crate::net::HttpNet`]).
    pub net: Option<Arc<dyn Net>>,
    /// The resolver for fetches (default [`crate::net::SystemResolver`]).
    pub resolver: Option<Arc<dyn Resolve>>,
    /// The run's clock: the gate's wall meter, the epoch deadline (read at
    /// every epoch tick, every 10 ms, while guest code runs) and the
    /// report's `wall_ms` (default: [`MonotonicClock`], or a 1 ms
    /// [`TickClock`] when `deterministic`, which the epoch deadline does not
    /// read: see [`RunOptions::deterministic`]). Whatever the clock says, a
    /// real-time timeout at `max_wall_ms` around the whole call is the
    /// backstop: a clock slower than real time never lets a guest outlive
    /// it. A [`crate::ManualClock`] lets a test or an embedder drive time.
    pub clock: Option<Arc<dyn Clock>>,
    /// Virtual clocks and seeded randomness: the same component, caps and
    /// input give the same output, report and audit log. The virtual clock
    /// advances only when the guest calls the host, so a guest that never
    /// does is bounded by `max_fuel` (the deterministic budget) and by the
    /// real-time backstop at `max_wall_ms`.
    pub deterministic: bool,
    /// Seed for deterministic randomness.
    pub seed: u64,
    /// Confine this process to the grant (the kernel second wall, see
    /// [`crate::confine`]) once the run is set up and before guest code
    /// runs. Irreversible and process-wide: for a process that exists to
    /// run this one grant (the CLI's `run`). The report's `kernel_wall`
    /// says what was enforced.
    pub confine: Option<crate::confine::Policy>,
    /// With `confine`: refuse to run the guest unless the kernel enforced
    /// all of it.
    pub require_confinement: bool,
}

impl RunOptions {
    /// Defaults: `argv[0]` `agent`, no args, empty stdin (not inherited), output to this
    /// process's stdout and stderr, no tools, the real network
    /// ([`crate::net::HttpNet`]) and resolver ([`crate::net::SystemResolver`]),
    /// real clocks and randomness, seed 0, no kernel confinement.
    pub fn new(caps: Capabilities) -> Self {
        RunOptions {
            caps,
            program_name: "agent".into(),
            args: Vec::new(),
            stdin: Vec::new(),
            inherit_stdin: false,
            stdout: Arc::new(Mutex::new(std::io::stdout())),
            stderr: Arc::new(Mutex::new(std::io::stderr())),
            tools: ToolRegistry::new(),
            net: None,
            resolver: None,
            clock: None,
            deterministic: false,
            seed: 0,
            confine: None,
            require_confinement: false,
        }
    }
}

/// The outcome of a component run.
#[derive(Debug, Clone)]
pub struct WasmRun {
    /// The run report (status, exit code, violation, usage, limits, denials).
    pub report: RunReport,
    /// Every gated decision.
    pub audit: Vec<AuditEvent>,
    /// The trap message when the guest trapped for another reason than a
    /// limit.
    pub trap: Option<String>,
}
