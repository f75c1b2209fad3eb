//! P6's loop alone, for a profiler: `run_loop ours|bare SECONDS` runs the
//! noop guest under the bench's full grant (or the bare embedding) on one
//! thread, back to back, and prints runs per second. `run_loop ours|bare
//! SECONDS callloop noop 20000` runs P4's guest instead, 20,000 gated (or
//! ungated) tool calls a run.

use sbx_wasm::Capabilities;
use sbx_wasm::Services;
use sbx_wasm::tools::{ToolError, ToolRegistry};
use sbx_wasm::wasm::{PoolSizes, RunOptions, WasmHost};
use std::time::{Duration, Instant};

fn main() {
    let argv: Vec<String> = std::env::args().collect();
    let which = argv.get(1).map(String::as_str).unwrap_or("ours");
    let secs: u64 = argv.get(2).and_then(|s| s.parse().ok()).unwrap_or(5);
    let guests = std::path::PathBuf::from(std::env::var("GUEST_DIR").expect("GUEST_DIR"));
    let name = argv.get(3).map(String::as_str).unwrap_or("noop");
    let args: Vec<&str> = argv.iter().skip(4).map(String::as_str).collect();
    let noop = guests.join(format!("{name}.wasm"));
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("data")).unwrap();
    std::fs::create_dir_all(dir.path().join("out")).unwrap();
    let caps = Capabilities::builder()
        .read_mount(dir.path().join("data"), "/work")
        .write_mount(dir.path().join("out"), "/work/out")
        .allow_egress("https://api.example.com")
        .allow_tool("noop")
        .allow_tool("other")
        .max_ops(1_000_000)
        .build()
        .unwrap();
    let window = Duration::from_secs(secs);
    let start = Instant::now();
    let mut n = 0u64;
    if which == "bare" {
        let bare = sbx_wasm_bench::bare::Bare::pooled(&PoolSizes::for_caps(&caps, 4)).unwrap();
        let pre = bare.load_file(&noop).unwrap();
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        while start.elapsed() < window {
            rt.block_on(bare.run(&pre, &args)).unwrap();
            n += 1;
        }
    } else {
        let host = WasmHost::with_pool(PoolSizes::for_caps(&caps, 4)).unwrap();
        let agent = host.prepare(&host.load(&noop).unwrap()).unwrap();
        let mut tools = ToolRegistry::new();
        tools.register("noop", |_: &str| Ok::<_, ToolError>(String::new()));
        let services = Services::new().tools(tools);
        while start.elapsed() < window {
            let o = RunOptions::new(caps.clone())
                .args(args.iter().copied())
                .services(services.clone());
            let run = host.run_prepared(&agent, o).unwrap();
            assert_eq!(run.report.exit_code, Some(0));
            n += 1;
        }
    }
    let rate = n as f64 / start.elapsed().as_secs_f64();
    println!("{which}: {rate:.0} runs/s, {:.1} us a run", 1e6 / rate);
}
