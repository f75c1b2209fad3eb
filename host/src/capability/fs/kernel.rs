//! What the file capability needs from the kernel wall: Landlock lets the
//! confined process read beneath read mounts and read and write beneath
//! write mounts, so a wasm escape finds only what the grant names.

use super::{Access, Mount};
use std::path::PathBuf;

/// The host folders to allow reading beneath, and reading and writing
/// beneath, for `mounts`.
pub(crate) fn kernel_needs(mounts: &[Mount]) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let mut read = Vec::new();
    let mut write = Vec::new();
    for m in mounts {
        match m.access {
            Access::ReadOnly => read.push(m.host.clone()),
            Access::ReadWrite => write.push(m.host.clone()),
        }
    }
    (read, write)
}
