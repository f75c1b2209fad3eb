//! The records of `run`, `exec` and `replay` (report, audit log,
//! recording): each folder opened before the guest starts, each file
//! written whole or not at all (a temp file made new in that folder, then
//! renamed over the name).
//!
//! Why a folder handle taken before the run: a guest with a write mount may
//! rearrange folders there while it runs (rename a link it found to where a
//! record's folder was, plant a folder at a record's name). A path opened
//! after the run would follow what the guest left, and the host would
//! write where the guest chose, outside every mount. The handle is the
//! folder the operator named, wherever the guest moved it; the temp file
//! is created new (never through a name the guest made: no link, no
//! folder) and no temp file exists while the guest runs.

use crate::exit::Internal;
use anyhow::{Context, Result};
use cap_std::ambient_authority;
use cap_std::fs::{Dir, OpenOptions};
use sbx_wasm::seal::{AuditKey, Sealer};
use sbx_wasm::{AuditEvent, Capabilities, RunReport};
use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::SystemTime;

/// Where `run` and `exec` write their records.
#[derive(clap::Args, Debug)]
pub(crate) struct OutputFiles {
    /// Write the run report (JSON) to FILE, also after a halt or a trap.
    #[arg(long, value_name = "FILE")]
    pub(crate) report: Option<PathBuf>,
    /// Write the audit log (JSON lines, one per gated decision, allowed ones
    /// included, each chained to the one before, then a seal; `sbx-wasm
    /// audit verify` checks it) to FILE.
    #[arg(long, value_name = "FILE")]
    pub(crate) audit: Option<PathBuf>,
    /// Sign the audit log's seal with the Ed25519 key in FILE (`sbx-wasm
    /// audit keygen` makes one). It may not lie in a mount.
    #[arg(long, value_name = "FILE", requires = "audit")]
    pub(crate) audit_key: Option<PathBuf>,
    /// The audit log's form: `jsonl` (the project's records) or `ocsf`
    /// (OCSF 1.8 events, the run's start and end among them).
    #[arg(long, value_name = "FORM", default_value = "jsonl", requires = "audit")]
    pub(crate) audit_format: AuditFormat,
}

/// What an audit log's lines are.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum AuditFormat {
    /// The project's records, one per decision.
    Jsonl,
    /// OCSF 1.8 events.
    Ocsf,
}

/// How a run's audit log is sealed: anchored at the digest of the grant
/// it ran under, signed when a key was given.
pub(crate) struct AuditSeal {
    anchor: String,
    key: Option<AuditKey>,
    /// For `--audit-format ocsf`: what every event of the run shares.
    ocsf: Option<sbx_wasm::ocsf::Context>,
}

impl OutputFiles {
    /// The seal of the audit log of a run under `caps`, whose effective
    /// grant is `grant()` (as a caps file): the key is read now (before a
    /// run that may not read it after), and refused if a mount holds it.
    /// Without `--audit` nothing is read or rendered.
    pub(crate) fn seal(
        &self,
        grant: impl FnOnce() -> String,
        caps: &Capabilities,
        program: &str,
    ) -> Result<AuditSeal> {
        if self.audit.is_none() {
            return Ok(AuditSeal {
                anchor: String::new(),
                key: None,
                ocsf: None,
            });
        }
        let key = self
            .audit_key
            .as_deref()
            .map(|path| audit_key(path, caps))
            .transpose()?;
        let anchor = sbx_wasm::seal::anchor_of_grant(&grant());
        let ocsf = (self.audit_format == AuditFormat::Ocsf)
            .then(|| ocsf_context(program, &anchor, epoch_ms(SystemTime::now())));
        Ok(AuditSeal { anchor, key, ocsf })
    }

    /// Each file asked for, with its text.
    pub(crate) fn texts(
        &self,
        report: &RunReport,
        audit: &[AuditEvent],
        seal: &AuditSeal,
    ) -> Result<Vec<(PathBuf, String)>> {
        let mut out = Vec::new();
        if let Some(path) = &self.report {
            let text = serde_json::to_string_pretty(report).map_err(|e| Internal(e.to_string()))?;
            out.push((path.clone(), text + "\n"));
        }
        if let Some(path) = &self.audit {
            let mut sealer = Sealer::new(seal.anchor.clone());
            if let Some(key) = &seal.key {
                sealer = sealer.with_key(key.clone());
            }
            let mut lines = String::new();
            match &seal.ocsf {
                Some(ctx) => {
                    for ev in sbx_wasm::ocsf::run(audit, Some(report), ctx) {
                        lines += &sealer.line_inside(ev, "unmapped");
                        lines.push('\n');
                    }
                }
                None => {
                    for ev in audit {
                        let text =
                            serde_json::to_string(ev).map_err(|e| Internal(e.to_string()))?;
                        lines += &sealer.line_text(&text);
                        lines.push('\n');
                    }
                }
            }
            lines += &sealer.seal();
            lines.push('\n');
            out.push((path.clone(), lines));
        }
        Ok(out)
    }

    /// The files asked for, and `extra` (a recording) last, in the order of
    /// [`OutputFiles::texts`].
    pub(crate) fn paths(&self, extra: Option<&PathBuf>) -> Vec<PathBuf> {
        [self.report.as_ref(), self.audit.as_ref(), extra]
            .into_iter()
            .flatten()
            .cloned()
            .collect()
    }

    /// Open the folder of each file asked for (and `extra`): before the
    /// guest runs.
    pub(crate) fn open(&self, extra: Option<&PathBuf>) -> Result<Vec<Record>> {
        self.paths(extra).iter().map(|p| Record::open(p)).collect()
    }
}

/// One record file: its folder, opened when the run began, and its name.
#[derive(Debug)]
pub(crate) struct Record {
    dir: Dir,
    name: OsString,
}

impl Record {
    /// Open the folder `path` will be written in. A name that is a folder
    /// already, or a folder that cannot be opened, is an error now, before
    /// anything runs.
    pub(crate) fn open(path: &Path) -> Result<Record> {
        let name = path
            .file_name()
            .with_context(|| format!("cannot write {}: not a file name", path.display()))?
            .to_os_string();
        let parent = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        let dir = Dir::open_ambient_dir(parent, ambient_authority())
            .with_context(|| format!("cannot write {}: cannot open its folder", path.display()))?;
        if dir.symlink_metadata(&name).is_ok_and(|m| m.is_dir()) {
            anyhow::bail!("cannot write {}: it is a folder", path.display());
        }
        let record = Record { dir, name };
        record.remove_stale();
        record
            .probe()
            .with_context(|| format!("cannot write {}", path.display()))?;
        Ok(record)
    }

    /// Make and remove a temp file in the folder: a folder this process
    /// cannot write in (a read-only file system, another user's) is an
    /// error before anything runs, not a record lost after the run.
    fn probe(&self) -> std::io::Result<()> {
        let tmp = format!("{}{}-probe.tmp", self.stage_prefix(), std::process::id());
        let create = || {
            self.dir
                .open_with(&tmp, OpenOptions::new().write(true).create_new(true))
        };
        let made = match create() {
            // Left by a process of this number killed while probing.
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                self.dir.remove_file(&tmp)?;
                create()
            }
            made => made,
        };
        drop(made?);
        self.dir.remove_file(&tmp)
    }

    /// Write `text` whole: into a temp file made new in the folder (a name
    /// taken, by anything, is skipped), then renamed over the name. If the
    /// rename fails (the name became a folder), the temp file is kept and
    /// the error says where.
    pub(crate) fn write(&self, text: &str) -> std::io::Result<()> {
        static N: AtomicU64 = AtomicU64::new(0);
        let prefix = self.stage_prefix();
        for _ in 0..64 {
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.subsec_nanos());
            let tmp = format!(
                "{prefix}{}-{}{nanos:x}.tmp",
                std::process::id(),
                N.fetch_add(1, Ordering::Relaxed)
            );
            let mut file = match self
                .dir
                .open_with(&tmp, OpenOptions::new().write(true).create_new(true))
            {
                Ok(f) => f,
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            };
            if let Err(e) = file.write_all(text.as_bytes()) {
                drop(file);
                let _ = self.dir.remove_file(&tmp);
                return Err(e);
            }
            drop(file);
            return self.dir.rename(&tmp, &self.dir, &self.name).map_err(|e| {
                std::io::Error::new(
                    e.kind(),
                    format!("{e}; the record is kept in {tmp} beside it"),
                )
            });
        }
        Err(std::io::Error::other(
            "no free name for a temp file in its folder",
        ))
    }

    /// `.NAME.sbx-`: how this record's temp files begin.
    fn stage_prefix(&self) -> String {
        format!(".{}.sbx-", self.name.to_string_lossy())
    }

    /// Remove temp files of this record whose writer is gone (a process
    /// killed between writing and renaming).
    fn remove_stale(&self) {
        let prefix = self.stage_prefix();
        let Ok(entries) = self.dir.entries() else {
            return;
        };
        for e in entries.flatten() {
            let file = e.file_name().to_string_lossy().into_owned();
            let pid = file
                .strip_prefix(&prefix)
                .and_then(|rest| rest.strip_suffix(".tmp"))
                .and_then(|rest| rest.split('-').next())
                .and_then(|pid| pid.parse::<u32>().ok());
            if let Some(pid) = pid
                && !sbx_wasm::wasm::process_alive(pid)
                && e.file_type().is_ok_and(|t| t.is_file())
            {
                let _ = self.dir.remove_file(&file);
            }
        }
    }
}

/// Milliseconds from the Unix epoch to `t` (0 before it).
pub(crate) fn epoch_ms(t: SystemTime) -> u64 {
    t.duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// What every OCSF event of a run of `program` shares, the run started at
/// `start_ms` under the grant whose digest is `grant`.
pub(crate) fn ocsf_context(program: &str, grant: &str, start_ms: u64) -> sbx_wasm::ocsf::Context {
    let mut ctx = sbx_wasm::ocsf::Context::default();
    ctx.program = program.to_string();
    ctx.run = format!("{program}@{start_ms}");
    ctx.grant = grant.to_string();
    ctx.start_ms = start_ms;
    ctx.host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_default();
    ctx.version = env!("CARGO_PKG_VERSION").to_string();
    ctx
}

/// The audit signing key in `path` (`--audit-key`), refused when a guest
/// under `caps` could read it.
pub(crate) fn audit_key(path: &Path, caps: &Capabilities) -> Result<AuditKey> {
    key_outside_mounts(path, caps)?;
    AuditKey::from_file(path).context("--audit-key")
}

/// Refuse a signing key a guest could read: one inside a mount's host
/// folder.
fn key_outside_mounts(key: &Path, caps: &Capabilities) -> Result<()> {
    let path = std::fs::canonicalize(key)
        .with_context(|| format!("--audit-key: cannot read {}", key.display()))?;
    if let Some(m) = caps.mounts().iter().find(|m| path.starts_with(&m.host)) {
        anyhow::bail!(
            "--audit-key: {} lies in mount {} (host {}): a guest could read the key; keep it outside every mount",
            key.display(),
            m.guest,
            m.host.display()
        );
    }
    Ok(())
}

/// Write each text into its record, in order, going on past a failure:
/// every record that could not be written is named on stderr, with why.
/// Returns whether all were written.
pub(crate) fn write_records(
    texts: Vec<(PathBuf, String)>,
    mut write: impl FnMut(usize, &str) -> std::io::Result<()>,
) -> bool {
    let mut all = true;
    for (i, (path, text)) in texts.into_iter().enumerate() {
        if let Err(e) = write(i, &text) {
            eprintln!("sbx-wasm: error: cannot write {}: {e}", path.display());
            all = false;
        }
    }
    all
}

/// Write `text` to a temp file beside `path`, then rename it over `path`: a
/// reader (or a process killed half-way) never sees a half-written file.
/// For files no guest runs beside (a `policy learn` draft).
pub(crate) fn write_json_file(path: &Path, text: &str) -> Result<()> {
    Record::open(path)?
        .write(text)
        .with_context(|| format!("cannot write {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_goes_to_the_folder_opened_before_whatever_the_path_names_later() {
        let root = tempfile::tempdir().unwrap();
        let (work, outside) = (root.path().join("work"), root.path().join("outside"));
        std::fs::create_dir_all(work.join("logs")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        let record = Record::open(&work.join("logs/report.json")).unwrap();
        // What a guest with a write mount over `work` may do meanwhile: move
        // the folder aside and put a link to outside where it was.
        std::fs::rename(work.join("logs"), work.join("moved")).unwrap();
        std::os::unix::fs::symlink(&outside, work.join("logs")).unwrap();
        record.write("{}\n").unwrap();
        assert_eq!(
            std::fs::read_to_string(work.join("moved/report.json")).unwrap(),
            "{}\n"
        );
        assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
        // The allowed neighbour: nothing moved, the file is where it was
        // named, and no temp file is left.
        let plain = Record::open(&outside.join("audit.jsonl")).unwrap();
        plain.write("a\n").unwrap();
        plain.write("b\n").unwrap();
        let names: Vec<_> = std::fs::read_dir(&outside)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["audit.jsonl"]);
        assert_eq!(
            std::fs::read_to_string(outside.join("audit.jsonl")).unwrap(),
            "b\n"
        );
    }

    #[test]
    fn a_folder_planted_at_the_name_keeps_the_record_beside_it_and_says_so() {
        let root = tempfile::tempdir().unwrap();
        let record = Record::open(&root.path().join("report.json")).unwrap();
        std::fs::create_dir(root.path().join("report.json")).unwrap();
        std::fs::write(root.path().join("report.json/x"), "").unwrap();
        let err = record.write("{}\n").unwrap_err().to_string();
        assert!(err.contains("kept in .report.json.sbx-"), "{err}");
        // And a folder there before the run is refused before it.
        let err = Record::open(&root.path().join("report.json"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("it is a folder"), "{err}");
    }
}
