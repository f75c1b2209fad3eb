//! Resource subscriptions (revisions 2025-06-18 and 2025-11-25): a client
//! subscribes to a resource's URI, and when a call of its session writes or
//! removes that file, the door sends `notifications/resources/updated`
//! after the call. A URI must name a path under one of the session's
//! mounts (no `..`); at most [`MAX`] per session. A notice says only that
//! the file changed: reading it is `resources/read`, through the gate.

use super::session::Session;
use super::uris::{guest_path, uri};
use rmcp::model::ResourceUpdatedNotificationParam;
use rmcp::service::{Peer, RoleServer};
use sbx_wasm::fs::{canonical, has_traversal};
use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, MutexGuard};

/// The most subscriptions one session keeps.
const MAX: usize = 1_000;

/// One session's subscriptions, by guest path.
#[derive(Clone, Default)]
pub(crate) struct Subscriptions(Arc<Mutex<BTreeSet<String>>>);

impl Subscriptions {
    fn paths(&self) -> MutexGuard<'_, BTreeSet<String>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Subscribe to `resource` in `session`, or why not.
    pub(crate) fn add(&self, resource: &str, session: &Session) -> Result<(), String> {
        let path = guest_path(resource)?;
        if has_traversal(&path) {
            return Err("a resource URI may not climb with `..`".into());
        }
        let path = canonical(&path);
        let granted = session.caps.mounts().iter().any(|m| {
            let root = m.guest.as_str().trim_end_matches('/');
            path == root || path.starts_with(&format!("{root}/"))
        });
        if !granted {
            return Err(format!("{path} is under no folder of the grant"));
        }
        let mut paths = self.paths();
        if paths.len() >= MAX && !paths.contains(&path) {
            return Err(format!("a session keeps at most {MAX} subscriptions"));
        }
        paths.insert(path);
        Ok(())
    }

    /// Unsubscribe from `resource` (nothing if it was not subscribed).
    pub(crate) fn remove(&self, resource: &str) {
        if let Ok(path) = guest_path(resource) {
            self.paths().remove(&canonical(&path));
        }
    }

    /// After a call of `session`: a notice to `peer` for each subscribed
    /// file the session's calls wrote or removed since the last one (every
    /// subscribed file, if more were written than the session keeps).
    pub(crate) async fn notify(&self, session: &Session, peer: &Peer<RoleServer>) {
        let written = session.take_writes();
        let changed: Vec<String> = {
            let paths = self.paths();
            if paths.is_empty() {
                return;
            }
            match written {
                Some(w) => (w.iter())
                    .map(|t| canonical(t))
                    .filter(|t| paths.contains(t))
                    .collect(),
                None => paths.iter().cloned().collect(),
            }
        };
        for path in changed {
            let notice = ResourceUpdatedNotificationParam::new(uri(&path));
            // A client that is gone misses its notices; the call's answer
            // is what counts.
            let _ = peer.notify_resource_updated(notice).await;
        }
    }
}
