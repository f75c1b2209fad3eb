//! The file capability's check: which mount decides a path, and whether it
//! allows the access. Pure: nothing on the host is touched.

use super::{Access, FsOp, GuestPath, MountTable, OpenMount, check_path};
use crate::bound::clip;
use crate::capability::{Grant, Permit};
use crate::violation::Denial;

impl MountTable {
    /// Validate `raw` (the path defense) and find the mount that decides
    /// it, the most specific one covering it: the permit names that mount
    /// and the path below it.
    pub(crate) fn decide(&self, raw: &str, access: Access) -> Result<Permit, Denial> {
        let path = check_path(raw)?;
        let Some((index, rel)) = self.find(&path) else {
            return Err(outside(access, &path));
        };
        let mount = &self.mounts[index];
        if access == Access::ReadWrite && mount.mount().access != Access::ReadWrite {
            let why = format!("is in read-only mount {}", mount.mount().guest);
            return Err(refuse(access, path.as_str(), why));
        }
        Ok(permit(index, mount, rel))
    }

    /// The check of file op `op` performed through a descriptor of the
    /// mount at guest path `via` (the WASI door). Through the empty root,
    /// only the folders above the mounts exist (stat alone); every other
    /// path is the mounts' to decide, and through the root they refuse it.
    pub(crate) fn check_via(&self, op: &FsOp, via: &str) -> Result<Permit, Denial> {
        if matches!(op, FsOp::Stat { .. })
            && self.by_guest(via).is_none()
            && let Some(rule) = self.above_mounts(op.path())
        {
            return Ok(Permit::new(rule, Grant::Nothing));
        }
        let removing = matches!(op, FsOp::Remove { .. });
        self.decide_via(op.path(), op.access(), via, removing)
    }

    /// The same decision for an effect performed through a descriptor of
    /// the mount at guest path `via` (the WASI door): the effect lands in
    /// that mount's host folder whatever the path string says, so that
    /// mount decides. `via` naming no mount (the empty root) allows
    /// nothing; `removing` a mount's root is refused.
    fn decide_via(
        &self,
        raw: &str,
        access: Access,
        via: &str,
        removing: bool,
    ) -> Result<Permit, Denial> {
        let path = check_path(raw)?;
        let Some(index) = self.index_of(via) else {
            return Err(outside(access, &path));
        };
        let mount = &self.mounts[index];
        let Some(rel) = path.strip_base(&mount.mount().guest) else {
            return Err(outside(access, &path));
        };
        if removing && path == mount.mount().guest {
            let why = "is a mount point; it cannot be renamed or removed";
            return Err(refuse(access, path.as_str(), why));
        }
        if access == Access::ReadWrite && mount.mount().access != Access::ReadWrite {
            let why = format!("is reached through read-only mount {}", mount.mount().guest);
            return Err(refuse(access, path.as_str(), why));
        }
        Ok(permit(index, mount, rel))
    }

    /// The mount a permit names and the path below it, when it names one.
    pub(crate) fn reached<'a>(&'a self, permit: &'a Permit) -> Option<(&'a OpenMount, &'a str)> {
        match &permit.grant {
            Grant::Fs { mount, rel, .. } => self.mounts.get(*mount).map(|m| (m, rel.as_str())),
            _ => None,
        }
    }
}

/// The permit for `rel` below mount `index`.
fn permit(index: usize, mount: &OpenMount, rel: String) -> Permit {
    let write = mount.mount().access == Access::ReadWrite;
    Permit::new(
        mount.mount().rule(),
        Grant::Fs {
            mount: index,
            rel,
            write,
        },
    )
}

impl MountTable {
    /// The rule for a stat of `raw` through the empty root, when it names
    /// the root or a folder above a mount (`/`, `/work` for `/work/out`):
    /// those exist for the guest as empty folders, as in any file system
    /// where a mount point's parents exist, so `os.makedirs(mount,
    /// exist_ok=True)` finds them. Nothing on the host is reached: the
    /// answer is made up (an empty, read-only folder), and the names are
    /// the grant's own.
    pub(crate) fn above_mounts(&self, raw: &str) -> Option<String> {
        let path = check_path(raw).ok()?;
        let above = path.as_str() == "/"
            || self
                .mounts
                .iter()
                .any(|m| m.mount().guest != path && m.mount().guest.is_under(&path));
        above.then(|| "a folder above the mounts (empty)".to_string())
    }
}

/// The refusal of `access` to `path`, saying `why`: the one denial builder
/// of the file capability (the check, the effect and the WASI door's
/// escape records all go through it).
pub(crate) fn refuse(access: Access, path: &str, why: impl std::fmt::Display) -> Denial {
    Denial::new(access.violation(), format!("{} {why}", clip(path)))
}

/// The refusal of a path that leads outside its mount through a link.
pub(crate) fn escape(access: Access, path: &str) -> Denial {
    refuse(
        access,
        path,
        "leads outside its mount through a symbolic link",
    )
}

/// The refusal of a path no mount covers.
fn outside(access: Access, path: &GuestPath) -> Denial {
    let why = format!("is outside every mount the guest may {}", access.as_str());
    refuse(access, path.as_str(), why)
}

#[cfg(test)]
mod tests {
    use crate::Capabilities;
    use crate::fs::MountTable;

    #[test]
    fn only_the_root_and_the_parents_of_mounts_are_folders_above_them() {
        let dir = tempfile::tempdir().unwrap();
        let caps = Capabilities::builder()
            .write_mount(dir.path(), "/work/out")
            .build()
            .unwrap();
        let mounts = MountTable::open(caps.mounts_shared(), caps.folders()).unwrap();
        for above in ["/", "/.", "/work", "/work/", "/work/."] {
            assert!(mounts.above_mounts(above).is_some(), "{above}");
        }
        // The mount itself and what is in it are the mount's to decide;
        // a sibling, a prefix that is no parent, and escapes are nothing.
        for not in [
            "/work/out",
            "/work/out/x",
            "/wor",
            "/work/o",
            "/etc",
            "/work/..",
            "/a/../work",
        ] {
            assert!(mounts.above_mounts(not).is_none(), "{not}");
        }
    }
}
