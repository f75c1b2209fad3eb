//! An instance made ahead of its run (`instantiate_ahead`) has the
//! runner's compiled code and its own initial memory mapped before the
//! run, so the run takes no page fault to read them; a component only
//! loaded and prepared does not. One made with `instantiate_ahead_unmapped`
//! is mapped by `map_ahead` (what the CLI's warm Python workers do once
//! they have said they are ready), step by step, stopping when asked to.
//! A test binary of its own, each test in a fresh process of it: they read
//! the process's mappings of the runner's artifact, and a page mapped once
//! stays mapped. Linux 5.14 and later (the advice is new there; before,
//! it is refused and the tests say they have nothing to check).
#![cfg(target_os = "linux")]

use sbx_wasm::wasm::{ArtifactCache, WasmHost};
use sbx_wasm_tests::{compile_into, python_runner, run_test_alone, test_cache};
use std::path::{Path, PathBuf};

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

/// Whether this process is the fresh one `test` runs in; if not, run
/// `test` alone in a fresh process of this binary and check it passed.
fn in_fresh_process(test: &str) -> bool {
    const CHILD: &str = "SBX_PREFAULT_TEST";
    if std::env::var(CHILD).is_ok_and(|t| t == test) {
        return true;
    }
    print!("{}", run_test_alone(test, &[(CHILD, test.as_ref())]));
    false
}

/// In the fresh process `test` runs in, the runner prepared
/// ([`prepared_runner`]); `None` in the parent (which ran that process)
/// and where the kernel cannot populate.
fn runner_in_fresh_process(test: &str) -> Option<(sbx_wasm::wasm::PreparedAgent, PathBuf)> {
    in_fresh_process(test).then(prepared_runner).flatten()
}

/// The runner prepared on a host with the test cache, and its artifact
/// as the kernel names it; `None` when the kernel cannot populate.
fn prepared_runner() -> Option<(sbx_wasm::wasm::PreparedAgent, PathBuf)> {
    if !kernel_populates() {
        eprintln!("skipped: this kernel predates MADV_POPULATE_READ (Linux 5.14)");
        return None;
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
    Some((prepared, artifact))
}

/// Size and resident kB of the code mapped from `artifact`.
fn code(artifact: &Path) -> (u64, u64) {
    mappings_of(artifact)
        .iter()
        .filter(|(perms, _, _)| perms.contains('x'))
        .fold((0, 0), |(s, r), (_, size, rss)| (s + size, r + rss))
}

/// Size and resident kB of each instance memory mapped from `artifact`
/// (private and writable: the file's pages until the run writes one).
fn memories(artifact: &Path) -> Vec<(u64, u64)> {
    mappings_of(artifact)
        .into_iter()
        .filter(|(perms, _, _)| perms == "rw-p")
        .map(|(_, size, rss)| (size, rss))
        .collect()
}

/// Whether at least nine tenths of `size` kB is resident.
fn nearly_all(size: u64, rss: u64) -> bool {
    rss * 10 >= size * 9
}

#[test]
fn an_instance_made_ahead_has_its_code_and_memory_mapped_before_its_run() {
    let name = "an_instance_made_ahead_has_its_code_and_memory_mapped_before_its_run";
    let Some((prepared, artifact)) = runner_in_fresh_process(name) else {
        return;
    };
    // Loaded and prepared: the code is mapped, little of it resident.
    let (size, rss) = code(&artifact);
    assert!(size > 1024, "{size} kB of code");
    assert!(rss * 2 < size, "{rss} of {size} kB resident before");

    let _agent = prepared.instantiate_ahead().unwrap();
    let (size, rss) = code(&artifact);
    assert!(
        nearly_all(size, rss),
        "{rss} of {size} kB of code resident after"
    );
    let memory = memories(&artifact);
    assert!(!memory.is_empty(), "{:?}", mappings_of(&artifact));
    for (size, rss) in memory {
        assert!(
            nearly_all(size, rss),
            "{rss} of {size} kB of memory resident"
        );
    }
}

#[test]
fn an_instance_made_ahead_unmapped_is_mapped_step_by_step_until_asked_to_stop() {
    let name = "an_instance_made_ahead_unmapped_is_mapped_step_by_step_until_asked_to_stop";
    let Some((prepared, artifact)) = runner_in_fresh_process(name) else {
        return;
    };
    let agent = prepared.instantiate_ahead_unmapped().unwrap();
    let (size, before) = code(&artifact);
    assert!(
        before * 2 < size,
        "{before} of {size} kB of code resident unmapped"
    );
    let memory = memories(&artifact);
    assert!(!memory.is_empty(), "{:?}", mappings_of(&artifact));
    for &(size, rss) in &memory {
        assert!(
            rss * 2 < size,
            "{rss} of {size} kB of memory resident unmapped"
        );
    }

    // Told to stop at once: nothing more is mapped.
    assert!(!agent.map_ahead(|| true));
    assert_eq!(code(&artifact).1, before);

    // Two steps, then stop: more of the code, not all of it.
    let mut asked = 0;
    assert!(!agent.map_ahead(|| {
        asked += 1;
        asked > 2
    }));
    assert_eq!(asked, 3, "asked before each step");
    let (_, two_steps) = code(&artifact);
    assert!(two_steps > before + 4096, "{before} then {two_steps} kB");
    assert!(!nearly_all(size, two_steps), "{two_steps} of {size} kB");

    // Never told to stop: everything, memory too.
    assert!(agent.map_ahead(|| false));
    let (size, rss) = code(&artifact);
    assert!(
        nearly_all(size, rss),
        "{rss} of {size} kB of code resident after"
    );
    for (size, rss) in memories(&artifact) {
        assert!(
            nearly_all(size, rss),
            "{rss} of {size} kB of memory resident"
        );
    }
}
