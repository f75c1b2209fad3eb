//! Budgets (the meters that halt a run) and the injected clock that drives the
//! wall meter.
//!
//! The clock is a seam, not a convenience: a control that reads the real time
//! directly cannot be tested reproducibly, and a replayed run would disagree
//! with the original. [`MonotonicClock`] is the real one; [`TickClock`] advances
//! a fixed step on every reading, for tests and `--deterministic` runs.

use serde::{Deserialize, Serialize};
use std::fmt::Debug;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Default for [`Budget::max_ops`]: 10,000 operations.
pub const DEFAULT_MAX_OPS: u64 = 10_000;
/// Default for [`Budget::max_output_bytes`]: 16 MiB returned to the caller.
pub const DEFAULT_MAX_OUTPUT_BYTES: u64 = 16 * 1024 * 1024;
/// Default for [`Budget::max_wall`]: 30 seconds.
pub const DEFAULT_MAX_WALL: Duration = Duration::from_secs(30);
/// Default for [`Budget::max_fuel`]: 10 billion units (a few seconds of guest CPU).
pub const DEFAULT_MAX_FUEL: u64 = 10_000_000_000;
/// Default for [`Budget::max_memory_bytes`]: 256 MiB of guest linear memory.
pub const DEFAULT_MAX_MEMORY_BYTES: u64 = 256 * 1024 * 1024;

/// Default for [`Budget::max_write_bytes`]: 1 GiB written into write mounts.
pub const DEFAULT_MAX_WRITE_BYTES: u64 = 1024 * 1024 * 1024;
/// Default for [`Budget::max_files`]: 10,000 files and folders created.
pub const DEFAULT_MAX_FILES: u64 = 10_000;
/// Default for [`Budget::max_sent_bytes`]: 64 MiB sent to the network.
pub const DEFAULT_MAX_SENT_BYTES: u64 = 64 * 1024 * 1024;

/// Largest accepted `max_ops`.
pub const LIMIT_MAX_OPS: u64 = 1_000_000_000;
/// Largest accepted `max_output_bytes` (1 TiB).
pub const LIMIT_MAX_OUTPUT_BYTES: u64 = 1 << 40;
/// Largest accepted `max_wall` (one day).
pub const LIMIT_MAX_WALL: Duration = Duration::from_secs(24 * 60 * 60);
/// Largest accepted `max_fuel`.
pub const LIMIT_MAX_FUEL: u64 = 1_000_000_000_000_000;
/// Largest accepted `max_memory_bytes`: a wasm32 memory cannot exceed 4 GiB.
pub const LIMIT_MAX_MEMORY_BYTES: u64 = 4 * 1024 * 1024 * 1024;
/// Largest accepted `max_write_bytes` (1 TiB).
pub const LIMIT_MAX_WRITE_BYTES: u64 = 1 << 40;
/// Largest accepted `max_files`.
pub const LIMIT_MAX_FILES: u64 = 100_000_000;
/// Largest accepted `max_sent_bytes` (1 TiB).
pub const LIMIT_MAX_SENT_BYTES: u64 = 1 << 40;

/// The resource budget of one run. Exceeding any of these is a hard halt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Budget {
    /// Operations that may be attempted, denied ones included.
    /// Default [`DEFAULT_MAX_OPS`].
    pub max_ops: u64,
    /// Bytes that may flow back to the caller (read contents, response
    /// bodies, tool output, guest stdout/stderr). Default
    /// [`DEFAULT_MAX_OUTPUT_BYTES`].
    pub max_output_bytes: u64,
    /// Wall time from the start of the run, read from the injected clock.
    /// Default [`DEFAULT_MAX_WALL`].
    pub max_wall: Duration,
    /// wasm fuel (wasm front door only). Default [`DEFAULT_MAX_FUEL`].
    /// Ignored when `meter_fuel` is off.
    pub max_fuel: u64,
    /// Whether fuel is metered at all (default on). Off, a grant is
    /// wall-only: `max_wall` (and `max_memory_bytes`) bound a spinning
    /// guest, and a host built without fuel
    /// ([`WasmHost::new_unmetered`](crate::wasm::WasmHost::new_unmetered))
    /// runs it without fuel instrumentation. Caps file: `max_fuel = "off"`.
    pub meter_fuel: bool,
    /// Guest linear memory (wasm front door only). Default
    /// [`DEFAULT_MAX_MEMORY_BYTES`].
    pub max_memory_bytes: u64,
    /// Bytes written into write mounts (plan `fs_write` contents; WASI
    /// writes through descriptors and streams; file growth by `set-size`).
    /// Default [`DEFAULT_MAX_WRITE_BYTES`].
    pub max_write_bytes: u64,
    /// Files, folders and links created in write mounts. Default
    /// [`DEFAULT_MAX_FILES`].
    pub max_files: u64,
    /// Bytes that may leave for the network: each HTTP request as sent
    /// (its URL, headers and body, again for each redirect hop that
    /// carries it), what a socket sends and each datagram. What a granted
    /// peer may be told is bounded here, whatever the rules allow.
    /// Default [`DEFAULT_MAX_SENT_BYTES`].
    pub max_sent_bytes: u64,
}

impl Default for Budget {
    fn default() -> Self {
        Budget {
            max_ops: DEFAULT_MAX_OPS,
            max_output_bytes: DEFAULT_MAX_OUTPUT_BYTES,
            max_wall: DEFAULT_MAX_WALL,
            max_fuel: DEFAULT_MAX_FUEL,
            meter_fuel: true,
            max_memory_bytes: DEFAULT_MAX_MEMORY_BYTES,
            max_write_bytes: DEFAULT_MAX_WRITE_BYTES,
            max_files: DEFAULT_MAX_FILES,
            max_sent_bytes: DEFAULT_MAX_SENT_BYTES,
        }
    }
}

/// What a run has used so far, in the same units as [`Budget`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Operations charged.
    pub ops: u64,
    /// Bytes returned to the caller.
    pub output_bytes: u64,
    /// Fuel burned (wasm front door only; `None` for plans).
    pub fuel: Option<u64>,
    /// Milliseconds on the injected clock since the run started.
    pub wall_ms: u64,
    /// The same in microseconds (a short run is not 0).
    #[serde(default)]
    pub wall_us: u64,
    /// Peak guest memory (wasm front door only; `None` for plans).
    pub memory_peak_bytes: Option<u64>,
    /// Bytes written into write mounts.
    #[serde(default)]
    pub write_bytes: u64,
    /// Files, folders and links created in write mounts.
    #[serde(default)]
    pub files: u64,
    /// Bytes sent to the network.
    #[serde(default)]
    pub sent_bytes: u64,
}

/// The write quota (`max_write_bytes`, `max_files`), shared by the gate
/// (plan writes, WASI calls that create) and the wasm host's file output
/// streams, which write without passing the gate call by call.
#[derive(Debug)]
pub struct WriteMeter {
    max_bytes: u64,
    max_files: u64,
    bytes: AtomicU64,
    files: AtomicU64,
}

impl WriteMeter {
    /// A meter allowing `max_bytes` written and `max_files` created.
    pub fn new(max_bytes: u64, max_files: u64) -> Self {
        WriteMeter {
            max_bytes,
            max_files,
            bytes: AtomicU64::new(0),
            files: AtomicU64::new(0),
        }
    }

    /// The bytes the meter allows in all.
    pub fn max_bytes(&self) -> u64 {
        self.max_bytes
    }

    /// Bytes charged so far.
    pub fn bytes(&self) -> u64 {
        self.bytes.load(Ordering::SeqCst)
    }

    /// Files charged so far.
    pub fn files(&self) -> u64 {
        self.files.load(Ordering::SeqCst)
    }

    fn charge(counter: &AtomicU64, max: u64, n: u64) -> bool {
        counter
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |used| {
                used.checked_add(n).filter(|total| *total <= max)
            })
            .is_ok()
    }

    /// Charge `n` bytes if they fit (nothing is charged otherwise).
    pub(crate) fn try_bytes(&self, n: u64) -> bool {
        Self::charge(&self.bytes, self.max_bytes, n)
    }

    /// Charge `n` created files if they fit (nothing is charged otherwise).
    pub(crate) fn try_files(&self, n: u64) -> bool {
        Self::charge(&self.files, self.max_files, n)
    }
}

/// A byte budget's meter. A run has two: `max_output_bytes`'s, shared by
/// everything that returns bytes to the caller (the gate: file contents,
/// bodies, tool output; in the wasm host, the guest's stdout and stderr,
/// what a socket receives), and `max_sent_bytes`'s, shared by everything
/// that sends to the network (the broker's requests, socket writes,
/// datagrams).
#[derive(Debug)]
pub struct OutputMeter {
    max: u64,
    used: AtomicU64,
    breached: AtomicBool,
}

impl OutputMeter {
    /// A meter allowing `max` bytes.
    pub fn new(max: u64) -> Self {
        OutputMeter {
            max,
            used: AtomicU64::new(0),
            breached: AtomicBool::new(false),
        }
    }

    /// Bytes charged so far.
    pub fn used(&self) -> u64 {
        self.used.load(Ordering::SeqCst)
    }

    /// Bytes that may still be charged.
    pub fn left(&self) -> u64 {
        self.max.saturating_sub(self.used())
    }

    /// The budget.
    pub fn max(&self) -> u64 {
        self.max
    }

    /// Whether something was refused for lack of budget.
    pub fn breached(&self) -> bool {
        self.breached.load(Ordering::SeqCst)
    }

    /// Charge `n` bytes if they fit; otherwise charge nothing, record the
    /// breach and return `false`.
    pub(crate) fn try_charge(&self, n: u64) -> bool {
        let fit = self
            .used
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |used| {
                used.checked_add(n).filter(|total| *total <= self.max)
            })
            .is_ok();
        if !fit {
            self.breached.store(true, Ordering::SeqCst);
        }
        fit
    }

    /// Record a breach without charging (a result that was too long to
    /// measure exactly).
    pub(crate) fn mark_breached(&self) {
        self.breached.store(true, Ordering::SeqCst);
    }
}

/// A source of monotonic time for the wall meter.
///
/// `now` returns the time since an arbitrary, fixed origin; only differences
/// are used.
pub trait Clock: Send + Sync + Debug {
    /// The current reading.
    fn now(&self) -> Duration;
}

/// The real clock: [`std::time::Instant`] since construction.
#[derive(Debug)]
pub struct MonotonicClock {
    origin: Instant,
}

impl MonotonicClock {
    /// A clock whose origin is now.
    pub fn new() -> Self {
        MonotonicClock {
            origin: Instant::now(),
        }
    }
}

impl Default for MonotonicClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for MonotonicClock {
    fn now(&self) -> Duration {
        self.origin.elapsed()
    }
}

/// A deterministic clock: every reading returns the current tick and then
/// advances by `step` (the seed's `make_tick_clock(step)`).
///
/// # Examples
///
/// ```
/// use sbx_wasm::{Clock, TickClock};
/// use std::time::Duration;
///
/// let clock = TickClock::new(Duration::from_millis(5));
/// assert_eq!(clock.now(), Duration::ZERO);
/// assert_eq!(clock.now(), Duration::from_millis(5));
/// ```
#[derive(Debug)]
pub struct TickClock {
    step_nanos: u64,
    readings: AtomicU64,
}

impl TickClock {
    /// A clock that starts at zero and advances `step` per reading.
    pub fn new(step: Duration) -> Self {
        TickClock {
            step_nanos: u64::try_from(step.as_nanos()).unwrap_or(u64::MAX),
            readings: AtomicU64::new(0),
        }
    }
}

impl Clock for TickClock {
    fn now(&self) -> Duration {
        let n = self.readings.fetch_add(1, Ordering::Relaxed);
        Duration::from_nanos(n.saturating_mul(self.step_nanos))
    }
}

/// A clock that moves only when told to: for tests, and for embedders that
/// drive time themselves (a simulation, a replay). Share it (`Arc`) between
/// the run and the code that advances it.
///
/// # Examples
///
/// ```
/// use sbx_wasm::{Clock, ManualClock};
/// use std::time::Duration;
///
/// let clock = ManualClock::new();
/// assert_eq!(clock.now(), Duration::ZERO);
/// clock.advance(Duration::from_secs(2));
/// assert_eq!(clock.now(), Duration::from_secs(2));
/// assert_eq!(clock.now(), Duration::from_secs(2), "reading it moves nothing");
/// ```
#[derive(Debug, Default)]
pub struct ManualClock {
    nanos: AtomicU64,
}

impl ManualClock {
    /// A clock at zero.
    pub fn new() -> Self {
        Self::default()
    }

    /// Move the clock forward by `d`.
    pub fn advance(&self, d: Duration) {
        let d = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        let _ = self
            .nanos
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                Some(n.saturating_add(d))
            });
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Duration {
        Duration::from_nanos(self.nanos.load(Ordering::SeqCst))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tick_clock_advances_by_step_per_reading() {
        let c = TickClock::new(Duration::from_millis(10));
        let readings: Vec<_> = (0..3).map(|_| c.now().as_millis()).collect();
        assert_eq!(readings, [0, 10, 20]);
    }

    #[test]
    fn monotonic_clock_never_goes_back() {
        let c = MonotonicClock::new();
        let a = c.now();
        let b = c.now();
        assert!(b >= a);
    }
}
