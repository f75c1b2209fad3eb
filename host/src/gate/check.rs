//! The capability check: which rule allows an op, or the denial. Pure: no
//! budget charged, nothing touched. Each capability decides its own
//! requests (`capability::fs`, `net`, `tools`); the op hands itself to its
//! capability ([`Op::request`](crate::Op)).

use super::Sandbox;
use crate::capability::Held;
use crate::fs::FsOp;
use crate::op::Op;
use crate::violation::Denial;

impl Sandbox {
    /// Decide whether the grant allows `op`, without charging budgets or
    /// performing anything. `Ok` names the rule that allows it. This is the
    /// same check [`Sandbox::run`] applies, request bounds included.
    pub fn check(&self, op: &Op) -> Result<String, Denial> {
        op.check(&self.held())
    }

    /// The grant and the handles opened for it, as capabilities see them.
    pub(super) fn held(&self) -> Held<'_> {
        Held {
            mounts: &self.mounts,
            egress: self.caps.egress(),
            allowed_tools: self.caps.tools(),
            tools: &self.tools,
            resolver: &*self.resolver,
            net: &self.net,
            cancel: self.cancel.as_ref(),
            secrets: &self.secrets,
        }
    }

    /// The check of a file op performed through a descriptor of the mount
    /// at guest path `via` (the WASI door); other ops as [`Sandbox::check`].
    pub(super) fn check_via(&self, op: &Op, via: &str) -> Result<String, Denial> {
        match op {
            Op::Fs(r) => {
                // Through the empty root, only the folders above the mounts
                // exist (stat alone); every other path is the mounts' to
                // decide, and through the root they refuse it.
                if matches!(r, FsOp::Stat { .. })
                    && self.mounts.by_guest(via).is_none()
                    && let Some(rule) = self.mounts.above_mounts(r.path())
                {
                    return Ok(rule);
                }
                let removing = matches!(r, FsOp::Remove { .. });
                self.mounts.decide_via(r.path(), r.access(), via, removing)
            }
            _ => self.check(op),
        }
    }
}
