//! Admission control: a host runs at most `max_concurrent` guests at once
//! (default: the machine's cores); a run past that waits for a slot, up to
//! its deadline, instead of failing at once or piling up memory. Measured
//! on two cores (issue #45): 100 Python snippets at once on a pool of 10
//! failed 78 of them; two at a time gave the same or better throughput,
//! half the median latency and a fraction of the peak memory.

use super::options::RunOptions;
use super::{LoadError, WasmHost};
use std::ops::ControlFlow;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// How a run waits for a slot when [`WasmHost::max_concurrent`] runs are
/// going already. Default: [`Admission::WaitUpToWall`].
#[non_exhaustive]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Admission {
    /// Wait for a slot up to the run's own `max_wall` (a run that cannot
    /// start within its wall budget could not have finished in it).
    #[default]
    WaitUpToWall,
    /// Wait for a slot up to this long.
    Wait(Duration),
    /// Do not wait: [`LoadError::Capacity`] at once when no slot is free.
    FailFast,
}

/// A host's run slots: the semaphore and its size.
#[derive(Clone)]
pub(super) struct Slots {
    sem: Arc<Semaphore>,
    max: usize,
}

impl Slots {
    /// `max` slots (at least one).
    pub(super) fn new(max: usize) -> Slots {
        let max = max.clamp(1, Semaphore::MAX_PERMITS);
        Slots {
            sem: Arc::new(Semaphore::new(max)),
            max,
        }
    }

    /// One slot per core.
    pub(super) fn per_core() -> Slots {
        Slots::new(std::thread::available_parallelism().map_or(1, usize::from))
    }
}

/// A slot held for a run: released when dropped.
pub(super) struct Held {
    _permit: Option<OwnedSemaphorePermit>,
    /// How long the run waited for it.
    pub(super) waited: Duration,
}

impl WasmHost {
    /// Run at most `n` guests at once on this host (and its clones): a run
    /// past that waits for a slot as its [`RunOptions::admission`] says.
    /// Default: one per core. Runs with [`RunOptions::in_place`] (many
    /// mostly idle guests on the caller's runtime) do not take a slot.
    pub fn max_concurrent(mut self, n: usize) -> Self {
        self.slots = Some(Slots::new(n));
        self
    }

    /// Take no slots: every run starts at once (the caller limits how many
    /// run, as the MCP door does with its own slots).
    pub fn unlimited(mut self) -> Self {
        self.slots = None;
        self
    }

    /// How many guests this host runs at once, if it limits them.
    pub fn concurrency(&self) -> Option<usize> {
        self.slots.as_ref().map(|s| s.max)
    }

    /// How long a run under `opts` may wait for a slot.
    fn patience(opts: &RunOptions) -> Option<Duration> {
        match opts.admission {
            Admission::WaitUpToWall => Some(opts.caps.budget().max_wall),
            Admission::Wait(d) => Some(d),
            Admission::FailFast => None,
        }
    }

    fn full(&self, waited: Duration) -> LoadError {
        let max = self.concurrency().unwrap_or(0);
        LoadError::Capacity {
            message: format!(
                "no run slot came free in {} ms (max_concurrent = {max})",
                waited.as_millis()
            ),
        }
    }

    /// What a run under `opts` holds without waiting (`Break`): no slot
    /// when it takes none, or a slot that was free; else the slots it
    /// waits for (`Continue`). A free slot is taken without reading the
    /// clock: it waited for nothing (two clock readings were a measurable
    /// part of a small run's cost).
    fn at_once(&self, opts: &RunOptions) -> ControlFlow<Held, &Slots> {
        let Some(slots) = self.slots.as_ref().filter(|_| !opts.in_place) else {
            return ControlFlow::Break(Held {
                _permit: None,
                waited: Duration::ZERO,
            });
        };
        match slots.sem.clone().try_acquire_owned() {
            Ok(p) => ControlFlow::Break(Held {
                _permit: Some(p),
                waited: Duration::ZERO,
            }),
            Err(_) => ControlFlow::Continue(slots),
        }
    }

    /// A slot for a run under `opts`, awaited.
    pub(super) async fn admit(&self, opts: &RunOptions) -> Result<Held, LoadError> {
        let slots = match self.at_once(opts) {
            ControlFlow::Continue(slots) => slots,
            ControlFlow::Break(held) => return Ok(held),
        };
        let start = Instant::now();
        let permit = match Self::patience(opts) {
            // Not waiting: `at_once` has just tried.
            None => None,
            Some(limit) => tokio::time::timeout(limit, slots.sem.clone().acquire_owned())
                .await
                .ok()
                .and_then(Result::ok),
        };
        match permit {
            Some(p) => Ok(Held {
                _permit: Some(p),
                waited: start.elapsed(),
            }),
            None => Err(self.full(start.elapsed())),
        }
    }

    /// A slot for a run under `opts`, waited for on this thread.
    pub(super) fn admit_blocking(&self, opts: &RunOptions) -> Result<Held, LoadError> {
        let slots = match self.at_once(opts) {
            ControlFlow::Continue(slots) => slots,
            ControlFlow::Break(held) => return Ok(held),
        };
        let start = Instant::now();
        let limit = Self::patience(opts).unwrap_or(Duration::ZERO);
        let mut nap = Duration::from_micros(100);
        loop {
            if let Ok(p) = slots.sem.clone().try_acquire_owned() {
                return Ok(Held {
                    _permit: Some(p),
                    waited: start.elapsed(),
                });
            }
            let waited = start.elapsed();
            if waited >= limit {
                return Err(self.full(waited));
            }
            // A slot frees when a run ends (milliseconds at least): short
            // naps, growing to 5 ms, cost nothing next to that.
            std::thread::sleep(nap.min(limit - waited));
            nap = (nap * 2).min(Duration::from_millis(5));
        }
    }
}
