//! One audit stream for every call of every session: each gated decision
//! as a JSON line (the audit log's fields) tagged with `session`, `call`
//! and `tool`, then one line for the call's end (`"end"`: its status, with
//! usage). Lines of one call are written together, so calls running at
//! once never interleave mid-line. Every line is chained to the one before
//! and each call's lines end with a seal (signed with `--audit-key`), so
//! the stream is whole between calls; a stream appended to continues the
//! chain from its last line (`sbx-wasm audit verify` checks it).

use crate::output::AuditFormat;
use anyhow::{Context, Result};
use sbx_wasm::AuditEvent;
use sbx_wasm::seal::{AuditKey, Sealer};
use serde_json::{Value, json};
use std::io::Write;
use std::path::Path;
use std::sync::Mutex;

pub(crate) struct AuditStream {
    /// The file, and the chain so far (one lock: lines are chained in the
    /// order they are written).
    file: Mutex<(std::fs::File, Sealer)>,
    /// For `--audit-format ocsf`: what every event shares (each call adds
    /// its session, id and times).
    ocsf: Option<sbx_wasm::ocsf::Context>,
}

/// Which call a record belongs to.
pub(crate) struct CallTag<'a> {
    pub(crate) session: &'a str,
    pub(crate) call: &'a str,
    pub(crate) tool: &'a str,
}

impl AuditStream {
    /// Open (or append to) the stream at `path`, for a door under the
    /// grant `grant` (its effective caps file): a new stream is anchored
    /// at the grant's digest, one appended to at its last line.
    pub(crate) fn open(
        path: &Path,
        grant: &str,
        key: Option<AuditKey>,
        format: AuditFormat,
    ) -> Result<AuditStream> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .read(true)
            .open(path)
            .with_context(|| format!("cannot open the audit file {}", path.display()))?;
        let last = last_line(&file)
            .with_context(|| format!("cannot read the audit file {}", path.display()))?;
        let mut sealer = match last {
            Some(line) => Sealer::after(&line),
            None => Sealer::new(sbx_wasm::seal::anchor_of_grant(grant)),
        };
        if let Some(key) = key {
            sealer = sealer.with_key(key);
        }
        let digest = sbx_wasm::seal::anchor_of_grant(grant);
        let ocsf = (format == AuditFormat::Ocsf)
            .then(|| crate::output::ocsf_context("sbx-wasm mcp", &digest, 0));
        Ok(AuditStream {
            file: Mutex::new((file, sealer)),
            ocsf,
        })
    }

    /// Append a call's decisions and its end record.
    pub(crate) fn record(&self, tag: &CallTag<'_>, events: &[AuditEvent], end: Value) {
        let mut guard = self.file.lock().unwrap_or_else(|p| p.into_inner());
        let (f, sealer) = &mut *guard;
        let mut text = String::new();
        let tagged = |mut v: Value| {
            if let Some(o) = v.as_object_mut() {
                o.insert("session".into(), json!(tag.session));
                o.insert("call".into(), json!(tag.call));
                o.insert("tool".into(), json!(tag.tool));
            }
            v
        };
        match &self.ocsf {
            Some(base) => {
                let ending = serde_json::from_value(end.clone()).ok();
                let tags = (Some(tag.session), tag.call, tag.tool);
                let now = crate::output::epoch_ms(std::time::SystemTime::now());
                for ev in sbx_wasm::ocsf::call(base, tags, events, ending.as_ref(), now) {
                    text += &sealer.line_inside(ev, "unmapped");
                    text.push('\n');
                }
            }
            None => {
                for ev in events {
                    if let Ok(v) = serde_json::to_value(ev) {
                        text += &sealer.line(tagged(v));
                        text.push('\n');
                    }
                }
                text += &sealer.line(tagged(json!({ "end": end })));
                text.push('\n');
            }
        }
        text += &sealer.seal();
        text.push('\n');
        if let Err(e) = f.write_all(text.as_bytes()).and_then(|()| f.flush()) {
            tracing::error!("cannot write the audit stream: {e}");
        }
    }
}

/// The last line of `file` (read from its end: a long stream is not read
/// whole), if it has one.
fn last_line(file: &std::fs::File) -> std::io::Result<Option<String>> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = file;
    let len = f.seek(SeekFrom::End(0))?;
    let mut back = 4096u64;
    loop {
        let from = len.saturating_sub(back);
        f.seek(SeekFrom::Start(from))?;
        let mut tail = Vec::new();
        f.take(len - from).read_to_end(&mut tail)?;
        let text = String::from_utf8_lossy(&tail);
        let trimmed = text.trim_end_matches('\n');
        match trimmed.rfind('\n') {
            Some(i) => return Ok(Some(trimmed[i + 1..].to_string())),
            None if from == 0 => {
                return Ok((!trimmed.is_empty()).then(|| trimmed.to_string()));
            }
            None => back = back.saturating_mul(2),
        }
    }
}
