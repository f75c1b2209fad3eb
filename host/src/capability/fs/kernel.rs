//! The file capability's kernel rules: Landlock lets the confined process
//! read beneath read mounts and read and write beneath write mounts, so a
//! wasm escape finds only what the grant names.

use super::{Access, Mount};
use crate::confine::Policy;

/// Add the mounts' host folders to `policy`.
pub(crate) fn kernel_rules(mounts: &[Mount], policy: &mut Policy) {
    for m in mounts {
        match m.access {
            Access::ReadOnly => policy.read.push(m.host.clone()),
            Access::ReadWrite => policy.write.push(m.host.clone()),
        }
    }
}
