//! Workspaces: what a sessionless client's calls share.
//!
//! From protocol revision 2026-07-28 on there is no MCP session: every
//! HTTP request stands alone. Keyed on a request, the per-session totals
//! would start from zero and `/scratch` would be a new empty folder at
//! every call, so no limit would ever trip. A sessionless request is
//! therefore served in a *workspace*: the one its `Sbx-Workspace` header
//! names (a handle this server issued at `POST /mcp/workspaces`, 128 random
//! bits), or else the server's default workspace, which every holder of
//! the server's credential shares. A workspace is a `Session` (totals,
//! scratch folder, key-value store) under another key; it counts against
//! `--max-sessions`, and it closes once idle (no call running, none begun
//! for [`IDLE`]). So no request can renew the totals: a client that wants
//! fresh ones asks for a workspace, as a legacy client opens a session,
//! and both are bounded by `--max-sessions` at once.

use anyhow::Result;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// The request header naming a workspace.
pub(crate) const HEADER: &str = "sbx-workspace";
/// How long an unused workspace is kept, as rmcp keeps an idle session.
pub(crate) const IDLE: Duration = Duration::from_secs(300);

struct Entry<S> {
    session: Arc<S>,
    used: Instant,
}

impl<S> Entry<S> {
    fn take(&mut self) -> Arc<S> {
        self.used = Instant::now();
        self.session.clone()
    }

    /// Idle: no call holds it and none began for `IDLE`.
    fn idle(&self, now: Instant) -> bool {
        Arc::strong_count(&self.session) == 1 && now.duration_since(self.used) >= IDLE
    }
}

struct Table<S> {
    issued: HashMap<String, Entry<S>>,
    shared: Option<Entry<S>>,
}

/// The workspaces of one server (`S`: what a workspace holds, the door's
/// `Session`).
pub(crate) struct Workspaces<S>(Mutex<Table<S>>);

impl<S> Default for Workspaces<S> {
    fn default() -> Self {
        Workspaces(Mutex::new(Table {
            issued: HashMap::new(),
            shared: None,
        }))
    }
}

impl<S> Workspaces<S> {
    fn table(&self) -> MutexGuard<'_, Table<S>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A new workspace made by `open` (which counts it against
    /// `--max-sessions`), and its handle.
    pub(crate) fn issue(&self, open: impl FnOnce() -> Result<S>) -> Result<String> {
        let session = Arc::new(open()?);
        let handle = format!("w_{}", uuid::Uuid::new_v4().simple());
        let entry = Entry {
            session,
            used: Instant::now(),
        };
        self.table().issued.insert(handle.clone(), entry);
        Ok(handle)
    }

    /// The workspace `handle` names, if it is open.
    pub(crate) fn get(&self, handle: &str) -> Option<Arc<S>> {
        self.table().issued.get_mut(handle).map(Entry::take)
    }

    /// Whether `handle` names an open workspace.
    pub(crate) fn has(&self, handle: &str) -> bool {
        self.table().issued.contains_key(handle)
    }

    /// The default workspace, made by `open` when there is none.
    pub(crate) fn shared(&self, open: impl FnOnce() -> Result<S>) -> Result<Arc<S>> {
        let mut table = self.table();
        if let Some(entry) = &mut table.shared {
            return Ok(entry.take());
        }
        let session = Arc::new(open()?);
        table.shared = Some(Entry {
            session: session.clone(),
            used: Instant::now(),
        });
        Ok(session)
    }

    /// Close the workspace `handle` names (its scratch folder goes when
    /// the calls still running in it end); false if none is open.
    pub(crate) fn close(&self, handle: &str) -> bool {
        // Removed under the lock, dropped (its folder deleted) after it.
        let gone = self.table().issued.remove(handle);
        gone.is_some()
    }

    /// Close every idle workspace.
    pub(crate) fn reap(&self) {
        let now = Instant::now();
        let mut gone = Vec::new();
        {
            let mut table = self.table();
            let idle: Vec<String> = (table.issued.iter())
                .filter(|(_, e)| e.idle(now))
                .map(|(h, _)| h.clone())
                .collect();
            gone.extend(idle.iter().filter_map(|h| table.issued.remove(h)));
            if table.shared.as_ref().is_some_and(|e| e.idle(now)) {
                gone.extend(table.shared.take());
            }
        }
        // Dropped (their folders deleted) outside the lock.
        drop(gone);
    }
}
