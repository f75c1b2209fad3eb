//! The report and audit log files of `run` and `exec`: written whole or not
//! at all (temp file beside the target, then rename).

use crate::exit::Internal;
use anyhow::{Context, Result};
use sbx_wasm::report::{AuditEvent, RunReport};
use std::path::{Path, PathBuf};

/// Where `run` and `exec` write their records.
#[derive(clap::Args, Debug)]
pub(crate) struct OutputFiles {
    /// Write the run report (JSON) to FILE, also after a halt or a trap.
    #[arg(long, value_name = "FILE")]
    pub(crate) report: Option<PathBuf>,
    /// Write the audit log (JSON lines, one per gated decision, allowed ones
    /// included) to FILE.
    #[arg(long, value_name = "FILE")]
    pub(crate) audit: Option<PathBuf>,
}

impl OutputFiles {
    /// Each file asked for, with its text.
    pub(crate) fn texts(
        &self,
        report: &RunReport,
        audit: &[AuditEvent],
    ) -> Result<Vec<(PathBuf, String)>> {
        let mut out = Vec::new();
        if let Some(path) = &self.report {
            let text = serde_json::to_string_pretty(report).map_err(|e| Internal(e.to_string()))?;
            out.push((path.clone(), text + "\n"));
        }
        if let Some(path) = &self.audit {
            let mut lines = String::new();
            for ev in audit {
                lines += &serde_json::to_string(ev).map_err(|e| Internal(e.to_string()))?;
                lines.push('\n');
            }
            out.push((path.clone(), lines));
        }
        Ok(out)
    }

    /// Write whichever files were asked for, each atomically.
    pub(crate) fn write(&self, report: &RunReport, audit: &[AuditEvent]) -> Result<()> {
        write_all(&self.texts(report, audit)?)
    }

    /// For a run that cannot rename files itself (confined): an empty temp
    /// file beside each file asked for (and `extra`, a recording, last),
    /// paired with its final name, in the order of [`OutputFiles::texts`].
    /// Temp files of the same name left by dead processes are removed
    /// first.
    pub(crate) fn stage(&self, extra: Option<&PathBuf>) -> Result<Vec<(PathBuf, PathBuf)>> {
        let mut staged = Vec::new();
        for path in [self.report.as_ref(), self.audit.as_ref(), extra]
            .into_iter()
            .flatten()
        {
            remove_stale_stages(path);
            let tmp = stage_path(path, std::process::id());
            std::fs::File::create(&tmp)
                .with_context(|| format!("cannot write {}", path.display()))?;
            staged.push((tmp, path.clone()));
        }
        Ok(staged)
    }
}

/// `.NAME.sbx-PID.tmp` beside `path`: where a run writes `path` before it
/// is renamed into place, so a reader sees a whole file or none.
fn stage_path(path: &Path, pid: u32) -> PathBuf {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    path.with_file_name(format!(".{name}.sbx-{pid}.tmp"))
}

/// Remove `.NAME.sbx-PID.tmp` files beside `path` whose writer is gone.
fn remove_stale_stages(path: &Path) {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let (prefix, dir) = (
        format!(".{name}.sbx-"),
        path.parent().unwrap_or(Path::new(".")),
    );
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let file = e.file_name().to_string_lossy().into_owned();
        let pid = file
            .strip_prefix(&prefix)
            .and_then(|rest| rest.strip_suffix(".tmp"))
            .and_then(|pid| pid.parse::<u32>().ok());
        if let Some(pid) = pid
            && !sbx_wasm::wasm::process_alive(pid)
        {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

/// Write each `(path, text)`, each atomically ([`write_json_file`]).
pub(crate) fn write_all(texts: &[(PathBuf, String)]) -> Result<()> {
    for (path, text) in texts {
        write_json_file(path, text)?;
    }
    Ok(())
}

/// Write `text` to a temp file beside `path`, then rename it over `path`: a
/// reader (or a run killed half-way) never sees a half-written file.
pub(crate) fn write_json_file(path: &Path, text: &str) -> Result<()> {
    let tmp = stage_path(path, std::process::id());
    let written = std::fs::write(&tmp, text).and_then(|()| std::fs::rename(&tmp, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written.with_context(|| format!("cannot write {}", path.display()))
}
