//! `sbx-wasm exec`: run a JSON plan through the gate, print a line per
//! decision (or the whole run as JSON), write the report and audit log.

use crate::common::{load_caps, sandbox};
use crate::exit::{EXIT_HARD_LIMIT, EXIT_OK, Internal};
use crate::output::OutputFiles;
use anyhow::{Context, Result};
use sbx_wasm::Output;
use sbx_wasm::{AgentRun, SandboxResult, SandboxedAgent, Status};
use std::io::Write;
use std::path::{Path, PathBuf};

#[derive(clap::Args, Debug)]
pub(crate) struct ExecArgs {
    /// The caps file (TOML) that grants what the plan may touch.
    #[arg(long, value_name = "FILE")]
    caps: PathBuf,
    /// The plan: a JSON list of ops; `-` reads standard input.
    #[arg(value_name = "PLAN")]
    plan: PathBuf,
    /// Print the whole run (results and report) as JSON instead of a table.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    files: OutputFiles,
    /// Use a virtual clock (1 ms per reading) so runs are reproducible.
    #[arg(long)]
    deterministic: bool,
}

impl ExecArgs {
    pub(crate) fn execute(&self) -> Result<i32> {
        exec(
            &self.caps,
            &self.plan,
            self.json,
            &self.files,
            self.deterministic,
        )
    }
}

fn exec(
    caps_path: &Path,
    plan_path: &Path,
    json: bool,
    files: &OutputFiles,
    deterministic: bool,
) -> Result<i32> {
    let caps = load_caps(caps_path)?;
    let text = if plan_path == Path::new("-") {
        std::io::read_to_string(std::io::stdin()).context("cannot read the plan from stdin")?
    } else {
        std::fs::read_to_string(plan_path)
            .with_context(|| format!("cannot read plan {}", plan_path.display()))?
    };
    let ops = sbx_wasm::plan::parse_plan(&text)
        .with_context(|| format!("plan {}", plan_path.display()))?;
    // Before the plan runs: its writes may rearrange a write mount.
    let records = files.open(None)?;
    let seal = files.seal(|| caps.to_toml(), &caps, "plan")?;
    let run_start = std::time::SystemTime::now();
    let mut agent = SandboxedAgent::new(sandbox(
        caps,
        sbx_wasm::Services::new(),
        deterministic,
        Some(crate::common::cancel_on_signals()?),
        Default::default(),
    )?);
    let run = agent.run_all(ops);

    let texts = files.texts(&run.report, agent.sandbox().audit(), &seal)?;
    crate::output::write_records(texts, |i, text| records[i].write(text));
    sbx_wasm::telemetry::Telemetry::from_env().run(&sbx_wasm::telemetry::RunInfo {
        kind: "exec",
        program: "plan",
        start: run_start,
        report: &run.report,
        audit: agent.sandbox().audit(),
        call: None,
    });
    let mut out = std::io::stdout().lock();
    if json {
        let text = serde_json::to_string_pretty(&run).map_err(|e| Internal(e.to_string()))?;
        writeln!(out, "{text}")?;
    } else {
        print_run(&mut out, &run)?;
    }
    Ok(match run.stopped_reason {
        Status::HardLimit => EXIT_HARD_LIMIT,
        Status::Cancelled => crate::exit::EXIT_CANCELLED,
        _ => EXIT_OK,
    })
}

fn print_result(out: &mut impl Write, r: &SandboxResult) -> std::io::Result<()> {
    // Targets, messages and contents are the plan's choice: no control
    // byte of theirs reaches the terminal raw.
    use sbx_wasm::bound::printable;
    let target = sbx_wasm::bound::shorten(&printable(&r.target), 40);
    let head = format!("{:>3}  {:<9}  {:<40}", r.seq, r.op, target);
    let rule = printable(r.rule.as_deref().unwrap_or(""));
    if let Some(d) = &r.denial {
        let kind = if d.hard { "HARD" } else { "soft" };
        writeln!(
            out,
            "{head}  DENIED   {} ({kind}): {}",
            d.violation,
            printable(&d.message)
        )
    } else if let Some(e) = &r.error {
        writeln!(
            out,
            "{head}  allowed  by {rule}; failed: {}",
            printable(&e.message)
        )
    } else {
        let what = r.output.as_ref().map(Output::summary).unwrap_or_default();
        writeln!(out, "{head}  allowed  by {rule}; {}", printable(&what))
    }
}

fn print_run(out: &mut impl Write, run: &AgentRun) -> std::io::Result<()> {
    for r in &run.results {
        print_result(out, r)?;
    }
    let rep = &run.report;
    let soft = rep.denials.iter().filter(|d| !d.hard).count();
    let usage = format!(
        "ops {}/{}, output {}/{} bytes, wall {}/{} ms",
        rep.usage.ops,
        rep.limits.ops,
        rep.usage.output_bytes,
        rep.limits.output_bytes,
        rep.usage.wall_ms,
        rep.limits.wall_ms
    );
    match rep.violation {
        Some(v) => writeln!(
            out,
            "halted: hard_limit ({v}); {soft} soft denials; {usage}"
        ),
        None => writeln!(out, "completed; {soft} soft denials; {usage}"),
    }
}
