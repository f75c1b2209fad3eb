//! The JavaScript rows: `sbx-wasm run hello.js` (cached runner) against
//! `node -e` and, where it is installed, `deno eval` (each skipped with its
//! reason when it cannot run); a snippet run in-process by a pooled
//! `JsRunner` with a warm instance, against the 2 ms goal; and the memory
//! a run's guest takes beside what node holds for the same script.

use super::timing::{fmt, side_by_side};
use super::{Res, Row, spawn_ok};
use sbx_wasm::Capabilities;
use sbx_wasm::wasm::{ArtifactCache, JsRunner, PoolSizes, RunOptions, WasmHost};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// `name` on PATH, if it is there.
pub(crate) fn on_path(name: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// `sbx-wasm run` of the JavaScript `script` under `caps_file`, with the
/// runner at `runner`.
pub(crate) fn run_js(sbx: &Path, caps_file: &Path, runner: &Path, script: &Path) -> Command {
    let mut c = Command::new(sbx);
    c.args(["run", "--no-stdin", "--caps"])
        .arg(caps_file)
        .arg("--js-runner")
        .arg(runner)
        .arg(script);
    c
}

pub(crate) fn js_rows(
    sbx: &Path,
    runner: &Path,
    caps: &Capabilities,
    scratch: &Path,
) -> Res<Vec<Row>> {
    let mut rows = Vec::new();
    let (caps_file, script) =
        super::python::hello(sbx, runner, caps, scratch, "hello.js", "console.log(1)\n")?;
    let ours = || spawn_ok(&mut run_js(sbx, &caps_file, runner, &script));
    let peers: [(&str, Option<PathBuf>, &[&str]); 2] = [
        ("node", on_path("node"), &["-e", "console.log(1)"]),
        ("deno", on_path("deno"), &["eval", "console.log(1)"]),
    ];
    for (name, bin, args) in peers {
        let Some(bin) = bin else {
            eprintln!("bench: JS vs {name} skipped: {name} is not on PATH");
            continue;
        };
        if let Err(e) = spawn_ok(Command::new(&bin).args(args)) {
            eprintln!("bench: JS vs {name} skipped: it did not run here: {e}");
            continue;
        }
        let (a, b) = side_by_side(30, ours, || spawn_ok(Command::new(&bin).args(args)))?;
        let ratio = a.as_secs_f64() / b.as_secs_f64();
        rows.push(Row {
            id: "JS",
            what: format!(
                "JavaScript hello world, `sbx-wasm run hello.js`, cached runner, in its own \
                 process (vs {} {})",
                bin.display(),
                args.join(" ")
            ),
            ours: fmt(a),
            theirs: fmt(b),
            ratio,
            goal: "<= 1.0x",
            met: ratio <= 1.0,
        });
    }

    // In-process, as an embedder keeps it: one pooled host and runner with
    // one instance kept ready; 200 snippets, each started once the warm
    // instance is ready (as a model's next snippet finds it).
    let cache = ArtifactCache::open(ArtifactCache::default_dir().ok_or("no cache folder")?)?;
    let host = WasmHost::with_pool(PoolSizes::for_caps(caps, 2))?.with_cache(cache);
    let js = JsRunner::load(&host, runner)?.keep_warm(1)?;
    let goal = Duration::from_millis(2);
    let (p50, peak) = super::python::snippets(js.agent(), true, || {
        js.run_source(&host, "console.log(1)\n", RunOptions::new(caps.clone()))
    })?;
    let ratio = p50.as_secs_f64() / goal.as_secs_f64();
    rows.push(Row {
        id: "JSin",
        what: "JavaScript console.log(1) in-process, pooled runner, started once a warm \
               instance is ready, median of 200 (vs the 2 ms goal)"
            .into(),
        ours: fmt(p50),
        theirs: fmt(goal),
        ratio,
        goal: "<= 1.0x",
        met: ratio <= 1.0,
    });

    // Memory: the guest's linear memory at its peak (what a warm instance
    // holds) beside node's resident set for the same script, as node
    // reports it. Reported, no goal: the two count different things (the
    // host process around the guest is shared by every run).
    if let Some(node) = on_path("node") {
        let out = Command::new(node)
            .args(["-e", "console.log(process.memoryUsage().rss)"])
            .output()?;
        if let Ok(rss) = String::from_utf8_lossy(&out.stdout).trim().parse::<u64>() {
            let kib = |b: u64| b as f64 / 1024.0;
            rows.push(Row {
                id: "JSmem",
                what: "JavaScript hello: the guest's memory at its peak (vs node's RSS)".into(),
                ours: format!("{:.0} KiB", kib(peak)),
                theirs: format!("{:.0} KiB", kib(rss)),
                ratio: peak as f64 / rss.max(1) as f64,
                goal: "(reported)",
                met: true,
            });
        }
    }
    Ok(rows)
}
