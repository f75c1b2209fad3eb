//! The memory meter. A limit from `StoreLimits` alone makes `memory.grow`
//! return -1 and the guest's allocator abort with a generic trap; this
//! limiter records the breach and traps with `max_memory`, so the report can
//! name it.
//!
//! What it meters is the sum over every linear memory and table of the
//! store (a component holds several; a module may declare a hundred, each
//! under the limit alone): wasmtime asks it once per memory or table as it
//! is made (from 0) and at each growth, so the running total is exact, and
//! the peak the report gives is the peak of that total. A table element is
//! counted as the pointer it is in the host.

use super::HardLimit;
use crate::violation::Violation;
use wasmtime::ResourceLimiter;

/// Linear-memory and table limits for one store.
#[derive(Debug)]
pub(crate) struct MemoryLimiter {
    max_bytes: usize,
    /// Bytes of every memory and table now.
    pub(crate) used_bytes: usize,
    /// The most `used_bytes` has been.
    pub(crate) peak_bytes: usize,
    pub(crate) hit: bool,
}

/// Host bytes per table element (a reference: one pointer).
const TABLE_ELEMENT_BYTES: usize = 8;

/// Most table elements a guest may grow to.
const MAX_TABLE_ELEMENTS: usize = 1_000_000;

impl MemoryLimiter {
    pub(crate) fn new(max_bytes: u64) -> Self {
        MemoryLimiter {
            max_bytes: usize::try_from(max_bytes).unwrap_or(usize::MAX),
            used_bytes: 0,
            peak_bytes: 0,
            hit: false,
        }
    }

    /// Grow the total from `current` to `desired` bytes of one memory or
    /// table, or trap with `max_memory` when the sum would pass the limit.
    fn grow(&mut self, current: usize, desired: usize) -> wasmtime::Result<bool> {
        let total = self
            .used_bytes
            .saturating_sub(current)
            .saturating_add(desired);
        if total > self.max_bytes {
            self.hit = true;
            self.peak_bytes = self.peak_bytes.max(self.used_bytes);
            return Err(wasmtime::Error::new(HardLimit(Violation::MaxMemory)));
        }
        self.used_bytes = total;
        self.peak_bytes = self.peak_bytes.max(total);
        Ok(true)
    }
}

impl ResourceLimiter for MemoryLimiter {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        _max: Option<usize>,
    ) -> wasmtime::Result<bool> {
        self.grow(current, desired)
    }

    fn table_growing(
        &mut self,
        current: usize,
        desired: usize,
        _max: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired > MAX_TABLE_ELEMENTS {
            return Ok(false);
        }
        self.grow(
            current.saturating_mul(TABLE_ELEMENT_BYTES),
            desired.saturating_mul(TABLE_ELEMENT_BYTES),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_limit_is_on_the_sum_of_every_memory_and_table() {
        let mib = 1 << 20;
        let mut l = MemoryLimiter::new(16 * mib as u64);
        // Ten memories of 1 MiB each fit; the peak is their sum.
        for _ in 0..10 {
            assert!(l.memory_growing(0, mib, None).unwrap());
        }
        assert_eq!(l.peak_bytes, 10 * mib);
        // A table of 512k elements is 4 MiB more: 14 MiB.
        assert!(l.table_growing(0, 512 * 1024, None).unwrap());
        assert_eq!(l.used_bytes, 14 * mib);
        // A memory growing by 1 MiB fits; a new 3 MiB one does not.
        assert!(l.memory_growing(mib, 2 * mib, None).unwrap());
        assert!(l.memory_growing(0, 3 * mib, None).is_err());
        assert!(l.hit);
        assert_eq!(l.peak_bytes, 15 * mib);
    }
}
