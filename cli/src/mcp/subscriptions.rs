//! Resource subscriptions (revisions 2025-06-18 and 2025-11-25): a client
//! subscribes to a resource's URI, and when a call of its session writes or
//! removes that file, the door sends `notifications/resources/updated`
//! after the call. A URI must name a path under one of the session's
//! mounts (no `..`), or be one of the catalog's file resources (watched as
//! its guest file, noticed under its own URI); at most [`MAX`] per
//! session. A notice says only that the file changed: reading it is
//! `resources/read`, through the gate.

use super::catalog::Catalog;
use super::session::Session;
use super::uris::{guest_path, uri};
use rmcp::model::ResourceUpdatedNotificationParam;
use rmcp::service::{Peer, RoleServer};
use sbx_wasm::fs::{GuestPath, canonical, check_path, has_traversal};
use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, MutexGuard};

/// The most subscriptions one session keeps.
const MAX: usize = 1_000;

/// One session's subscriptions: each guest path watched, with the URI
/// its notices name.
#[derive(Clone, Default)]
pub(crate) struct Subscriptions(Arc<Mutex<BTreeSet<(String, String)>>>);

impl Subscriptions {
    fn paths(&self) -> MutexGuard<'_, BTreeSet<(String, String)>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The guest path `resource` watches (checked as the gate checks
    /// one), and the URI its notices name.
    fn watched(resource: &str, catalog: &Catalog) -> Result<(GuestPath, String), String> {
        let (path, named) = if let Some(r) = catalog.resource(resource) {
            (r.path.clone(), Some(resource.to_string()))
        } else if catalog.template(resource).is_some() {
            return Err("a resource a script makes is not a file: it cannot be watched".into());
        } else {
            (guest_path(resource)?, None)
        };
        if has_traversal(&path) {
            return Err("a resource URI may not climb with `..`".into());
        }
        let path = check_path(&path).map_err(|d| d.message)?;
        let named = named.unwrap_or_else(|| uri(path.as_str()));
        Ok((path, named))
    }

    /// Subscribe to `resource` in `session`, or why not.
    pub(crate) fn add(
        &self,
        resource: &str,
        session: &Session,
        catalog: &Catalog,
    ) -> Result<(), String> {
        let (path, named) = Self::watched(resource, catalog)?;
        let granted = (session.caps.mounts().iter()).any(|m| path.is_under(&m.guest));
        if !granted {
            return Err(format!("{path} is under no folder of the grant"));
        }
        let mut paths = self.paths();
        let entry = (path.as_str().to_string(), named);
        if paths.len() >= MAX && !paths.contains(&entry) {
            return Err(format!("a session keeps at most {MAX} subscriptions"));
        }
        paths.insert(entry);
        Ok(())
    }

    /// Unsubscribe from `resource` (nothing if it was not subscribed).
    pub(crate) fn remove(&self, resource: &str, catalog: &Catalog) {
        if let Ok((path, named)) = Self::watched(resource, catalog) {
            self.paths().remove(&(path.as_str().to_string(), named));
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
            let written: Option<BTreeSet<String>> =
                written.map(|w| w.iter().map(|t| canonical(t)).collect());
            (paths.iter())
                .filter(|(path, _)| written.as_ref().is_none_or(|w| w.contains(path)))
                .map(|(_, named)| named.clone())
                .collect()
        };
        for named in changed {
            let notice = ResourceUpdatedNotificationParam::new(named);
            // A client that is gone misses its notices; the call's answer
            // is what counts.
            let _ = peer.notify_resource_updated(notice).await;
        }
    }
}
