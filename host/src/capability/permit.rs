//! The proof a check hands its effect: a [`Permit`].
//!
//! Only a capability's check can make one (its constructor is private to
//! `capability/`), and a capability's `perform` takes one by value, so no
//! effect can run without the check that allowed it, and none decides
//! twice: the permit carries what the check found (the mount and the path
//! below it, the parsed URL, the tool), and the effect uses that.

use super::tools::Tool;
use std::fmt;
use std::sync::Arc;
use url::Url;

/// What a check allowed, and the rule that allowed it.
///
/// Made only by a capability's check ([`Sandbox::check`](crate::Sandbox::check)
/// hands one out so a caller can see the rule); the gate hands it to the
/// effect, which performs exactly what it names.
pub struct Permit {
    rule: String,
    pub(super) grant: Grant,
}

/// What an effect may reach, as its check found it.
pub(super) enum Grant {
    /// A file op through the mount at `mount` (its index in the sandbox's
    /// mount table), at `rel` below it.
    Fs {
        /// Index in the mount table.
        mount: usize,
        /// The path below the mount.
        rel: String,
        /// Whether the mount allows writing.
        write: bool,
    },
    /// A fetch of the URL as the check parsed it (the first hop: each
    /// redirect is decided again as a hop of its own).
    Net(Url),
    /// A call of the registered tool the check found.
    Tool(Arc<dyn Tool>),
    /// Nothing to reach: the answer comes from the grant itself (a folder
    /// above the mounts), never from the host.
    Nothing,
}

impl Permit {
    /// A permit for `grant` under `rule`. Only the checks call this.
    pub(super) fn new(rule: String, grant: Grant) -> Self {
        Permit { rule, grant }
    }

    /// The rule that allowed the op, as the audit records it.
    pub fn rule(&self) -> &str {
        &self.rule
    }

    /// Whether the permit lets a file op write (the mount it names is
    /// writable); `false` for every other permit.
    pub(crate) fn writes(&self) -> bool {
        matches!(self.grant, Grant::Fs { write: true, .. })
    }

    /// The rule, moved out for the audit record (the effect needs only the
    /// grant).
    pub(crate) fn take_rule(&mut self) -> String {
        std::mem::take(&mut self.rule)
    }
}

impl fmt::Debug for Permit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let grant = match &self.grant {
            Grant::Fs { rel, write, .. } => format!("fs {rel:?} write={write}"),
            Grant::Net(url) => format!("net {url}"),
            Grant::Tool(_) => "tool".to_string(),
            Grant::Nothing => "nothing".to_string(),
        };
        f.debug_struct("Permit")
            .field("rule", &self.rule)
            .field("grant", &grant)
            .finish()
    }
}

impl fmt::Display for Permit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.rule)
    }
}
