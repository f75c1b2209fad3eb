//! The empty root preopen: a folder that grants nothing, so that paths
//! outside every mount reach the host, to be refused and audited.

use super::{LoadError, WasmHost, setup};
use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::Ordering;

/// An empty folder for the root preopen, which grants nothing: it only makes
/// paths outside every mount reach the host, to be refused and audited. One
/// per host, made on first use.
///
/// The folder is removed from the file system as soon as it is open, and
/// runs preopen it through the open handle (`/proc/self/fd/N`): a deleted
/// folder stays empty (nothing can be created in it), and nothing is left
/// on disk whatever ends the process, `kill -9` included; the kernel frees
/// it with the handle. Without `/proc` the folder is kept and removed when
/// the host is dropped (or before confinement, once the run has it open).
#[derive(Debug)]
pub(super) struct EmptyRoot {
    /// What a run preopens.
    pub(super) path: PathBuf,
    /// The open folder, when `path` names it through `/proc/self/fd`.
    _handle: Option<std::fs::File>,
    /// The folder on disk, when it could not be removed at once.
    pub(super) on_disk: Option<PathBuf>,
}

pub(super) fn make_empty_root() -> std::io::Result<EmptyRoot> {
    use std::os::fd::AsRawFd;
    static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let dir = std::env::temp_dir().join(format!(
        "sbx-wasm-root-{}-{}-{nanos}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir(&dir)?;
    let handle = std::fs::File::open(&dir)?;
    let via_fd = PathBuf::from(format!("/proc/self/fd/{}", handle.as_raw_fd()));
    if std::fs::metadata(&via_fd).is_ok_and(|m| m.is_dir()) && std::fs::remove_dir(&dir).is_ok() {
        return Ok(EmptyRoot {
            path: via_fd,
            _handle: Some(handle),
            on_disk: None,
        });
    }
    Ok(EmptyRoot {
        path: dir.clone(),
        _handle: None,
        on_disk: Some(dir),
    })
}

impl WasmHost {
    /// The empty root folder's preopen path, made if needed.
    pub(super) fn empty_root(&self) -> Result<PathBuf, LoadError> {
        let mut slot = self
            .shared
            .empty_root
            .lock()
            .map_err(|_| setup("empty root lock poisoned".into()))?;
        if let Some(root) = slot.as_ref() {
            return Ok(root.path.clone());
        }
        let root = make_empty_root()
            .map_err(|e| setup(format!("cannot create the empty root folder: {e}")))?;
        let path = root.path.clone();
        *slot = Some(root);
        Ok(path)
    }

    pub(super) fn drop_empty_root(&self) {
        drop_root(&self.shared.empty_root);
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
