//! How a run ended: the mapping of the call's outcome (an exit, a limit,
//! a trap, a cancel) onto the report.

use super::HardLimit;
use super::HostState;
use super::WasmRun;
use crate::budget::OutputMeter;
use crate::report::Status;
use crate::violation::Violation;
use wasmtime::{Store, Trap};
use wasmtime_wasi::I32Exit;

/// The report of a run that ended as `end`.
pub(super) fn finish(
    fuel_left: u64,
    mut state: HostState,
    end: End,
    meter: &OutputMeter,
    kernel_wall: Option<crate::KernelWall>,
    header: Option<Box<crate::replay::Header>>,
) -> WasmRun {
    let recorder = state.gate.take_recorder();
    let budget = *state.gate.caps().budget();
    let mut report = state.gate.take_report();
    report.kernel_wall = kernel_wall;
    // Fuel used, when it is a budget of this grant.
    report.usage.fuel = budget
        .meter_fuel
        .then(|| budget.max_fuel.saturating_sub(fuel_left));
    report.usage.memory_peak_bytes = Some(state.limiter.peak_bytes as u64);
    report.usage.output_bytes = meter.used();
    if !state.deterministic {
        // The run's clock, read once more: the real time a run took, or
        // the injected clock's when there is one.
        let took = state.gate.elapsed_now();
        report.usage.wall_ms = u64::try_from(took.as_millis()).unwrap_or(u64::MAX);
        report.usage.wall_us = u64::try_from(took.as_micros()).unwrap_or(u64::MAX);
    }
    let mut trap = None;
    match end {
        End::Exit(0) => {
            report.status = Status::Completed;
            report.exit_code = Some(0);
        }
        End::Exit(code) => {
            report.status = Status::Exited;
            // WASI 0.2 carries failure as 1; a runner says the script's
            // own code beside it (never 0 for a failure).
            let said = state.exit_code.filter(|&c| c != 0);
            report.exit_code = Some(said.unwrap_or(code));
            // Only a run that failed carries the exception its runner
            // reported (a script that caught it and went on did not fail).
            report.error = state.script_error.take().map(|e| *e);
        }
        End::Limit(Violation::Cancelled) => {
            report.status = Status::Cancelled;
            report.violation = Some(Violation::Cancelled);
        }
        End::Limit(v) => {
            report.status = Status::HardLimit;
            report.violation = Some(v);
        }
        End::Trap(message) => {
            report.status = Status::Trapped;
            trap = Some(message);
        }
    }
    let audit = state.gate.take_audit();
    let recording = header
        .zip(recorder)
        .map(|(h, r)| Box::new(h.assemble(r, &report, &audit)));
    WasmRun {
        report,
        audit,
        trap,
        stdout: Vec::new(),
        stderr: Vec::new(),
        recording,
        queued: std::time::Duration::ZERO,
    }
}

pub(super) enum End {
    Exit(i32),
    Limit(Violation),
    Trap(String),
}

/// Map how the call failed onto a violation, an exit or a trap message.
pub(super) fn classify(e: &wasmtime::Error, store: &Store<HostState>) -> End {
    let halted = store.data().gate.halted().map(|d| d.violation);
    match classify_error(e, halted, store.data().limiter.hit) {
        // A trap after the cancel (a refused call the guest did not expect)
        // is the cancel's doing.
        End::Trap(_) if store.data().gate.cancelled() => End::Limit(Violation::Cancelled),
        end => end,
    }
}

/// The shared part of trap mapping: `halted` is the gate's tripped
/// violation, `memory_hit` whether the limiter refused a growth.
pub(super) fn classify_error(
    e: &wasmtime::Error,
    halted: Option<Violation>,
    memory_hit: bool,
) -> End {
    if let Some(exit) = e.downcast_ref::<I32Exit>() {
        return End::Exit(exit.0);
    }
    if let Some(HardLimit(v)) = e.downcast_ref::<HardLimit>() {
        return End::Limit(*v);
    }
    if let Some(v) = halted {
        return End::Limit(v);
    }
    if memory_hit {
        return End::Limit(Violation::MaxMemory);
    }
    match e.downcast_ref::<Trap>() {
        Some(Trap::OutOfFuel) => End::Limit(Violation::MaxFuel),
        Some(Trap::Interrupt) => End::Limit(Violation::MaxWall),
        Some(Trap::StackOverflow) => End::Limit(Violation::StackOverflow),
        _ => End::Trap(format!("{e:#}")),
    }
}
