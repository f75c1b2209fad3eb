//! The gate's pipeline alone, without wasm: the order (charge, check,
//! perform, meter, record), hard halts, and what the audit keeps. The
//! capabilities' own decisions are their tests' (`capability/*/tests.rs`).

use crate::{Capabilities, Op, Sandbox, Violation};

fn tree() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("out")).unwrap();
    std::fs::write(dir.path().join("small.txt"), "12345").unwrap();
    std::fs::write(dir.path().join("big.txt"), "x".repeat(500)).unwrap();
    dir
}

fn sandbox(dir: &std::path::Path, max_ops: u64, max_output: u64) -> Sandbox {
    let caps = Capabilities::builder()
        .read_mount(dir, "/work")
        .write_mount(dir.join("out"), "/work/out")
        .max_ops(max_ops)
        .max_output_bytes(max_output)
        .build()
        .unwrap();
    Sandbox::new(caps).unwrap()
}

#[test]
fn denied_ops_are_charged_and_a_hard_limit_refuses_every_later_op() {
    let dir = tree();
    let mut sb = sandbox(dir.path(), 2, 1000);
    let denied = sb.run(Op::read("/etc/passwd"));
    assert_eq!(denied.violation(), Some(Violation::FsReadDenied));
    assert!(!denied.hard());
    assert!(sb.run(Op::read("/work/small.txt")).ok, "the second op fits");
    // The third is over max_ops, though it would be allowed; so is every
    // op after it, and none is performed.
    for _ in 0..3 {
        let r = sb.run(Op::write("/work/out/late.txt", "x"));
        assert_eq!(r.violation(), Some(Violation::MaxOps));
        assert!(r.hard());
    }
    assert!(!dir.path().join("out/late.txt").exists());
    assert_eq!(
        sb.usage().ops,
        3,
        "charged up to the one that broke the limit"
    );
}

#[test]
fn a_result_over_the_output_budget_is_withheld_and_halts() {
    let dir = tree();
    let mut sb = sandbox(dir.path(), 10, 100);
    let small = sb.run(Op::read("/work/small.txt"));
    assert!(small.ok && small.output.is_some());
    let big = sb.run(Op::read("/work/big.txt"));
    assert_eq!(big.violation(), Some(Violation::MaxOutputBytes));
    assert!(big.hard() && big.output.is_none());
    assert_eq!(
        sb.usage().output_bytes,
        5,
        "only what was returned is counted"
    );
}

#[test]
fn the_audit_keeps_every_decision_in_order_with_the_rule_that_allowed_it() {
    let dir = tree();
    let mut sb = sandbox(dir.path(), 10, 1000);
    sb.run(Op::read("/work/small.txt"));
    sb.run(Op::fetch("https://evil.test/"));
    sb.run(Op::write("/work/out/r.txt", "done"));
    let audit = sb.audit();
    let got: Vec<_> = audit
        .iter()
        .map(|e| (e.seq, e.op.as_str(), e.violation))
        .collect();
    assert_eq!(
        got,
        [
            (1, "fs_read", None),
            (2, "net_fetch", Some(Violation::EgressDenied)),
            (3, "fs_write", None)
        ]
    );
    assert!(
        audit[0]
            .rule
            .as_deref()
            .unwrap()
            .starts_with("read mount /work ")
    );
    assert!(audit[1].rule.is_none());
    assert!(
        audit[2]
            .rule
            .as_deref()
            .unwrap()
            .starts_with("write mount /work/out ")
    );
    // What `check` says is what `run` did, and `check` performs nothing.
    let permit = sb.check(&Op::write("/work/out/s.txt", "x")).unwrap();
    assert_eq!(Some(permit.rule()), audit[2].rule.as_deref());
    assert!(!dir.path().join("out/s.txt").exists());
}

#[test]
fn a_listing_larger_than_the_output_left_stops_reading_and_halts_the_run() {
    let dir = tree();
    let many = dir.path().join("many");
    std::fs::create_dir(&many).unwrap();
    for i in 0..2000 {
        std::fs::write(many.join(format!("file-{i:05}.txt")), "").unwrap();
    }
    // The allowed neighbour: a budget that holds the listing.
    let mut sb = sandbox(dir.path(), 10, 100_000);
    let r = sb.run(Op::list("/work/many"));
    assert!(r.ok, "{r:?}");
    match r.output {
        Some(crate::Output::Entries { entries }) => assert_eq!(entries.len(), 2000),
        other => panic!("{other:?}"),
    }
    // 2,000 names of 14 bytes (and a separator) are 30,000 bytes charged.
    let mut sb = sandbox(dir.path(), 10, 20_000);
    let r = sb.run(Op::list("/work/many"));
    assert_eq!(r.violation(), Some(Violation::MaxOutputBytes));
    assert!(r.hard());
}

#[test]
fn a_runners_own_folder_lends_reads_uncharged_and_unrecorded_and_refuses_the_rest() {
    let dir = tree();
    let lib = tempfile::tempdir().unwrap();
    std::fs::write(lib.path().join("stdlib.zip"), "zip").unwrap();
    let caps = Capabilities::builder()
        .read_mount(dir.path(), "/work")
        .runner_mount(lib.path(), "/usr")
        .max_ops(1)
        .build()
        .unwrap();
    // A caps file cannot hold it (it is the runner's to lend), and a
    // grant widened from these keeps it.
    assert!(!caps.to_toml().contains("/usr"), "{}", caps.to_toml());
    let wider = caps.to_builder().unwrap().build().unwrap();
    assert!(
        wider
            .mounts()
            .iter()
            .any(|m| m.runner && m.guest.as_str() == "/usr")
    );
    let mut sb = Sandbox::new(caps).unwrap();
    // Reads through it: checked, neither charged nor recorded, however many.
    for _ in 0..5 {
        let permit = sb.admit_runner_read(&Op::stat("/usr/stdlib.zip"), "/usr");
        assert!(matches!(permit, Some(Ok(_))));
    }
    // Its check still holds (no way out of the folder).
    let out = sb.admit_runner_read(&Op::stat("/usr/../work/small.txt"), "/usr");
    assert!(matches!(out, Some(Err(_))), "{out:?}");
    assert_eq!(sb.usage().ops, 0);
    assert!(sb.audit().is_empty());
    // Anything else is not its to lend: the gate's, charged and recorded.
    let write = Op::write("/usr/planted.py", "x");
    assert!(sb.admit_runner_read(&write, "/usr").is_none());
    let refused = sb.admit_via(write, "/usr").unwrap_err();
    assert_eq!(refused.violation, Violation::FsWriteDenied);
    assert_eq!(sb.usage().ops, 1);
    assert_eq!(sb.audit().len(), 1);
    assert!(!lib.path().join("planted.py").exists());
    // The neighbour through a granted mount: charged as ever (and past
    // max_ops here).
    let over = sb
        .admit_via(Op::stat("/work/small.txt"), "/work")
        .unwrap_err();
    assert_eq!(over.violation, Violation::MaxOps);
}
