//! Grants derived for one run with mounts added by the host: a script
//! runner's own folders, a run's private `/tmp`.
//!
//! A Python run derives two such grants. Through
//! [`Capabilities::to_builder`] each was the whole grant written out,
//! parsed again and validated again: every mount canonicalized anew (a
//! path walk each), every rule parsed, the flow policy rebuilt. Here the
//! grant's own parts are kept as they were validated and only the added
//! mounts are checked, alone and against the grant's (the same checks
//! `build` makes). The flow policy is kept: it names only what the grant
//! held when it was built, and a mount added later can neither satisfy a
//! rule that failed nor unsettle one that passed.

use super::{Capabilities, Grant};
use crate::capability::fs::config::RequestedMounts;
use crate::error::CapsError;
use crate::fs::Access;
use std::path::{Path, PathBuf};
use std::sync::Arc;

// Grants derived for the wasm runners' runs alone.
#[cfg_attr(not(feature = "wasm"), allow(dead_code))]
impl Capabilities {
    /// This grant with `host` mounted writable at `guest`, private to one
    /// run ([`Mount::private`](crate::fs::Mount::private)).
    pub(crate) fn with_private_mount(
        &self,
        host: &Path,
        guest: &str,
    ) -> Result<Capabilities, CapsError> {
        let mut added = RequestedMounts::default();
        added.push(
            host.to_path_buf(),
            guest.to_string(),
            Access::ReadWrite,
            true,
        );
        self.with_mounts(&added)
    }

    /// This grant with a script runner's folders lent read-only, each
    /// `(host, guest)` ([`Mount::runner`](crate::fs::Mount::runner)).
    pub(crate) fn with_runner_mounts(
        &self,
        folders: impl IntoIterator<Item = (PathBuf, String)>,
    ) -> Result<Capabilities, CapsError> {
        let mut added = RequestedMounts::default();
        for (host, guest) in folders {
            added.push_runner(host, guest);
        }
        self.with_mounts(&added)
    }

    fn with_mounts(&self, added: &RequestedMounts) -> Result<Capabilities, CapsError> {
        let g = &self.grant;
        let mounts = added.build_onto(Path::new("/"), &g.mounts)?;
        let folders = self.derived_folders();
        Ok(Capabilities {
            grant: Arc::new(Grant {
                mounts: mounts.into(),
                egress: g.egress.clone(),
                tools: g.tools.clone(),
                commands: g.commands.clone(),
                kv: g.kv,
                env: g.env.clone(),
                secrets: g.secrets.clone(),
                ask: g.ask.clone(),
                flow: g.flow.clone(),
                budget: g.budget,
                warnings: g.warnings.clone(),
                folders,
            }),
        })
    }
}
