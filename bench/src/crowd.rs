//! Row PYc: many Python snippets started at once on one host, as an agent
//! framework's burst of tool calls would start them, each in a fresh
//! process of the harness (`--crowd N`) so its peak memory is its own: a
//! pooled host with the default admission (one run per core, the rest
//! waiting for a slot), every run started together on a tokio runtime.
//! Reported: how many completed, the whole burst's time, each run's time
//! from its start to its result (waiting included) at p50 and p99, and the
//! process's peak resident memory.

use super::soak::peak_kib;
use super::{Res, Row};
use sbx_wasm::Capabilities;
use sbx_wasm::Status;
use sbx_wasm::wasm::{PoolSizes, PythonRunner, RunOptions, WasmHost};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The snippet: a little work and one line out.
const SNIPPET: &str = "print(sum(i * i for i in range(1000)))\n";

/// The child: `n` runs at once; prints `done total_us p50_us p99_us peak_kib`.
pub(crate) fn crowd_child(n: usize, runner: &Path) -> Res<()> {
    let caps = Capabilities::builder().build()?;
    let cores = std::thread::available_parallelism().map_or(2, |c| c.get());
    let host = WasmHost::with_pool(PoolSizes::for_caps(&caps, u32::try_from(cores)?))?;
    let python = Arc::new(PythonRunner::load(&host, runner)?);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(cores)
        .enable_all()
        .build()?;
    let start = Instant::now();
    let times: Vec<Option<Duration>> = rt.block_on(async {
        let tasks: Vec<_> = (0..n)
            .map(|_| {
                let (host, python, caps) = (host.clone(), python.clone(), caps.clone());
                tokio::spawn(async move {
                    let t0 = Instant::now();
                    let run = python
                        .run_source_async(&host, SNIPPET, RunOptions::new(caps))
                        .await
                        .ok()?;
                    (run.report.status == Status::Completed && run.stdout == b"332833500\n")
                        .then(|| t0.elapsed())
                })
            })
            .collect();
        let mut times = Vec::with_capacity(n);
        for t in tasks {
            times.push(t.await.ok().flatten());
        }
        times
    });
    let total = start.elapsed();
    let mut done: Vec<Duration> = times.into_iter().flatten().collect();
    done.sort();
    let at = |q: f64| {
        done.get(((done.len() as f64 * q) as usize).min(done.len().saturating_sub(1)))
            .map_or(0, |d| d.as_micros())
    };
    println!(
        "{} {} {} {} {}",
        done.len(),
        total.as_micros(),
        at(0.5),
        at(0.99),
        peak_kib()
    );
    Ok(())
}

/// The rows: 100 and 1,000 at once, each from a child process.
pub(crate) fn crowd_rows(runner: &Path) -> Res<Vec<Row>> {
    let mut rows = Vec::new();
    for n in [100usize, 1000] {
        let out = Command::new(std::env::current_exe()?)
            .arg("--crowd")
            .arg(n.to_string())
            .env("PYTHON_RUNNER", runner)
            .stderr(Stdio::inherit())
            .output()?;
        if !out.status.success() {
            return Err(format!("crowd {n} failed: {}", out.status).into());
        }
        let v: Vec<u128> = String::from_utf8(out.stdout)?
            .split_whitespace()
            .map(str::parse)
            .collect::<Result<_, _>>()?;
        let (done, total, p50, p99, peak) = (v[0], v[1], v[2], v[3], v[4]);
        let ms = |us: u128| us as f64 / 1000.0;
        rows.push(Row {
            id: "PYc",
            what: format!(
                "{n} Python snippets started at once on one pooled host, one run per core \
                 admitted (all {:.0} ms; each from start to result p50 {:.1} ms, p99 {:.1} ms; \
                 peak RSS {:.0} MiB)",
                ms(total),
                ms(p50),
                ms(p99),
                peak as f64 / 1024.0
            ),
            ours: format!("{done} done"),
            theirs: format!("{n}"),
            ratio: done as f64 / n as f64,
            goal: "all complete",
            met: done == n as u128,
        });
    }
    Ok(rows)
}
