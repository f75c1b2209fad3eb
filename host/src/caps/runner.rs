//! A script runner's own folders, lent by the runner (not a caps file)
//! to the grant it runs under.

use super::CapabilitiesBuilder;
use std::path::PathBuf;

impl CapabilitiesBuilder {
    /// Lend a script runner's own folder `host`, read-only, at `guest`
    /// ([`Mount::runner`](crate::fs::Mount::runner)): the runners add
    /// theirs to the grant they run under.
    pub(crate) fn runner_mount(
        mut self,
        host: impl Into<PathBuf>,
        guest: impl Into<String>,
    ) -> Self {
        self.mounts.push_runner(host.into(), guest.into());
        self
    }
}
