//! How the pooling allocator resets a finished run's memory: on Linux 6.7
//! and later wasmtime finds the pages a run wrote with `PAGEMAP_SCAN` and
//! restores each (present or swapped out) to the module's bytes in place,
//! resuming the scan however scattered they are, so a warm Python run
//! takes no page fault; on older kernels every reset unmaps the slot.
//!
//! (wasmtime 48 stopped the scan after 32 regions and missed written pages
//! in swap; this project carried a vendored fix until wasmtime 50.0.2 made
//! both upstream.)

use serde::Serialize;

/// How a pooled slot's memory is reset between runs
/// ([`WasmHost::diagnostics`](super::WasmHost::diagnostics)).
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum PageReset {
    /// The kernel reports written pages (Linux 6.7 and later): every page a
    /// run wrote, present or in swap, is restored in place and stays
    /// mapped for the next run (within the pool's `keep_resident_bytes`).
    /// The fast path.
    Kept,
    /// The kernel cannot report written pages: every reset unmaps the slot.
    Unmapped,
}

impl PageReset {
    /// The reset on this kernel.
    pub fn detect() -> PageReset {
        if finds_dirty_pages() {
            PageReset::Kept
        } else {
            PageReset::Unmapped
        }
    }

    /// Whether the pooling allocator may find written pages with the
    /// kernel's scan and keep them mapped.
    pub fn uses_scan(self) -> bool {
        matches!(self, PageReset::Kept)
    }
}

/// Whether the kernel reports a range's dirty pages (`PAGEMAP_SCAN`, Linux
/// 6.7), which lets wasmtime reset only what a run wrote.
pub(super) fn finds_dirty_pages() -> bool {
    let Ok(release) = std::fs::read_to_string("/proc/sys/kernel/osrelease") else {
        return false;
    };
    let mut parts = release
        .trim()
        .split(|c: char| !c.is_ascii_digit())
        .map(|p| p.parse::<u32>().unwrap_or(0));
    let (major, minor) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    (major, minor) >= (6, 7)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pool_uses_the_scan_only_where_the_kernel_reports_written_pages() {
        let caps = crate::Capabilities::builder().build().unwrap();
        for (reset, scan) in [
            (PageReset::Kept, wasmtime::Enabled::Auto),
            (PageReset::Unmapped, wasmtime::Enabled::No),
        ] {
            let sizes = super::super::PoolSizes::for_reset(&caps, 2, reset);
            assert_eq!(
                sizes.keep_resident_bytes == 0,
                !reset.uses_scan(),
                "{reset:?}"
            );
            assert_eq!(
                sizes.config_for(reset).get_pagemap_scan(),
                scan,
                "{reset:?}"
            );
        }
        assert_eq!(PageReset::detect().uses_scan(), finds_dirty_pages());
    }
}
