//! The bare-wasmtime baseline, shared by the side-by-side harness
//! (`src/main.rs`) and by the tests that compare the sandbox's WASI with
//! plain wasmtime's on the same guest and folders; and the resident-memory
//! reading the harness and the examples share.

pub mod bare;

/// Hand the allocator's free pages back to the system, so that what a
/// measurement allocates after this is counted in the resident size when
/// it is touched. Without it a side that freed memory before its first
/// reading (the bare baseline compiles its component in-process and leaves
/// about 4 MiB free in the heap; the sandbox maps its cached artifact and
/// leaves almost none) hides part of its growth in pages that were already
/// resident. glibc's `malloc_trim`; elsewhere nothing.
pub fn settle_heap() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        unsafe extern "C" {
            fn malloc_trim(pad: usize) -> std::ffi::c_int;
        }
        // SAFETY: glibc's malloc_trim takes a byte count and only
        // releases free memory; it is safe to call at any time.
        unsafe { malloc_trim(0) };
    }
}

/// KiB resident in this process, from /proc/self/statm.
pub fn rss_kib() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    pages * 4
}
