//! The wasm front door: run a WASI 0.2 command component under a grant.
//!
//! The guest gets WASI with nothing ambient (the caps' mounts preopened
//! read-only or read-write at their guest paths, the caps' env, the given
//! args and stdin, no network, no inherited anything) plus the `sbx:agent`
//! imports, which go through the same [`Sandbox`] gate as plan ops. Budgets
//! map onto wasmtime: `max_fuel` to fuel, `max_memory_bytes` to a recording
//! resource limiter, `max_wall_ms` to an epoch deadline plus a timeout around
//! the whole call (a guest blocked in a WASI call, e.g. sleeping, burns no
//! fuel and sees no epoch), `max_output_bytes` to metered stdout/stderr
//! sharing the gate's meter.

mod cache;
mod fs_gate;
mod imports;
mod limits;
mod output;

pub use cache::{ArtifactCache, CacheEntry, CacheOutcome, process_alive};
pub use output::Sink;

use crate::budget::{Clock, MonotonicClock, OutputMeter, TickClock};
use crate::caps::Capabilities;
use crate::fs::Access;
use crate::gate::Sandbox;
use crate::net::{Net, Resolve};
use crate::report::{AuditEvent, RunReport, Status};
use crate::tools::ToolRegistry;
use crate::violation::Violation;
use limits::MemoryLimiter;
use output::MeteredOutput;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use wasmtime::component::{Component, HasSelf, Linker, ResourceTable};
use wasmtime::{Config, Engine, Store, Trap, UpdateDeadline};
use wasmtime_wasi::p2::bindings::CommandPre;
use wasmtime_wasi::p2::pipe::MemoryInputPipe;
use wasmtime_wasi::{FsPerms, I32Exit, WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};

/// A hard limit hit inside the host (an import, the output meter, the memory
/// limiter): the error that traps the guest, and how the report names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HardLimit(pub Violation);

impl fmt::Display for HardLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "hard limit: {}", self.0)
    }
}

impl std::error::Error for HardLimit {}

/// How often the epoch advances; the wall deadline is checked at this grain.
const EPOCH_TICK: Duration = Duration::from_millis(10);
/// Fuel a guest burns between two write-backs of its count to the store
/// (about 20 ms of a tight loop here): the error bound of `usage.fuel` when
/// the wall deadline, not fuel, ends a run.
const FUEL_SLICE: u64 = 100_000_000;
/// Guest stack limit; deeper recursion is `stack_overflow`.
const MAX_WASM_STACK: usize = 1024 * 1024;

pub(crate) struct HostState {
    wasi: WasiCtx,
    table: ResourceTable,
    gate: Sandbox,
    limiter: MemoryLimiter,
    /// What fs_gate knows of each directory descriptor (by resource rep).
    fs_paths: std::collections::HashMap<u32, fs_gate::DirInfo>,
    /// File times and identities come from the virtual clock.
    deterministic: bool,
}

impl WasiView for HostState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

/// Why a component could not be run at all (before any guest code ran).
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// Not WebAssembly, or a core module rather than a component.
    #[error("{path}: {why}")]
    NotAComponent {
        /// The file.
        path: String,
        /// What it is instead.
        why: String,
    },
    /// wasmtime rejected it (invalid, or imports the sandbox does not
    /// provide: the message names them).
    #[error("{path}: {message}")]
    Rejected {
        /// The file.
        path: String,
        /// wasmtime's message.
        message: String,
    },
    /// The grant's mounts could not be opened.
    #[error(transparent)]
    Setup(#[from] crate::Error),
}

/// Compiles and runs components; build once, reuse for many runs (the engine
/// and linker are shared).
///
/// # Examples
///
/// ```no_run
/// use sbx_wasm::Capabilities;
/// use sbx_wasm::tools::{ToolError, ToolRegistry};
/// use sbx_wasm::wasm::{RunOptions, WasmHost};
/// use std::sync::{Arc, Mutex};
///
/// let host = WasmHost::new().map_err(|e| format!("{e:#}"))?;
/// let caps = Capabilities::from_file("caps.toml")?;
/// let component = host.load("agent.wasm".as_ref())?;
///
/// let mut tools = ToolRegistry::new();
/// tools.register("upper", |s: &str| Ok::<_, ToolError>(s.to_uppercase()));
/// let stdout = Arc::new(Mutex::new(Vec::new()));
/// let mut opts = RunOptions::new(caps);
/// opts.args = vec!["--task".into(), "summarize".into()];
/// opts.tools = tools;
/// opts.stdout = stdout.clone();
/// let run = host.run(&component, opts)?;
/// println!("{:?} {:?}", run.report.status, run.report.violation);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// A file that is not a component is refused with a message that says what
/// it is:
///
/// ```
/// use sbx_wasm::wasm::WasmHost;
///
/// let host = WasmHost::new().map_err(|e| format!("{e:#}"))?;
/// let err = host.load_bytes(b"\0asm\x01\0\0\0", "core.wasm").unwrap_err();
/// assert!(err.to_string().contains("core WebAssembly module"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct WasmHost {
    engine: Engine,
    linker: Linker<HostState>,
    ticker: Arc<AtomicBool>,
    /// Work for the epoch thread to do on itself (kernel confinement).
    ticker_jobs: Mutex<std::sync::mpsc::Sender<TickerJob>>,
    empty_root: Mutex<Option<EmptyRoot>>,
    cache: Option<ArtifactCache>,
    allocator: Allocator,
}

/// A component linked against the sandbox's imports once, ready to be
/// instantiated for many runs (wasmtime's `InstancePre`): import resolution
/// and type checks are paid here, not per run.
///
/// A prepared agent runs only on the [`WasmHost`] that prepared it (another
/// host's engine cannot instantiate it; that is a setup error, not a panic).
pub struct PreparedAgent {
    pre: CommandPre<HostState>,
    engine: Engine,
}

/// How instances get their memory, tables and stacks.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Allocator {
    /// mmap per instance, the default.
    OnDemand,
    /// Slots reserved up front by [`WasmHost::with_pool`].
    Pooling(PoolSizes),
    /// The pool was asked for and could not be reserved; instances use
    /// mmap per instance instead. The reason says why.
    OnDemandFallback(String),
}

/// Sizes of the pooling allocator, derived from a grant by
/// [`PoolSizes::for_caps`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolSizes {
    /// Sandboxes alive at once.
    pub sandboxes: u32,
    /// Largest linear memory, in bytes (the grant's `max_memory_bytes`).
    pub max_memory_bytes: u64,
    /// Core instances one component may create (the Python runner has
    /// about a dozen; a Rust guest, a handful).
    pub core_instances_per_sandbox: u32,
    /// Linear memories one component may create.
    pub memories_per_sandbox: u32,
    /// Tables one component may create.
    pub tables_per_sandbox: u32,
    /// Largest table, in elements.
    pub table_elements: usize,
}

impl PoolSizes {
    /// Slots for `sandboxes` concurrent runs under `caps`: memories no
    /// larger than the grant allows, and room for components as large as
    /// the Python runner (32 core instances, 8 memories, 32 tables of up to
    /// 100,000 elements each).
    pub fn for_caps(caps: &Capabilities, sandboxes: u32) -> Self {
        PoolSizes {
            sandboxes,
            max_memory_bytes: caps.budget().max_memory_bytes,
            core_instances_per_sandbox: 32,
            memories_per_sandbox: 8,
            tables_per_sandbox: 32,
            table_elements: 100_000,
        }
    }
}

impl Drop for WasmHost {
    fn drop(&mut self) {
        self.ticker.store(false, Ordering::SeqCst);
        self.drop_empty_root();
    }
}

type TickerJob = Box<dyn FnOnce() + Send>;

/// An empty folder for the root preopen, which grants nothing: it only makes
/// paths outside every mount reach the host, to be refused and audited. One
/// per host, made on first use.
///
/// The folder is removed from the file system as soon as it is open, and
/// runs preopen it through the open handle (`/proc/self/fd/N`): a deleted
/// folder stays empty (nothing can be created in it), and nothing is left
/// on disk whatever ends the process, `kill -9` included; the kernel frees
/// it with the handle. Without `/proc` the folder is kept and removed when
/// the host is dropped (or before confinement, once the run has it open).
#[derive(Debug)]
struct EmptyRoot {
    /// What a run preopens.
    path: PathBuf,
    /// The open folder, when `path` names it through `/proc/self/fd`.
    _handle: Option<std::fs::File>,
    /// The folder on disk, when it could not be removed at once.
    on_disk: Option<PathBuf>,
}

fn make_empty_root() -> std::io::Result<EmptyRoot> {
    use std::os::fd::AsRawFd;
    static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let dir = std::env::temp_dir().join(format!(
        "sbx-wasm-root-{}-{}-{nanos}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir(&dir)?;
    let handle = std::fs::File::open(&dir)?;
    let via_fd = PathBuf::from(format!("/proc/self/fd/{}", handle.as_raw_fd()));
    if std::fs::metadata(&via_fd).is_ok_and(|m| m.is_dir()) && std::fs::remove_dir(&dir).is_ok() {
        return Ok(EmptyRoot {
            path: via_fd,
            _handle: Some(handle),
            on_disk: None,
        });
    }
    Ok(EmptyRoot {
        path: dir.clone(),
        _handle: None,
        on_disk: Some(dir),
    })
}

fn base_config() -> Config {
    let mut config = Config::new();
    config.consume_fuel(true);
    config.epoch_interruption(true);
    config.wasm_component_model(true);
    config.max_wasm_stack(MAX_WASM_STACK);
    config
}

fn pooled_engine(sizes: &PoolSizes) -> wasmtime::Result<Engine> {
    let mut pool = wasmtime::PoolingAllocationConfig::new();
    let n = sizes.sandboxes.max(1);
    pool.total_component_instances(n)
        .total_core_instances(n.saturating_mul(sizes.core_instances_per_sandbox))
        .total_memories(n.saturating_mul(sizes.memories_per_sandbox))
        .total_tables(n.saturating_mul(sizes.tables_per_sandbox))
        .total_stacks(n)
        .max_core_instances_per_component(sizes.core_instances_per_sandbox)
        .max_memories_per_component(sizes.memories_per_sandbox)
        .max_tables_per_component(sizes.tables_per_sandbox)
        .table_elements(sizes.table_elements)
        .max_memory_size(usize::try_from(sizes.max_memory_bytes).unwrap_or(usize::MAX));
    let mut config = base_config();
    config.allocation_strategy(wasmtime::InstanceAllocationStrategy::Pooling(pool));
    Engine::new(&config)
}

impl WasmHost {
    /// An engine with fuel, epoch interruption and async support, and a
    /// linker with WASI 0.2 and the `sbx:agent` imports. Instances are
    /// allocated on demand (see [`WasmHost::with_pool`] for many runs).
    pub fn new() -> wasmtime::Result<Self> {
        Self::build(Engine::new(&base_config())?, Allocator::OnDemand)
    }

    /// Like [`WasmHost::new`], with instance slots reserved up front for
    /// `sizes.sandboxes` concurrent runs: instantiation then reuses slots
    /// instead of mapping memory per run. If the pool cannot be reserved
    /// (address-space limits, `ulimit -v`), the host falls back to on-demand
    /// allocation; [`WasmHost::allocator`] says which one it got.
    ///
    /// A run needing more than the sizes allow (more concurrent sandboxes,
    /// a larger table) fails to instantiate with wasmtime's message.
    pub fn with_pool(sizes: PoolSizes) -> wasmtime::Result<Self> {
        match pooled_engine(&sizes) {
            Ok(engine) => Self::build(engine, Allocator::Pooling(sizes)),
            Err(e) => Self::build(
                Engine::new(&base_config())?,
                Allocator::OnDemandFallback(format!("{e:#}")),
            ),
        }
    }

    /// Which instance allocator this host uses.
    pub fn allocator(&self) -> &Allocator {
        &self.allocator
    }

    fn build(engine: Engine, allocator: Allocator) -> wasmtime::Result<Self> {
        let mut linker = Linker::new(&engine);
        wasmtime_wasi::p2::add_to_linker_async(&mut linker)?;
        fs_gate::add_to_linker(&mut linker)?;
        imports::Agent::add_to_linker::<HostState, HasSelf<HostState>>(&mut linker, |s| s)?;
        // The epoch advances on its own thread; each store's callback decides
        // what a tick means for it.
        let ticker = Arc::new(AtomicBool::new(true));
        let (e, alive) = (engine.weak(), ticker.clone());
        let (jobs_tx, jobs) = std::sync::mpsc::channel::<TickerJob>();
        std::thread::spawn(move || {
            let mut next = Instant::now() + EPOCH_TICK;
            while alive.load(Ordering::SeqCst) {
                // Sleep until the next tick, waking at once for a job (a
                // run waits on its confinement job before starting).
                match jobs.recv_timeout(next.saturating_duration_since(Instant::now())) {
                    Ok(job) => {
                        job();
                        continue;
                    }
                    Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
                    Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
                }
                next += EPOCH_TICK;
                match e.upgrade() {
                    Some(engine) => engine.increment_epoch(),
                    None => break,
                }
            }
        });
        Ok(WasmHost {
            engine,
            linker,
            ticker,
            ticker_jobs: Mutex::new(jobs_tx),
            empty_root: Mutex::new(None),
            cache: None,
            allocator,
        })
    }

    /// Keep compiled components in `cache`: a component compiled once loads
    /// without a compile on every later run.
    pub fn with_cache(mut self, cache: ArtifactCache) -> Self {
        self.cache = Some(cache);
        self
    }

    /// The artifact cache, if any.
    pub fn cache(&self) -> Option<&ArtifactCache> {
        self.cache.as_ref()
    }

    /// The engine.
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// Read and compile a component, with errors that say what the file is.
    pub fn load(&self, path: &Path) -> Result<Component, LoadError> {
        self.load_traced(path).map(|(c, _)| c)
    }

    /// Compile a component from bytes; `name` appears in errors.
    pub fn load_bytes(&self, bytes: &[u8], name: &str) -> Result<Component, LoadError> {
        self.load_bytes_traced(bytes, name).map(|(c, _)| c)
    }

    /// Like [`WasmHost::load`], and says whether the cache served it
    /// (`None` without a cache).
    pub fn load_traced(&self, path: &Path) -> Result<(Component, Option<CacheOutcome>), LoadError> {
        let shown = path.display().to_string();
        if let Some(cache) = &self.cache
            && let Some(component) = cache.get_by_file(&self.engine, path)
        {
            self.prepare_named(&component, &shown)?;
            return Ok((component, Some(CacheOutcome::Hit)));
        }
        let bytes = std::fs::read(path).map_err(|source| LoadError::Read {
            path: shown.clone(),
            source,
        })?;
        self.load_bytes_from(&bytes, &shown, Some(path))
    }

    /// Like [`WasmHost::load_bytes`], and says whether the cache served it
    /// (`None` without a cache).
    pub fn load_bytes_traced(
        &self,
        bytes: &[u8],
        name: &str,
    ) -> Result<(Component, Option<CacheOutcome>), LoadError> {
        self.load_bytes_from(bytes, name, None)
    }

    /// `bytes`, read from the file `source` when there is one (the cache
    /// then remembers the file, so its next load need not read it).
    fn load_bytes_from(
        &self,
        bytes: &[u8],
        name: &str,
        source: Option<&Path>,
    ) -> Result<(Component, Option<CacheOutcome>), LoadError> {
        let not = |why: &str| LoadError::NotAComponent {
            path: name.to_string(),
            why: why.to_string(),
        };
        if bytes.len() < 8 || &bytes[..4] != b"\0asm" {
            return Err(not("not a WebAssembly file"));
        }
        if bytes[4..8] == [1, 0, 0, 0] {
            return Err(not(
                "a core WebAssembly module, not a component; build for wasm32-wasip2 \
                 (or wrap it with `wasm-tools component new`)",
            ));
        }
        let rejected = |e: wasmtime::Error| LoadError::Rejected {
            path: name.to_string(),
            message: format!("{e:#}"),
        };
        let (component, outcome) = match &self.cache {
            Some(cache) => {
                let (c, o) = match source {
                    Some(file) => cache.get_or_compile_file(&self.engine, bytes, file),
                    None => cache.get_or_compile(&self.engine, bytes),
                }
                .map_err(rejected)?;
                (c, Some(o))
            }
            None => (Component::new(&self.engine, bytes).map_err(rejected)?, None),
        };
        self.prepare_named(&component, name)?;
        Ok((component, outcome))
    }

    /// Link `component` once for many runs (see [`PreparedAgent`]).
    pub fn prepare(&self, component: &Component) -> Result<PreparedAgent, LoadError> {
        self.prepare_named(component, "component")
    }

    fn prepare_named(&self, component: &Component, name: &str) -> Result<PreparedAgent, LoadError> {
        let rejected = |message: String| LoadError::Rejected {
            path: name.to_string(),
            message,
        };
        let pre = self
            .linker
            .instantiate_pre(component)
            .map_err(|e| rejected(format!("needs imports the sandbox does not provide: {e:#}")))?;
        let pre = CommandPre::new(pre).map_err(|e| {
            rejected(format!(
                "not a WASI command (no wasi:cli/run export): {e:#}"
            ))
        })?;
        Ok(PreparedAgent {
            pre,
            engine: self.engine.clone(),
        })
    }

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
        let caps = opts.caps;
        let budget = *caps.budget();
        let clock: Arc<dyn Clock> = match (opts.clock, opts.deterministic) {
            (Some(c), _) => c,
            (None, true) => Arc::new(TickClock::new(Duration::from_millis(1))),
            (None, false) => Arc::new(MonotonicClock::new()),
        };
        let meter = Arc::new(OutputMeter::new(budget.max_output_bytes));
        let gate = Sandbox::builder(caps.clone())
            .tools(opts.tools)
            .output_meter(meter.clone())
            .clock_shared(clock.clone());
        let gate = match opts.net {
            Some(net) => gate.net_shared(net),
            None => gate,
        };
        let gate = match opts.resolver {
            Some(r) => gate.resolver_shared(r),
            None => gate,
        };
        let gate = gate.build()?;

        let mut wasi = WasiCtxBuilder::new();
        if wasi
            .preopened_dir(self.empty_root()?, "/", FsPerms::ReadOnly)
            .is_err()
        {
            // Removed behind our back (a tmp cleaner): make a new one, once.
            self.drop_empty_root();
            wasi.preopened_dir(self.empty_root()?, "/", FsPerms::ReadOnly)
                .map_err(|e| setup(format!("cannot preopen the empty root: {e:#}")))?;
        }
        for m in caps.mounts() {
            let perms = match m.access {
                Access::ReadOnly => FsPerms::ReadOnly,
                Access::ReadWrite => FsPerms::ReadWrite,
            };
            wasi.preopened_dir(&m.host, m.guest.as_str(), perms)
                .map_err(|e| setup(format!("cannot preopen {}: {e:#}", m.host.display())))?;
        }
        let env: Vec<(&String, &String)> = caps.env().iter().collect();
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
            wasi.stdin(MemoryInputPipe::new(opts.stdin));
        }
        wasi.stdout(MeteredOutput::new(meter.clone(), opts.stdout));
        wasi.stderr(MeteredOutput::new(meter.clone(), opts.stderr));
        if opts.deterministic {
            wasi.wall_clock(FixedWallClock);
            wasi.monotonic_clock(TickMonotonic::default());
            wasi.secure_random(wasmtime_wasi::Deterministic::new(seed_bytes(opts.seed)));
            wasi.insecure_random(wasmtime_wasi::Deterministic::new(seed_bytes(
                opts.seed ^ 0x5eed,
            )));
            wasi.insecure_random_seed(u128::from(opts.seed));
        }
        let state = HostState {
            wasi: wasi.build(),
            table: ResourceTable::new(),
            gate,
            limiter: MemoryLimiter::new(budget.max_memory_bytes),
            fs_paths: std::collections::HashMap::new(),
            deterministic: opts.deterministic,
        };
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
        // the timeout around the call below is the real-time backstop.
        let deterministic = opts.deterministic;
        store.set_epoch_deadline(1);
        store.epoch_deadline_callback(move |ctx| {
            if !deterministic && ctx.data().gate.elapsed_now() > budget.max_wall {
                Err(wasmtime::Error::new(HardLimit(Violation::MaxWall)))
            } else {
                Ok(UpdateDeadline::Yield(1))
            }
        });

        let kernel_wall = match &opts.confine {
            Some(policy) => {
                let wall = self.confine(policy);
                if opts.require_confinement && !wall.up {
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
                Some(wall)
            }
            None => None,
        };

        let call = async {
            let command = agent.pre.instantiate_async(&mut store).await?;
            command.wasi_cli_run().call_run(&mut store).await
        };
        let result = tokio::time::timeout(budget.max_wall, call).await;
        let end = match result {
            Err(_) => End::Limit(Violation::MaxWall),
            Ok(Ok(Ok(()))) => End::Exit(0),
            Ok(Ok(Err(()))) => End::Exit(1),
            Ok(Err(e)) => classify(&e, &store),
        };
        let fuel_left = store.get_fuel().unwrap_or(0);
        let state = store.into_data();
        let mut report = state.gate.report();
        report.kernel_wall = kernel_wall;
        report.usage.fuel = Some(budget.max_fuel.saturating_sub(fuel_left));
        report.usage.memory_peak_bytes = Some(state.limiter.peak_bytes as u64);
        report.usage.output_bytes = meter.used();
        report.usage.wall_ms = if opts.deterministic {
            report.usage.wall_ms
        } else {
            // The run's clock, read once more: the real time a run took,
            // or the injected clock's when there is one.
            u64::try_from(state.gate.elapsed_now().as_millis()).unwrap_or(u64::MAX)
        };
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
        Ok(WasmRun {
            report,
            audit: state.gate.audit().to_vec(),
            trap,
        })
    }
}

impl WasmHost {
    /// The empty root folder's preopen path, made if needed.
    fn empty_root(&self) -> Result<PathBuf, LoadError> {
        let mut slot = self
            .empty_root
            .lock()
            .map_err(|_| setup("empty root lock poisoned".into()))?;
        if let Some(root) = slot.as_ref() {
            return Ok(root.path.clone());
        }
        let root = make_empty_root()
            .map_err(|e| setup(format!("cannot create the empty root folder: {e}")))?;
        let path = root.path.clone();
        *slot = Some(root);
        Ok(path)
    }

    fn drop_empty_root(&self) {
        if let Ok(mut slot) = self.empty_root.lock()
            && let Some(root) = slot.take()
            && let Some(dir) = root.on_disk
        {
            let _ = std::fs::remove_dir(dir);
        }
    }

    /// Apply `policy` on this thread and the whole process, then have the
    /// epoch thread (started before) apply the same Landlock rules on
    /// itself: on kernels without Landlock's thread sync it would otherwise
    /// keep the process's full authority.
    fn confine(&self, policy: &crate::confine::Policy) -> crate::KernelWall {
        // A root kept on disk (no /proc) must go now: the run holds it open
        // already, and a confined process could not remove it later.
        if let Ok(mut slot) = self.empty_root.lock()
            && slot.as_ref().is_some_and(|r| r.on_disk.is_some())
            && let Some(EmptyRoot {
                on_disk: Some(dir), ..
            }) = slot.take()
        {
            let _ = std::fs::remove_dir(dir);
        }
        let mut wall = policy.apply();
        let (tx, rx) = std::sync::mpsc::channel();
        let mut own = policy.clone();
        own.seccomp = false; // already installed on every thread
        let job: TickerJob = Box::new(move || {
            let _ = tx.send(own.apply());
        });
        let sent = self
            .ticker_jobs
            .lock()
            .map(|j| j.send(job).is_ok())
            .unwrap_or(false);
        match rx.recv_timeout(Duration::from_secs(2)) {
            Ok(t) if sent && t.landlock == wall.landlock => {}
            Ok(t) => {
                wall.up = false;
                wall.notes
                    .push(format!("epoch thread: landlock {}", t.landlock));
            }
            Err(_) => {
                wall.up = false;
                wall.notes
                    .push("epoch thread did not confine itself".into());
            }
        }
        wall
    }
}

fn setup(message: String) -> LoadError {
    LoadError::Setup(crate::Error::Setup(message))
}

enum End {
    Exit(i32),
    Limit(Violation),
    Trap(String),
}

/// How a core module run ended (see [`WasmHost::run_core_module`]).
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CoreOutcome {
    /// The module did not validate or compile.
    Invalid(String),
    /// Every export that could be called returned.
    Completed,
    /// A budget halted it.
    Limit(Violation),
    /// It trapped for another reason.
    Trapped(String),
}

impl WasmHost {
    /// Instantiate a core module that imports nothing and call each exported
    /// function (arguments zero), under the same engine settings and limits
    /// as components: fuel, the memory limiter, a real-time wall deadline,
    /// the stack limit. For the guest fuzzer: whatever the module, this
    /// returns an outcome, within the wall budget.
    pub fn run_core_module(&self, bytes: &[u8], budget: &crate::Budget) -> CoreOutcome {
        use wasmtime::{Module, Val};
        let module = match Module::new(&self.engine, bytes) {
            Ok(m) => m,
            Err(e) => return CoreOutcome::Invalid(format!("{e:#}")),
        };
        let mut store = Store::new(&self.engine, MemoryLimiter::new(budget.max_memory_bytes));
        store.limiter(|l| l);
        if let Err(e) = store.set_fuel(budget.max_fuel) {
            return CoreOutcome::Invalid(format!("{e:#}"));
        }
        let deadline = Instant::now() + budget.max_wall;
        store.set_epoch_deadline(1);
        store.epoch_deadline_callback(move |_| {
            if Instant::now() >= deadline {
                Err(wasmtime::Error::new(HardLimit(Violation::MaxWall)))
            } else {
                Ok(UpdateDeadline::Continue(1))
            }
        });
        let end = |e: wasmtime::Error, store: &Store<MemoryLimiter>| match classify_error(
            &e,
            None,
            store.data().hit,
        ) {
            End::Limit(v) => CoreOutcome::Limit(v),
            End::Trap(m) => CoreOutcome::Trapped(m),
            End::Exit(c) => CoreOutcome::Trapped(format!("exit {c}")),
        };
        let instance = match wasmtime::Linker::new(&self.engine).instantiate(&mut store, &module) {
            Ok(i) => i,
            Err(e) => return end(e, &store),
        };
        let funcs: Vec<_> = module
            .exports()
            .filter_map(|e| e.ty().func().map(|_| e.name().to_string()))
            .collect();
        for name in funcs {
            let Some(func) = instance.get_func(&mut store, &name) else {
                continue;
            };
            let ty = func.ty(&store);
            let params: Option<Vec<Val>> = ty.params().map(|t| Val::default_for_ty(&t)).collect();
            let Some(params) = params else {
                continue;
            };
            let mut results: Vec<Val> = ty
                .results()
                .map(|t| Val::default_for_ty(&t).unwrap_or(Val::I32(0)))
                .collect();
            if let Err(e) = func.call(&mut store, &params, &mut results) {
                return end(e, &store);
            }
        }
        CoreOutcome::Completed
    }
}

/// Map how the call failed onto a violation, an exit or a trap message.
fn classify(e: &wasmtime::Error, store: &Store<HostState>) -> End {
    let halted = store.data().gate.halted().map(|d| d.violation);
    classify_error(e, halted, store.data().limiter.hit)
}

/// The shared part of trap mapping: `halted` is the gate's tripped
/// violation, `memory_hit` whether the limiter refused a growth.
fn classify_error(e: &wasmtime::Error, halted: Option<Violation>, memory_hit: bool) -> End {
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

fn seed_bytes(seed: u64) -> Vec<u8> {
    // xorshift64*: enough for a reproducible byte cycle, not for secrets
    // (deterministic mode is for replay, never for production randomness).
    let mut x = seed | 1;
    (0..4096)
        .map(|_| {
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            (x.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 56) as u8
        })
        .collect()
}

/// The deterministic wall clock's reading: 2026-01-01T00:00:00Z.
const FIXED_WALL_SECONDS: u64 = 1_767_225_600;

/// Deterministic wall clock: always 2026-01-01T00:00:00Z.
struct FixedWallClock;

impl wasmtime_wasi::HostWallClock for FixedWallClock {
    fn resolution(&self) -> Duration {
        Duration::from_secs(1)
    }
    fn now(&self) -> Duration {
        Duration::from_secs(FIXED_WALL_SECONDS)
    }
}

/// Deterministic monotonic clock: 1 ms per reading.
#[derive(Default)]
struct TickMonotonic {
    readings: std::sync::atomic::AtomicU64,
}

impl wasmtime_wasi::HostMonotonicClock for TickMonotonic {
    fn resolution(&self) -> u64 {
        1_000_000
    }
    fn now(&self) -> u64 {
        self.readings.fetch_add(1, Ordering::Relaxed) * 1_000_000
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

#[cfg(test)]
mod tests {
    use super::*;

    /// `(module (func (export "f") BODY))` with a one-type, one-func layout.
    fn module(body: &[u8]) -> Vec<u8> {
        let mut m = b"\0asm\x01\0\0\0".to_vec();
        m.extend_from_slice(&[0x01, 0x04, 0x01, 0x60, 0x00, 0x00]); // type () -> ()
        m.extend_from_slice(&[0x03, 0x02, 0x01, 0x00]); // func 0 : type 0
        m.extend_from_slice(&[0x07, 0x05, 0x01, 0x01, b'f', 0x00, 0x00]); // export "f"
        let mut code = vec![0x00]; // no locals
        code.extend_from_slice(body);
        let mut section = vec![0x01, code.len() as u8];
        section.extend_from_slice(&code);
        m.push(0x0a);
        m.push(section.len() as u8);
        m.extend_from_slice(&section);
        m
    }

    #[test]
    fn core_modules_end_in_an_outcome_within_budget() {
        let host = WasmHost::new().unwrap();
        let budget = crate::Budget {
            max_fuel: 100_000,
            ..crate::Budget::default()
        };
        assert_eq!(
            host.run_core_module(&module(&[0x0b]), &budget),
            CoreOutcome::Completed
        );
        // loop { br 0 }
        let spin = module(&[0x03, 0x40, 0x0c, 0x00, 0x0b, 0x0b]);
        assert_eq!(
            host.run_core_module(&spin, &budget),
            CoreOutcome::Limit(Violation::MaxFuel)
        );
        let timed = crate::Budget {
            max_fuel: u64::MAX / 2,
            max_wall: Duration::from_millis(100),
            ..crate::Budget::default()
        };
        assert_eq!(
            host.run_core_module(&spin, &timed),
            CoreOutcome::Limit(Violation::MaxWall)
        );
        // unreachable
        assert!(matches!(
            host.run_core_module(&module(&[0x00, 0x0b]), &budget),
            CoreOutcome::Trapped(_)
        ));
        assert!(matches!(
            host.run_core_module(b"\0asm\x01\0\0\0\xff", &budget),
            CoreOutcome::Invalid(_)
        ));
    }
}
