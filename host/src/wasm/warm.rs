//! Warm instances: a prepared agent instantiated ahead of its runs, on a
//! thread of its own, so that a run starts with the call instead of with
//! instantiation (for the Python runner, most of a snippet's latency:
//! thousands of function-table entries set up and a dozen core instances
//! linked), and a finished run's instance is torn down (its memory reset)
//! on that thread too, after the run has returned.
//!
//! A warm instance is made in a store of its own with an idle state: no
//! grant, no WASI context worth the name, nothing the guest can reach.
//! Instantiation runs no guest code that calls the host (a command's code
//! runs from `wasi:cli/run`), and the one thing it may do, grow memory and
//! burn fuel in a start function, is measured and charged to the run that
//! takes the instance. The run then swaps its own state in; at its end it
//! swaps the idle state back and hands the store over to be dropped. Each
//! instance serves exactly one run: nothing of one run reaches the next.

use super::ahead::{Cost, Warm, make};
use super::{HostState, PreparedAgent};
use crate::budget::Budget;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, Sender};
use std::sync::{Arc, Condvar, Mutex, Weak};
use std::time::{Duration, Instant};
use wasmtime::{Engine, Store};
use wasmtime_wasi::p2::bindings::CommandPre;

/// What the warming thread is asked to do.
enum Job {
    /// Make instances until `want` are ready.
    Refill,
    /// Drop a finished run's store (its instance slot is reset here).
    Retire(Box<Store<HostState>>),
}

/// How long a run waits for an instance on its way before it makes its own.
const WAIT_FOR_WARM: Duration = Duration::from_secs(10);

/// The warm instances of one prepared agent, shared by its clones.
pub(super) struct WarmPool {
    slots: Mutex<Slots>,
    changed: Condvar,
    want: usize,
    jobs: Mutex<Sender<Job>>,
    /// Runs that started on a warm instance.
    served: AtomicU64,
    /// Whether a warming thread serves this pool (`keep_warm`), or the
    /// instances were made on the caller's thread (`instantiate_ahead`).
    threaded: bool,
    /// The host's count of stores handed over to be dropped.
    retiring: Arc<Retiring>,
}

/// Stores of finished runs handed to warming threads and not yet dropped,
/// host-wide: instance slots a full pool is about to have again. A run
/// that finds the pool full waits for them (a bounded while) and tries
/// once more, so a warm agent's runs never make another run's
/// instantiation fail for a slot that is on its way back.
#[derive(Default)]
pub(super) struct Retiring {
    count: Mutex<usize>,
    none: Condvar,
}

impl Retiring {
    fn add(&self) {
        if let Ok(mut n) = self.count.lock() {
            *n += 1;
        }
    }

    fn sub(&self) {
        if let Ok(mut n) = self.count.lock() {
            *n = n.saturating_sub(1);
        }
        self.none.notify_all();
    }

    /// Wait until every store handed over has been dropped (at most
    /// [`WAIT_FOR_WARM`]).
    pub(super) fn settle(&self) {
        if let Ok(n) = self.count.lock() {
            let _ = self.none.wait_timeout_while(n, WAIT_FOR_WARM, |n| *n > 0);
        }
    }
}

/// The pool's state, under one lock.
struct Slots {
    ready: Vec<Warm>,
    /// What the last instance made cost (every instance of one agent is
    /// made alike): a run it does not fit neither takes nor waits for one.
    cost: Option<Cost>,
    /// Runs waiting for an instance on its way.
    waiters: usize,
    /// Jobs sent and not yet done (instances being made among them).
    busy: usize,
    /// The last instance could not be made (a full instance pool, no
    /// memory): runs make their own, and meet the error there.
    failed: bool,
    /// The store of the run that took an instance made ahead
    /// (`instantiate_ahead`), dropped with the pool.
    retired: Option<Box<Store<HostState>>>,
}

impl WarmPool {
    /// A pool keeping `want` instances of `pre` ready, and its thread (which
    /// ends when the pool goes).
    pub(super) fn start(
        engine: Engine,
        pre: CommandPre<HostState>,
        fuel: bool,
        want: usize,
        retiring: Arc<Retiring>,
    ) -> std::io::Result<Arc<WarmPool>> {
        let (tx, rx) = std::sync::mpsc::channel();
        let pool = Arc::new(WarmPool::new(
            want,
            Vec::with_capacity(want),
            tx,
            true,
            retiring,
        ));
        let weak = Arc::downgrade(&pool);
        std::thread::Builder::new()
            .name("sbx-warm".into())
            .spawn(move || warm_loop(&engine, &pre, fuel, &weak, &rx))?;
        pool.send(Job::Refill);
        Ok(pool)
    }

    /// A pool holding one instance of `pre`, made now on the calling thread,
    /// and no thread: once a run has taken it, runs instantiate as usual.
    pub(super) fn made_here(
        engine: &Engine,
        pre: &CommandPre<HostState>,
        fuel: bool,
        retiring: Arc<Retiring>,
    ) -> Result<Arc<WarmPool>, String> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .map_err(|e| format!("cannot start a runtime to instantiate on: {e}"))?;
        let warm = rt
            .block_on(make(engine, pre, fuel))
            .map_err(|e| format!("cannot instantiate the component ahead of its run: {e}"))?;
        // No thread takes jobs: nothing refills the pool, and a finished
        // run's store is kept until the pool goes (`retire`).
        let (tx, _) = std::sync::mpsc::channel();
        Ok(Arc::new(WarmPool::new(0, vec![warm], tx, false, retiring)))
    }

    /// A pool wanting `want` instances, holding `ready`, its jobs sent on
    /// `jobs` (to a warming thread if `threaded`).
    fn new(
        want: usize,
        ready: Vec<Warm>,
        jobs: Sender<Job>,
        threaded: bool,
        retiring: Arc<Retiring>,
    ) -> WarmPool {
        WarmPool {
            slots: Mutex::new(Slots {
                cost: ready.first().map(|w| w.cost),
                ready,
                waiters: 0,
                busy: 0,
                failed: false,
                retired: None,
            }),
            changed: Condvar::new(),
            want,
            jobs: Mutex::new(jobs),
            served: AtomicU64::new(0),
            threaded,
            retiring,
        }
    }

    /// Whether a thread of the pool's own makes its instances (which a
    /// kernel wall set up by a run would not cover).
    pub(super) fn threaded(&self) -> bool {
        self.threaded
    }

    /// A ready instance that a run under `budget` can pay for; or, when
    /// one is being made and no other run is already waiting for it, that
    /// one once it is ready. `None`: the run instantiates on its own.
    pub(super) fn take(&self, budget: &Budget) -> Option<Warm> {
        let mut slots = self.slots.lock().ok()?;
        let deadline = Instant::now() + WAIT_FOR_WARM;
        loop {
            if slots.cost.is_some_and(|c| !c.fits(budget)) {
                return None;
            }
            if let Some(warm) = slots.ready.pop() {
                drop(slots);
                self.served.fetch_add(1, Ordering::Relaxed);
                self.send(Job::Refill);
                return Some(warm);
            }
            // Instances on their way: the thread makes `want` in all.
            let coming = self.want.saturating_sub(slots.ready.len());
            let now = Instant::now();
            if slots.failed || slots.busy == 0 || slots.waiters >= coming || now >= deadline {
                return None;
            }
            slots.waiters += 1;
            slots = match self.changed.wait_timeout(slots, deadline - now) {
                Ok((s, _)) => s,
                Err(_) => return None,
            };
            slots.waiters -= 1;
        }
    }

    /// Runs that started on a warm instance so far.
    pub(super) fn served_count(&self) -> u64 {
        self.served.load(Ordering::Relaxed)
    }

    /// Instances ready now.
    pub(super) fn ready_count(&self) -> usize {
        self.slots.lock().map(|s| s.ready.len()).unwrap_or(0)
    }

    /// Drop `store` on the warming thread (or here, if it is gone).
    pub(super) fn retire(&self, store: Store<HostState>) {
        if !self.threaded {
            // No thread to drop it: it goes with the pool (the agent), off
            // the run's path. A process that exists for one run never pays.
            if let Ok(mut slots) = self.slots.lock() {
                slots.retired = Some(Box::new(store));
            }
            return;
        }
        self.retiring.add();
        self.send(Job::Retire(Box::new(store)));
        // The last instance could not be made (say, the pool was full):
        // this store's slot is free once it is dropped, so try again then.
        if self.slots.lock().is_ok_and(|s| s.failed) {
            self.send(Job::Refill);
        }
    }

    fn send(&self, job: Job) {
        if let Ok(mut slots) = self.slots.lock() {
            slots.busy += 1;
        }
        let retiring = matches!(job, Job::Retire(_));
        let sent = self.jobs.lock().is_ok_and(|tx| tx.send(job).is_ok());
        if !sent {
            // The thread has ended (the job, a store, was dropped here).
            if retiring {
                self.retiring.sub();
            }
            self.done(|_| {});
        }
    }

    /// A job finished: update the state and wake the runs waiting on it.
    fn done(&self, update: impl FnOnce(&mut Slots)) {
        if let Ok(mut slots) = self.slots.lock() {
            slots.busy = slots.busy.saturating_sub(1);
            update(&mut slots);
        }
        self.changed.notify_all();
    }
}

fn warm_loop(
    engine: &Engine,
    pre: &CommandPre<HostState>,
    fuel: bool,
    pool: &Weak<WarmPool>,
    jobs: &Receiver<Job>,
) {
    // However the thread ends (its pool gone, a panic in instantiation),
    // no run waits for it again.
    struct Ended<'a>(&'a Weak<WarmPool>);
    impl Drop for Ended<'_> {
        fn drop(&mut self) {
            if let Some(pool) = self.0.upgrade() {
                if let Ok(mut slots) = pool.slots.lock() {
                    slots.failed = true;
                    slots.busy = 0;
                }
                pool.changed.notify_all();
            }
        }
    }
    let _ended = Ended(pool);
    let Ok(rt) = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
    else {
        return;
    };
    while let Ok(job) = jobs.recv() {
        let Some(pool) = pool.upgrade() else { return };
        match job {
            // Its instance slot is reset here, and is free for the next.
            Job::Retire(store) => {
                drop(store);
                pool.retiring.sub();
                pool.done(|_| {});
            }
            Job::Refill => {
                // Until `want` are ready; a failure is not retried until
                // the next run asks.
                let mut made = true;
                while made && pool.ready_count() < pool.want {
                    let warm = rt.block_on(make(engine, pre, fuel)).ok();
                    made = warm.is_some();
                    if let (Some(warm), Ok(mut slots)) = (warm, pool.slots.lock()) {
                        slots.cost = Some(warm.cost);
                        slots.ready.push(warm);
                    }
                    pool.changed.notify_all();
                }
                pool.done(|s| s.failed = !made);
            }
        }
    }
}

impl PreparedAgent {
    /// This agent with `n` instances kept ready ahead of its runs (shared
    /// with its clones; `n = 0` turns it off): a run takes a ready instance
    /// and starts with the guest's first instruction, and a thread of its
    /// own makes the next one and tears finished runs down, off the run's
    /// path. Each instance serves one run; a run that finds none ready
    /// instantiates as usual.
    ///
    /// On a pooled host ([`WasmHost::with_pool`](super::WasmHost::with_pool))
    /// each ready instance holds one of the pool's sandboxes: size the pool
    /// for the runs at once plus `n`. A run with a kernel wall
    /// ([`RunOptions::confine`](super::RunOptions::confine)) is refused on a
    /// warm agent: the warming thread would stay outside the wall. A warm
    /// instance is made with no grant
    /// and costs its run what instantiation cost (memory, and fuel of any
    /// start function); a run whose budget cannot pay that neither takes
    /// nor waits for one, and instantiates on its own. A run that waits for the
    /// instance being made blocks its thread meanwhile (with
    /// `RunOptions::in_place`, a worker of the caller's runtime), as long as
    /// instantiating would have.
    ///
    /// ```no_run
    /// use sbx_wasm::Capabilities;
    /// use sbx_wasm::wasm::{PoolSizes, RunOptions, WasmHost};
    ///
    /// let caps = Capabilities::from_file("caps.toml")?;
    /// let host = WasmHost::with_pool(PoolSizes::for_caps(&caps, 2)).map_err(|e| format!("{e:#}"))?;
    /// let agent = host.prepare(&host.load("agent.wasm".as_ref())?)?.keep_warm(1)?;
    /// let run = host.run_prepared(&agent, RunOptions::new(caps))?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn keep_warm(&self, n: usize) -> Result<PreparedAgent, super::LoadError> {
        let pre = self.p2_only()?;
        let warm = match n {
            0 => None,
            n => Some(
                WarmPool::start(
                    self.engine.clone(),
                    pre.clone(),
                    self.fuel,
                    n,
                    self.retiring.clone(),
                )
                .map_err(|e| super::setup(format!("cannot start the warming thread: {e}")))?,
            ),
        };
        Ok(PreparedAgent {
            warm,
            ..self.clone()
        })
    }

    /// This agent with one instance made now, on the calling thread, for
    /// its next run; later runs instantiate as usual. Unlike
    /// [`PreparedAgent::keep_warm`] no thread is started, so the run that
    /// takes the instance may be confined
    /// ([`RunOptions::confine`](super::RunOptions::confine)): a process
    /// that exists for one run does the instantiation before it knows the
    /// run (the CLI's warm Python workers), and the run starts with the
    /// guest's first instruction. The finished run's instance is not torn
    /// down on the run's path either: it is dropped with the agent (the
    /// last of its clones).
    ///
    /// The instance is made as a warm one is: with no grant, charged to its
    /// run (memory, and fuel of any start function). Instantiation may run
    /// the component's start functions before the run's kernel wall is up,
    /// with nothing granted: use it for a component you trust to start
    /// (such as the Python runner, whose input arrives with the run), not
    /// one that is itself the untrusted input. The component's compiled
    /// code and the instance's initial memory are mapped into the process
    /// here too (both are mapped from the artifact file, page by page at
    /// first use otherwise), so the run takes no page fault to read them.
    ///
    /// ```no_run
    /// use sbx_wasm::Capabilities;
    /// use sbx_wasm::wasm::{RunOptions, WasmHost};
    ///
    /// let host = WasmHost::new().map_err(|e| format!("{e:#}"))?;
    /// let agent = host.prepare(&host.load("agent.wasm".as_ref())?)?.instantiate_ahead()?;
    /// // ... later, once the run's grant is known:
    /// let caps = Capabilities::from_file("caps.toml")?;
    /// let run = host.run_prepared(&agent, RunOptions::new(caps))?;
    /// assert_eq!(agent.warm_runs(), 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn instantiate_ahead(&self) -> Result<PreparedAgent, super::LoadError> {
        let agent = self.instantiate_ahead_unmapped()?;
        // The code and memory the run will reach, mapped while nothing
        // waits for them.
        agent.map_ahead(|| false);
        Ok(agent)
    }

    /// [`instantiate_ahead`](Self::instantiate_ahead) without mapping the
    /// code and memory: for a caller that maps them itself with
    /// [`map_ahead`](Self::map_ahead), when it has nothing else to do.
    pub fn instantiate_ahead_unmapped(&self) -> Result<PreparedAgent, super::LoadError> {
        let pre = self.p2_only()?;
        let pool = WarmPool::made_here(&self.engine, pre, self.fuel, self.retiring.clone())
            .map_err(super::setup)?;
        Ok(PreparedAgent {
            warm: Some(pool),
            ..self.clone()
        })
    }

    /// The 0.2 command: instances made ahead are for 0.2 commands only
    /// (a 0.3 command's instance lives in its store's event loop).
    fn p2_only(&self) -> Result<&CommandPre<HostState>, super::LoadError> {
        self.pre.p2().ok_or_else(|| {
            super::setup(
                "instances made ahead of a run (keep_warm, instantiate_ahead) are for WASI \
                 0.2 commands; this is a WASI 0.3 command: run it without them"
                    .into(),
            )
        })
    }

    /// Instances ready now (0 without [`PreparedAgent::keep_warm`]).
    pub fn warm_ready(&self) -> usize {
        self.warm.as_ref().map_or(0, |w| w.ready_count())
    }

    /// Runs of this agent (and its clones) that started on a warm instance.
    pub fn warm_runs(&self) -> u64 {
        self.warm.as_ref().map_or(0, |w| w.served_count())
    }
}
