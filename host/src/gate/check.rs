//! The capability check: which rule allows an op, or the denial. Pure: no
//! budget charged, nothing touched. Each capability decides its own ops
//! (`capability::fs`, `net`, `tools`); this dispatches.

use super::Sandbox;
use crate::fs::{Access, OpenMount};
use crate::net::check_fetch;
use crate::op::Op;
use crate::tools::check_call;
use crate::violation::{Denial, Violation};

impl Sandbox {
    /// Decide whether the grant allows `op`, without charging budgets or
    /// performing anything. `Ok` names the rule that allows it. This is the
    /// same check [`Sandbox::run`] applies, request bounds included.
    pub fn check(&self, op: &Op) -> Result<String, Denial> {
        if let Some((path, access)) = fs_request(op) {
            return self.resolve(path, access).map(|(m, _)| m.mount.rule());
        }
        match op {
            Op::NetFetch {
                method,
                url,
                headers,
                body,
            } => check_fetch(self.caps.egress(), method, url, headers, body),
            Op::ToolCall { name, input } => check_call(self.caps.tools(), &self.tools, name, input),
            Op::Invalid { reason, .. } => {
                Err(Denial::new(Violation::InvalidRequest, reason.clone()))
            }
            // File ops were decided above.
            _ => Err(Denial::new(Violation::InvalidRequest, "unknown op")),
        }
    }

    /// The mount that decides a file op's path, and the path below it.
    pub(super) fn resolve(
        &self,
        raw: &str,
        access: Access,
    ) -> Result<(&OpenMount, String), Denial> {
        self.mounts.decide(raw, access)
    }

    /// The check of a file op performed through a descriptor of the mount
    /// at guest path `via` (the WASI door); other ops as [`Sandbox::check`].
    pub(super) fn check_via(&self, op: &Op, via: &str) -> Result<String, Denial> {
        match fs_request(op) {
            Some((path, access)) => {
                let removing = matches!(op, Op::FsRemove { .. });
                self.mounts.decide_via(path, access, via, removing)
            }
            None => self.check(op),
        }
    }
}

/// A file op's path and the access it needs; `None` for other ops.
pub(super) fn fs_request(op: &Op) -> Option<(&str, Access)> {
    match op {
        Op::FsRead { path } | Op::FsList { path } | Op::FsStat { path } => {
            Some((path, Access::ReadOnly))
        }
        Op::FsWrite { path, .. } | Op::FsRemove { path } | Op::FsMkdir { path } => {
            Some((path, Access::ReadWrite))
        }
        _ => None,
    }
}
