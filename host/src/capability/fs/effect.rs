//! The file capability's effects, through the mount's cap-std handle
//! (never ambient `std::fs`), within what the gate lends from the budgets.

use super::{Access, FsError, OpenMount};
use crate::bound::clip;
use crate::op::{Content, ErrorKind, Failure, Op, OpError, Output};
use crate::violation::{Denial, Violation};

/// What the gate lends a file effect from the budgets.
pub(crate) struct Lent<'a> {
    /// Bytes the caller may still receive: a longer read is refused.
    pub(crate) read_limit: u64,
    /// Charge the write quota (bytes written, files created) before the
    /// effect, or say which part is spent.
    pub(crate) quota: &'a dyn Fn(u64, u64) -> Result<(), Denial>,
    /// The refusal of a result over the output budget.
    pub(crate) over_budget: &'a dyn Fn() -> Denial,
}

impl OpenMount {
    /// Perform file op `op` on `rel` below this mount (`raw` is the guest
    /// path, for messages).
    pub(crate) fn perform(
        &self,
        op: &Op,
        rel: &str,
        raw: &str,
        access: Access,
        lent: &Lent<'_>,
    ) -> Result<Output, Failure> {
        let fail = |e| failure(e, access, raw, lent);
        match op {
            Op::FsRead { .. } => self
                .read(rel, lent.read_limit)
                .map(|b| Output::Data {
                    content: Content(b),
                })
                .map_err(fail),
            Op::FsWrite { content, .. } => {
                let new_file = u64::from(!self.exists(rel));
                (lent.quota)(content.len() as u64, new_file).map_err(Failure::Denied)?;
                self.write(rel, content)
                    .map(|()| Output::Written {
                        bytes: content.len() as u64,
                    })
                    .map_err(fail)
            }
            Op::FsList { .. } => self
                .list(rel)
                .map(|entries| Output::Entries { entries })
                .map_err(fail),
            Op::FsStat { .. } => self
                .stat(rel)
                .map(|stat| Output::Stat { stat })
                .map_err(fail),
            Op::FsRemove { .. } => self.remove(rel).map(|()| Output::Removed).map_err(fail),
            Op::FsMkdir { .. } => {
                (lent.quota)(0, self.missing_dirs(rel)).map_err(Failure::Denied)?;
                self.mkdir(rel).map(|()| Output::Created).map_err(fail)
            }
            _ => Err(Failure::Error(OpError::new(
                ErrorKind::Io,
                "not a filesystem op",
            ))),
        }
    }
}

fn failure(e: FsError, access: Access, path: &str, lent: &Lent<'_>) -> Failure {
    match e {
        FsError::Escape => Failure::Denied(Denial::new(
            match access {
                Access::ReadOnly => Violation::FsReadDenied,
                Access::ReadWrite => Violation::FsWriteDenied,
            },
            format!(
                "{} leads outside its mount through a symbolic link",
                clip(path)
            ),
        )),
        FsError::TooLarge => Failure::Denied((lent.over_budget)()),
        FsError::MountPoint => Failure::Error(OpError::new(
            ErrorKind::MountPoint,
            format!(
                "{} is a mount point; it cannot be written or removed",
                clip(path)
            ),
        )),
        FsError::Io(e) => Failure::Error(OpError::from_io(&e)),
    }
}
