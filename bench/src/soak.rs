//! The soak rows, each in a fresh process (the harness runs itself with
//! `--soak sequential|concurrent`): S1, the benign guest run 10,000 times
//! one after another in one process, whose resident memory and open file
//! descriptors must not grow from run 1,000 to run 10,000; S2, 1,000
//! benign runs at once, which must all complete (their peak memory is
//! reported). `SBX_SOAK_RUNS` sets S1's count (a tenth of it is the
//! first sample) for a quick try.

use super::{Res, Row, join_all};
use sbx_wasm::Capabilities;
use sbx_wasm::Services;
use sbx_wasm::tools::{ToolError, ToolRegistry};
use sbx_wasm::wasm::{PoolSizes, RunOptions, WasmHost};
use std::path::Path;
use std::process::{Command, Stdio};

/// The benign guest's grant: its CSV in a read mount, its summary in a
/// write mount, the word_count tool; its fetch (of a host no rule names)
/// is refused, so the gate's denial path runs too and nothing is dialled.
fn benign(dir: &Path) -> Res<(Capabilities, RunOptions)> {
    std::fs::create_dir_all(dir.join("data/out"))?;
    std::fs::write(dir.join("data/data.csv"), "name,value\na,1\nb,2\n")?;
    let caps = Capabilities::builder()
        .read_mount(dir.join("data"), "/work")
        .write_mount(dir.join("data/out"), "/work/out")
        .allow_tool("word_count")
        .build()?;
    let mut tools = ToolRegistry::new();
    tools.register("word_count", |input: &str| {
        Ok::<_, ToolError>(input.split_whitespace().count().to_string())
    });
    let opts = RunOptions::new(caps.clone())
        .args(["https://evil.example/"])
        .services(Services::new().tools(tools));
    Ok((caps, opts))
}

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count())
}

/// Peak resident memory of this process, KiB (VmHWM).
pub(crate) fn peak_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

fn check(run: &sbx_wasm::wasm::WasmRun) -> Res<()> {
    if run.report.exit_code != Some(0) || run.stdout.is_empty() {
        return Err(format!("benign run ended {:?} {:?}", run.report, run.trap).into());
    }
    Ok(())
}

/// In the child: run the soak `which` and print its figures.
pub(crate) fn soak_child(which: &str, guests: &Path) -> Res<()> {
    let scratch = tempfile::tempdir()?;
    let (caps, opts) = benign(scratch.path())?;
    let path = guests.join("benign.wasm");
    if which == "sequential" {
        let runs: usize = std::env::var("SBX_SOAK_RUNS")
            .ok()
            .and_then(|n| n.parse().ok())
            .unwrap_or(10_000);
        let host = WasmHost::with_pool(PoolSizes::for_caps(&caps, 2))?;
        let agent = host.prepare(&host.load(&path)?)?;
        let mut first = (0, 0);
        for i in 1..=runs {
            check(&host.run_prepared(&agent, opts.clone())?)?;
            if i == runs / 10 {
                first = (super::p7::rss_kib(), open_fds());
            }
        }
        let last = (super::p7::rss_kib(), open_fds());
        println!("{runs} {} {} {} {}", first.0, last.0, first.1, last.1);
    } else {
        const AT_ONCE: usize = 1_000;
        let host = WasmHost::new()?;
        let agent = host.prepare(&host.load(&path)?)?;
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()?;
        let runs =
            rt.block_on(join_all((0..AT_ONCE).map(|_| {
                host.run_prepared_async(&agent, opts.clone().in_place(true))
            })));
        let done = runs
            .iter()
            .filter(|r| r.as_ref().is_ok_and(|r| check(r).is_ok()))
            .count();
        println!("{done} {AT_ONCE} {}", peak_kib());
    }
    Ok(())
}

/// The rows, each from a child process.
pub(crate) fn soak_rows() -> Res<Vec<Row>> {
    let child = |which: &str| -> Res<Vec<u64>> {
        let out = Command::new(std::env::current_exe()?)
            .args(["--soak", which])
            .stderr(Stdio::inherit())
            .output()?;
        if !out.status.success() {
            return Err(format!("soak {which} failed: {}", out.status).into());
        }
        Ok(String::from_utf8(out.stdout)?
            .split_whitespace()
            .map(str::parse)
            .collect::<Result<_, _>>()?)
    };
    let s = child("sequential")?;
    let (runs, rss_first, rss_last, fds_first, fds_last) = (s[0], s[1], s[2], s[3], s[4]);
    let (n, tenth) = (thousands(runs), thousands(runs / 10));
    let rss_ratio = rss_last as f64 / rss_first.max(1) as f64;
    let c = child("concurrent")?;
    let (done, at_once, peak) = (c[0], c[1], c[2]);
    Ok(vec![
        Row {
            id: "S1",
            what: format!("RSS after {n} sequential benign runs in one process (vs after {tenth})"),
            ours: format!("{:.1} MiB", rss_last as f64 / 1024.0),
            theirs: format!("{:.1} MiB", rss_first as f64 / 1024.0),
            ratio: rss_ratio,
            goal: "<= 1.05x",
            met: rss_ratio <= 1.05,
        },
        Row {
            id: "S1",
            what: format!("open file descriptors after {n} sequential runs (vs after {tenth})"),
            ours: format!("{fds_last}"),
            theirs: format!("{fds_first}"),
            ratio: fds_last as f64 / fds_first.max(1) as f64,
            goal: "no growth",
            met: fds_last <= fds_first,
        },
        Row {
            id: "S2",
            what: format!(
                "{} benign runs at once, all complete (peak RSS {:.0} MiB)",
                thousands(at_once),
                peak as f64 / 1024.0
            ),
            ours: format!("{done} done"),
            theirs: format!("{at_once}"),
            ratio: done as f64 / at_once.max(1) as f64,
            goal: "all complete",
            met: done == at_once,
        },
    ])
}

/// 10000 as "10,000".
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}
