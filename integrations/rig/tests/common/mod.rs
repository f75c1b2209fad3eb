//! What the rig tests share: the host an agent framework keeps, and the
//! benign component's tree and grant.

use sbx_wasm::Capabilities;
use sbx_wasm::wasm::{ArtifactCache, WasmHost};
use sbx_wasm_tests::{guest, mount_tree, repo_root};
use std::path::PathBuf;

/// The host an agent framework keeps, with the artifact cache the other
/// tests share (the Python runner compiles once).
pub fn host() -> WasmHost {
    let cache = ArtifactCache::open(repo_root().join("target/sbx-test-cache")).unwrap();
    WasmHost::new().unwrap().with_cache(cache)
}

/// The benign component's world: its CSV under a read mount, an `out`
/// write mount, a secret beside them that no grant names; the grant; and
/// the folder of the built components.
pub fn benign_world() -> (tempfile::TempDir, Capabilities, PathBuf) {
    let tree = mount_tree(&[
        ("data/data.csv", "quarter,revenue\nQ1,10\nQ2,32\n"),
        ("secret.txt", "CANARY"),
    ]);
    std::fs::create_dir_all(tree.path().join("out")).unwrap();
    let caps = Capabilities::builder()
        .read_mount(tree.path().join("data"), "/work")
        .write_mount(tree.path().join("out"), "/work/out")
        .build()
        .unwrap();
    let folder = guest("benign").parent().unwrap().to_path_buf();
    (tree, caps, folder)
}
