//! The memory meter. A limit from `StoreLimits` alone makes `memory.grow`
//! return -1 and the guest's allocator abort with a generic trap; this
//! limiter records the breach and traps with `max_memory`, so the report can
//! name it.

use super::HardLimit;
use crate::violation::Violation;
use wasmtime::ResourceLimiter;

/// Linear-memory and table limits for one store.
#[derive(Debug)]
pub(crate) struct MemoryLimiter {
    max_bytes: usize,
    pub(crate) peak_bytes: usize,
    pub(crate) hit: bool,
}

/// Most table elements a guest may grow to.
const MAX_TABLE_ELEMENTS: usize = 1_000_000;

impl MemoryLimiter {
    pub(crate) fn new(max_bytes: u64) -> Self {
        MemoryLimiter {
            max_bytes: usize::try_from(max_bytes).unwrap_or(usize::MAX),
            peak_bytes: 0,
            hit: false,
        }
    }
}

impl ResourceLimiter for MemoryLimiter {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        _max: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired > self.max_bytes {
            self.hit = true;
            self.peak_bytes = self.peak_bytes.max(current);
            return Err(wasmtime::Error::new(HardLimit(Violation::MaxMemory)));
        }
        self.peak_bytes = self.peak_bytes.max(desired);
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _max: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(desired <= MAX_TABLE_ELEMENTS)
    }
}
