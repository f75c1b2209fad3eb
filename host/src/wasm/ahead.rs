//! Making one instance ahead of the run that will take it (a warm pool's
//! refill, `instantiate_ahead`), within bounds of its own: no run's budget
//! is known yet, and a start function must not spin a core unmetered.

use super::HostState;
use super::limits::MemoryLimiter;
use crate::budget::Budget;
use std::time::Duration;
use wasmtime::component::ResourceTable;
use wasmtime::{Engine, Store};
use wasmtime_wasi::p2::bindings::{Command, CommandPre};

/// What instantiating ahead of a run may spend: the default budget's fuel,
/// wall time and memory, since no run's budget is known yet. A start
/// function (or a runner's initialisation) that passes one is an error
/// here, not a core spun for minutes; a run whose own budget cannot pay
/// what the instance cost instantiates on its own (see [`Cost::fits`]).
const AHEAD_FUEL: u64 = crate::budget::DEFAULT_MAX_FUEL;
const AHEAD_WALL: Duration = crate::budget::DEFAULT_MAX_WALL;
const AHEAD_MEMORY: u64 = crate::budget::DEFAULT_MAX_MEMORY_BYTES;

/// An instance made ahead of its run, and what making it cost.
pub(super) struct Warm {
    pub(super) store: Store<HostState>,
    pub(super) command: Command,
    pub(super) cost: Cost,
}

/// What instantiating cost, charged to the run that takes the instance.
#[derive(Debug, Clone, Copy)]
pub(super) struct Cost {
    /// Fuel burnt by instantiation (start functions), if fuel is metered.
    pub(super) fuel_spent: u64,
    /// The largest memory instantiation made, in bytes.
    pub(super) memory_peak: usize,
}

impl Cost {
    /// Whether a run under `budget` can pay it (otherwise the run
    /// instantiates on its own and meets the limit there, as it would
    /// without a warm instance).
    pub(super) fn fits(&self, budget: &Budget) -> bool {
        u64::try_from(self.memory_peak).unwrap_or(u64::MAX) <= budget.max_memory_bytes
            && (!budget.meter_fuel || self.fuel_spent <= budget.max_fuel)
    }

    /// The run's memory meter, starting from what instantiation made.
    pub(super) fn limiter(&self, budget: &Budget) -> MemoryLimiter {
        let mut limiter = MemoryLimiter::new(budget.max_memory_bytes);
        limiter.peak_bytes = self.memory_peak;
        limiter.used_bytes = self.memory_peak;
        limiter
    }
}

/// The idle state a warm instance waits in: an empty grant, an empty WASI
/// context, no limits but the pool's own.
pub(super) fn idle_state() -> Option<HostState> {
    let caps = crate::Capabilities::builder().build().ok()?;
    Some(HostState {
        wasi: wasmtime_wasi::WasiCtx::builder().build(),
        table: ResourceTable::new(),
        gate: crate::gate::Sandbox::builder(caps).build().ok()?,
        limiter: MemoryLimiter::new(u64::MAX),
        preopens: super::root::Preopens::Lent(Vec::new()),
        fs_paths: std::collections::HashMap::new(),
        open_files: super::held::Held::files(),
        deterministic: false,
        script_error: None,
        exit_code: None,
        http: Default::default(),
        tcp: Default::default(),
    })
}

pub(super) async fn make(
    engine: &Engine,
    pre: &CommandPre<HostState>,
    fuel: bool,
) -> Result<Warm, String> {
    let mut state = idle_state().ok_or("cannot make the idle state")?;
    state.limiter = MemoryLimiter::new(AHEAD_MEMORY);
    let mut store = Store::new(engine, state);
    store.limiter(|s| &mut s.limiter);
    if fuel {
        store.set_fuel(AHEAD_FUEL).map_err(|e| e.to_string())?;
    }
    let ticks = (AHEAD_WALL.as_millis() / super::EPOCH_TICK.as_millis()) as u64;
    store.set_epoch_deadline(ticks);
    store.epoch_deadline_trap();
    let bounds = || {
        format!(
            "instantiating ahead of a run passed its bounds (fuel {AHEAD_FUEL}, wall {} s, \
             memory {} MiB)",
            AHEAD_WALL.as_secs(),
            AHEAD_MEMORY >> 20
        )
    };
    // A start function blocked in a host call sees no epoch: the wall
    // bounds the whole call too.
    let command = match tokio::time::timeout(AHEAD_WALL, pre.instantiate_async(&mut store)).await {
        Err(_) => return Err(bounds()),
        Ok(Err(e)) => {
            let over = store.data().limiter.hit
                || e.downcast_ref::<wasmtime::Trap>().is_some_and(|t| {
                    matches!(t, wasmtime::Trap::OutOfFuel | wasmtime::Trap::Interrupt)
                });
            return Err(match over {
                true => format!("{}: {e:#}", bounds()),
                false => format!("{e:#}"),
            });
        }
        Ok(Ok(command)) => command,
    };
    let memory_peak = store.data().limiter.peak_bytes;
    // No limits while it waits: the run that takes it sets its own.
    store.set_epoch_deadline(u64::MAX / 2);
    store.data_mut().limiter = MemoryLimiter::new(u64::MAX);
    let fuel_spent = if fuel {
        AHEAD_FUEL - store.get_fuel().map_err(|e| e.to_string())?
    } else {
        0
    };
    Ok(Warm {
        store,
        command,
        cost: Cost {
            fuel_spent,
            memory_peak,
        },
    })
}
