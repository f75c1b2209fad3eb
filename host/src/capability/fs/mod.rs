//! The filesystem capability: mounts (its config), the path defense (its
//! check) and cap-std effects (its host impl).
//!
//! A file op is decided by the most specific mount covering its path
//! (`MountTable::decide`) and performed through that mount's cap-std
//! handle, never through ambient `std::fs`.

mod check;
pub(crate) mod config;
mod effect;
mod folders;
#[cfg(feature = "wasm")]
pub(crate) mod kernel;
mod mount;
mod path;
mod plan;
mod request;
mod snapshot;

// The wasm door's file gate refuses with it too.
#[cfg(feature = "wasm")]
pub(crate) use check::escape;
pub(crate) use folders::Folders;
pub use mount::{Access, Entry, EntryKind, Mount, Stat};
pub(crate) use mount::{FsError, MountTable, OpenMount};
pub use path::{GuestPath, MAX_PATH_BYTES, canonical, check_path, has_traversal};
pub(crate) use plan::{aimed_at, from_plan, plan_schema};
pub use request::FsOp;
pub(crate) use snapshot::Found;

use crate::capability::Output;
use crate::capability::Permit;
use crate::capability::Trace;
use crate::capability::{Held, Lent, Request};
use crate::failure::Failure;
use crate::violation::Denial;

impl Request for FsOp {
    fn kind(&self) -> crate::capability::OpKind {
        self.op_kind()
    }

    fn target(&self) -> &str {
        self.path()
    }

    fn check(&self, held: &Held<'_>) -> Result<Permit, Denial> {
        held.mounts.decide(self.path(), self.access())
    }

    fn perform(
        &self,
        permit: Permit,
        held: &Held<'_>,
        lent: &Lent<'_>,
    ) -> (Result<Output, Failure>, Trace) {
        let outcome = match held.mounts.reached(&permit) {
            // A permit for reading never carries a write.
            Some((_, _)) if self.access() == Access::ReadWrite && !permit.writes() => {
                Err(Failure::Denied(check::refuse(
                    self.access(),
                    self.path(),
                    "was checked for reading only",
                )))
            }
            Some((mount, rel)) => mount.perform(self, rel, lent),
            None => Err(Failure::Denied(Denial::new(
                crate::Violation::InvalidRequest,
                "a file op needs a file permit",
            ))),
        };
        (outcome, Trace::default())
    }
}

#[cfg(test)]
mod tests;
