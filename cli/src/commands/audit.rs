//! `sbx-wasm audit verify|keygen`: check that an audit log is whole (its
//! hash chain, its seals, their signatures), and make the key that signs
//! them.

use anyhow::{Context, Result};
use sbx_wasm::seal::{AuditKey, PublicKey, verify};
use std::io::Write;
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub(crate) struct AuditArgs {
    #[command(subcommand)]
    action: AuditAction,
}

#[derive(clap::Subcommand, Debug)]
enum AuditAction {
    /// Say whether an audit log (`run --audit`, `exec --audit`, the MCP
    /// door's `--audit`) is whole: which line was changed or where one was
    /// removed, where it was cut, whether its seals' signatures hold (exit
    /// 1 when anything is wrong).
    Verify {
        /// The audit log.
        #[arg(value_name = "AUDIT.jsonl")]
        file: PathBuf,
        /// The public key the seals must be signed with (`ed25519:HEX`, or
        /// a file holding it): every seal must then be signed, by it.
        #[arg(long, value_name = "KEY")]
        key: Option<String>,
        /// Print what was found as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Write an audit log's records as OCSF 1.8 events (JSON lines) to
    /// standard output or FILE: a run's log (`run`/`exec --audit`) or the
    /// MCP door's stream (each call a run of its own).
    Export {
        /// The audit log.
        #[arg(value_name = "AUDIT.jsonl")]
        file: PathBuf,
        /// The form to write (only `ocsf` for now).
        #[arg(long, value_name = "FORM", default_value = "ocsf")]
        format: ExportFormat,
        /// The run's report (`--report`): its end becomes an event.
        #[arg(long, value_name = "FILE")]
        report: Option<PathBuf>,
        /// The program that ran, as the events name it (default: the log's
        /// file name).
        #[arg(long, value_name = "NAME")]
        program: Option<String>,
        /// When the run started, in milliseconds since the Unix epoch
        /// (default: when the log was last written, less the run's last
        /// record's time).
        #[arg(long, value_name = "MS")]
        start_ms: Option<u64>,
        /// Write the events to FILE instead of standard output.
        #[arg(long, short, value_name = "FILE")]
        out: Option<PathBuf>,
    },
    /// Make a signing key for audit seals: the secret into FILE (readable
    /// by its owner only; give it to `--audit-key`, keep it out of every
    /// mount), the public key on standard output (give it to `verify
    /// --key`).
    Keygen {
        /// Where to write the secret key (must not exist).
        #[arg(long, value_name = "FILE")]
        out: PathBuf,
    },
}

/// What `audit export` writes.
#[derive(clap::ValueEnum, Clone, Copy, Debug)]
enum ExportFormat {
    /// OCSF 1.8 events, one JSON object per line.
    Ocsf,
}

impl AuditArgs {
    pub(crate) fn execute(&self) -> Result<i32> {
        let mut out = std::io::stdout().lock();
        match &self.action {
            AuditAction::Verify { file, key, json } => {
                let text = std::fs::read_to_string(file)
                    .with_context(|| format!("cannot read {}", file.display()))?;
                let key = key.as_deref().map(public_key).transpose()?;
                let v = verify(&text, key.as_ref());
                if *json {
                    writeln!(out, "{}", serde_json::to_string_pretty(&v)?)?;
                } else {
                    for p in &v.problems {
                        writeln!(out, "line {}: {}", p.line, p.what)?;
                    }
                    let signed = match &key {
                        Some(k) => format!(", {} signed by {k}", v.signed),
                        None => String::new(),
                    };
                    let verdict = if v.is_whole() { "whole" } else { "NOT whole" };
                    writeln!(
                        out,
                        "{}: {verdict}: {} records, {} seals{signed}",
                        file.display(),
                        v.records,
                        v.seals
                    )?;
                }
                Ok(i32::from(!v.is_whole()))
            }
            AuditAction::Export {
                file,
                format: ExportFormat::Ocsf,
                report,
                program,
                start_ms,
                out: to,
            } => {
                let text = std::fs::read_to_string(file)
                    .with_context(|| format!("cannot read {}", file.display()))?;
                let report: Option<sbx_wasm::RunReport> = match report {
                    Some(p) => Some(
                        serde_json::from_str(&std::fs::read_to_string(p)?)
                            .with_context(|| format!("{} is not a run report", p.display()))?,
                    ),
                    None => None,
                };
                let program = program.clone().unwrap_or_else(|| {
                    file.file_stem()
                        .map_or("run".into(), |s| s.to_string_lossy().into_owned())
                });
                let start = start_ms.unwrap_or_else(|| started(file, &text));
                let grant = anchor(&text);
                let ctx = crate::output::ocsf_context(&program, &grant, start);
                let mut events = sbx_wasm::ocsf::from_log(&text, &ctx)
                    .map_err(|e| anyhow::anyhow!("{}: {e}", file.display()))?;
                if let Some(r) = &report {
                    let end = start.saturating_add(r.usage.wall_ms);
                    let ending = sbx_wasm::ocsf::Ending::from(r);
                    events.push(sbx_wasm::ocsf::lifecycle(&ctx, Some(&ending), end));
                }
                let mut lines = String::new();
                for e in events {
                    lines += &e.to_string();
                    lines.push('\n');
                }
                match to {
                    Some(path) => crate::output::write_json_file(path, &lines)?,
                    None => write!(out, "{lines}")?,
                }
                Ok(0)
            }
            AuditAction::Keygen { out: path } => {
                let key = AuditKey::generate();
                write_secret(path, &key.secret_hex())?;
                writeln!(out, "{}", key.public())?;
                Ok(0)
            }
        }
    }
}

/// A public key given as text, or as a file that holds it.
fn public_key(given: &str) -> Result<PublicKey> {
    let text = match std::fs::read_to_string(given) {
        Ok(t) => t,
        Err(_) => given.to_string(),
    };
    PublicKey::parse(&text).map_err(|e| anyhow::anyhow!("--key: {e}"))
}

/// Write `secret` to a new file only its owner may read.
fn write_secret(path: &std::path::Path, secret: &str) -> Result<()> {
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    let mut f = opts
        .open(path)
        .with_context(|| format!("cannot create {}", path.display()))?;
    f.write_all(format!("{secret}\n").as_bytes())?;
    Ok(())
}

/// When the run of a log started: when the file was last written, less
/// its last record's time (a run's log is written as it ends).
fn started(file: &std::path::Path, text: &str) -> u64 {
    let written = std::fs::metadata(file)
        .and_then(|m| m.modified())
        .map_or(0, crate::output::epoch_ms);
    let last = text
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|v| v.get("elapsed_ms").and_then(serde_json::Value::as_u64))
        .max()
        .unwrap_or(0);
    written.saturating_sub(last)
}

/// A log's anchor (the digest of the grant a run's log was written under):
/// its first seal's, or its first line's `prev`.
fn anchor(text: &str) -> String {
    let lines = || {
        text.lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
    };
    lines()
        .find_map(|v| v["seal"]["anchor"].as_str().map(str::to_string))
        .or_else(|| lines().find_map(|v| v["prev"].as_str().map(str::to_string)))
        .unwrap_or_default()
}
