//! Mounts: host folders shown to the guest at guest paths, opened once per
//! grant as cap-std `Dir` handles (`folders.rs`), and every filesystem
//! effect performed through them.
//!
//! Going through a `Dir` (never ambient `std::fs`) is what keeps a symlink
//! planted inside a mount from leading outside it: cap-std resolves every path
//! beneath the handle and refuses an escape.

use super::folders::{Folder, Folders};
use super::path::GuestPath;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

/// What a mount lets the guest do.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Access {
    /// Read, list and stat.
    ReadOnly,
    /// Everything `ReadOnly` allows, plus write, mkdir and remove.
    ReadWrite,
}

impl Access {
    /// `"read"` or `"write"`, as in the caps file.
    pub fn as_str(self) -> &'static str {
        match self {
            Access::ReadOnly => "read",
            Access::ReadWrite => "write",
        }
    }

    /// The violation a refusal of this access is: `fs_read_denied` or
    /// `fs_write_denied`.
    pub fn violation(self) -> crate::Violation {
        match self {
            Access::ReadOnly => crate::Violation::FsReadDenied,
            Access::ReadWrite => crate::Violation::FsWriteDenied,
        }
    }
}

/// One granted folder: `host` (absolute, canonical) shown at `guest`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Mount {
    /// The host folder, canonical.
    pub host: PathBuf,
    /// Where the guest sees it.
    pub guest: GuestPath,
    /// What the guest may do there.
    pub access: Access,
    /// A folder made for one run and removed after it (the Python doors'
    /// `/tmp`): rules name it as private, not by its host path, which
    /// changes every run.
    pub private: bool,
    /// One of a script runner's own folders (the data runner's standard
    /// library and matplotlib's data), lent by the runner, not by the
    /// grant; always read-only. Reads through it are checked as any other
    /// but neither charged to `max_ops` nor recorded: they are the
    /// interpreter's doing, not the script's. Anything else through it is
    /// refused and recorded as usual. A caps file cannot make one.
    pub runner: bool,
}

impl Mount {
    /// How audit events and `check --explain` name this mount.
    pub fn rule(&self) -> String {
        if self.runner {
            return format!(
                "{} mount {} (the runner's own)",
                self.access.as_str(),
                self.guest
            );
        }
        if self.private {
            return format!(
                "{} mount {} (private to the run)",
                self.access.as_str(),
                self.guest
            );
        }
        format!(
            "{} mount {} (host {})",
            self.access.as_str(),
            self.guest,
            self.host.display()
        )
    }
}

/// Why an effect on a mount did not happen.
#[derive(Debug)]
pub(crate) enum FsError {
    /// cap-std refused a path that resolved outside the mount (a symlink).
    Escape,
    /// The operation is meaningless on a mount point itself.
    MountPoint,
    /// More bytes than the caller may still receive.
    TooLarge,
    /// The OS said no (not found, not empty, ...).
    Io(io::Error),
}

impl From<io::Error> for FsError {
    /// Every OS error as it is; which of them were escapes is decided by
    /// resolution ([`OpenMount::escapes`]), never by an error's text.
    fn from(e: io::Error) -> Self {
        FsError::Io(e)
    }
}

/// A mount with its handle open (the grant's, lent to this run).
#[derive(Debug)]
pub(crate) struct OpenMount {
    /// The grant's mounts and which one this is: read there, not copied
    /// into every run ([`OpenMount::mount`]).
    mounts: Arc<[Mount]>,
    index: usize,
    /// The folder this run reaches the mount through, settled at its first
    /// use ([`OpenMount::dir`]); set from the start when the run opened it.
    folder: OnceLock<Result<Arc<Folder>, Arc<io::Error>>>,
    /// The grant's folders, which hold the handle.
    folders: Arc<Folders>,
}

/// A directory entry as listed to the caller.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Entry {
    /// File name (lossy UTF-8).
    pub name: String,
    /// What it is.
    pub kind: EntryKind,
}

/// What a path holds (`snake_case` on the wire: `file`, `dir`, `symlink`,
/// `other`).
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EntryKind {
    /// A regular file.
    File,
    /// A folder.
    Dir,
    /// A symbolic link (never followed out of its mount).
    Symlink,
    /// Anything else (a socket, a device, a pipe).
    Other,
}

impl EntryKind {
    /// The `snake_case` name.
    pub fn as_str(self) -> &'static str {
        match self {
            EntryKind::File => "file",
            EntryKind::Dir => "dir",
            EntryKind::Symlink => "symlink",
            EntryKind::Other => "other",
        }
    }
}

impl std::fmt::Display for EntryKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What `stat` reports.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Stat {
    /// What it is.
    pub kind: EntryKind,
    /// Size in bytes.
    pub size: u64,
    /// Whether the guest could write it through this mount.
    pub writable: bool,
}

pub(super) fn kind_name(ft: cap_std::fs::FileType) -> EntryKind {
    if ft.is_dir() {
        EntryKind::Dir
    } else if ft.is_file() {
        EntryKind::File
    } else if ft.is_symlink() {
        EntryKind::Symlink
    } else {
        EntryKind::Other
    }
}

// Temp names only need to be unique among concurrent writers in this process;
// `create_new` makes a clash an error rather than a clobber.
static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

impl OpenMount {
    /// `mount`'s folder, as `folders` holds it. A folder no run of the
    /// grant opened yet is opened now, so a grant naming a folder that is
    /// not there fails before its run begins; one opened before is
    /// checked at this run's first use of it ([`OpenMount::dir`]).
    pub(crate) fn open(
        mounts: &Arc<[Mount]>,
        index: usize,
        folders: &Arc<Folders>,
    ) -> io::Result<Self> {
        let mount = &mounts[index];
        let folder = OnceLock::new();
        if !folders.holds(&mount.host, mount.private) {
            let _ = folder.set(Ok(folders.open(&mount.host, mount.private)?));
        }
        Ok(OpenMount {
            mounts: mounts.clone(),
            index,
            folder,
            folders: folders.clone(),
        })
    }

    /// The mount, as the grant names it.
    pub(crate) fn mount(&self) -> &Mount {
        &self.mounts[self.index]
    }

    /// The folder, settled at the run's first use: the grant's handle,
    /// unless its folder was removed since (then the path is opened
    /// afresh, and refused if it no longer leads to a folder the grant
    /// could name). Every effect through the mount goes through here.
    pub(super) fn dir(&self) -> io::Result<&Folder> {
        let settled = self.folder.get_or_init(|| {
            self.folders
                .open(&self.mount().host, self.mount().private)
                .map_err(Arc::new)
        });
        match settled {
            Ok(folder) => Ok(folder),
            Err(e) => Err(io::Error::new(e.kind(), e.to_string())),
        }
    }

    /// The folder as WASI is lent it: the same folder as the gate's
    /// handle, never opened again.
    #[cfg(feature = "wasm")]
    pub(crate) fn folder_file(&self) -> io::Result<Arc<std::fs::File>> {
        Ok(self.dir()?.file.clone())
    }

    fn rel(rel: &str) -> &Path {
        Path::new(if rel.is_empty() { "." } else { rel })
    }

    /// Read a whole file, refusing to return more than `limit` bytes.
    pub(crate) fn read(&self, rel: &str, limit: u64) -> Result<Vec<u8>, FsError> {
        let file = self.dir()?.open(Self::rel(rel))?;
        if file.metadata()?.is_dir() {
            return Err(FsError::Io(io::Error::new(
                io::ErrorKind::IsADirectory,
                "is a directory",
            )));
        }
        let mut buf = Vec::new();
        file.take(limit.saturating_add(1)).read_to_end(&mut buf)?;
        if buf.len() as u64 > limit {
            return Err(FsError::TooLarge);
        }
        Ok(buf)
    }

    /// Replace (or create) a file atomically: write a temp file beside it,
    /// then rename over the target, so a failure never leaves a half file.
    /// The parent folder must exist.
    pub(crate) fn write(&self, rel: &str, content: &[u8]) -> Result<(), FsError> {
        if rel.is_empty() {
            return Err(FsError::MountPoint);
        }
        let target = Path::new(rel);
        let parent = target.parent().unwrap_or(Path::new(""));
        let n = TEMP_COUNTER.fetch_add(1, Ordering::Relaxed);
        let tmp = parent.join(format!(".sbx-{}-{n}.tmp", std::process::id()));
        let mut opts = cap_std::fs::OpenOptions::new();
        opts.write(true).create_new(true);
        let dir = self.dir()?;
        let mut file = dir.open_with(&tmp, &opts)?;
        let written = file.write_all(content).and_then(|()| file.flush());
        drop(file);
        let renamed = written.and_then(|()| dir.rename(&tmp, dir, target));
        if let Err(e) = renamed {
            let _ = dir.remove_file(&tmp);
            return Err(e.into());
        }
        Ok(())
    }

    /// Entries of a folder, sorted by name so output is deterministic.
    /// Reading stops with [`FsError::TooLarge`] once the entries would be
    /// charged more than `max_bytes` (a name and a separator each, as the
    /// output is charged): a folder of a million files costs the host no
    /// more than the caller may receive.
    pub(crate) fn list(&self, rel: &str, max_bytes: u64) -> Result<Vec<Entry>, FsError> {
        let mut out = Vec::new();
        let mut charged = 0u64;
        for entry in self.dir()?.read_dir(Self::rel(rel))? {
            let entry = entry?;
            let name = entry.file_name().to_string_lossy().into_owned();
            charged += name.len() as u64 + 1;
            if charged > max_bytes {
                return Err(FsError::TooLarge);
            }
            out.push(Entry {
                name,
                kind: kind_name(entry.file_type()?),
            });
        }
        out.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(out)
    }

    /// Metadata, following symlinks only while they stay inside the mount.
    pub(crate) fn stat(&self, rel: &str) -> Result<Stat, FsError> {
        let md = self.dir()?.metadata(Self::rel(rel))?;
        Ok(Stat {
            kind: kind_name(md.file_type()),
            size: md.len(),
            writable: self.mount().access == Access::ReadWrite && !md.permissions().readonly(),
        })
    }

    /// Remove a file, a symlink (not its target) or an empty folder.
    pub(crate) fn remove(&self, rel: &str) -> Result<(), FsError> {
        if rel.is_empty() {
            return Err(FsError::MountPoint);
        }
        let dir = self.dir()?;
        let md = dir.symlink_metadata(rel)?;
        if md.is_dir() {
            dir.remove_dir(rel)?;
        } else {
            dir.remove_file(rel)?;
        }
        Ok(())
    }

    /// Whether `rel` names something (a link counts, not followed).
    pub(crate) fn exists(&self, rel: &str) -> bool {
        self.dir()
            .is_ok_and(|d| d.symlink_metadata(Self::rel(rel)).is_ok())
    }

    /// How many folders `mkdir(rel)` would create.
    pub(crate) fn missing_dirs(&self, rel: &str) -> u64 {
        let mut missing = 0;
        let mut p = Path::new(rel);
        while !p.as_os_str().is_empty() && !self.exists(&p.to_string_lossy()) {
            missing += 1;
            p = p.parent().unwrap_or(Path::new(""));
        }
        missing
    }

    /// Whether `rel`, resolved below this mount's folder as the OS would
    /// (component by component, following each symbolic link), leads
    /// outside it: a link with an absolute target, or one whose `..` climbs
    /// above the mount's root. The one escape check: the effects ask it
    /// when cap-std refuses a path, and so does the WASI door after a
    /// refused call. A component that does not exist ends the walk (what
    /// is not there cannot lead out), and so does a chain of more than 40
    /// links (a loop, refused as one by the OS).
    pub(crate) fn escapes(&self, rel: &str) -> bool {
        use std::path::Component;
        // A folder that cannot be reached lets nothing out.
        let Ok(dir) = self.dir() else {
            return false;
        };
        let mut todo: Vec<PathBuf> = Path::new(rel)
            .components()
            .rev()
            .map(|c| PathBuf::from(c.as_os_str()))
            .collect();
        let mut at = PathBuf::new();
        let mut links = 0;
        while let Some(next) = todo.pop() {
            match next.components().next() {
                Some(Component::Normal(_)) => {}
                Some(Component::ParentDir) => {
                    if !at.pop() {
                        return true;
                    }
                    continue;
                }
                Some(Component::RootDir | Component::Prefix(_)) => return true,
                _ => continue,
            }
            let candidate = at.join(&next);
            let Ok(md) = dir.symlink_metadata(&candidate) else {
                return false;
            };
            if !md.file_type().is_symlink() {
                at = candidate;
                continue;
            }
            links += 1;
            let Ok(target) = dir.read_link_contents(&candidate) else {
                return false;
            };
            if links > 40 {
                return false;
            }
            todo.extend(
                target
                    .components()
                    .rev()
                    .map(|c| PathBuf::from(c.as_os_str())),
            );
        }
        false
    }

    /// `e`, from an effect on `rel`, as the refusal it is when `rel` leads
    /// outside the mount (cap-std refuses such a path with a permission
    /// error), else as it is.
    pub(crate) fn classify(&self, e: io::Error, rel: &str) -> FsError {
        if e.kind() == io::ErrorKind::PermissionDenied && self.escapes(rel) {
            FsError::Escape
        } else {
            FsError::Io(e)
        }
    }

    /// Create a folder and any missing parents.
    pub(crate) fn mkdir(&self, rel: &str) -> Result<(), FsError> {
        if rel.is_empty() {
            return Ok(());
        }
        self.dir()?.create_dir_all(rel)?;
        Ok(())
    }
}

/// The open mounts of one sandbox, searched longest guest path first so the
/// most specific mount decides (`/work/out` writable inside `/work` read-only).
#[derive(Debug)]
pub(crate) struct MountTable {
    pub(super) mounts: Vec<OpenMount>,
    /// Whether any is a runner's own ([`Mount::runner`]): without one, a
    /// path call need not look for it.
    #[cfg_attr(not(feature = "wasm"), allow(dead_code))]
    lends_runner: bool,
}

impl MountTable {
    /// Every mount of a grant, through the grant's `folders`; on
    /// failure, say which one.
    pub(crate) fn open(
        mounts: &Arc<[Mount]>,
        folders: &Arc<Folders>,
    ) -> Result<Self, (Mount, io::Error)> {
        // Sized up front: collected through a `Result`, the vector started
        // at room for four, and every run held the room to its end.
        let mut open = Vec::with_capacity(mounts.len());
        for (i, m) in mounts.iter().enumerate() {
            open.push(OpenMount::open(mounts, i, folders).map_err(|e| (m.clone(), e))?);
        }
        // Deepest first. A mount's guest path is normalised, so of two
        // nested mounts the deeper is the longer; mounts that do not nest
        // never both cover a path, and their order does not matter.
        open.sort_by_key(|m| std::cmp::Reverse(m.mount().guest.as_str().len()));
        let lends_runner = open.iter().any(|m| m.mount().runner);
        Ok(MountTable {
            mounts: open,
            lends_runner,
        })
    }

    /// Whether the mount at exactly guest path `guest` is a runner's own.
    #[cfg_attr(not(feature = "wasm"), allow(dead_code))]
    pub(crate) fn runner_at(&self, guest: &str) -> bool {
        self.lends_runner && self.by_guest(guest).is_some_and(|m| m.mount().runner)
    }

    /// The mount at exactly guest path `guest`.
    pub(crate) fn by_guest(&self, guest: &str) -> Option<&OpenMount> {
        self.index_of(guest).map(|i| &self.mounts[i])
    }

    /// The index of the mount at exactly guest path `guest`.
    pub(super) fn index_of(&self, guest: &str) -> Option<usize> {
        self.mounts
            .iter()
            .position(|m| m.mount().guest.as_str() == guest)
    }

    /// The index of the most specific mount covering `path`, and the path
    /// below it.
    pub(super) fn find(&self, path: &GuestPath) -> Option<(usize, String)> {
        self.mounts
            .iter()
            .enumerate()
            .find_map(|(i, m)| path.strip_base(&m.mount().guest).map(|rel| (i, rel)))
    }
}
