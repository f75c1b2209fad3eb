//! A grant derived with added mounts is the grant built whole with them,
//! and refuses what `build` refuses.

use super::Capabilities;
use std::path::Path;

fn dirs() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for d in ["data", "out", "tmp", "lib", "out/inner"] {
        std::fs::create_dir_all(dir.path().join(d)).unwrap();
    }
    dir
}

fn grant(root: &Path) -> Capabilities {
    Capabilities::builder()
        .read_mount(root.join("data"), "/work")
        .write_mount(root.join("out"), "/work/out")
        .allow_egress("https://api.example.com")
        .allow_tool("search")
        .env("LANG", "C")
        .max_ops(9)
        .build()
        .unwrap()
}

/// The mounts by guest path (the derived grant appends; a rebuilt one
/// lists them in the caps file's order).
fn sorted(caps: &Capabilities) -> Vec<crate::fs::Mount> {
    let mut m = caps.mounts().to_vec();
    m.sort_by(|a, b| a.guest.as_str().cmp(b.guest.as_str()));
    m
}

#[test]
fn a_derived_grant_is_the_grant_rebuilt_with_its_added_mounts() {
    let dir = dirs();
    let caps = grant(dir.path());
    let tmp = dir.path().join("tmp");
    let lib = dir.path().join("lib");

    let derived = caps
        .with_runner_mounts([(lib.clone(), "/usr".to_string())])
        .unwrap()
        .with_private_mount(&tmp, "/tmp")
        .unwrap();
    let rebuilt = caps
        .to_builder()
        .unwrap()
        .runner_mount(&lib, "/usr")
        .private_write_mount(&tmp, "/tmp")
        .build()
        .unwrap();
    assert_eq!(sorted(&derived), sorted(&rebuilt));
    assert_eq!(derived.mounts().len(), 4);
    let private = derived.mounts().iter().find(|m| m.private).unwrap();
    assert_eq!(private.host, std::fs::canonicalize(&tmp).unwrap());
    assert!(derived.mounts().iter().any(|m| m.runner));
    // Everything else is the grant's own.
    assert_eq!(derived.to_file().net, caps.to_file().net);
    assert_eq!(derived.tools(), caps.tools());
    assert_eq!(derived.env(), caps.env());
    assert_eq!(derived.budget(), caps.budget());
    assert_eq!(derived.flow(), caps.flow());
    assert_eq!(derived.warnings(), caps.warnings());
    // The grant it came from is as it was.
    assert_eq!(caps.mounts().len(), 2);
}

#[test]
fn an_added_mount_is_checked_as_build_checks_it() {
    let dir = dirs();
    let caps = grant(dir.path());
    let tmp = dir.path().join("tmp");
    let taken = caps.with_private_mount(&tmp, "/work/out").unwrap_err();
    assert!(taken.to_string().contains("already mounted"), "{taken}");
    let missing = caps
        .with_private_mount(&dir.path().join("absent"), "/tmp")
        .unwrap_err();
    assert!(missing.to_string().contains("absent"), "{missing}");
    let relative = caps.with_private_mount(&tmp, "tmp").unwrap_err();
    assert!(relative.to_string().contains("guest"), "{relative}");
    // A runner's folder lent read-only inside the grant's write mount
    // would be writable through it.
    let inside = caps
        .with_runner_mounts([(dir.path().join("out/inner"), "/usr".to_string())])
        .unwrap_err();
    assert!(
        inside.to_string().contains("inside write mount"),
        "{inside}"
    );
    // Its neighbour, outside every write mount, is lent.
    let lent = caps.with_runner_mounts([(dir.path().join("lib"), "/usr".to_string())]);
    assert_eq!(lent.unwrap().mounts().len(), 3);
}
