//! Behaviours 1-13: what the grant allows and refuses.

use super::*;

// 1
#[test]
fn capabilities_are_frozen_after_load() {
    let w = World::new();
    let caps_file = w.path("caps.toml");
    std::fs::write(
        &caps_file,
        "[fs]\nread = [{ host = \"work\", guest = \"/work\" }]\n",
    )
    .unwrap();
    let caps = Capabilities::from_file(&caps_file).unwrap();
    let before = caps.clone();
    let mut sb = sandbox(&w, caps);
    // Widening the file after load grants nothing to the running sandbox.
    std::fs::write(
        &caps_file,
        "[fs]\nread = [{ host = \"etc\", guest = \"/etc\" }]\n",
    )
    .unwrap();
    assert!(sb.run(Op::read("/work/data.txt")).ok);
    assert_denied(&sb.run(Op::read("/etc/passwd")), Violation::FsReadDenied);
    assert_eq!(sb.caps(), &before);
}

// 2
#[test]
fn negative_budget_is_rejected() {
    let w = World::new();
    let err = Capabilities::from_toml("[budget]\nmax_ops = -1\n", w.root(), None).unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("budget.max_ops") && msg.contains("non-negative"),
        "{msg}"
    );
    let ok = Capabilities::from_toml("[budget]\nmax_ops = 0\n", w.root(), None).unwrap();
    assert_eq!(ok.budget().max_ops, 0);
}

// 3
#[test]
fn has_traversal_flags_dotdot_components() {
    assert!(has_traversal("/work/../etc/passwd"));
    assert!(has_traversal("/work/out/.."));
    assert!(has_traversal("..\\etc"));
    assert!(!has_traversal("/work/..data"));
    assert!(!has_traversal("/work/data.txt"));
}

// 4
#[test]
fn canonical_collapses_dot_and_duplicate_separators() {
    assert_eq!(canonical("/work/./out//report.txt"), "/work/out/report.txt");
    assert_eq!(canonical("/work/"), "/work");
    assert_ne!(canonical("/work/a"), canonical("/workshop/a"));
}

// 5
#[test]
fn work_does_not_authorize_workshop() {
    let (_w, mut sb) = seed();
    assert!(sb.run(Op::read("/work/data.txt")).ok);
    assert_denied(
        &sb.run(Op::read("/workshop/secret.txt")),
        Violation::FsReadDenied,
    );
    assert_denied(
        &sb.run(Op::write("/work/outside.txt", "x")),
        Violation::FsWriteDenied,
    );
    assert_denied(
        &sb.run(Op::write("/work/outx/r.txt", "x")),
        Violation::FsWriteDenied,
    );
}

// 6
#[test]
fn read_inside_allowlist_is_allowed() {
    let (_w, mut sb) = seed();
    let r = sb.run(Op::read("/work/data.txt"));
    assert!(r.ok && r.violation().is_none(), "{r:?}");
    assert_eq!(result_text(&r), DATA);
    assert!(r.rule.as_deref().unwrap().contains("/work"));
}

// 7
#[test]
fn read_outside_allowlist_is_denied() {
    let (_w, mut sb) = seed();
    assert_denied(&sb.run(Op::read("/etc/passwd")), Violation::FsReadDenied);
    assert!(sb.run(Op::read("/work/data.txt")).ok);
}

// 8
#[test]
fn dotdot_read_is_path_traversal() {
    let (_w, mut sb) = seed();
    assert_denied(
        &sb.run(Op::read("/work/../etc/passwd")),
        Violation::PathTraversal,
    );
    assert_denied(
        &sb.run(Op::read("/work/out/../../etc/passwd")),
        Violation::PathTraversal,
    );
    assert!(sb.run(Op::read("/work/./data.txt")).ok);
}

// 9
#[test]
fn write_inside_write_allowlist_lands() {
    let (w, mut sb) = seed();
    let r = sb.run(Op::write("/work/out/report.txt", "all good"));
    assert!(r.ok, "{r:?}");
    assert_eq!(
        std::fs::read_to_string(w.path("work/out/report.txt")).unwrap(),
        "all good"
    );
}

// 10
#[test]
fn write_outside_allowlist_is_denied_and_tree_unchanged() {
    let (w, mut sb) = seed();
    let before = w.snapshot();
    assert_denied(
        &sb.run(Op::write("/system/boot.cfg", "pwned")),
        Violation::FsWriteDenied,
    );
    assert_denied(
        &sb.run(Op::write("/etc/passwd", "pwned")),
        Violation::FsWriteDenied,
    );
    assert_eq!(w.snapshot(), before);
    assert!(sb.run(Op::write("/work/out/ok.txt", "fine")).ok);
    assert_ne!(w.snapshot(), before);
}

// 11
#[test]
fn write_to_read_only_mount_is_denied() {
    let (w, mut sb) = seed();
    let before = w.snapshot();
    assert_denied(
        &sb.run(Op::write("/work/data.txt", "tampered")),
        Violation::FsWriteDenied,
    );
    assert_denied(
        &sb.run(Op::remove("/work/data.txt")),
        Violation::FsWriteDenied,
    );
    assert_denied(&sb.run(Op::mkdir("/work/newdir")), Violation::FsWriteDenied);
    assert_eq!(w.snapshot(), before);
    assert!(sb.run(Op::read("/work/data.txt")).ok);
}

// 12
#[test]
fn dotdot_write_is_path_traversal_and_tree_unchanged() {
    let (w, mut sb) = seed();
    let before = w.snapshot();
    assert_denied(
        &sb.run(Op::write("/work/out/../../workshop/pwned.txt", "x")),
        Violation::PathTraversal,
    );
    assert_eq!(w.snapshot(), before);
    assert!(sb.run(Op::write("/work/out/./fine.txt", "x")).ok);
}

// 13
#[test]
fn fetch_to_allowed_host_succeeds() {
    let w = World::new();
    let server = LoopbackServer::start();
    let caps = w
        .caps_builder()
        .allow_egress(server.origin())
        .build()
        .unwrap();
    let mut sb = sandbox(&w, caps);
    let r = sb.run(Op::fetch(format!("{}/status", server.origin())));
    assert!(r.ok, "{r:?}");
    assert_eq!(result_text(&r), "ok");
    assert_eq!(server.connections(), 1);
}
