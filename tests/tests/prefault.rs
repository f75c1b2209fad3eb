//! An instance made ahead of its run (`instantiate_ahead`, what the CLI's
//! warm Python workers hold) has the runner's compiled code and its own
//! initial memory mapped before the run, so the run takes no page fault
//! to read them; a component only loaded and prepared does not. A test
//! binary of its own: it reads this process's mappings of the runner's
//! artifact, which no other test maps here. Linux 5.14 and later (the
//! advice the worker gives is new there; before, it is refused and the
//! test says it has nothing to check).
#![cfg(target_os = "linux")]

use sbx_wasm::wasm::{ArtifactCache, WasmHost};
use sbx_wasm_tests::{compile_into, python_runner, test_cache};
use std::path::Path;

/// Size and resident kB of every mapping of `file` in this process, with
/// its permissions.
fn mappings_of(file: &Path) -> Vec<(String, u64, u64)> {
    let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
    let name = file.to_str().unwrap();
    let mut out = Vec::new();
    let mut current: Option<(String, u64, u64)> = None;
    for line in smaps.lines() {
        let first = line.split_ascii_whitespace().next().unwrap_or("");
        if first.contains('-') && !first.ends_with(':') {
            out.extend(current.take());
            if line.ends_with(name) {
                let perms = line.split_ascii_whitespace().nth(1).unwrap().to_string();
                current = Some((perms, 0, 0));
            }
        } else if let Some((_, size, rss)) = current.as_mut() {
            let kb = || {
                line.split_ascii_whitespace()
                    .nth(1)
                    .unwrap()
                    .parse()
                    .unwrap()
            };
            match first {
                "Size:" => *size = kb(),
                "Rss:" => *rss = kb(),
                _ => {}
            }
        }
    }
    out.extend(current);
    out
}

/// Whether the kernel knows `MADV_POPULATE_READ` (Linux 5.14).
fn kernel_populates() -> bool {
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
    let mut parts = release.trim().split(['.', '-']);
    let mut number = || {
        parts
            .next()
            .and_then(|p| p.parse::<u32>().ok())
            .unwrap_or(0)
    };
    (number(), number()) >= (5, 14)
}

#[test]
fn an_instance_made_ahead_has_its_code_and_memory_mapped_before_its_run() {
    if !kernel_populates() {
        eprintln!("skipped: this kernel predates MADV_POPULATE_READ (Linux 5.14)");
        return;
    }
    let cache_dir = test_cache();
    compile_into(&cache_dir, &python_runner());
    let host = WasmHost::new()
        .unwrap()
        .with_cache(ArtifactCache::open(&cache_dir).unwrap());
    let prepared = host.prepare(&host.load(&python_runner()).unwrap()).unwrap();
    // As the kernel names it: the cache folder may be reached through a
    // link (CI links `target/` to a cache outside the checkout).
    let artifact = std::fs::read_dir(std::fs::canonicalize(&cache_dir).unwrap())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "cwasm"))
        .find(|p| !mappings_of(p).is_empty())
        .expect("the runner's artifact is mapped from the cache");
    let code = |maps: &[(String, u64, u64)]| {
        maps.iter()
            .filter(|(perms, _, _)| perms.contains('x'))
            .map(|&(_, size, rss)| (size, rss))
            .fold((0, 0), |(s, r), (size, rss)| (s + size, r + rss))
    };
    // Loaded and prepared: the code is mapped, little of it resident.
    let (size, rss) = code(&mappings_of(&artifact));
    assert!(size > 1024, "{size} kB of code");
    assert!(rss * 2 < size, "{rss} of {size} kB resident before");

    let _agent = prepared.instantiate_ahead().unwrap();
    let maps = mappings_of(&artifact);
    let (size, rss) = code(&maps);
    assert!(
        rss * 10 >= size * 9,
        "{rss} of {size} kB of code resident after"
    );
    // The instance's memory: a private writable mapping of the same file,
    // resident in full (its pages the file's until the run writes one).
    let memory: Vec<_> = maps.iter().filter(|(p, _, _)| p == "rw-p").collect();
    assert!(!memory.is_empty(), "{maps:?}");
    for (_, size, rss) in memory {
        assert!(
            rss * 10 >= size * 9,
            "{rss} of {size} kB of memory resident"
        );
    }
}
