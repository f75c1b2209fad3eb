//! P6's loop alone, for a profiler: `run_loop ours|bare|bare-metered SECONDS` runs the
//! noop guest under the bench's full grant (or the bare embedding) on one
//! thread, back to back, and prints runs per second. `run_loop ours|bare
//! SECONDS callloop noop 20000` runs P4's guest instead, 20,000 gated (or
//! ungated) tool calls a run. `THREADS=N` runs N such loops at once
//! (P6 runs two), sharing one host and agent.

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
    let threads: usize = std::env::var("THREADS")
        .ok()
        .and_then(|t| t.parse().ok())
        .unwrap_or(1);
    // One host and agent for all threads, as P6 has them.
    let sizes = PoolSizes::for_caps(&caps, 4);
    let shared = if which.starts_with("bare") {
        let bare = if which == "bare-metered" {
            sbx_wasm_bench::bare::Bare::pooled_metered(&sizes).unwrap()
        } else {
            sbx_wasm_bench::bare::Bare::pooled(&sizes).unwrap()
        };
        let pre = bare.load_file(&noop).unwrap();
        Shared::Bare(bare, pre)
    } else {
        let host = WasmHost::with_pool(sizes).unwrap();
        let agent = host.prepare(&host.load(&noop).unwrap()).unwrap();
        let mut tools = ToolRegistry::new();
        tools.register("noop", |_: &str| Ok::<_, ToolError>(String::new()));
        Shared::Ours(host, agent, Services::new().tools(tools))
    };
    let rate: f64 = std::thread::scope(|scope| {
        let (shared, caps, args) = (&shared, &caps, &args);
        let all: Vec<_> = (0..threads)
            .map(|_| scope.spawn(move || one_thread(shared, window, caps, args)))
            .collect();
        all.into_iter().map(|t| t.join().unwrap()).sum()
    });
    println!(
        "{which}: {rate:.0} runs/s on {threads} thread(s), {:.1} us a run a thread",
        1e6 * threads as f64 / rate
    );
}

/// What every thread shares: the host (or bare engine) and the agent.
enum Shared {
    Bare(
        sbx_wasm_bench::bare::Bare,
        wasmtime_wasi::p2::bindings::CommandPre<sbx_wasm_bench::bare::State>,
    ),
    Ours(WasmHost, sbx_wasm::wasm::PreparedAgent, Services),
}

/// Runs per second on this thread for `window`.
fn one_thread(shared: &Shared, window: Duration, caps: &Capabilities, args: &[&str]) -> f64 {
    let mut n = 0u64;
    let start = Instant::now();
    match shared {
        Shared::Bare(bare, pre) => {
            let rt = tokio::runtime::Builder::new_current_thread()
                .build()
                .unwrap();
            while start.elapsed() < window {
                rt.block_on(bare.run(pre, args)).unwrap();
                n += 1;
            }
        }
        Shared::Ours(host, agent, services) => {
            while start.elapsed() < window {
                let o = RunOptions::new(caps.clone())
                    .args(args.iter().copied())
                    .services(services.clone());
                let run = host.run_prepared(agent, o).unwrap();
                assert_eq!(run.report.exit_code, Some(0));
                n += 1;
            }
        }
    }
    n as f64 / start.elapsed().as_secs_f64()
}
