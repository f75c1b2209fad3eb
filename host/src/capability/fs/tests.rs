//! The file capability alone: check, permit, effect, and the one escape
//! check, on real temp folders, without the gate or wasmtime. Every denial
//! sits beside its allowed neighbour and asserts the host tree unchanged.

use super::mount::OpenMount;
use crate::capability::tests::{Rig, denied};
use crate::capability::{Op, Output};
use crate::caps::Capabilities;
use crate::failure::Failure;
use crate::services::Services;
use crate::violation::Violation;
use std::os::unix::fs::symlink;
use std::path::Path;

struct Tree {
    _dir: tempfile::TempDir,
    data: std::path::PathBuf,
    out: std::path::PathBuf,
    secret: std::path::PathBuf,
}

fn tree() -> Tree {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let out = dir.path().join("out");
    std::fs::create_dir_all(&data).unwrap();
    std::fs::create_dir_all(&out).unwrap();
    std::fs::write(data.join("a.txt"), "alpha").unwrap();
    let secret = dir.path().join("secret.txt");
    std::fs::write(&secret, "do not read").unwrap();
    Tree {
        data: data.canonicalize().unwrap(),
        out: out.canonicalize().unwrap(),
        secret,
        _dir: dir,
    }
}

fn rig(t: &Tree) -> Rig {
    let caps = Capabilities::builder()
        .read_mount(&t.data, "/work")
        .write_mount(&t.out, "/work/out")
        .build()
        .unwrap();
    Rig::new(caps, Services::default())
}

fn listing(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let body = std::fs::read(e.path()).unwrap_or_default();
            (e.file_name().to_string_lossy().into_owned(), body)
        })
        .collect();
    v.sort();
    v
}

#[test]
fn a_read_in_a_read_mount_is_permitted_by_that_mount_and_reads_it() {
    let t = tree();
    let rig = rig(&t);
    let op = Op::read("/work/a.txt");
    let permit = rig.check(&op).unwrap();
    assert_eq!(
        permit.rule(),
        format!("read mount /work (host {})", t.data.display())
    );
    assert!(!permit.writes());
    match rig.perform(&op, permit).unwrap() {
        Output::Data { content } => assert_eq!(content.0, b"alpha"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_write_is_permitted_only_by_the_write_mount_and_lands_only_there() {
    let t = tree();
    let rig = rig(&t);
    let before = listing(&t.data);
    // Denied: a write into the read-only mount; nothing changes there.
    assert_eq!(
        denied(rig.check(&Op::write("/work/b.txt", "x"))),
        Violation::FsWriteDenied
    );
    assert_eq!(listing(&t.data), before);
    // Its neighbour: the same write in the write mount.
    let op = Op::write("/work/out/b.txt", "x");
    let permit = rig.check(&op).unwrap();
    assert!(permit.writes());
    assert!(permit.rule().starts_with("write mount /work/out "));
    assert!(matches!(
        rig.perform(&op, permit).unwrap(),
        Output::Written { bytes: 1 }
    ));
    assert_eq!(std::fs::read(t.out.join("b.txt")).unwrap(), b"x");
    assert_eq!(listing(&t.data), before);
}

#[test]
fn paths_outside_every_mount_and_dot_dot_are_denied_before_any_effect() {
    let t = tree();
    let rig = rig(&t);
    assert_eq!(
        denied(rig.check(&Op::read("/etc/passwd"))),
        Violation::FsReadDenied
    );
    assert_eq!(
        denied(rig.check(&Op::read("/work/../secret.txt"))),
        Violation::PathTraversal
    );
    // `/work` never authorizes `/workshop`.
    assert_eq!(
        denied(rig.check(&Op::read("/workshop/a.txt"))),
        Violation::FsReadDenied
    );
    assert!(rig.check(&Op::read("/work/a.txt")).is_ok());
}

#[test]
fn a_link_planted_in_a_mount_that_leads_out_is_refused_as_a_read_denial() {
    let t = tree();
    symlink(&t.secret, t.data.join("abs")).unwrap();
    symlink("../secret.txt", t.data.join("rel")).unwrap();
    symlink("a.txt", t.data.join("inside")).unwrap();
    let rig = rig(&t);
    for name in ["abs", "rel"] {
        let op = Op::read(format!("/work/{name}"));
        // The path is inside the mount, so the check allows it; the effect,
        // through the mount's handle, refuses to follow the link out.
        match rig.run(&op).unwrap() {
            Err(Failure::Denied(d)) => assert_eq!(d.violation, Violation::FsReadDenied, "{name}"),
            other => panic!("{name}: {other:?}"),
        }
    }
    match rig.run(&Op::read("/work/inside")).unwrap().unwrap() {
        Output::Data { content } => assert_eq!(content.0, b"alpha"),
        other => panic!("{other:?}"),
    }
    assert_eq!(std::fs::read(&t.secret).unwrap(), b"do not read");
}

fn open(dir: &Path) -> OpenMount {
    let caps = Capabilities::builder()
        .read_mount(dir, "/work")
        .build()
        .unwrap();
    OpenMount::open(caps.mounts_shared(), 0, caps.folders()).unwrap()
}

#[test]
fn escapes_is_decided_by_resolution_below_the_mount() {
    let t = tree();
    std::fs::create_dir(t.data.join("sub")).unwrap();
    symlink("/etc", t.data.join("absolute")).unwrap();
    symlink("../..", t.data.join("sub/up")).unwrap();
    symlink("../a.txt", t.data.join("sub/sibling")).unwrap();
    symlink("nowhere", t.data.join("dangling")).unwrap();
    symlink("loop_b", t.data.join("loop_a")).unwrap();
    symlink("loop_a", t.data.join("loop_b")).unwrap();
    let m = open(&t.data);
    // Out: an absolute link, a `..` above the root, a link climbing out.
    assert!(m.escapes("absolute"));
    assert!(m.escapes("absolute/passwd"));
    assert!(m.escapes(".."));
    assert!(m.escapes("sub/../../x"));
    assert!(m.escapes("sub/up"));
    // In: plain paths, a relative link that stays inside, a dangling link
    // (nothing to reach), a loop (the file layer's own error, no escape).
    assert!(!m.escapes("a.txt"));
    assert!(!m.escapes("sub/../a.txt"));
    assert!(!m.escapes("sub/sibling"));
    assert!(!m.escapes("dangling"));
    assert!(!m.escapes("loop_a"));
    assert!(!m.escapes("missing/deeper"));
}

/// A grant opens each folder once: its clones and the grants derived from
/// it borrow the same handle; a derived grant's private folder is its own.
#[test]
fn a_grant_opens_each_folder_once_for_its_clones_and_derived_grants() {
    use crate::fs::Mount;
    use std::sync::Arc;
    let t = tree();
    let caps = Capabilities::builder()
        .read_mount(&t.data, "/work")
        .build()
        .unwrap();
    let open = |grant: &Capabilities, m: &Mount| grant.folders().open(&m.host, m.private).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    // A run's grant: the parent's, with a private /tmp.
    let with_tmp = || {
        caps.to_builder()
            .unwrap()
            .private_write_mount(tmp.path(), "/tmp")
            .build()
            .unwrap()
    };
    let private_of =
        |grant: &Capabilities| grant.mounts().iter().find(|m| m.private).cloned().unwrap();
    let m = &caps.mounts()[0];
    let first = open(&caps, m);
    assert!(Arc::ptr_eq(&first, &open(&caps.clone(), m)));
    let derived = with_tmp();
    let work = derived
        .mounts()
        .iter()
        .find(|m| m.guest.as_str() == "/work")
        .unwrap();
    assert!(Arc::ptr_eq(&first, &open(&derived, work)));
    // The private folder stays with the run's grant, never the parent's.
    let private = private_of(&derived);
    let own = open(&derived, &private);
    assert!(Arc::ptr_eq(&own, &open(&derived, &private)));
    let again = with_tmp();
    assert!(!Arc::ptr_eq(&own, &open(&again, &private_of(&again))));
    // A mount a derived grant adds (the MCP door's session folder) is the
    // derived grant's too: a parent kept by a server holds its own
    // folders only, however many sessions derive from it.
    for i in 0..20 {
        let session = tmp.path().join(format!("session{i}"));
        std::fs::create_dir(&session).unwrap();
        let derived = caps
            .to_builder()
            .unwrap()
            .write_mount(&session, "/scratch")
            .build()
            .unwrap();
        for m in derived.mounts() {
            open(&derived, m);
        }
        assert_eq!(derived.folders().held(), 1);
    }
    assert_eq!(caps.folders().held(), 1, "the parent holds /work alone");
}

/// The handle is the capability: a folder moved after the grant's first
/// run is still the folder its runs write to, and a link planted at its
/// path is never followed, even once the folder is gone; a folder removed
/// and made again at the path is opened afresh.
#[test]
fn a_folder_moved_or_replaced_by_a_link_is_not_followed() {
    let t = tree();
    let elsewhere = t.out.parent().unwrap().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    let caps = Capabilities::builder()
        .write_mount(&t.out, "/out")
        .build()
        .unwrap();
    let write = |name: &str| {
        let rig = Rig::new(caps.clone(), Services::default());
        rig.run(&Op::write(format!("/out/{name}"), "x")).unwrap()
    };
    assert!(write("a.txt").is_ok());
    let moved = t.out.with_file_name("out.moved");
    std::fs::rename(&t.out, &moved).unwrap();
    symlink(&elsewhere, &t.out).unwrap();
    assert!(write("b.txt").is_ok());
    assert_eq!(
        listing(&moved).len(),
        2,
        "the run wrote where the grant's folder is"
    );
    assert!(listing(&elsewhere).is_empty());
    // The folder itself gone: the path, now a link, is refused, at the
    // run's first use of the mount (a run that never reaches it does not
    // look), and every use after it in that run.
    std::fs::remove_dir_all(&moved).unwrap();
    let rig = Rig::new(caps.clone(), Services::default());
    for op in [Op::write("/out/d.txt", "x"), Op::read("/out/a.txt")] {
        let refused = format!("{:?}", rig.run(&op));
        assert!(
            refused.contains("no longer the folder the grant named"),
            "{refused}"
        );
    }
    assert!(listing(&elsewhere).is_empty());
    // Its neighbour: a folder made again at the path is the grant's.
    std::fs::remove_file(&t.out).unwrap();
    std::fs::create_dir(&t.out).unwrap();
    assert!(write("c.txt").is_ok());
    assert_eq!(std::fs::read(t.out.join("c.txt")).unwrap(), b"x");
    assert!(listing(&elsewhere).is_empty());
}
