//! Criterion benches of the in-process costs, each beside its baseline:
//! a gated tool call (allowed, denied) against the same call made directly
//! on the registry, and a prepared instantiate+run of the trivial guest with
//! a full grant. `cargo bench -p sbx-wasm-bench` (the guests must be built:
//! `bash bench/compare.sh` or the tests crate's build script does it).
//! `bench/compare.sh` prints the side-by-side ratios; these give
//! distributions.

use criterion::{Criterion, criterion_group, criterion_main};
use sbx_wasm::Services;
use sbx_wasm::tools::{ToolError, ToolLimits, ToolRegistry};
use sbx_wasm::wasm::{RunOptions, WasmHost};
use sbx_wasm::{Capabilities, Op, Sandbox};
use std::hint::black_box;
use std::path::PathBuf;
use std::time::{Duration, Instant};

fn tools() -> ToolRegistry {
    let mut t = ToolRegistry::new();
    t.register("noop", |_: &str| Ok::<_, ToolError>(String::new()));
    t
}

fn grant(dir: &std::path::Path) -> Capabilities {
    std::fs::create_dir_all(dir.join("data")).unwrap();
    std::fs::create_dir_all(dir.join("out")).unwrap();
    Capabilities::builder()
        .read_mount(dir.join("data"), "/work")
        .write_mount(dir.join("out"), "/work/out")
        .allow_egress("https://api.example.com")
        .allow_tool("noop")
        .max_ops(sbx_wasm::budget::LIMIT_MAX_OPS)
        .build()
        .unwrap()
}

/// Time `iters` gated calls of `tool`, on fresh sandboxes every 10,000
/// calls so the audit log (one record per call, the contract) stays small.
fn gated(caps: &Capabilities, tool: &str, iters: u64) -> Duration {
    let mut total = Duration::ZERO;
    let mut left = iters;
    while left > 0 {
        let n = left.min(10_000);
        let mut sandbox = Sandbox::builder(caps.clone())
            .services(Services::new().tools(tools()))
            .build()
            .unwrap();
        let start = Instant::now();
        for _ in 0..n {
            black_box(sandbox.run(Op::tool(tool, "")));
        }
        total += start.elapsed();
        left -= n;
    }
    total
}

fn gate(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let caps = grant(dir.path());
    let registry = tools();
    let direct = registry.get("noop").unwrap().clone();
    let limits = ToolLimits::new(Duration::from_secs(1), 1 << 20);
    let mut g = c.benchmark_group("tool_call");
    g.bench_function("ungated", |b| {
        b.iter(|| black_box(direct.call(black_box(""), limits.clone())))
    });
    g.bench_function("gated_allowed", |b| {
        b.iter_custom(|iters| gated(&caps, "noop", iters))
    });
    g.bench_function("gated_denied", |b| {
        b.iter_custom(|iters| gated(&caps, "nope", iters))
    });
    g.finish();
}

fn instantiate(c: &mut Criterion) {
    let guests = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../guest-examples/target/wasm32-wasip2/release/noop.wasm");
    if !guests.exists() {
        eprintln!(
            "{} is not built; skipping the instantiate bench",
            guests.display()
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let caps = grant(dir.path());
    let host = WasmHost::new().unwrap();
    let agent = host.prepare(&host.load(&guests).unwrap()).unwrap();
    c.bench_function("prepared_run_full_grant", |b| {
        b.iter(|| {
            let o = RunOptions::new(caps.clone()).services(Services::new().tools(tools()));
            let run = host.run_prepared(&agent, o).unwrap();
            assert_eq!(run.report.exit_code, Some(0));
        })
    });
}

criterion_group!(benches, gate, instantiate);
criterion_main!(benches);
