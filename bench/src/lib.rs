//! The bare-wasmtime baseline, shared by the side-by-side harness
//! (`src/main.rs`) and by the tests that compare the sandbox's WASI with
//! plain wasmtime's on the same guest and folders; and the resident-memory
//! reading the harness and the examples share.

pub mod bare;

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
