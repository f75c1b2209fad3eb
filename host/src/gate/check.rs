//! The capability check: which rule allows an op, or the denial. Pure: no
//! budget charged, nothing touched.

use super::Sandbox;
use crate::bound::{MAX_TOOL_INPUT_BYTES, MAX_TOOL_NAME_BYTES, clip, quote};
use crate::fs::{Access, GuestPath, OpenMount, check_path};
use crate::net::check_request;
use crate::op::Op;
use crate::violation::{Denial, Violation};

impl Sandbox {
    /// Decide whether the grant allows `op`, without charging budgets or
    /// performing anything. `Ok` names the rule that allows it. This is the
    /// same check [`Sandbox::run`] applies, request bounds included.
    pub fn check(&self, op: &Op) -> Result<String, Denial> {
        match op {
            Op::FsRead { path } | Op::FsList { path } | Op::FsStat { path } => self
                .resolve(path, Access::ReadOnly)
                .map(|(mount, _)| mount.mount.rule()),
            Op::FsWrite { path, .. } | Op::FsRemove { path } | Op::FsMkdir { path } => self
                .resolve(path, Access::ReadWrite)
                .map(|(mount, _)| mount.mount.rule()),
            Op::NetFetch {
                method,
                url,
                headers,
                body,
            } => {
                // Bounds first: nothing of an oversized request is parsed.
                check_request(method, url, headers, body)?;
                self.caps.egress().check(url).map(|(_, rule)| rule)
            }
            Op::ToolCall { name, input } => {
                if name.len() > MAX_TOOL_NAME_BYTES {
                    Err(Denial::new(
                        Violation::InvalidRequest,
                        format!(
                            "tool name is {} bytes long; at most {MAX_TOOL_NAME_BYTES} are accepted",
                            name.len()
                        ),
                    ))
                } else if input.len() > MAX_TOOL_INPUT_BYTES {
                    Err(Denial::new(
                        Violation::InvalidRequest,
                        format!(
                            "tool input is {} bytes; at most {MAX_TOOL_INPUT_BYTES} are accepted",
                            input.len()
                        ),
                    ))
                } else if !self.caps.tools().contains(name) {
                    Err(Denial::new(
                        Violation::ToolDenied,
                        format!("tool {} is not on the allow-list", quote(name)),
                    ))
                } else if self.tools.get(name).is_none() {
                    Err(Denial::new(
                        Violation::ToolDenied,
                        format!(
                            "tool {} is allowed but no implementation is registered",
                            quote(name)
                        ),
                    ))
                } else {
                    Ok(format!("tool {name}"))
                }
            }
            Op::Invalid { reason, .. } => {
                Err(Denial::new(Violation::InvalidRequest, reason.clone()))
            }
        }
    }

    /// Validate a path and find the mount that decides it, and the path
    /// below that mount.
    pub(super) fn resolve(
        &self,
        raw: &str,
        access: Access,
    ) -> Result<(&OpenMount, String), Denial> {
        let path = check_path(raw)?;
        let Some((mount, rel)) = self.mounts.find(&path) else {
            return Err(outside(access, &path));
        };
        if access == Access::ReadWrite && mount.mount.access != Access::ReadWrite {
            let why = format!("is in read-only mount {}", mount.mount.guest);
            return Err(refuse(access, &path, why));
        }
        Ok((mount, rel))
    }

    /// The check of a filesystem op performed through a descriptor of the
    /// mount at guest path `via` (the WASI door): the effect lands in that
    /// mount's host folder whatever the path string says, so that mount
    /// decides. `via` naming no mount (the empty root) allows nothing.
    pub(super) fn check_via(&self, op: &Op, via: &str) -> Result<String, Denial> {
        let (raw, access) = match op {
            Op::FsRead { path } | Op::FsList { path } | Op::FsStat { path } => {
                (path, Access::ReadOnly)
            }
            Op::FsWrite { path, .. } | Op::FsRemove { path } | Op::FsMkdir { path } => {
                (path, Access::ReadWrite)
            }
            _ => return self.check(op),
        };
        let path = check_path(raw)?;
        let Some(mount) = self.mounts.by_guest(via) else {
            return Err(outside(access, &path));
        };
        if !path.is_under(&mount.mount.guest) {
            return Err(outside(access, &path));
        }
        if matches!(op, Op::FsRemove { .. }) && path == mount.mount.guest {
            let why = "is a mount point; it cannot be renamed or removed";
            return Err(refuse(access, &path, why));
        }
        if access == Access::ReadWrite && mount.mount.access != Access::ReadWrite {
            let why = format!("is reached through read-only mount {}", mount.mount.guest);
            return Err(refuse(access, &path, why));
        }
        Ok(mount.mount.rule())
    }
}

/// The refusal of `access` to `path`, saying `why`.
fn refuse(access: Access, path: &GuestPath, why: impl std::fmt::Display) -> Denial {
    let violation = match access {
        Access::ReadOnly => Violation::FsReadDenied,
        Access::ReadWrite => Violation::FsWriteDenied,
    };
    Denial::new(violation, format!("{} {why}", clip(path)))
}

/// The refusal of a path no mount covers.
fn outside(access: Access, path: &GuestPath) -> Denial {
    let why = format!("is outside every mount the guest may {}", access.as_str());
    refuse(access, path, why)
}
