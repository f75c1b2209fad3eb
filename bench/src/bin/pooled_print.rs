//! `print(1)` on a pooled Python runner, 210 times back to back, as an
//! embedder runs snippets: the median time of the last 200 and the page
//! faults the process took per run, as one JSON line.
//!
//! Built twice by `bench/dependent.sh`: here, inside the workspace (with its
//! `[patch.crates-io]` wasmtime), and by `bench/dependent/`, a crate outside
//! the workspace that depends on `sbx-wasm` as a framework's crate would.
//! The two lines side by side say whether a dependent gets the same pooled
//! speed.
//!
//! Usage: `pooled-print [RUNNER.wasm]` (default: where `sbx-wasm` finds
//! the Python runner).

use sbx_wasm::wasm::{PoolSizes, PythonRunner, RunOptions, WasmHost};
use sbx_wasm::{Capabilities, Status};
use std::time::{Duration, Instant};

const WARM_UP: usize = 10;
const MEASURED: usize = 200;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let explicit = std::env::args_os().nth(1).map(std::path::PathBuf::from);
    let runner = PythonRunner::locate(explicit.as_deref())?;
    let caps = Capabilities::builder().build()?;
    let host = WasmHost::with_pool(PoolSizes::for_caps(&caps, 2))?;
    let py = PythonRunner::load(&host, &runner)?;
    let mut times = Vec::with_capacity(MEASURED);
    let mut faults = Vec::with_capacity(MEASURED);
    for i in 0..WARM_UP + MEASURED {
        let (t0, f0) = (Instant::now(), minor_faults());
        let run = py.run_source(&host, "print(1)\n", RunOptions::new(caps.clone()))?;
        let (t, f) = (t0.elapsed(), minor_faults().saturating_sub(f0));
        if run.report.status != Status::Completed || run.stdout != b"1\n" {
            return Err(format!("run {i} did not print 1: {:?}", run.report.status).into());
        }
        if i >= WARM_UP {
            times.push(t);
            faults.push(f);
        }
    }
    times.sort();
    faults.sort();
    let line = serde_json::json!({
        "runs": MEASURED,
        "median_us": micros(times[MEASURED / 2]),
        "p90_us": micros(times[MEASURED * 9 / 10]),
        "faults_per_run": faults[MEASURED / 2],
        "host": host.diagnostics(),
    });
    println!("{line}");
    Ok(())
}

fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

/// The process's minor page faults so far (`/proc/self/stat`, field 10),
/// or 0 where there is no procfs.
fn minor_faults() -> u64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return 0;
    };
    // The command name (field 2) is in parentheses and may hold spaces:
    // count fields after its closing one.
    stat.rsplit_once(')')
        .and_then(|(_, rest)| rest.split_whitespace().nth(7))
        .and_then(|f| f.parse().ok())
        .unwrap_or(0)
}
