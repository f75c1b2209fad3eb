//! A run: the store (gate, WASI context, limits, output meters, deadline),
//! the call, and how it ended, as a report.

use super::ahead::Warm;
use super::begin::Begun;
use super::options::{RunOptions, WasmRun};
use super::outcome::{End, classify, finish};
use super::wasi03::{self, Entry};
use super::{FUEL_SLICE, HardLimit, HostState, LoadError, PreparedAgent, WasmHost, setup};
use crate::CancelHandle;
use crate::violation::Violation;
use wasmtime::component::Component;
use wasmtime::{Store, UpdateDeadline};

impl WasmHost {
    /// Run `component` under `opts`, blocking the calling thread (a
    /// current-thread tokio runtime drives the async WASI inside).
    pub fn run(&self, component: &Component, opts: RunOptions) -> Result<WasmRun, LoadError> {
        let agent = self.prepare(component)?;
        self.run_prepared(&agent, opts)
    }

    /// Run `component` under `opts` on the caller's tokio runtime.
    pub fn run_async<'a>(
        &'a self,
        component: &'a Component,
        opts: RunOptions,
    ) -> impl Future<Output = Result<WasmRun, LoadError>> + Send + 'a {
        // Boxed for the reason `run_prepared_async` gives.
        let opts = Box::new(opts);
        async move {
            let agent = self.prepare(component)?;
            self.run_admitted(&agent, opts).await
        }
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
        if tokio::runtime::Handle::try_current().is_ok() {
            // Called from inside an async runtime, where blocking on a
            // runtime of our own would panic: block a thread of our own
            // instead (prefer `run_prepared_async` there).
            return std::thread::scope(|scope| {
                std::thread::Builder::new()
                    .name("sbx-run".into())
                    .spawn_scoped(scope, || self.run_prepared(agent, opts))
                    .map_err(|e| setup(format!("cannot start a thread for the run: {e}")))?
                    .join()
                    .unwrap_or_else(|_| Err(setup("the run's thread panicked".into())))
            });
        }
        let held = self.admit_blocking(&opts)?;
        let mut run = self.run_blocking(agent, opts)?;
        run.queued = held.waited;
        Ok(run)
    }

    /// Run on this thread's own runtime (made once per thread). Not from
    /// inside a runtime's tasks (a blocking-pool thread is fine).
    fn run_blocking(&self, agent: &PreparedAgent, opts: RunOptions) -> Result<WasmRun, LoadError> {
        // One runtime per thread, reused by every run on it: building one
        // per run cost more than the rest of a small run's setup.
        thread_local! {
            static RUNTIME: std::cell::OnceCell<tokio::runtime::Runtime> =
                const { std::cell::OnceCell::new() };
        }
        RUNTIME.with(|cell| {
            if cell.get().is_none() {
                // IO for the sockets a grant's tcp rules allow (wasmtime-wasi
                // registers them with the ambient runtime): made once per
                // thread, like the rest.
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_time()
                    .enable_io()
                    .build()
                    .map_err(|e| setup(format!("cannot start the runtime: {e}")))?;
                let _ = cell.set(rt);
            }
            let rt = cell.get().expect("set above");
            rt.block_on(self.run_here(agent, opts)?)
        })
    }

    /// Run a prepared agent under `opts`, awaiting it from the caller's
    /// async runtime.
    ///
    /// The guest runs on a thread of its own (one of the caller's runtime's
    /// blocking pool, with a small runtime of its own that later runs on
    /// that thread reuse), not on the caller's workers: a CPU-bound guest
    /// cannot starve the caller's tasks and timers, and a host call that
    /// blocks (a fetch, a tool) blocks that thread, not a worker. More runs
    /// at once than the pool has threads (tokio's default: 512) wait for
    /// one; [`RunOptions::in_place`] is for that many. Dropping
    /// the future cancels the run. [`RunOptions::in_place`] runs it as a
    /// task of the caller's runtime instead (for many mostly idle guests),
    /// as does a run with a kernel wall ([`RunOptions::confine`]):
    /// confinement applies to the thread that sets it up.
    pub fn run_prepared_async<'a>(
        &'a self,
        agent: &'a PreparedAgent,
        opts: RunOptions,
    ) -> impl Future<Output = Result<WasmRun, LoadError>> + Send + 'a {
        // The options wait on the heap, freed when the run begins. An async
        // fn keeps its arguments for its whole life, and the future is what
        // an idle in-place sandbox costs: by value, the options (a
        // kilobyte) were held twice over to the run's end.
        self.run_admitted(agent, Box::new(opts))
    }

    /// [`Self::run_prepared_async`], its options boxed.
    pub(super) async fn run_admitted(
        &self,
        agent: &PreparedAgent,
        opts: Box<RunOptions>,
    ) -> Result<WasmRun, LoadError> {
        // A slot first (an in-place run takes none): waited for here, held
        // until the run ends.
        let held = self.admit(&opts).await?;
        if opts.confine.is_some() || opts.in_place {
            // Dropping this future drops the store: the run ends with it.
            // Two statements: a `?` on the same line as the await would
            // keep its own copy of the run's future alongside it.
            let run = self.run_here(agent, unboxed(opts))?;
            let mut run = run.await?;
            run.queued = held.waited;
            return Ok(run);
        }
        self.run_on_thread(agent, opts, held).await
    }

    /// A run on a thread of the blocking pool, awaited here. A function of
    /// its own: its locals (the run's result among them) would otherwise
    /// take room in every in-place run's future too.
    async fn run_on_thread(
        &self,
        agent: &PreparedAgent,
        mut opts: Box<RunOptions>,
        held: super::admission::Held,
    ) -> Result<WasmRun, LoadError> {
        let queued = held.waited;
        // The run's own switch: thrown by the caller's handle, or by
        // dropping this future.
        let own = CancelHandle::new();
        let theirs = opts.cancel.replace(own.clone());
        let _stop_if_dropped = CancelOnDrop(own.clone());
        let (tx, rx) = tokio::sync::oneshot::channel();
        let (host, agent) = (self.clone(), agent.clone());
        // A thread of the caller's blocking pool: kept for the next run
        // (with the runtime it made) instead of started for each.
        drop(tokio::task::spawn_blocking(move || {
            let run = host.run_blocking(&agent, unboxed(opts)).map(|mut run| {
                run.queued = queued;
                run
            });
            // The slot is free once the run has ended, not before.
            drop(held);
            let _ = tx.send(run);
        }));
        let lost = || Err(setup("the guest's thread ended without a result".into()));
        let forward = async {
            match &theirs {
                Some(c) => c.cancelled().await,
                None => std::future::pending().await,
            }
        };
        tokio::pin!(rx);
        tokio::select! {
            r = &mut rx => r.unwrap_or_else(|_| lost()),
            () = forward => {
                own.cancel();
                rx.await.unwrap_or_else(|_| lost())
            }
        }
    }

    /// Run a prepared agent on the current task: the run begins here (its
    /// state, its store, the kernel wall); the future runs the guest.
    ///
    /// Not an async fn: the future keeps only what the run needs to its
    /// end, not the options it began from (see `run_prepared_async`).
    fn run_here<'a>(
        &'a self,
        agent: &'a PreparedAgent,
        opts: RunOptions,
    ) -> Result<impl Future<Output = Result<WasmRun, LoadError>> + 'a, LoadError> {
        let Begun {
            state,
            budget,
            deterministic,
            meter,
            capture,
            closed,
            header,
            confine,
            cancel,
            _tmp,
        } = self.begin(&agent.engine, "agent", opts)?;
        if confine.is_some() && agent.warm.as_ref().is_some_and(|w| w.threaded()) {
            return Err(setup(
                "kernel confinement is for a process that runs one grant; an agent kept \
                 warm has a thread of its own that the wall would not cover: confine a \
                 run of an agent without warm instances"
                    .into(),
            ));
        }
        // The backstop's deadline from the gate's start when that is real
        // time (a clock reading fewer per run; the wall then counts from
        // where the gate's own accounting of it does).
        let deadline = backstop(state.gate.real_start(), budget.max_wall);
        // A warm instance, if the agent keeps them and the run can pay for
        // one; else a store of the run's own, instantiated below.
        let (mut store, ready, idle) = match agent.warm.as_ref().and_then(|p| p.take(&budget)) {
            Some(Warm {
                mut store,
                command,
                cost,
            }) => {
                let mut state = state;
                state.limiter = cost.limiter(&budget);
                // Boxed: held to the end of the run, in its future.
                let idle = Box::new(std::mem::replace(store.data_mut(), state));
                self.arm(&mut store, deterministic, cost.fuel_spent)?;
                (store, Some(command), Some(idle))
            }
            None => (
                self.store_on(&agent.engine, state, deterministic)?,
                None,
                None,
            ),
        };
        let kernel_wall = match &confine {
            Some(c) => Some(self.confined(&c.0, c.1)?),
            None => None,
        };
        Ok(async move {
            let call = async {
                let pre = match (&agent.pre, ready) {
                    (_, Some(command)) => return command.wasi_cli_run().call_run(&mut store).await,
                    (Entry::P3 { pre, .. }, None) => return wasi03::call(pre, &mut store).await,
                    (Entry::P2(pre), None) => pre,
                };
                let command = match pre.instantiate_async(&mut store).await {
                    // The pool may be full of stores that warming threads
                    // have yet to drop: once they are, try again.
                    Err(e) if e.is::<wasmtime::PoolConcurrencyLimitError>() => {
                        agent.retiring.settle();
                        pre.instantiate_async(&mut store).await?
                    }
                    other => other?,
                };
                command.wasi_cli_run().call_run(&mut store).await
            };
            // The real-time backstop, whatever the run's clock says; and the
            // cancel switch, which ends a guest waiting in WASI at once (guest
            // code stops at its next epoch tick, host calls in the gate).
            let cancelled = async {
                match &cancel {
                    Some(c) => c.cancelled().await,
                    None => std::future::pending().await,
                }
            };
            let end = tokio::select! {
                biased;
                () = cancelled => End::Limit(Violation::Cancelled),
                timed = tokio::time::timeout_at(deadline, call) => match timed {
                    Err(_) => End::Limit(Violation::MaxWall),
                    Ok(Ok(Ok(()))) => End::Exit(0),
                    Ok(Ok(Err(()))) => End::Exit(1),
                    Ok(Err(e)) => {
                        // A full pool is the host's capacity, not a guest trap.
                        if let Some(full) = e.downcast_ref::<wasmtime::PoolConcurrencyLimitError>() {
                            return Err(LoadError::Capacity {
                                message: full.to_string(),
                            });
                        }
                        classify(&e, &store)
                    }
                },
            };
            // Output past the budget is a hard limit however the guest took
            // the refusal (a 0.3 stream's error can be ignored to the end).
            let end = match end {
                End::Exit(_) if meter.breached() => End::Limit(Violation::MaxOutputBytes),
                other => other,
            };
            let fuel_left = store.get_fuel().unwrap_or(0);
            let state = match (idle, &agent.warm) {
                // The run's state (its files, streams, gate) ends here; the
                // instance is torn down on the warming thread.
                (Some(idle), Some(pool)) => {
                    let state = std::mem::replace(store.data_mut(), *idle);
                    pool.retire(store);
                    state
                }
                _ => store.into_data(),
            };
            let mut run = finish(fuel_left, state, end, &meter, kernel_wall, header);
            for (name, output) in closed {
                // Output held for its newline goes out now.
                output.flush_events();
                if output.was_closed() {
                    run.report.notes.push(format!(
                        "{name}: its reader went away; the guest's later writes to it were \
                     refused as a closed stream"
                    ));
                }
            }
            (run.stdout, run.stderr) = capture.take();
            // The private /tmp lives as long as the run (so the future
            // owns it): removed now.
            drop(_tmp);
            Ok(run)
        })
    }

    /// A store on `engine` (this host's, or its WASI 0.3 one) for a run's
    /// state, with the run's limits, fuel and clock set.
    pub(super) fn store_on(
        &self,
        engine: &wasmtime::Engine,
        state: HostState,
        deterministic: bool,
    ) -> Result<Store<HostState>, LoadError> {
        let mut store = Store::new(engine, state);
        store.limiter(|s| &mut s.limiter);
        self.arm(&mut store, deterministic, 0)?;
        Ok(store)
    }

    /// Set `store`'s fuel (less `spent`, what instantiating it burnt) and
    /// wall deadline for the run whose state it holds.
    fn arm(
        &self,
        store: &mut Store<HostState>,
        deterministic: bool,
        spent: u64,
    ) -> Result<(), LoadError> {
        let budget = *store.data().gate.caps().budget();
        if budget.meter_fuel && !self.meters_fuel() {
            return Err(setup(
                "this host does not meter fuel (WasmHost::new_unmetered) and the grant has a \
                 fuel budget; run it on a metering host, or make the grant wall-only \
                 (max_fuel = \"off\")"
                    .into(),
            ));
        }
        if self.meters_fuel() {
            // A wall-only grant on a metering host: counted, never short.
            let fuel = if budget.meter_fuel {
                budget.max_fuel.saturating_sub(spent)
            } else {
                u64::MAX
            };
            store
                .set_fuel(fuel)
                .map_err(|e| setup(format!("fuel: {e:#}")))?;
            // Compiled code keeps its fuel count in a register and writes it
            // back to the store only on calls and on running out of a slice,
            // not at an epoch check: a spinning guest halted by the wall
            // deadline would report the fuel of its last call. Slices of
            // this size make the count in the store at most one slice stale
            // (and give the runtime a yield point per slice).
            store
                .fuel_async_yield_interval(Some(FUEL_SLICE))
                .map_err(|e| setup(format!("fuel: {e:#}")))?;
        }
        // The wall budget is the run's clock's, the same the gate charges:
        // at every epoch tick the guest's time is read from it, so an
        // injected clock decides when a spinning guest has spent its wall.
        // Under --deterministic the virtual clock moves only when the guest
        // calls the host (reading it here would make the readings depend on
        // real timing): fuel is the deterministic budget there. Either way,
        // the timeout around the call is the real-time backstop.
        store.set_epoch_deadline(1);
        store.epoch_deadline_callback(move |ctx| {
            let gate = &ctx.data().gate;
            if gate.cancelled() {
                Err(wasmtime::Error::new(HardLimit(Violation::Cancelled)))
            } else if gate.output_breached() {
                // A write past the budget that came back to the guest as
                // an error it may ignore (WASI 0.3's streams): it halts.
                Err(wasmtime::Error::new(HardLimit(Violation::MaxOutputBytes)))
            } else if !deterministic && gate.elapsed_now() > budget.max_wall {
                Err(wasmtime::Error::new(HardLimit(Violation::MaxWall)))
            } else {
                Ok(UpdateDeadline::Yield(1))
            }
        });
        Ok(())
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

/// Cancels a run when the future awaiting it is dropped.
struct CancelOnDrop(CancelHandle);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.cancel();
    }
}

/// The options out of their box, the box freed now. Moving out with
/// `*opts` frees the box only when the variable goes out of scope: in an
/// async fn, at the run's end, so every idle sandbox held its options' box
/// (half a kilobyte) to no use.
pub(super) fn unboxed(opts: Box<RunOptions>) -> RunOptions {
    *opts
}

/// The real-time backstop's deadline: `wall` after `start` (now, when the
/// run's clock is not the real one), at most about thirty years away (a
/// grant's wall can be any length; an instant cannot).
fn backstop(start: Option<std::time::Instant>, wall: std::time::Duration) -> tokio::time::Instant {
    const FAR: std::time::Duration = std::time::Duration::from_secs(30 * 365 * 86_400);
    let start = start.unwrap_or_else(std::time::Instant::now);
    tokio::time::Instant::from_std(start + wall.min(FAR))
}

#[cfg(test)]
mod tests {
    use super::backstop;
    use std::time::{Duration, Instant};

    /// A grant's wall can be any length a caps file can write
    /// (`max_wall_ms` up to `i64::MAX`): the deadline is capped, not an
    /// `Instant` overflow that would panic the host.
    #[test]
    fn the_backstop_of_any_wall_is_an_instant() {
        let start = Instant::now();
        for wall in [
            Duration::ZERO,
            Duration::from_secs(30),
            Duration::from_millis(i64::MAX as u64),
            Duration::MAX,
        ] {
            for from in [Some(start), None] {
                let at = backstop(from, wall).into_std();
                assert!(at >= start, "{wall:?}");
                assert!(at <= Instant::now() + Duration::from_secs(31 * 365 * 86_400));
            }
        }
        // A short wall counts from the start it is given.
        assert_eq!(
            backstop(Some(start), Duration::from_secs(30)).into_std(),
            start + Duration::from_secs(30)
        );
    }
}
