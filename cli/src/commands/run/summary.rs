//! The one line a `run` ends with on a terminal (or with `--summary`):
//! how the guest ended and what it spent of each budget.

use sbx_wasm::wasm::WasmRun;
use sbx_wasm::{Landlock, Status};

fn mib(n: u64) -> String {
    format!("{:.1}", n as f64 / (1024.0 * 1024.0))
}

/// `sbx-wasm: hard_limit (max_fuel); ops 2/10000, output 12/16777216 B, ...`
pub(super) fn summary(run: &WasmRun) -> String {
    let r = &run.report;
    let status = match (r.status, r.violation, r.exit_code) {
        (Status::HardLimit, Some(v), _) => format!("hard_limit ({v})"),
        (Status::Trapped, _, _) => "trapped".to_string(),
        (Status::Cancelled, _, _) => "cancelled (interrupted)".to_string(),
        (Status::Exited, _, Some(code)) => match &r.error {
            // The exception the script ended on, as its runner reported it
            // (guest text: control characters shown as `?`).
            Some(e) => {
                let kind = sbx_wasm::bound::printable(&e.kind);
                match e.line {
                    Some(line) => format!("exited {code} ({kind} at line {line})"),
                    None => format!("exited {code} ({kind})"),
                }
            }
            None => format!("exited {code}"),
        },
        _ => "completed".to_string(),
    };
    let (u, l) = (&r.usage, &r.limits);
    let wall = match &r.kernel_wall {
        Some(k) if k.up => "; kernel wall up".to_string(),
        Some(k) if k.landlock == Landlock::Off => "; kernel wall off".to_string(),
        Some(k) => format!(
            "; kernel wall partial (landlock {}, tcp {})",
            k.landlock, k.network
        ),
        None => "; kernel wall off".to_string(),
    };
    let fuel = match l.fuel {
        Some(max) => format!("fuel {}/{max}", u.fuel.unwrap_or(0)),
        None => "fuel off".to_string(),
    };
    format!(
        "sbx-wasm: {status}; {} denials; ops {}/{}, output {}/{} B, {fuel}, wall {}/{} ms, memory {}/{} MiB{wall}",
        r.denials.len(),
        u.ops,
        l.ops,
        u.output_bytes,
        l.output_bytes,
        u.wall_ms,
        l.wall_ms,
        mib(u.memory_peak_bytes.unwrap_or(0)),
        mib(l.memory_peak_bytes),
    )
}
