//! The file capability's part of a grant: the `[fs]` section of a caps
//! file, the mounts as requested, and the validation every mount passes
//! (from a file or from the builder).
//!
//! ```toml
//! [fs]
//! read  = [{ host = "./data", guest = "/work" }]   # label = "...": see [flow]
//! write = [{ host = "./out",  guest = "/work/out" }]
//! ```

use super::{Access, GuestPath, Mount, check_path};
use crate::error::CapsError;
use crate::flow::config::RequestedFlow;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// `[fs]`: read mounts, then write mounts.
#[derive(Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub(crate) struct FsSection {
    #[serde(default)]
    read: Vec<MountEntry>,
    #[serde(default)]
    write: Vec<MountEntry>,
}

#[derive(Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
struct MountEntry {
    host: String,
    guest: String,
    /// Named "private to the run" in audit rules, not by its host path.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    private: bool,
    /// The label on everything read through it (see `[flow]`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    label: Option<String>,
}

/// Mounts as the builder was given them, before validation.
#[derive(Clone, Debug, Default)]
pub(crate) struct RequestedMounts(Vec<Requested>);

/// One mount as requested.
#[derive(Clone, Debug)]
struct Requested {
    host: PathBuf,
    guest: String,
    access: Access,
    private: bool,
    runner: bool,
}

impl FsSection {
    /// Request this section's mounts, and the labels on them.
    pub(crate) fn apply(self, to: &mut RequestedMounts, flow: &mut RequestedFlow) {
        for (key, access, list) in [
            ("fs.read", Access::ReadOnly, self.read),
            ("fs.write", Access::ReadWrite, self.write),
        ] {
            for m in list {
                if let Some(label) = m.label {
                    flow.label(
                        m.guest.clone(),
                        label,
                        &format!("{key} ({}).label", m.guest),
                    );
                }
                to.push(m.host.into(), m.guest, access, m.private);
            }
        }
    }

    /// The section that grants `mounts` (absolute host paths).
    pub(crate) fn render(mounts: &[Mount]) -> FsSection {
        let mut s = FsSection::default();
        // A runner's own folders are the runner's to lend, never a file's.
        for m in mounts.iter().filter(|m| !m.runner) {
            let entry = MountEntry {
                host: m.host.display().to_string(),
                guest: m.guest.as_str().to_string(),
                private: m.private,
                // Rendered in [flow.label], with every other source's.
                label: None,
            };
            match m.access {
                Access::ReadOnly => s.read.push(entry),
                Access::ReadWrite => s.write.push(entry),
            }
        }
        s
    }
}

impl RequestedMounts {
    /// Show host folder `host` at guest path `guest` with `access`.
    pub(crate) fn push(&mut self, host: PathBuf, guest: String, access: Access, private: bool) {
        self.0.push(Requested {
            host,
            guest,
            access,
            private,
            runner: false,
        });
    }

    /// Show a script runner's own folder `host` read-only at `guest`
    /// ([`Mount::runner`]).
    pub(crate) fn push_runner(&mut self, host: PathBuf, guest: String) {
        self.0.push(Requested {
            host,
            guest,
            access: Access::ReadOnly,
            private: false,
            runner: true,
        });
    }

    /// The runner folders of `mounts`, requested again (what a caps file
    /// cannot carry, kept across [`crate::Capabilities::to_builder`]).
    pub(crate) fn keep_runner(&mut self, mounts: &[Mount]) {
        for m in mounts.iter().filter(|m| m.runner) {
            self.push_runner(m.host.clone(), m.guest.as_str().to_string());
        }
    }

    /// Validate the mounts: guest paths, existing host folders (relative
    /// ones against `base`), no guest path twice, no read mount inside a
    /// write mount.
    pub(crate) fn build(&self, base: &Path) -> Result<Vec<Mount>, CapsError> {
        self.build_onto(base, &[])
    }

    /// [`build`](Self::build) these mounts after `existing` (a built
    /// grant's, validated when it was built): the new ones are checked
    /// alone and against `existing` (no guest path twice, no read mount
    /// inside a write mount); the whole list, `existing` first.
    pub(crate) fn build_onto(
        &self,
        base: &Path,
        existing: &[Mount],
    ) -> Result<Vec<Mount>, CapsError> {
        let mut mounts: Vec<Mount> = existing.to_vec();
        let (mut ri, mut wi) = (0, 0);
        for Requested {
            host,
            guest,
            access,
            private,
            runner,
        } in &self.0
        {
            let key = match access {
                Access::ReadOnly => {
                    ri += 1;
                    format!("fs.read[{}]", ri - 1)
                }
                Access::ReadWrite => {
                    wi += 1;
                    format!("fs.write[{}]", wi - 1)
                }
            };
            let guest_form = "an absolute guest path without `..`, e.g. \"/work\" (or \"/\")";
            let g: GuestPath = check_path(guest).map_err(|d| {
                CapsError::invalid(
                    format!("{key}.guest"),
                    format!("{guest:?}: {}", d.message),
                    guest_form,
                )
            })?;
            if let Some(other) = mounts.iter().find(|m| m.guest == g) {
                return Err(CapsError::invalid(
                    format!("{key}.guest"),
                    format!("{g} is already mounted (host {})", other.host.display()),
                    "each guest path at most once",
                ));
            }
            let joined = if host.is_absolute() {
                host.clone()
            } else {
                base.join(host)
            };
            let host_form =
                "an existing host folder (relative paths resolve against the caps file's folder)";
            let canon = std::fs::canonicalize(&joined).map_err(|e| {
                CapsError::invalid(
                    format!("{key}.host"),
                    format!("{}: {e}", joined.display()),
                    host_form,
                )
            })?;
            if !canon.is_dir() {
                return Err(CapsError::invalid(
                    format!("{key}.host"),
                    format!("{} is not a folder", canon.display()),
                    host_form,
                ));
            }
            mounts.push(Mount {
                host: canon,
                guest: g,
                access: *access,
                private: *private,
                runner: *runner,
            });
        }
        refuse_read_inside_write(&mounts)?;
        Ok(mounts)
    }
}

/// A read-only folder inside (or equal to) a writable one is writable
/// through the writable mount (a symlink is enough), so the read-only grant
/// would be a lie.
fn refuse_read_inside_write(mounts: &[Mount]) -> Result<(), CapsError> {
    for ro in mounts.iter().filter(|m| m.access == Access::ReadOnly) {
        if let Some(rw) = mounts
            .iter()
            .find(|m| m.access == Access::ReadWrite && ro.host.starts_with(&m.host))
        {
            return Err(CapsError::invalid(
                "fs.read",
                format!(
                    "read mount {} (host {}) lies inside write mount {} (host {}), so the guest could write it",
                    ro.guest,
                    ro.host.display(),
                    rw.guest,
                    rw.host.display()
                ),
                "read-only host folders outside every write mount's host folder",
            ));
        }
    }
    Ok(())
}
