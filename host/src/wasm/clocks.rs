//! What `--deterministic` gives the guest instead of the host's clocks and
//! randomness.

use std::sync::atomic::Ordering;
use std::time::Duration;

pub(super) fn seed_bytes(seed: u64) -> Vec<u8> {
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
pub(super) const FIXED_WALL_SECONDS: u64 = 1_767_225_600;

/// Deterministic wall clock: always 2026-01-01T00:00:00Z.
pub(super) struct FixedWallClock;

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
pub(super) struct TickMonotonic {
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
