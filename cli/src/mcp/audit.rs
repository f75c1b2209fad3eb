//! One audit stream for every call of every session: each gated decision
//! as a JSON line (the audit log's fields) tagged with `session`, `call`
//! and `tool`, then one line for the call's end (`"end"`: its status, with
//! usage). Lines of one call are written together, so calls running at
//! once never interleave mid-line.

use anyhow::{Context, Result};
use sbx_wasm::AuditEvent;
use serde_json::{Value, json};
use std::io::Write;
use std::path::Path;
use std::sync::Mutex;

pub(crate) struct AuditStream {
    file: Mutex<std::fs::File>,
}

/// Which call a record belongs to.
pub(crate) struct CallTag<'a> {
    pub(crate) session: &'a str,
    pub(crate) call: &'a str,
    pub(crate) tool: &'a str,
}

impl AuditStream {
    pub(crate) fn open(path: &Path) -> Result<AuditStream> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .with_context(|| format!("cannot open the audit file {}", path.display()))?;
        Ok(AuditStream {
            file: Mutex::new(file),
        })
    }

    /// Append a call's decisions and its end record.
    pub(crate) fn record(&self, tag: &CallTag<'_>, events: &[AuditEvent], end: Value) {
        let mut text = String::new();
        let tagged = |mut v: Value| {
            if let Some(o) = v.as_object_mut() {
                o.insert("session".into(), json!(tag.session));
                o.insert("call".into(), json!(tag.call));
                o.insert("tool".into(), json!(tag.tool));
            }
            v
        };
        for ev in events {
            if let Ok(v) = serde_json::to_value(ev) {
                text += &tagged(v).to_string();
                text.push('\n');
            }
        }
        text += &tagged(json!({ "end": end })).to_string();
        text.push('\n');
        let mut f = self.file.lock().unwrap_or_else(|p| p.into_inner());
        if let Err(e) = f.write_all(text.as_bytes()).and_then(|()| f.flush()) {
            tracing::error!("cannot write the audit stream: {e}");
        }
    }
}
