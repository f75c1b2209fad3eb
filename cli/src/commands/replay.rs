//! `sbx-wasm replay`: run a component again against a recording alone (no
//! file, network or tool touched), and say whether it followed the
//! recording.

use crate::common::{cached, engine_for};
use crate::exit::EXIT_REPLAY_DIVERGED;
use crate::output::OutputFiles;
use anyhow::{Context, Result};
use sbx_wasm::Status;
use sbx_wasm::replay::{Recording, Replay, sha256_hex};
use sbx_wasm::wasm::RunOptions;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

#[derive(clap::Args, Debug)]
pub(crate) struct ReplayArgs {
    /// The recording (`sbx-wasm run --record FILE`).
    #[arg(value_name = "RECORDING")]
    pub(crate) recording: PathBuf,
    /// Run this component instead of the recorded one (a changed agent:
    /// the replay says where it departs from the recording).
    #[arg(long, value_name = "AGENT.wasm")]
    pub(crate) component: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) files: OutputFiles,
    /// Print the verdict as JSON on stdout after the guest's output.
    #[arg(long)]
    pub(crate) json: bool,
}

impl ReplayArgs {
    pub(crate) fn execute(&self) -> i32 {
        crate::exit::finish_run(replay(self))
    }
}

fn replay(a: &ReplayArgs) -> Result<i32> {
    let cancel = crate::common::cancel_on_signals()?;
    let replay = Replay::new(Recording::read(&a.recording)?)
        .with_context(|| format!("cannot replay {}", a.recording.display()))?;
    let rec = replay.recording();
    let component = match (&a.component, &rec.component) {
        (Some(c), _) => c.clone(),
        (None, Some(h)) => PathBuf::from(&h.path),
        (None, None) => anyhow::bail!(
            "the recording does not say which component ran; name it with --component"
        ),
    };
    let bytes = std::fs::read(&component)
        .with_context(|| format!("cannot read the component {}", component.display()))?;
    if let Some(h) = &rec.component
        && h.sha256 != sha256_hex(&bytes)
    {
        eprintln!(
            "sbx-wasm: note: {} is not the recorded component (sha256 {} recorded)",
            component.display(),
            h.sha256
        );
    }
    for note in replay.notes() {
        eprintln!("sbx-wasm: note: {note}");
    }
    let host = engine_for(replay.caps())?;
    let (host, _) = cached(host);
    let agent = host.load(&component)?;
    let mut opts = RunOptions::replaying(&replay);
    // A recording of `run --data` names the data runner, whose own folders
    // the run was lent (read, neither recorded nor charged): lent again.
    // Only to the runner `run --data` would use now, by its path.
    let data = crate::scripts::Lang::Data.find_runner(None);
    if data.is_ok_and(|d| same_file(&d, &component)) {
        opts = opts.runner_mounts::<sbx_wasm::wasm::DataPython>(&component)?;
    }
    let opts = opts
        .stdout(Arc::new(Mutex::new(std::io::stdout())))
        .stderr(Arc::new(Mutex::new(std::io::stderr())))
        .cancel(cancel);
    let records = a.files.open(None)?;
    // Anchored as the recorded run's log was: at the recorded grant.
    let rec = replay.recording();
    let seal = a
        .files
        .seal(|| rec.caps.clone(), replay.caps(), &rec.program_name)?;
    let mut run = host.run(&agent, opts)?;
    let verdict = replay.settle(&run.report, &mut run.audit);
    let texts = a.files.texts(&run.report, &run.audit, &seal)?;
    crate::output::write_records(texts, |i, text| records[i].write(text));
    let line = match &verdict.divergence {
        Some(d) => format!("sbx-wasm: replay diverged: {d}"),
        None if verdict.same_outcome => format!(
            "sbx-wasm: replay followed the recording: {} ops, ended as recorded",
            rec.ops.len()
        ),
        None => format!(
            "sbx-wasm: replay followed the recording's {} ops but ended otherwise: {} (recorded {})",
            rec.ops.len(),
            ended(run.report.status, run.report.exit_code),
            ended(rec.outcome.status, rec.outcome.exit_code)
        ),
    };
    if a.json {
        let json = serde_json::json!({
            "followed": verdict.divergence.is_none(),
            "same_outcome": verdict.same_outcome,
            "divergence": verdict.divergence.as_ref().map(|d| serde_json::json!({
                "seq": d.seq,
                "asked": d.asked,
                "recorded": d.recorded,
            })),
            "status": run.report.status,
            "exit_code": run.report.exit_code,
        });
        println!("{json}");
    }
    if !a.json || std::io::stderr().is_terminal() {
        eprintln!("{line}");
    }
    Ok(if verdict.divergence.is_some() {
        EXIT_REPLAY_DIVERGED
    } else {
        crate::exit::run_exit_code(&run.report)
    })
}

fn same_file(a: &std::path::Path, b: &std::path::Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

fn ended(status: Status, code: Option<i32>) -> String {
    let s = serde_json::to_value(status)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default();
    match code {
        Some(c) => format!("{s} with exit code {c}"),
        None => s,
    }
}
