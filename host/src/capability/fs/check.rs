//! The file capability's check: which mount decides a path, and whether it
//! allows the access. Pure: nothing on the host is touched.

use super::{Access, GuestPath, MountTable, OpenMount, check_path};
use crate::bound::clip;
use crate::violation::{Denial, Violation};

impl MountTable {
    /// Validate `raw` (the path defense) and find the mount that decides
    /// it, the most specific one covering it, and the path below it.
    pub(crate) fn decide(&self, raw: &str, access: Access) -> Result<(&OpenMount, String), Denial> {
        let path = check_path(raw)?;
        let Some((mount, rel)) = self.find(&path) else {
            return Err(outside(access, &path));
        };
        if access == Access::ReadWrite && mount.mount.access != Access::ReadWrite {
            let why = format!("is in read-only mount {}", mount.mount.guest);
            return Err(refuse(access, &path, why));
        }
        Ok((mount, rel))
    }

    /// The same decision for an effect performed through a descriptor of
    /// the mount at guest path `via` (the WASI door): the effect lands in
    /// that mount's host folder whatever the path string says, so that
    /// mount decides. `via` naming no mount (the empty root) allows
    /// nothing; `removing` a mount's root is refused. `Ok` names the rule.
    pub(crate) fn decide_via(
        &self,
        raw: &str,
        access: Access,
        via: &str,
        removing: bool,
    ) -> Result<String, Denial> {
        let path = check_path(raw)?;
        let Some(mount) = self.by_guest(via) else {
            return Err(outside(access, &path));
        };
        if !path.is_under(&mount.mount.guest) {
            return Err(outside(access, &path));
        }
        if removing && path == mount.mount.guest {
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
