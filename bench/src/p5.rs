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

pub(crate) fn p5_rows(
    host: &WasmHost,
    bare: &bare::Bare,
    guests: &Path,
    caps: &Capabilities,
    scratch: &Path,
) -> Res<Vec<Row>> {
    const PRIMES_N: u32 = 20_000_000;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()?;
    let path = guests.join("cpu.wasm");
    let ours = host.prepare(&host.load(&path)?)?;
    let theirs = bare.load_file(&path)?;
    let fueled = bare::Bare::with_fuel()?;
    let theirs_fueled = fueled.load_file(&path)?;
    let both = bare::Bare::with_epochs(true)?;
    let theirs_both = both.load_file(&path)?;
    let epochs = bare::Bare::with_epochs(false)?;
    let theirs_epochs = epochs.load_file(&path)?;
    let n = PRIMES_N.to_string();
    let mut rows = Vec::new();
    let (a, b) = side_by_side(
        7,
        || run_ours(host, &ours, opts(caps, &[&n])),
        || Ok(rt.block_on(both.run(&theirs_both, &[&n]))?),
    )?;
    let ratio = a.as_secs_f64() / b.as_secs_f64();
    rows.push(Row {
        id: "P5",
        what: "CPU-bound guest, fuel + epoch (vs wasmtime's fuel + epochs, same guest)".into(),
        ours: fmt(a),
        theirs: fmt(b),
        ratio,
        goal: "<= 1.05x",
        met: ratio <= 1.05,
    });
    let (a, b) = side_by_side(
        7,
        || run_ours(host, &ours, opts(caps, &[&n])),
        || Ok(rt.block_on(fueled.run(&theirs_fueled, &[&n]))?),
    )?;
    let ratio = a.as_secs_f64() / b.as_secs_f64();
    rows.push(Row {
        id: "P5",
        what: "CPU-bound guest, fuel + epoch (vs wasmtime's own fuel, same guest)".into(),
        ours: fmt(a),
        theirs: fmt(b),
        ratio,
        goal: "<= 1.05x",
        met: ratio <= 1.05,
    });
    let (a, b) = side_by_side(
        7,
        || run_ours(host, &ours, opts(caps, &[&n])),
        || Ok(rt.block_on(bare.run(&theirs, &[&n]))?),
    )?;
    rows.push(Row {
        id: "P5",
        what: "CPU-bound guest, fuel + epoch (vs unmetered wasm)".into(),
        ours: fmt(a),
        theirs: fmt(b),
        ratio: a.as_secs_f64() / b.as_secs_f64(),
        goal: "(reported)",
        met: true,
    });
    // A wall-only grant on a host without fuel instrumentation.
    let unmetered = WasmHost::new_unmetered()?;
    let wall_only = Capabilities::builder()
        .read_mount(scratch, "/work")
        .max_wall(Duration::from_secs(60))
        .no_fuel()
        .build()?;
    let cpu = unmetered.prepare(&unmetered.load(&path)?)?;
    let (w, wb) = side_by_side(
        7,
        || run_ours(&unmetered, &cpu, opts(&wall_only, &[&n])),
        || Ok(rt.block_on(epochs.run(&theirs_epochs, &[&n]))?),
    )?;
    let ratio = w.as_secs_f64() / wb.as_secs_f64();
    rows.push(Row {
        id: "P5",
        what: "CPU-bound guest, wall-only grant (vs wasmtime's epoch checks alone, same guest)"
            .into(),
        ours: fmt(w),
        theirs: fmt(wb),
        ratio,
        goal: "<= 1.05x",
        met: ratio <= 1.05,
    });
    let (w, wb) = side_by_side(
        7,
        || run_ours(&unmetered, &cpu, opts(&wall_only, &[&n])),
        || Ok(rt.block_on(bare.run(&theirs, &[&n]))?),
    )?;
    let wall_ratio = w.as_secs_f64() / wb.as_secs_f64();
    rows.push(Row {
        id: "P5",
        what: "CPU-bound guest, wall-only grant, unmetered host (vs unmetered wasm)".into(),
        ours: fmt(w),
        theirs: fmt(wb),
        ratio: wall_ratio,
        goal: "<= 1.05x",
        met: wall_ratio <= 1.05,
    });
    let (_, native) = side_by_side(
        7,
        || Ok(()),
        || {
            std::hint::black_box(cpu_work::primes_below(std::hint::black_box(PRIMES_N)));
            Ok(())
        },
    )?;
    rows.push(Row {
        id: "P5",
        what: "CPU-bound guest, fuel + epoch (vs the same Rust, native)".into(),
        ours: fmt(a),
        theirs: fmt(native),
        ratio: a.as_secs_f64() / native.as_secs_f64(),
        goal: "(reported)",
        met: true,
    });
    Ok(rows)
}
