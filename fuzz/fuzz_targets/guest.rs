//! wasm-smith modules run under the same engine settings and limits as
//! components, with tiny budgets. Oracle: the host never panics, never runs
//! past the wall budget (plus scheduling slack), and every run ends in an
//! outcome.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sbx_wasm::Budget;
use sbx_wasm::wasm::WasmHost;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

fn host() -> &'static WasmHost {
    static HOST: OnceLock<WasmHost> = OnceLock::new();
    HOST.get_or_init(|| WasmHost::new().expect("engine"))
}

fuzz_target!(|input: (wasm_smith::Config, &[u8])| {
    let (mut config, rest) = input;
    // No imports (the core runner links none); the rest is wasm-smith's.
    config.max_imports = 0;
    config.min_imports = 0;
    config.max_memory32_bytes = 1 << 24;
    config.threads_enabled = false;
    config.gc_enabled = false;
    config.exceptions_enabled = false;
    let mut u = arbitrary::Unstructured::new(rest);
    let Ok(module) = wasm_smith::Module::new(config, &mut u) else {
        return;
    };
    let bytes = module.to_bytes();
    let budget = Budget {
        max_fuel: 200_000,
        max_memory_bytes: 16 << 20,
        max_wall: Duration::from_millis(200),
        ..Budget::default()
    };
    let started = Instant::now();
    let _outcome = host().run_core_module(&bytes, &budget);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "ran {:?} past a 200 ms budget",
        started.elapsed()
    );
});
