//! `sbx-wasm run`: load the caps and the component, run it, write the report
//! and audit log (also after a halt or a trap), print a one-line summary.

use crate::cli::{
    EXIT_RUN_HARD_LIMIT, EXIT_RUN_SETUP, EXIT_RUN_TRAP, OutputFiles, load_caps, registry,
};
use anyhow::{Context, Result};
use sbx_wasm::report::{RunReport, Status};
use sbx_wasm::wasm::{RunOptions, WasmHost, WasmRun};
use std::io::{IsTerminal, Read};
use std::path::PathBuf;

pub(crate) struct RunArgs {
    pub caps: PathBuf,
    pub component: PathBuf,
    pub args: Vec<String>,
    pub files: OutputFiles,
    pub deterministic: bool,
    pub seed: u64,
    pub no_stdin: bool,
    pub summary: bool,
}

/// Largest stdin handed to a guest.
const MAX_STDIN: u64 = 64 * 1024 * 1024;

pub(crate) fn run(a: RunArgs) -> i32 {
    match run_inner(&a) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("sbx-wasm: error: {e:#}");
            EXIT_RUN_SETUP
        }
    }
}

fn run_inner(a: &RunArgs) -> Result<i32> {
    let caps = load_caps(&a.caps)?;
    let host =
        WasmHost::new().map_err(|e| anyhow::anyhow!("cannot start the wasm engine: {e:#}"))?;
    let component = host.load(&a.component)?;
    let mut stdin = Vec::new();
    if !a.no_stdin && !std::io::stdin().is_terminal() {
        std::io::stdin()
            .take(MAX_STDIN)
            .read_to_end(&mut stdin)
            .context("cannot read stdin")?;
    }
    let mut opts = RunOptions::new(caps.clone());
    opts.program_name = a
        .component
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "agent".into());
    opts.args = a.args.clone();
    opts.stdin = stdin;
    opts.tools = registry(&caps);
    opts.deterministic = a.deterministic;
    opts.seed = a.seed;
    let run = host.run(&component, opts)?;
    a.files.write(&run.report, &run.audit)?;
    if let Some(msg) = &run.trap {
        eprintln!("sbx-wasm: guest trapped: {msg}");
    }
    if a.summary || std::io::stderr().is_terminal() {
        eprintln!("{}", summary(&run));
    }
    Ok(exit_code(&run.report))
}

fn exit_code(r: &RunReport) -> i32 {
    match r.status {
        Status::HardLimit => EXIT_RUN_HARD_LIMIT,
        Status::Trapped => EXIT_RUN_TRAP,
        _ => r.exit_code.unwrap_or(0),
    }
}

fn mib(n: u64) -> String {
    format!("{:.1}", n as f64 / (1024.0 * 1024.0))
}

/// `sbx-wasm: hard_limit (max_fuel); ops 2/10000, output 12/16777216 B, ...`
fn summary(run: &WasmRun) -> String {
    let r = &run.report;
    let status = match (r.status, r.violation, r.exit_code) {
        (Status::HardLimit, Some(v), _) => format!("hard_limit ({v})"),
        (Status::Trapped, _, _) => "trapped".to_string(),
        (Status::Exited, _, Some(code)) => format!("exited {code}"),
        _ => "completed".to_string(),
    };
    let (u, l) = (&r.usage, &r.limits);
    format!(
        "sbx-wasm: {status}; {} denials; ops {}/{}, output {}/{} B, fuel {}/{}, wall {}/{} ms, memory {}/{} MiB",
        r.denials.len(),
        u.ops,
        l.ops,
        u.output_bytes,
        l.output_bytes,
        u.fuel.unwrap_or(0),
        l.fuel,
        u.wall_ms,
        l.wall_ms,
        mib(u.memory_peak_bytes.unwrap_or(0)),
        mib(l.memory_peak_bytes),
    )
}
