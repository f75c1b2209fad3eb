//! A script runner's own folders in a grant built whole, for tests (the
//! runners lend theirs to a built grant: `derived.rs`).

use super::CapabilitiesBuilder;
use std::path::PathBuf;

impl CapabilitiesBuilder {
    /// Lend a script runner's own folder `host`, read-only, at `guest`
    /// ([`Mount::runner`](crate::fs::Mount::runner)). The runners lend
    /// theirs with [`Capabilities::with_runner_mounts`](crate::Capabilities)
    /// (the grant's own mounts are not validated again); tests build such
    /// grants whole with this.
    pub(crate) fn runner_mount(
        mut self,
        host: impl Into<PathBuf>,
        guest: impl Into<String>,
    ) -> Self {
        self.mounts.push_runner(host.into(), guest.into());
        self
    }
}
