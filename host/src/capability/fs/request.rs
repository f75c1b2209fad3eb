//! What the file capability is asked to do: one request per file op.

use super::Access;
use crate::capability::OpKind;

/// One file operation, by guest path.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FsOp {
    /// Read a whole file.
    Read {
        /// Guest path.
        path: String,
    },
    /// Create or replace a file, atomically. The parent folder must exist.
    Write {
        /// Guest path.
        path: String,
        /// New content.
        content: Vec<u8>,
    },
    /// List a folder.
    List {
        /// Guest path.
        path: String,
    },
    /// Kind and size of a file or folder.
    Stat {
        /// Guest path.
        path: String,
    },
    /// Remove a file, a symlink or an empty folder.
    Remove {
        /// Guest path.
        path: String,
    },
    /// Create a folder and its missing parents.
    Mkdir {
        /// Guest path.
        path: String,
    },
}

impl FsOp {
    /// The guest path the op names.
    pub fn path(&self) -> &str {
        match self {
            FsOp::Read { path }
            | FsOp::Write { path, .. }
            | FsOp::List { path }
            | FsOp::Stat { path }
            | FsOp::Remove { path }
            | FsOp::Mkdir { path } => path,
        }
    }

    /// The access the op needs from the mount that decides its path.
    pub fn access(&self) -> Access {
        match self {
            FsOp::Read { .. } | FsOp::List { .. } | FsOp::Stat { .. } => Access::ReadOnly,
            FsOp::Write { .. } | FsOp::Remove { .. } | FsOp::Mkdir { .. } => Access::ReadWrite,
        }
    }

    /// The op's stable name, as in plans and audit logs.
    pub fn kind(&self) -> &'static str {
        self.op_kind().name()
    }

    /// The op's kind.
    pub fn op_kind(&self) -> OpKind {
        match self {
            FsOp::Read { .. } => OpKind::FsRead,
            FsOp::Write { .. } => OpKind::FsWrite,
            FsOp::List { .. } => OpKind::FsList,
            FsOp::Stat { .. } => OpKind::FsStat,
            FsOp::Remove { .. } => OpKind::FsRemove,
            FsOp::Mkdir { .. } => OpKind::FsMkdir,
        }
    }
}
