//! The wasm front door: run a WASI 0.2 (or 0.3, `wasi03.rs`) command
//! component under a grant.
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

mod admission;
mod ahead;
mod begin;
mod cache;
mod cache_key;
mod clocks;
#[cfg(test)]
mod confine_thread;
mod diagnostics;
// The guest fuzzer's entry, not part of the embedding API.
#[cfg(any(test, feature = "fuzzing"))]
mod core;
mod engine;
mod fs_gate;
mod held;
pub(crate) mod imports;
mod limits;
mod load;
mod options;
mod outcome;
mod output;
mod page_reset;
mod prefault;
pub mod python;
pub(crate) mod relay;
mod root;
mod run;
mod run_inputs;
pub mod runner;
mod runner_data;
pub mod runner_source;
mod serve;
mod tmp_dirs;
mod warm;
mod wasi03;
mod wasi_context;

pub use admission::Admission;
pub use cache::{ArtifactCache, CacheEntry, CacheOutcome, process_alive};
#[cfg(any(test, feature = "fuzzing"))]
pub use core::CoreOutcome;
pub use diagnostics::Diagnostics;
pub use engine::{Allocator, PoolSizes};
pub use held::{MAX_OPEN_FILES, MAX_OPEN_SOCKETS};
pub use imports::{MAX_HTTP_BODIES, MAX_HTTP_BODY_BYTES_HELD};
pub use load::{LoadError, MAX_COMPONENT_BYTES, refuse_unsupported_imports, unsupported_import};
pub use options::{RunOptions, WasmRun};
pub use output::Sink;
pub use page_reset::PageReset;
pub use python::PythonRunner;
pub use runner::{DataPython, JavaScript, Language, Python, ScriptRunner};
pub use serve::{PreparedService, Served};
pub use wasi03::MAX_WASI03_HANDLES;

/// The JavaScript runner, compiled and linked once: run many scripts with
/// it ([`ScriptRunner`] for [`JavaScript`]; TypeScript is stripped inside
/// the guest).
pub type JsRunner = ScriptRunner<JavaScript>;

/// The data runner (CPython with numpy, pandas, matplotlib, scipy and
/// scikit-learn), compiled and linked once ([`ScriptRunner`] for
/// [`DataPython`]).
pub type DataRunner = ScriptRunner<DataPython>;

use crate::gate::Sandbox;
use crate::violation::Violation;
use engine::TickerJob;
use limits::MemoryLimiter;
use root::EmptyRoot;
use std::fmt;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use wasmtime::Engine;
use wasmtime::component::{Linker, ResourceTable};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

/// A hard limit hit inside the host (an import, the output meter, the memory
/// limiter): the error that traps the guest, and how the report names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct HardLimit(pub(crate) Violation);

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
    /// The folders `get-directories` lends, with their guest paths, made
    /// at its first call (`root.rs`).
    preopens: root::Preopens,
    /// What fs_gate knows of each directory descriptor (by resource rep).
    fs_paths: std::collections::HashMap<u32, fs_gate::DirInfo>,
    /// The files the guest has open (`held.rs`).
    open_files: held::Held,
    /// File times and identities come from the virtual clock.
    deterministic: bool,
    /// The exception a script runner said the script ended on (boxed: set
    /// once, by a failing script, and every run's state holds its room).
    script_error: Option<Box<crate::report::ScriptError>>,
    /// The exit code a script runner said the script asked for.
    exit_code: Option<i32>,
    /// wasi:http's requests and their state (`imports/http/`).
    http: imports::HttpDoor,
    /// wasi:sockets' lookups and connections (`imports/sockets/`).
    tcp: imports::SocketDoor,
}

impl HostState {
    /// The run's gate, for the capabilities' WIT adapters.
    pub(crate) fn gate_mut(&mut self) -> &mut Sandbox {
        &mut self.gate
    }
}

impl WasiView for HostState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

/// Compiles and runs components; build once, reuse for many runs (the engine
/// and linker are shared).
///
/// | setting | default |
/// |---|---|
/// | artifact cache | the default folder ([`ArtifactCache::default_dir`]) when it opens; [`with_cache`](WasmHost::with_cache), [`without_cache`](WasmHost::without_cache) |
/// | runs at once | one per core; [`max_concurrent`](WasmHost::max_concurrent), [`unlimited`](WasmHost::unlimited) |
/// | instance allocation | on demand; [`with_pool`](WasmHost::with_pool) reserves slots |
/// | fuel metering | on; [`new_unmetered`](WasmHost::new_unmetered) for wall-only grants |
///
/// # Examples
///
/// ```no_run
/// use sbx_wasm::{Capabilities, Services};
/// use sbx_wasm::tools::{ToolError, ToolRegistry};
/// use sbx_wasm::wasm::{RunOptions, WasmHost};
///
/// let host = WasmHost::new().map_err(|e| format!("{e:#}"))?;
/// let caps = Capabilities::from_file("caps.toml")?;
/// let component = host.load("agent.wasm".as_ref())?;
///
/// let mut tools = ToolRegistry::new();
/// tools.register("upper", |s: &str| Ok::<_, ToolError>(s.to_uppercase()));
/// let opts = RunOptions::new(caps)
///     .args(["--task", "summarize"])
///     .services(Services::default().tools(tools));
/// let run = host.run(&component, opts)?;
/// println!("{:?} {:?}", run.report.status, run.report.violation);
/// println!("{}", String::from_utf8_lossy(&run.stdout));
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
#[derive(Clone)]
pub struct WasmHost {
    shared: Arc<Shared>,
    cache: Option<Arc<ArtifactCache>>,
    /// Host paths no run's grant may mount (the cache and its key, and
    /// what [`WasmHost::protect`] added).
    protected: Arc<crate::ProtectedPaths>,
    /// What [`WasmHost::protect`] added (the cache's paths are added to it
    /// to make `protected`).
    own_protected: Arc<crate::ProtectedPaths>,
    /// At most this many runs at once ([`WasmHost::max_concurrent`]);
    /// `None`: no limit.
    slots: Option<admission::Slots>,
}

/// What every clone of a [`WasmHost`] shares: one engine, one linker, one
/// epoch thread (stopped when the last clone goes), one empty root.
struct Shared {
    engine: Engine,
    linker: Linker<HostState>,
    /// WASI 0.3 components' engine and linker, made for the first one.
    wasi03: std::sync::OnceLock<Result<engine::Wasi03, String>>,
    /// The 0.3 engine, for the epoch thread to advance once it exists.
    wasi03_ticks: Arc<std::sync::OnceLock<wasmtime::EngineWeak>>,
    ticker: Arc<AtomicBool>,
    /// Work for the epoch thread to do on itself (kernel confinement).
    ticker_jobs: Mutex<std::sync::mpsc::Sender<TickerJob>>,
    empty_root: Mutex<Option<EmptyRoot>>,
    allocator: Allocator,
    /// Whether compiled code meters fuel.
    fuel: bool,
    /// Stores of finished runs that warming threads have yet to drop.
    retiring: Arc<warm::Retiring>,
}

/// A component linked against the sandbox's imports once, ready to be
/// instantiated for many runs (wasmtime's `InstancePre`): import resolution
/// and type checks are paid here, not per run.
///
/// A prepared agent runs only on the [`WasmHost`] that prepared it (another
/// host's engine cannot instantiate it; that is a setup error, not a panic).
/// Cloning is cheap: clones share the linked component.
#[derive(Clone)]
pub struct PreparedAgent {
    /// Its `run` export, WASI 0.2's or 0.3's.
    pre: wasi03::Entry,
    engine: Engine,
    /// Whether the engine meters fuel (warm instances start with a full tank).
    fuel: bool,
    /// Instances made ahead of runs ([`PreparedAgent::keep_warm`]).
    warm: Option<Arc<warm::WarmPool>>,
    /// The host's stores on their way to being dropped.
    retiring: Arc<warm::Retiring>,
}

fn setup(message: String) -> LoadError {
    LoadError::Setup(crate::Error::Setup(message))
}
