//! The file capability's effects, through the mount's cap-std handle
//! (never ambient `std::fs`), within what the gate lends from the budgets.

use super::check::escape;
use super::{FsError, FsOp, OpenMount};
use crate::bound::clip;
use crate::capability::Lent;
use crate::capability::{Content, Output};
use crate::failure::{ErrorKind, Failure, OpError};

impl OpenMount {
    /// Perform file op `op` on `rel` below this mount, within what the gate
    /// lends: reads up to the output left, writes and new files charged to
    /// the write quota first.
    pub(crate) fn perform(&self, op: &FsOp, rel: &str, lent: &Lent<'_>) -> Result<Output, Failure> {
        let fail = |e| self.failure(e, op, rel, lent);
        match op {
            FsOp::Read { .. } => self
                .read(rel, lent.output_left)
                .map(|b| Output::Data {
                    content: Content(b),
                })
                .map_err(fail),
            FsOp::Write { content, .. } => {
                let new_file = u64::from(!self.exists(rel));
                (lent.quota)(content.len() as u64, new_file).map_err(Failure::Denied)?;
                self.write(rel, content)
                    .map(|()| Output::Written {
                        bytes: content.len() as u64,
                    })
                    .map_err(fail)
            }
            FsOp::List { .. } => self
                .list(rel, lent.output_left)
                .map(|entries| Output::Entries { entries })
                .map_err(fail),
            FsOp::Stat { .. } => self
                .stat(rel)
                .map(|stat| Output::Stat { stat })
                .map_err(fail),
            FsOp::Remove { .. } => self.remove(rel).map(|()| Output::Removed).map_err(fail),
            FsOp::Mkdir { .. } => {
                (lent.quota)(0, self.missing_dirs(rel)).map_err(Failure::Denied)?;
                self.mkdir(rel).map(|()| Output::Created).map_err(fail)
            }
        }
    }
}

impl OpenMount {
    /// What an effect's error is to the caller: a path that cap-std refused
    /// and that leads outside the mount is the denial it is (decided by
    /// resolution, [`OpenMount::escapes`]); the rest are failures.
    fn failure(&self, e: FsError, op: &FsOp, rel: &str, lent: &Lent<'_>) -> Failure {
        let e = match e {
            FsError::Io(e) => self.classify(e, rel),
            e => e,
        };
        match e {
            FsError::Escape => Failure::Denied(escape(op.access(), op.path())),
            FsError::TooLarge => Failure::Denied((lent.over_budget)()),
            FsError::MountPoint => Failure::Error(OpError::new(
                ErrorKind::MountPoint,
                format!(
                    "{} is a mount point; it cannot be written or removed",
                    clip(op.path())
                ),
            )),
            FsError::Io(e) => Failure::Error(OpError::from_io(&e)),
        }
    }
}
