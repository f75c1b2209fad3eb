//! The engine (fuel, epochs, async, the pooling allocator when asked), the
//! linker (WASI 0.2, the gated filesystem, the `sbx:agent` imports), the
//! epoch thread, and the kernel wall applied around a run.

use super::root::{EmptyRoot, drop_root};
use super::{
    ArtifactCache, EPOCH_TICK, HostState, MAX_WASM_STACK, Shared, WasmHost, fs_gate, imports,
};
use crate::caps::Capabilities;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};
use wasmtime::component::{HasSelf, Linker};
use wasmtime::{Config, Engine, EngineWeak};

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
    /// Bytes of each memory and table slot that a finished run dirtied and
    /// that stay resident for the next run in the slot, reset by copying
    /// the original contents back rather than unmapped (the pages a run
    /// wrote are found with Linux's `PAGEMAP_SCAN` where the kernel has it,
    /// 6.7 and later: [`PageReset`](super::PageReset); elsewhere the lowest bytes are
    /// reset by copying). The next run then writes to those pages without a
    /// page fault each; the cost is that much resident memory per slot
    /// between runs. 0 unmaps everything, as wasmtime does by default.
    pub keep_resident_bytes: usize,
}

impl PoolSizes {
    /// Slots for `sandboxes` concurrent runs under `caps`: memories no
    /// larger than the grant allows, and room for components as large as
    /// the Python runner (32 core instances, 8 memories, 32 tables of up to
    /// 100,000 elements each); with the kept page reset
    /// ([`PageReset::Kept`](super::PageReset::Kept): Linux 6.7 and later),
    /// 8 MiB of each slot kept resident (room for
    /// what a small Python snippet writes), none otherwise: without the
    /// scan a reset would copy those bytes whether the run wrote them or
    /// not.
    pub fn for_caps(caps: &Capabilities, sandboxes: u32) -> Self {
        Self::for_reset(caps, sandboxes, super::PageReset::detect())
    }

    /// [`PoolSizes::for_caps`] for a given page reset.
    pub(crate) fn for_reset(caps: &Capabilities, sandboxes: u32, reset: super::PageReset) -> Self {
        PoolSizes {
            sandboxes,
            max_memory_bytes: caps.budget().max_memory_bytes,
            core_instances_per_sandbox: 32,
            memories_per_sandbox: 8,
            tables_per_sandbox: 32,
            table_elements: 100_000,
            keep_resident_bytes: if reset.uses_scan() { 8 << 20 } else { 0 },
        }
    }

    /// wasmtime's pooling allocator configured for these sizes, as
    /// [`WasmHost::with_pool`] uses it (a baseline that compares with the
    /// host can take the same). The kernel's page scan is used where it
    /// exists ([`PageReset::uses_scan`](super::PageReset::uses_scan)).
    pub fn pooling_config(&self) -> wasmtime::PoolingAllocationConfig {
        self.config_for(super::PageReset::detect())
    }

    /// [`PoolSizes::pooling_config`] for a given page reset.
    pub(crate) fn config_for(&self, reset: super::PageReset) -> wasmtime::PoolingAllocationConfig {
        let mut pool = wasmtime::PoolingAllocationConfig::new();
        let n = self.sandboxes.max(1);
        pool.total_component_instances(n)
            .total_core_instances(n.saturating_mul(self.core_instances_per_sandbox))
            .total_memories(n.saturating_mul(self.memories_per_sandbox))
            .total_tables(n.saturating_mul(self.tables_per_sandbox))
            .total_stacks(n)
            .max_core_instances_per_component(self.core_instances_per_sandbox)
            .max_memories_per_component(self.memories_per_sandbox)
            .max_tables_per_component(self.tables_per_sandbox)
            .table_elements(self.table_elements)
            .max_memory_size(usize::try_from(self.max_memory_bytes).unwrap_or(usize::MAX))
            .linear_memory_keep_resident(self.keep_resident_bytes)
            .table_keep_resident(self.keep_resident_bytes)
            .pagemap_scan(match reset.uses_scan() {
                true => wasmtime::Enabled::Auto,
                false => wasmtime::Enabled::No,
            });
        pool
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        self.ticker.store(false, Ordering::SeqCst);
        drop_root(&self.empty_root);
    }
}

pub(super) type TickerJob = Box<dyn FnOnce() + Send>;
fn base_config(fuel: bool) -> Config {
    let mut config = Config::new();
    config.consume_fuel(fuel);
    config.epoch_interruption(true);
    config.wasm_component_model(true);
    // Off for WASI 0.2: with it on (wasmtime's default once the async
    // component model is compiled in) every store and call goes through
    // the concurrent event loop, which cost a 0.2 instantiate+run about
    // half as much again (P3, measured). 0.3 guests get an engine of their
    // own (`wasi03_config`).
    config.concurrency_support(false);
    // Off here (on by default once wasmtime carries its GC): exceptions
    // and GC types are the second engine's, for the components that use
    // them (`wasi03_config`).
    config.wasm_exceptions(false);
    config.wasm_gc(false);
    config.wasm_function_references(false);
    config.max_wasm_stack(MAX_WASM_STACK);
    config
}

/// The engine for WASI 0.3 components: the async ABI, streams, futures,
/// and the concurrency they need; fuel as the host's. Instances are
/// allocated on demand (the pool is the 0.2 engine's).
fn wasi03_config(fuel: bool) -> Config {
    let mut config = base_config(fuel);
    config.concurrency_support(true);
    config.wasm_component_model_async(true);
    // Exception handling, for the components that use it (the data
    // runner's CPython): on this engine only, which components that need
    // it are compiled on when the 0.2 engine's validator refuses them.
    config.wasm_exceptions(true);
    config
}

/// The linker: WASI 0.2, the gated filesystem, wasi:http's client and
/// sockets through the broker, `sbx:agent`; with `wasi03`, 0.3's
/// interfaces too (`wasi03.rs`; they need an engine with concurrency).
fn linker(engine: &Engine, wasi03: bool) -> wasmtime::Result<Linker<HostState>> {
    let mut linker = Linker::new(engine);
    wasmtime_wasi::p2::add_to_linker_async(&mut linker)?;
    fs_gate::add_to_linker(&mut linker)?;
    imports::add_http_to_linker(&mut linker)?;
    imports::add_sockets_to_linker(&mut linker)?;
    imports::Agent::add_to_linker::<HostState, HasSelf<HostState>>(&mut linker, |s| s)?;
    if wasi03 {
        super::wasi03::add_to_linker(&mut linker)?;
    }
    Ok(linker)
}

/// The engine and linker WASI 0.3 components compile and run on, made
/// the first time one is loaded.
pub(super) struct Wasi03 {
    pub(super) engine: Engine,
    pub(super) linker: Linker<HostState>,
}

fn pooled_engine(sizes: &PoolSizes) -> wasmtime::Result<Engine> {
    let mut config = base_config(true);
    config.allocation_strategy(wasmtime::InstanceAllocationStrategy::Pooling(
        sizes.pooling_config(),
    ));
    Engine::new(&config)
}

impl WasmHost {
    /// An engine with fuel, epoch interruption and async support, and a
    /// linker with WASI 0.2 and the `sbx:agent` imports. Instances are
    /// allocated on demand (see [`WasmHost::with_pool`] for many runs).
    pub fn new() -> wasmtime::Result<Self> {
        Self::build(Engine::new(&base_config(true))?, Allocator::OnDemand, true)
    }

    /// Like [`WasmHost::new`], without fuel metering: compiled code carries
    /// no fuel counting, for wall-only grants
    /// ([`CapabilitiesBuilder::no_fuel`](crate::CapabilitiesBuilder::no_fuel),
    /// `max_fuel = "off"`), which `max_wall` and `max_memory_bytes` bound.
    /// A grant with a fuel budget is refused here (a setup error), never run
    /// unmetered.
    pub fn new_unmetered() -> wasmtime::Result<Self> {
        Self::build(
            Engine::new(&base_config(false))?,
            Allocator::OnDemand,
            false,
        )
    }

    /// Whether this host meters fuel (every host but
    /// [`WasmHost::new_unmetered`]).
    pub fn meters_fuel(&self) -> bool {
        self.shared.fuel
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
            Ok(engine) => Self::build(engine, Allocator::Pooling(sizes), true),
            Err(e) => Self::build(
                Engine::new(&base_config(true))?,
                Allocator::OnDemandFallback(format!("{e:#}")),
                true,
            ),
        }
    }

    /// Which instance allocator this host uses.
    pub fn allocator(&self) -> &Allocator {
        &self.shared.allocator
    }

    fn build(engine: Engine, allocator: Allocator, fuel: bool) -> wasmtime::Result<Self> {
        let linker = linker(&engine, false)?;
        // The epoch advances on its own thread, for both engines; each
        // store's callback decides what a tick means for it.
        let ticker = Arc::new(AtomicBool::new(true));
        let wasi03_ticks: Arc<OnceLock<EngineWeak>> = Arc::default();
        let (e, e03, alive) = (engine.weak(), wasi03_ticks.clone(), ticker.clone());
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
                if let Some(engine) = e03.get().and_then(EngineWeak::upgrade) {
                    engine.increment_epoch();
                }
            }
        });
        Ok(WasmHost {
            shared: Arc::new(Shared {
                engine,
                linker,
                ticker,
                wasi03: OnceLock::new(),
                wasi03_ticks,
                ticker_jobs: Mutex::new(jobs_tx),
                empty_root: Mutex::new(None),
                allocator,
                fuel,
                retiring: Default::default(),
            }),
            cache: None,
            protected: Default::default(),
            own_protected: Default::default(),
            slots: Some(super::admission::Slots::per_core()),
        }
        .with_default_cache())
    }

    /// Keep compiled components in `cache`: a component compiled once loads
    /// without a compile on every later run. The cache folder and its key
    /// become protected paths: a run whose grant mounts either (or a folder
    /// holding one) is refused before it starts. Every host starts with the
    /// cache in its default folder ([`ArtifactCache::default_dir`]) when it
    /// can open one; this replaces it.
    pub fn with_cache(mut self, cache: ArtifactCache) -> Self {
        self.cache = Some(Arc::new(cache));
        self.protect_again();
        self
    }

    /// Compile in memory, keeping nothing: no artifact cache (every host
    /// starts with the one in the default folder).
    pub fn without_cache(mut self) -> Self {
        self.cache = None;
        self.protect_again();
        self
    }

    /// The cache in its default folder, if one can be opened there (else
    /// none: the host compiles in memory, and
    /// [`WasmHost::cache`] is `None`).
    fn with_default_cache(self) -> Self {
        match ArtifactCache::default_dir().map(ArtifactCache::open) {
            Some(Ok(cache)) => self.with_cache(cache),
            _ => self,
        }
    }

    /// Refuse every run whose grant mounts `path` (a file or folder), a
    /// folder holding it, or one inside it, as `what` (for the message):
    /// for what the embedder runs natively or keeps apart from guests (its
    /// binary, a runner component, a socket folder).
    pub fn protect(mut self, path: impl AsRef<std::path::Path>, what: impl Into<String>) -> Self {
        let mut own = (*self.own_protected).clone();
        own.add(path, what);
        self.own_protected = Arc::new(own);
        self.protect_again();
        self
    }

    /// The protected paths: what [`WasmHost::protect`] added, and the
    /// cache's.
    fn protect_again(&mut self) {
        let mut protected = (*self.own_protected).clone();
        if let Some(cache) = &self.cache {
            protected.extend(&cache.protected());
        }
        self.protected = Arc::new(protected);
    }

    /// The paths no run's grant may mount.
    pub fn protected(&self) -> &crate::ProtectedPaths {
        &self.protected
    }

    /// The artifact cache, if any.
    pub fn cache(&self) -> Option<&ArtifactCache> {
        self.cache.as_deref()
    }

    /// The engine (WASI 0.2 components'; 0.3 components compile on one of
    /// their own, made when the first is loaded).
    pub fn engine(&self) -> &Engine {
        &self.shared.engine
    }

    /// The WASI 0.3 engine and linker, made now if this is the first 0.3
    /// component.
    pub(super) fn wasi03(&self) -> Result<&Wasi03, super::LoadError> {
        let made = self.shared.wasi03.get_or_init(|| {
            let engine =
                Engine::new(&wasi03_config(self.shared.fuel)).map_err(|e| format!("{e:#}"))?;
            let linker = linker(&engine, true).map_err(|e| format!("{e:#}"))?;
            let _ = self.shared.wasi03_ticks.set(engine.weak());
            Ok(Wasi03 { engine, linker })
        });
        made.as_ref()
            .map_err(|e| super::setup(format!("cannot make the WASI 0.3 engine: {e}")))
    }

    /// The engine and linker `component` was compiled for.
    pub(super) fn engine_of(
        &self,
        component: &wasmtime::component::Component,
    ) -> (&Engine, &Linker<HostState>) {
        match self.shared.wasi03.get() {
            Some(Ok(w)) if Engine::same(component.engine(), &w.engine) => (&w.engine, &w.linker),
            _ => (&self.shared.engine, &self.shared.linker),
        }
    }
}

impl WasmHost {
    /// Apply `policy` on this thread and the whole process, then have the
    /// epoch thread (started before) apply the same Landlock rules on
    /// itself: on kernels without Landlock's thread sync it would otherwise
    /// keep the process's full authority.
    pub(super) fn confine(&self, policy: &crate::confine::Policy) -> crate::KernelWall {
        // A root kept on disk (no /proc) must go now: the run holds it open
        // already, and a confined process could not remove it later.
        if let Ok(mut slot) = self.shared.empty_root.lock()
            && slot.as_ref().is_some_and(|r| r.on_disk.is_some())
            && let Some(EmptyRoot {
                on_disk: Some(dir), ..
            }) = slot.take()
        {
            let _ = std::fs::remove_dir(dir);
        }
        // The seccomp filter reaches every thread at once; Landlock rules,
        // one ruleset for both, each thread takes on itself.
        let (mut wall, rules) = policy.apply_sharing();
        let (tx, rx) = std::sync::mpsc::channel();
        let job: TickerJob = Box::new(move || {
            let _ = tx.send(rules.restrict());
        });
        let sent = self
            .shared
            .ticker_jobs
            .lock()
            .map(|j| j.send(job).is_ok())
            .unwrap_or(false);
        match rx.recv_timeout(Duration::from_secs(2)) {
            Ok(landlock) if sent && landlock == wall.landlock => {}
            Ok(landlock) => {
                wall.up = false;
                wall.notes
                    .push(format!("epoch thread: landlock {landlock}"));
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
