//! A grant's folders, opened once and lent to every run of that grant.
//!
//! A run used to open each mount by path twice (once for WASI's preopen,
//! once for the gate): ten system calls and two path walks a run for a
//! two-mount grant, most of what a sandboxed run cost over a bare one.
//! Now the first run of a grant opens each folder once, and later runs
//! (of the same [`Capabilities`](crate::Capabilities) value, its clones,
//! and the grants derived from it with
//! [`to_builder`](crate::Capabilities::to_builder)) borrow the handles.
//!
//! The handle is the capability, as in cap-std: a folder renamed after
//! the grant's first run is still the folder its runs see. A folder
//! removed is not: a run finds its handle's folder gone (no links left,
//! one `fstat`, no path walk) and opens the path afresh, so a host that
//! clears a folder by removing and re-making it keeps working. A run asks
//! at its first use of the folder (`OpenMount::dir`), not when it begins:
//! a run that never reaches a mount makes no system call for it.
//!
//! A run's private folders (the Python doors' `/tmp`) are made for one run
//! and never shared: the grant derived for that run holds them, and they
//! go with it.

use cap_std::ambient_authority;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// One granted folder, open: the gate's cap-std handle, and the same
/// folder as a plain file for WASI's preopen (a second descriptor made
/// from the first, so both name the same folder whatever happens to the
/// path).
#[derive(Debug)]
pub(crate) struct Folder {
    dir: cap_std::fs::Dir,
    /// The folder for WASI (`wasmtime_wasi::filesystem::Dir`), shared by
    /// every run's preopen of it.
    #[cfg_attr(not(feature = "wasm"), allow(dead_code))]
    pub(super) file: Arc<std::fs::File>,
}

/// The gate works through the cap-std handle.
impl std::ops::Deref for Folder {
    type Target = cap_std::fs::Dir;
    fn deref(&self) -> &cap_std::fs::Dir {
        &self.dir
    }
}

impl Folder {
    /// Open `host`. This is the one place the filesystem capability uses
    /// ambient authority, and only on a folder a grant named.
    ///
    /// The grant named the folder by its canonical path, and the folder
    /// opened must still be the one at that path: a folder moved, or a
    /// link planted in the path since (`out` replaced by a link to
    /// `/etc`), is refused, not followed. The kernel says which folder the
    /// handle holds (`/proc/self/fd`); where it cannot, the path is
    /// trusted as before.
    fn open(host: &Path) -> io::Result<Self> {
        let dir = cap_std::fs::Dir::open_ambient_dir(host, ambient_authority())?;
        let file = dir.try_clone()?.into_std_file();
        #[cfg(target_os = "linux")]
        {
            use std::os::fd::AsRawFd;
            let held = std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd()));
            if let Ok(held) = held
                && held != host
            {
                return Err(io::Error::other(format!(
                    "{} is no longer the folder the grant named: it leads to {} \
                     (moved, or replaced by a link, since the grant was made)",
                    host.display(),
                    held.display()
                )));
            }
        }
        Ok(Folder {
            dir,
            file: Arc::new(file),
        })
    }

    /// Whether the folder was removed since it was opened (no links left).
    fn removed(&self) -> bool {
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            self.file.metadata().is_ok_and(|m| m.nlink() == 0)
        }
        #[cfg(not(unix))]
        {
            false
        }
    }
}

/// The folders a grant has opened, by host path. Shared by a grant's
/// clones; a grant derived from it shares the folders its parent names,
/// and keeps the rest (its private folders, a mount it added) to itself,
/// so that a parent kept for a server's lifetime holds its own folders
/// only, however many grants are derived from it.
#[derive(Debug, Default)]
pub(crate) struct Folders {
    held: Mutex<Vec<(PathBuf, Arc<Folder>)>>,
    /// The grant this one was derived from (the first of a line of
    /// derivations), and the host folders it names, which it lends.
    parent: Option<(Arc<Folders>, Arc<[PathBuf]>)>,
}

impl Folders {
    /// The folders of a grant derived from one holding `self`, which
    /// names the host folders `named` (its mounts but the private ones).
    pub(crate) fn derive(self: &Arc<Self>, named: impl Iterator<Item = PathBuf>) -> Arc<Folders> {
        let parent = match &self.parent {
            Some(first) => first.clone(),
            None => (self.clone(), named.collect()),
        };
        Arc::new(Folders {
            held: Mutex::default(),
            parent: Some(parent),
        })
    }

    /// The folder at `host` (a mount's; `private` when it is a run's
    /// own): the one opened before, unless it was removed since; otherwise
    /// opened now.
    pub(crate) fn open(&self, host: &Path, private: bool) -> io::Result<Arc<Folder>> {
        if let Some(parent) = self.lender(host, private) {
            return parent.open(host, private);
        }
        let mut held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(i) = held.iter().position(|(h, _)| same(h, host)) {
            if !held[i].1.removed() {
                return Ok(held[i].1.clone());
            }
            held.swap_remove(i);
        }
        let folder = Arc::new(Folder::open(host)?);
        held.push((host.to_path_buf(), folder.clone()));
        Ok(folder)
    }

    /// Whether the folder at `host` was opened before (by this grant or
    /// the one that lends it): no system call, nothing checked.
    pub(crate) fn holds(&self, host: &Path, private: bool) -> bool {
        if let Some(parent) = self.lender(host, private) {
            return parent.holds(host, private);
        }
        let held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        held.iter().any(|(h, _)| same(h, host))
    }

    /// The grant that lends the folder at `host`, when another does.
    fn lender(&self, host: &Path, private: bool) -> Option<&Arc<Folders>> {
        match &self.parent {
            Some((parent, named)) if !private && named.iter().any(|n| same(n, host)) => {
                Some(parent)
            }
            _ => None,
        }
    }

    /// How many folders this grant itself holds open.
    #[cfg(test)]
    pub(crate) fn held(&self) -> usize {
        self.held.lock().map_or(0, |h| h.len())
    }
}

/// Whether two mounts' host folders are the same one. Both are canonical
/// (made so when the grant was built), so their bytes are equal exactly
/// when their components are, and bytes compare without splitting either.
fn same(a: &Path, b: &Path) -> bool {
    a.as_os_str() == b.as_os_str()
}

/// A grant's folders are part of no comparison: two grants alike are
/// equal whether or not either has run.
impl PartialEq for Folders {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}
