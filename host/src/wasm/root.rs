//! The empty root preopen: a folder that grants nothing, so that paths
//! outside every mount reach the host, to be refused and audited; and the
//! preopens a run is lent, made from handles opened before it.

use super::{LoadError, WasmHost, setup};
use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::Ordering;
use wasmtime_wasi::filesystem::Dir;
use wasmtime_wasi::{FsPerms, OpenMode};

/// An empty folder for the root preopen, which grants nothing: it only makes
/// paths outside every mount reach the host, to be refused and audited. One
/// per host, made on first use.
///
/// The folder is removed from the file system as soon as it is open: runs
/// are lent the open handle, a deleted folder stays empty (nothing can be
/// created in it), and nothing is left on disk whatever ends the process,
/// `kill -9` included. Where it cannot be removed at once it is kept and
/// removed when the host is dropped (or before confinement).
pub(super) struct EmptyRoot {
    /// The open folder, as WASI lends it.
    dir: Dir,
    /// The folder on disk, when it could not be removed at once.
    pub(super) on_disk: Option<PathBuf>,
}

fn make_empty_root() -> std::io::Result<EmptyRoot> {
    static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let path = std::env::temp_dir().join(format!(
        "sbx-wasm-root-{}-{}-{nanos}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir(&path)?;
    let opened = cap_std::fs::Dir::open_ambient_dir(&path, cap_std::ambient_authority());
    let removed = std::fs::remove_dir(&path).is_ok();
    let file = opened?.into_std_file();
    Ok(EmptyRoot {
        // Every run's WASI folders are made from this one
        // (`WasmHost::lend`), so this is also where the setting they share
        // is chosen: file work is handed to the runtime's blocking pool
        // (wasmtime-wasi's default), never done on the guest's thread.
        dir: Dir::new(file, FsPerms::ReadOnly, OpenMode::READ, false),
        on_disk: (!removed).then_some(path),
    })
}

impl WasmHost {
    /// The empty root, made if needed.
    fn empty_root(&self) -> Result<Dir, LoadError> {
        let mut slot = self
            .shared
            .empty_root
            .lock()
            .map_err(|_| setup("empty root lock poisoned".into()))?;
        if let Some(root) = slot.as_ref() {
            return Ok(root.dir.clone());
        }
        let root = make_empty_root()
            .map_err(|e| setup(format!("cannot create the empty root folder: {e}")))?;
        let dir = root.dir.clone();
        *slot = Some(root);
        Ok(dir)
    }

    /// The empty root, as a run's preopens start from it (`Preopens`).
    pub(super) fn unlent(&self) -> Result<Preopens, LoadError> {
        Ok(Preopens::Unlent(self.empty_root()?))
    }
}

/// What a run's `get-directories` lends: made at the guest's first call, so
/// a run that never asks for its folders makes no system call for them
/// (checking that a held folder was not removed is one `fstat` a mount).
pub(super) enum Preopens {
    /// Not asked for yet: the empty root, which the mounts' folders are
    /// lent with the settings of.
    Unlent(Dir),
    /// Lent: each with its guest path.
    Lent(Vec<(Dir, String)>),
}

impl Preopens {
    /// The folders, in order: the grant's mounts (a program that takes
    /// "the directory it was given" takes the first), then the empty root,
    /// unless the grant mounts a folder at `/` (which then plays its
    /// part). Each mount is lent the folder `gate` holds, which the grant
    /// opened before (`capability/fs/folders.rs`): no path is walked here
    /// unless the folder was removed since.
    pub(super) fn lend(&mut self, gate: &crate::gate::Sandbox) -> Result<&[(Dir, String)], String> {
        if let Preopens::Unlent(root) = self {
            let root = root.clone();
            let mounts = gate.caps().mounts();
            let mut lent = Vec::with_capacity(mounts.len() + 1);
            for m in mounts {
                let guest = m.guest.as_str();
                let file = match gate.mount_folder(guest) {
                    Some(Ok(file)) => file,
                    Some(Err(e)) => {
                        return Err(format!(
                            "the folder of the mount {guest} cannot be lent: {e}"
                        ));
                    }
                    None => return Err(format!("the gate holds no folder for {guest}")),
                };
                // wasmtime-wasi makes its folders from a path alone; this
                // one takes the root's settings and the grant's handle.
                let mut dir = root.clone();
                dir.dir = file;
                (dir.perms, dir.open_mode) = match m.access {
                    crate::fs::Access::ReadOnly => (FsPerms::ReadOnly, OpenMode::READ),
                    crate::fs::Access::ReadWrite => {
                        (FsPerms::ReadWrite, OpenMode::READ | OpenMode::WRITE)
                    }
                };
                lent.push((dir, guest.to_owned()));
            }
            if !mounts.iter().any(|m| m.guest.as_str() == "/") {
                lent.push((root, "/".to_owned()));
            }
            *self = Preopens::Lent(lent);
        }
        match self {
            Preopens::Lent(lent) => Ok(lent),
            Preopens::Unlent(_) => unreachable!("lent above"),
        }
    }
}

/// Forget the empty root, removing its folder if it has one on disk.
pub(super) fn drop_root(slot: &Mutex<Option<EmptyRoot>>) {
    if let Ok(mut slot) = slot.lock()
        && let Some(root) = slot.take()
        && let Some(dir) = root.on_disk
    {
        let _ = std::fs::remove_dir(dir);
    }
}
