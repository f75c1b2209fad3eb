//! P5, a CPU-bound guest (primes below N): with fuel and the epoch
//! deadline against wasmtime with the same two meters (the overhead that is
//! ours), against wasmtime's own fuel alone and against no metering; a
//! wall-only grant on an unmetered host against wasmtime's epoch checks
//! alone (ours) and against no metering; and the same Rust natively, for
//! scale.

use super::timing::{fmt, side_by_side};
use super::{Res, Row, bare, cpu_work, opts, run_ours};
use sbx_wasm::Capabilities;
use sbx_wasm::wasm::WasmHost;
use std::path::Path;
use std::time::Duration;
use wasmtime_wasi::p2::bindings::CommandPre;

/// A P5 row from one side-by-side measurement; `goal` is the largest ratio
/// that meets it, `None` for a row that is only reported.
fn row(what: &str, (ours, theirs): (Duration, Duration), goal: Option<f64>) -> Row {
    let ratio = ours.as_secs_f64() / theirs.as_secs_f64();
    Row {
        id: "P5",
        what: format!("CPU-bound guest, {what}"),
        ours: fmt(ours),
        theirs: fmt(theirs),
        ratio,
        goal: if goal.is_some() {
            "<= 1.05x"
        } else {
            "(reported)"
        },
        met: goal.is_none_or(|g| ratio <= g),
    }
}

/// One run of `pre` on the bare embedding `b` with argument `n`.
fn bare_run<'a>(
    rt: &'a tokio::runtime::Runtime,
    b: &'a bare::Bare,
    pre: &'a CommandPre<bare::State>,
    n: &'a str,
) -> impl FnMut() -> Res<()> + 'a {
    move || Ok(rt.block_on(b.run(pre, &[n]))?)
}

pub(crate) fn p5_rows(
    host: &WasmHost,
    bare: &bare::Bare,
    guests: &Path,
    caps: &Capabilities,
    scratch: &Path,
) -> Res<Vec<Row>> {
    const PRIMES_N: u32 = 20_000_000;
    const ROUNDS: usize = 7;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()?;
    let path = guests.join("cpu.wasm");
    let n = PRIMES_N.to_string();
    let ours = host.prepare(&host.load(&path)?)?;
    // A wall-only grant on a host without fuel instrumentation.
    let unmetered = WasmHost::new_unmetered()?;
    let wall_only = Capabilities::builder()
        .read_mount(scratch, "/work")
        .max_wall(Duration::from_secs(60))
        .no_fuel()
        .build()?;
    let cpu = unmetered.prepare(&unmetered.load(&path)?)?;
    let metered = || run_ours(host, &ours, opts(caps, &[&n]));
    let wall = || run_ours(&unmetered, &cpu, opts(&wall_only, &[&n]));
    let (both, fuel, epochs) = (
        bare::Bare::with_epochs(true)?,
        bare::Bare::with_fuel()?,
        bare::Bare::with_epochs(false)?,
    );
    let (pre_both, pre_fuel, pre_epochs, pre_none) = (
        both.load_file(&path)?,
        fuel.load_file(&path)?,
        epochs.load_file(&path)?,
        bare.load_file(&path)?,
    );
    let fueled = side_by_side(ROUNDS, metered, bare_run(&rt, &fuel, &pre_fuel, &n))?;
    let mut rows = vec![
        row(
            "fuel + epoch (vs wasmtime's fuel + epochs, same guest)",
            side_by_side(ROUNDS, metered, bare_run(&rt, &both, &pre_both, &n))?,
            Some(1.05),
        ),
        row(
            "fuel + epoch (vs wasmtime's own fuel, same guest)",
            fueled,
            Some(1.05),
        ),
        row(
            "fuel + epoch (vs unmetered wasm)",
            side_by_side(ROUNDS, metered, bare_run(&rt, bare, &pre_none, &n))?,
            None,
        ),
        row(
            "wall-only grant (vs wasmtime's epoch checks alone, same guest)",
            side_by_side(ROUNDS, wall, bare_run(&rt, &epochs, &pre_epochs, &n))?,
            Some(1.05),
        ),
        row(
            "wall-only grant, unmetered host (vs unmetered wasm)",
            side_by_side(ROUNDS, wall, bare_run(&rt, bare, &pre_none, &n))?,
            Some(1.05),
        ),
    ];
    let (_, native) = side_by_side(
        ROUNDS,
        || Ok(()),
        || {
            std::hint::black_box(cpu_work::primes_below(std::hint::black_box(PRIMES_N)));
            Ok(())
        },
    )?;
    rows.push(row(
        "fuel + epoch (vs the same Rust, native)",
        (fueled.0, native),
        None,
    ));
    Ok(rows)
}
