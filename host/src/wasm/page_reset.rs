//! How the pooling allocator resets a finished run's memory, and whether
//! this build of wasmtime carries the vendored reset (`vendor/README.md`):
//! it finds the pages a run wrote with Linux's `PAGEMAP_SCAN`, restores
//! each (present or swapped out) to the module's bytes and keeps up to 1024
//! separate regions of them mapped, so a warm Python run takes no page
//! fault.
//!
//! crates.io's wasmtime 48 does the same scan but asks only for pages that
//! are present: a written page that went to swap is in no reported region
//! and is neither restored nor unmapped, so on a host with swap the slot's
//! next run could read it. A program built with it (a crate that depends on
//! `sbx-wasm` without the workspace's `[patch.crates-io]`, which only the
//! top-level manifest can set) therefore never uses the scan: every reset
//! unmaps the whole slot (correct, and about 2x slower for pooled Python
//! runs back to back), and a pooled host says so once per process.
//! wasmtime 50 makes both fixes upstream; once the library moves to it
//! every build has the kept reset and this check goes.

use serde::Serialize;
use std::sync::Once;

/// How many separate written regions the vendored reset keeps mapped, as
/// its build script says (1024); `None` for crates.io's wasmtime, whose
/// build script says nothing.
const KEPT_REGIONS: Option<&str> = option_env!("SBX_WASMTIME_PAGE_RESET_REGIONS");

/// How a pooled slot's memory is reset between runs
/// ([`WasmHost::diagnostics`](super::WasmHost::diagnostics)).
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum PageReset {
    /// The vendored reset on a kernel that reports written pages (Linux
    /// 6.7 and later): every page a run wrote, present or in swap, is
    /// restored in place and up to `regions` separate regions stay mapped.
    /// The fast path.
    Kept {
        /// Written regions kept mapped (1024).
        regions: usize,
    },
    /// Built with crates.io's wasmtime, whose scan misses written pages in
    /// swap: the scan is not used, every reset unmaps the slot (safe,
    /// slower). Add the `[patch.crates-io]` line of the library's docs to
    /// the workspace that builds the program.
    Unpatched,
    /// The kernel cannot report written pages: every reset unmaps the slot.
    Unmapped,
}

impl PageReset {
    /// The reset of this build on this kernel.
    pub fn detect() -> PageReset {
        Self::from_parts(KEPT_REGIONS, finds_dirty_pages())
    }

    fn from_parts(regions: Option<&str>, scan: bool) -> PageReset {
        match (scan, regions.and_then(|r| r.parse::<usize>().ok())) {
            (false, _) => PageReset::Unmapped,
            (true, Some(regions)) => PageReset::Kept { regions },
            (true, None) => PageReset::Unpatched,
        }
    }

    /// Whether the pooling allocator may find written pages with the
    /// kernel's scan and keep them mapped (only with the vendored reset).
    pub fn uses_scan(self) -> bool {
        matches!(self, PageReset::Kept { .. })
    }

    /// What to tell an operator when pooled runs are slower than they
    /// could be, if they are.
    pub fn warning(self) -> Option<String> {
        match self {
            PageReset::Unpatched => Some(
                "sbx-wasm: this program is built with wasmtime from crates.io, whose pooling \
                 allocator's page scan misses written pages that went to swap, so pooled slots \
                 are unmapped at every reset instead (safe; pooled Python runs about 2x slower \
                 back to back). Add `[patch.crates-io] wasmtime = { path = \
                 \"<sbx-wasm>/vendor/wasmtime\" }` to the building workspace's Cargo.toml \
                 (docs/library.md, \"Speed in your own crate\")."
                    .to_string(),
            ),
            _ => None,
        }
    }
}

/// Say once per process that pooled runs are slower than they could be:
/// through the `log` facade when the program has a logger, else on stderr
/// (a library that stayed silent would leave the slowdown unexplained).
pub(super) fn warn_once(reset: PageReset) {
    static SAID: Once = Once::new();
    let Some(warning) = reset.warning() else {
        return;
    };
    SAID.call_once(|| {
        if log::max_level() >= log::LevelFilter::Warn {
            log::warn!("{warning}");
        } else {
            eprintln!("{warning}");
        }
    });
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
    fn the_mark_decides_between_kept_and_unpatched_and_the_kernel_above_both() {
        assert_eq!(
            PageReset::from_parts(Some("1024"), true),
            PageReset::Kept { regions: 1024 }
        );
        let upstream = PageReset::from_parts(None, true);
        assert_eq!(upstream, PageReset::Unpatched);
        assert!(!upstream.uses_scan());
        let warning = upstream.warning().unwrap();
        assert!(warning.contains("[patch.crates-io]"), "{warning}");
        assert!(warning.contains("vendor/wasmtime"), "{warning}");
        // A mark that does not parse is no mark.
        assert_eq!(
            PageReset::from_parts(Some("lots"), true),
            PageReset::Unpatched
        );
        for mark in [None, Some("1024")] {
            assert_eq!(PageReset::from_parts(mark, false), PageReset::Unmapped);
            assert!(!PageReset::from_parts(mark, false).uses_scan());
            assert!(PageReset::from_parts(mark, false).warning().is_none());
        }
    }

    #[test]
    fn this_workspace_builds_with_the_vendored_reset() {
        // The workspace patches wasmtime (Cargo.toml): its mark must reach
        // the library, or the links key or the build script lost it.
        assert_eq!(KEPT_REGIONS, Some("1024"));
        if finds_dirty_pages() {
            assert_eq!(PageReset::detect(), PageReset::Kept { regions: 1024 });
            assert!(PageReset::detect().warning().is_none());
        }
    }

    #[test]
    fn a_pool_without_the_vendored_reset_never_uses_the_scan() {
        let caps = crate::Capabilities::builder().build().unwrap();
        for (reset, scan) in [
            (PageReset::Kept { regions: 1024 }, wasmtime::Enabled::Auto),
            (PageReset::Unpatched, wasmtime::Enabled::No),
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
    }
}
