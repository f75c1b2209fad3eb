//! Effects: what an allowed op does, through the mount handles, the
//! network seam and the tool registry, within what is left of the budgets.

use super::{Failure, Sandbox};
use crate::fs::{Access, FsError};
use crate::net::{FetchFailure, FetchRequest, FetchTrace, gated_fetch};
use crate::op::{Content, ErrorKind, Op, OpError, Output};
use crate::tools::{ToolError, ToolLimits};
use crate::violation::{Denial, Violation};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::Duration;

impl Sandbox {
    /// Charge the write quota, or say which part of it is spent.
    pub(super) fn quota(&self, bytes: u64, files: u64) -> Result<(), Denial> {
        let b = self.caps.budget();
        if bytes > 0 && !self.writes.try_bytes(bytes) {
            return Err(Denial::new(
                Violation::MaxWriteBytes,
                format!(
                    "writing {bytes} bytes would pass max_write_bytes = {} ({} written)",
                    b.max_write_bytes,
                    self.writes.bytes()
                ),
            ));
        }
        if files > 0 && !self.writes.try_files(files) {
            return Err(Denial::new(
                Violation::MaxFiles,
                format!(
                    "creating {files} more would pass max_files = {} ({} created)",
                    b.max_files,
                    self.writes.files()
                ),
            ));
        }
        Ok(())
    }

    pub(super) fn output_left(&self) -> u64 {
        self.output.left()
    }

    pub(super) fn wall_left(&self) -> Duration {
        self.caps.budget().max_wall.saturating_sub(self.elapsed)
    }

    pub(super) fn output_denial(&self, wanted: u64) -> Denial {
        self.output.mark_breached();
        let more = if wanted == u64::MAX {
            "more than".to_string()
        } else {
            format!("{wanted} bytes,")
        };
        Denial::new(
            Violation::MaxOutputBytes,
            format!(
                "the result is {more} over the {} bytes left of max_output_bytes = {}",
                self.output_left(),
                self.caps.budget().max_output_bytes
            ),
        )
    }

    pub(super) fn fs_failure(&self, e: FsError, access: Access, path: &str) -> Failure {
        match e {
            FsError::Escape => Failure::Denied(Denial::new(
                match access {
                    Access::ReadOnly => Violation::FsReadDenied,
                    Access::ReadWrite => Violation::FsWriteDenied,
                },
                format!("{path} leads outside its mount through a symbolic link"),
            )),
            FsError::TooLarge => Failure::Denied(self.output_denial(u64::MAX)),
            FsError::MountPoint => Failure::Error(OpError::new(
                ErrorKind::MountPoint,
                format!("{path} is a mount point; it cannot be written or removed"),
            )),
            FsError::Io(e) => Failure::Error(OpError::from_io(&e)),
        }
    }

    pub(super) fn perform(&self, op: &Op) -> (Result<Output, Failure>, FetchTrace) {
        if let Op::NetFetch {
            method,
            url,
            headers,
            body,
        } = op
        {
            return self.perform_fetch(method, url, headers, body);
        }
        (self.perform_local(op), FetchTrace::default())
    }

    pub(super) fn perform_fetch(
        &self,
        method: &str,
        url: &str,
        headers: &[(String, String)],
        body: &[u8],
    ) -> (Result<Output, Failure>, FetchTrace) {
        let wall_left = self.wall_left();
        let req = FetchRequest {
            method: method.to_string(),
            url: url.to_string(),
            headers: headers.to_vec(),
            body: body.to_vec(),
        };
        let (egress, resolver, net) = (self.caps.egress(), &*self.resolver, &*self.net);
        let run = || gated_fetch(egress, resolver, net, req, wall_left, self.output_left());
        let (result, trace) = match catch_unwind(AssertUnwindSafe(run)) {
            Ok(r) => r,
            Err(_) => (
                Err(FetchFailure::Failed("the network layer panicked".into())),
                FetchTrace::default(),
            ),
        };
        let outcome = match result {
            Ok(resp) => Ok(Output::response(resp)),
            Err(FetchFailure::Denied(d)) => Err(Failure::Denied(d)),
            Err(FetchFailure::Timeout) => Err(Failure::Denied(Denial::new(
                Violation::MaxWall,
                format!(
                    "fetch ran past the {} ms left of the wall budget",
                    wall_left.as_millis()
                ),
            ))),
            Err(FetchFailure::BodyTooLarge) => Err(Failure::Denied(self.output_denial(u64::MAX))),
            Err(FetchFailure::Failed(e)) => {
                Err(Failure::Error(OpError::new(ErrorKind::Network, e)))
            }
        };
        (outcome, trace)
    }

    pub(super) fn perform_local(&self, op: &Op) -> Result<Output, Failure> {
        match op {
            Op::FsRead { path }
            | Op::FsList { path }
            | Op::FsStat { path }
            | Op::FsWrite { path, .. }
            | Op::FsRemove { path }
            | Op::FsMkdir { path } => self.perform_fs(op, path),
            Op::NetFetch { .. } => Err(Failure::Error(OpError::new(
                ErrorKind::Network,
                "not a local op",
            ))),
            Op::ToolCall { name, input } => {
                let Some(tool) = self.tools.get(name).cloned() else {
                    return Err(Failure::Denied(Denial::new(
                        Violation::ToolDenied,
                        format!("tool {name:?} is not registered"),
                    )));
                };
                let limits = ToolLimits {
                    timeout: self.wall_left(),
                    max_output_bytes: self.output_left(),
                };
                match catch_unwind(AssertUnwindSafe(|| tool.call(input, limits))) {
                    Ok(Ok(output)) => Ok(Output::ToolOutput { output }),
                    Ok(Err(ToolError::Timeout)) => Err(Failure::Denied(Denial::new(
                        Violation::MaxWall,
                        format!(
                            "tool {name:?} ran past the {} ms left of the wall budget",
                            limits.timeout.as_millis()
                        ),
                    ))),
                    Ok(Err(e)) => Err(Failure::Error(OpError::new(
                        ErrorKind::ToolFailed,
                        format!("tool {name:?} failed: {e}"),
                    ))),
                    Err(_) => Err(Failure::Error(OpError::new(
                        ErrorKind::ToolFailed,
                        format!("tool {name:?} panicked"),
                    ))),
                }
            }
            Op::Invalid { reason, .. } => Err(Failure::Denied(Denial::new(
                Violation::InvalidRequest,
                reason.clone(),
            ))),
        }
    }

    pub(super) fn perform_fs(&self, op: &Op, raw: &str) -> Result<Output, Failure> {
        let access = match op {
            Op::FsWrite { .. } | Op::FsRemove { .. } | Op::FsMkdir { .. } => Access::ReadWrite,
            _ => Access::ReadOnly,
        };
        // Checked already; resolving again (pure, cheap) gives the handle.
        let (mount, rel) = self.resolve(raw, access).map_err(Failure::Denied)?;
        let fail = |e| self.fs_failure(e, access, raw);
        match op {
            Op::FsRead { .. } => mount
                .read(&rel, self.output_left())
                .map(|b| Output::Data {
                    content: Content(b),
                })
                .map_err(fail),
            Op::FsWrite { content, .. } => {
                let new_file = u64::from(!mount.exists(&rel));
                self.quota(content.len() as u64, new_file)
                    .map_err(Failure::Denied)?;
                mount
                    .write(&rel, content)
                    .map(|()| Output::Written {
                        bytes: content.len() as u64,
                    })
                    .map_err(fail)
            }
            Op::FsList { .. } => mount
                .list(&rel)
                .map(|entries| Output::Entries { entries })
                .map_err(fail),
            Op::FsStat { .. } => mount
                .stat(&rel)
                .map(|stat| Output::Stat { stat })
                .map_err(fail),
            Op::FsRemove { .. } => mount.remove(&rel).map(|()| Output::Removed).map_err(fail),
            Op::FsMkdir { .. } => {
                self.quota(0, mount.missing_dirs(&rel))
                    .map_err(Failure::Denied)?;
                mount.mkdir(&rel).map(|()| Output::Created).map_err(fail)
            }
            _ => Err(Failure::Error(OpError::new(
                ErrorKind::Io,
                "not a filesystem op",
            ))),
        }
    }
}
