//! How the pooling allocator resets a finished run's memory, and whether
//! this build of wasmtime carries the fix that keeps a Python run's written
//! pages mapped (`vendor/README.md`).
//!
//! The fix reaches a build through Cargo's `[patch.crates-io]`, which only
//! the top-level workspace's manifest can set: a crate that depends on
//! `sbx-wasm` gets crates.io's wasmtime unless its own manifest patches it
//! too. That build works, and every pooled Python run takes a few hundred
//! page faults more (1.6-3x slower back to back), so a pooled host built
//! that way says so once per process. wasmtime 50 resumes its scan past a
//! full buffer (upstream's own fix): once the library moves to it, every
//! build has the kept reset and this check goes (`vendor/README.md`).

use serde::Serialize;
use std::sync::Once;

/// How many separate written regions wasmtime's page reset keeps mapped
/// (the vendored wasmtime's build script says 1024; crates.io's is 32).
/// `None` when the build script said nothing: crates.io's wasmtime.
const KEPT_REGIONS: Option<&str> = option_env!("SBX_WASMTIME_PAGE_RESET_REGIONS");

/// What wasmtime in crates.io keeps: written regions past the 32nd are
/// unmapped at a reset.
const UPSTREAM_REGIONS: usize = 32;

/// How a pooled slot's memory is reset between runs
/// ([`WasmHost::diagnostics`](super::WasmHost::diagnostics)).
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum PageReset {
    /// The kernel reports which pages a run wrote (`PAGEMAP_SCAN`, Linux
    /// 6.7 and later) and wasmtime keeps up to `regions` separate written
    /// regions mapped: a warm Python run takes no page faults. The fast
    /// path.
    Kept {
        /// Written regions kept (1024 with the fix).
        regions: usize,
    },
    /// As [`PageReset::Kept`], with wasmtime from crates.io: a run that
    /// wrote more than `regions` separate regions (a Python snippet writes
    /// about 160) has the rest unmapped, and the next run faults them back.
    /// Add the `[patch.crates-io]` line of the library's docs to the
    /// workspace that builds the program.
    Partial {
        /// Written regions kept (32).
        regions: usize,
    },
    /// The kernel cannot report written pages: the slot is unmapped at
    /// every reset (nothing stays resident; the fix changes nothing).
    Unmapped,
}

impl PageReset {
    /// The reset of this build on this kernel.
    pub fn detect() -> PageReset {
        Self::from_parts(KEPT_REGIONS, finds_dirty_pages())
    }

    fn from_parts(regions: Option<&str>, scan: bool) -> PageReset {
        let regions = regions
            .and_then(|r| r.parse::<usize>().ok())
            .unwrap_or(UPSTREAM_REGIONS);
        match (scan, regions > UPSTREAM_REGIONS) {
            (false, _) => PageReset::Unmapped,
            (true, true) => PageReset::Kept { regions },
            (true, false) => PageReset::Partial { regions },
        }
    }

    /// Whether pooled runs here are as fast as this kernel allows.
    pub fn is_full_speed(self) -> bool {
        !matches!(self, PageReset::Partial { .. })
    }

    /// What to tell an operator when pooled runs are slower than they
    /// could be, if they are.
    pub fn warning(self) -> Option<String> {
        match self {
            PageReset::Partial { regions } => Some(format!(
                "sbx-wasm: this program is built with wasmtime from crates.io, whose pooling \
                 allocator keeps only {regions} written regions of a slot at a reset; pooled \
                 Python runs take a few hundred page faults more (about 2x slower back to back). \
                 Add `[patch.crates-io] wasmtime = {{ path = \"<sbx-wasm>/vendor/wasmtime\" }}` \
                 to the building workspace's Cargo.toml (docs/library.md, \"Speed in your own \
                 crate\")."
            )),
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
    fn the_mark_decides_between_kept_and_partial_and_the_kernel_above_both() {
        assert_eq!(
            PageReset::from_parts(Some("1024"), true),
            PageReset::Kept { regions: 1024 }
        );
        let upstream = PageReset::from_parts(None, true);
        assert_eq!(upstream, PageReset::Partial { regions: 32 });
        assert!(!upstream.is_full_speed());
        let warning = upstream.warning().unwrap();
        assert!(warning.contains("[patch.crates-io]"), "{warning}");
        assert!(warning.contains("vendor/wasmtime"), "{warning}");
        // A mark that does not parse is no fix.
        assert_eq!(
            PageReset::from_parts(Some("lots"), true),
            PageReset::Partial { regions: 32 }
        );
        for mark in [None, Some("1024")] {
            assert_eq!(PageReset::from_parts(mark, false), PageReset::Unmapped);
            assert!(PageReset::from_parts(mark, false).warning().is_none());
        }
    }

    #[test]
    fn this_workspace_builds_with_the_fix() {
        // The workspace patches wasmtime (Cargo.toml): its mark must reach
        // the library, or the links key or the build script lost it.
        assert_eq!(KEPT_REGIONS, Some("1024"));
        if finds_dirty_pages() {
            assert_eq!(PageReset::detect(), PageReset::Kept { regions: 1024 });
            assert!(PageReset::detect().warning().is_none());
        }
    }
}
