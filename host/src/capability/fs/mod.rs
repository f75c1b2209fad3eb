//! The filesystem capability: mounts (its config), the path defense (its
//! check) and cap-std effects (its host impl).

mod check;
mod effect;
mod mount;
mod path;

pub(crate) use effect::Lent;
pub use mount::{Access, Entry, Mount, Stat};
pub(crate) use mount::{FsError, MountTable, OpenMount};
pub use path::{GuestPath, MAX_PATH_BYTES, canonical, check_path, has_traversal};
