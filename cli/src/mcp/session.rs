//! One MCP session's own state (or one workspace's): its id, its grant (the
//! door's plus its scratch mount), its totals against the session limits,
//! its key-value store, and the paths its calls wrote (for subscriptions).
//! The `Door` makes them and counts them against `--max-sessions`.

use anyhow::{Result, bail};
use sbx_wasm::flow::Mark;
use sbx_wasm::kv::MemoryKv;
use sbx_wasm::{AuditEvent, Capabilities, OpKind, Services};
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Session-wide totals a session may not pass.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SessionLimits {
    pub(crate) calls: u64,
    pub(crate) wall: Duration,
    pub(crate) output_bytes: u64,
}

/// One open session, counted until dropped.
pub(crate) struct OpenSession(Arc<AtomicUsize>);

impl OpenSession {
    pub(crate) fn count(open: &Arc<AtomicUsize>, max: usize) -> Result<OpenSession> {
        if open.fetch_add(1, Ordering::SeqCst) >= max {
            open.fetch_sub(1, Ordering::SeqCst);
            bail!("busy: {max} sessions are open, the most this server takes (--max-sessions)");
        }
        Ok(OpenSession(open.clone()))
    }
}

impl Drop for OpenSession {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The most written paths kept between takes.
const MAX_WRITTEN: usize = 10_000;

#[derive(Default)]
struct Written {
    paths: BTreeSet<String>,
    overflowed: bool,
}

/// One MCP session's own state.
pub(crate) struct Session {
    _open: OpenSession,
    pub(crate) id: String,
    /// The door's grant, plus this session's scratch mount.
    pub(crate) caps: Capabilities,
    /// Held for its drop: removed when the session (and every call still
    /// using it) ends.
    _scratch: Option<tempfile::TempDir>,
    /// The session's key-value store (when the grant holds one): every
    /// call of the session sees what the earlier ones put; another session
    /// has its own.
    kv: Arc<MemoryKv>,
    /// How often this session's runs asked the catalog's client tools.
    pub(crate) asked: Arc<super::catalog::Asked>,
    /// The calls of this session that became tasks.
    pub(crate) tasks: super::tasks::Tasks,
    /// Guest paths its calls wrote or removed since they were last taken
    /// (for resource subscriptions).
    written: Mutex<Written>,
    calls: AtomicU64,
    wall_us: AtomicU64,
    output_bytes: AtomicU64,
    /// Every label the session's calls have read (the grant's `[flow]`):
    /// each call starts from it, since what one call read can reach the
    /// next through `/scratch`, the store, or the client itself.
    labels: Mutex<Mark>,
}

impl Session {
    pub(crate) fn new(
        open: OpenSession,
        id: String,
        caps: Capabilities,
        scratch: Option<tempfile::TempDir>,
    ) -> Session {
        tracing::info!(session = %id, "session opened");
        Session {
            _open: open,
            id,
            caps,
            _scratch: scratch,
            kv: Arc::new(MemoryKv::new()),
            asked: Arc::default(),
            tasks: super::tasks::Tasks::default(),
            written: Mutex::new(Written::default()),
            calls: AtomicU64::new(0),
            wall_us: AtomicU64::new(0),
            output_bytes: AtomicU64::new(0),
            labels: Mutex::default(),
        }
    }

    /// The session's mark joined with `more` (labels a call's arguments
    /// carry): what the call starts from.
    pub(crate) fn labels_with(&self, more: &Mark) -> Mark {
        let mut mark = self
            .labels
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        mark.join_mark(more);
        mark
    }

    /// Add what call `call` read to the session's mark (each label named
    /// with the call that brought it in).
    pub(crate) fn add_labels(&self, read: &Mark, call: &str) {
        let mut mark = self.labels.lock().unwrap_or_else(|p| p.into_inner());
        for h in read.held() {
            let from = if h.from.contains(" of call ") {
                h.from.clone()
            } else {
                format!("{} of call {call}", h.from)
            };
            mark.join(&h.label, from);
        }
    }

    /// Count a new call: its id (`c1`, `c2`, ...), or why the session may
    /// make no more.
    pub(crate) fn begin_call(&self, limits: &SessionLimits) -> std::result::Result<String, String> {
        let wall = Duration::from_micros(self.wall_us.load(Ordering::Relaxed));
        if wall >= limits.wall {
            return Err(format!(
                "session_max_wall: this session's calls used {} ms of {} ms",
                wall.as_millis(),
                limits.wall.as_millis()
            ));
        }
        let out = self.output_bytes.load(Ordering::Relaxed);
        if out >= limits.output_bytes {
            return Err(format!(
                "session_max_output: this session's calls returned {out} of {} bytes",
                limits.output_bytes
            ));
        }
        let n = self.calls.fetch_add(1, Ordering::Relaxed) + 1;
        if n > limits.calls {
            return Err(format!(
                "session_max_calls: this session made {} calls, the most allowed",
                limits.calls
            ));
        }
        Ok(format!("c{n}"))
    }

    /// The backends of one call: the session's key-value store, the rest
    /// as the defaults.
    pub(crate) fn services(&self) -> Services {
        Services::new().kv(self.kv.clone())
    }

    /// Keep the paths `decisions` wrote or removed (allowed ones), for
    /// the subscriptions' notices.
    pub(crate) fn note_writes(&self, decisions: &[AuditEvent]) {
        let mut w = self.written.lock().unwrap_or_else(|p| p.into_inner());
        for d in decisions {
            let changes = matches!(d.op.kind(), Some(OpKind::FsWrite | OpKind::FsRemove));
            if changes && d.decision == sbx_wasm::Decision::Allowed {
                if w.paths.len() < MAX_WRITTEN {
                    w.paths.insert(d.target.clone());
                } else {
                    w.overflowed = true;
                }
            }
        }
    }

    /// The paths written since the last take (`None`: more than could be
    /// kept, so any may have changed).
    pub(crate) fn take_writes(&self) -> Option<BTreeSet<String>> {
        let mut w = self.written.lock().unwrap_or_else(|p| p.into_inner());
        let taken = std::mem::take(&mut *w);
        (!taken.overflowed).then_some(taken.paths)
    }

    /// Charge what a call used to the session's totals.
    pub(crate) fn charge(&self, wall_us: u64, output_bytes: u64) {
        self.wall_us.fetch_add(wall_us, Ordering::Relaxed);
        self.output_bytes.fetch_add(output_bytes, Ordering::Relaxed);
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        tracing::info!(session = %self.id, "session closed");
    }
}
