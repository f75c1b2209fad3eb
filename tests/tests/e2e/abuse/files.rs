//! The write quota, escapes audited as denials, links that stay inside,
//! mount roots, virtual file times.

use super::*;
use sbx_wasm::Services;
use std::sync::Arc;

#[test]
fn plan_writes_and_folders_are_charged_to_the_write_quota() {
    let w = World::new();
    let caps = w
        .caps_builder()
        .max_write_bytes(100)
        .max_files(4)
        .build()
        .unwrap();
    let mut sb = Sandbox::builder(caps)
        .services(Services::new().clock(Arc::new(TickClock::new(Duration::from_millis(1)))))
        .build()
        .unwrap();
    assert!(sb.run(Op::write("/work/out/a.txt", vec![b'a'; 60])).ok);
    // Overwriting an existing file creates nothing.
    assert!(sb.run(Op::write("/work/out/a.txt", vec![b'a'; 30])).ok);
    let before = w.snapshot();
    denied(
        &sb.run(Op::write("/work/out/b.txt", vec![b'b'; 20])),
        Violation::MaxWriteBytes,
    );
    assert_eq!(w.snapshot(), before, "the refused write left nothing");
    assert_eq!(sb.usage().write_bytes, 90);
    // Hard: the run is halted.
    denied(
        &sb.run(Op::read("/work/data.txt")),
        Violation::MaxWriteBytes,
    );

    let caps = w.caps_builder().max_files(3).build().unwrap();
    let mut sb = Sandbox::new(caps).unwrap();
    assert!(sb.run(Op::mkdir("/work/out/x/y")).ok);
    assert_eq!(sb.usage().files, 2);
    let before = w.snapshot();
    denied(&sb.run(Op::mkdir("/work/out/p/q")), Violation::MaxFiles);
    assert_eq!(w.snapshot(), before);
    let report = sb.report();
    assert_eq!((report.limits.files, report.usage.files), (3, 2));
}

#[test]
fn escapes_the_filesystem_refuses_are_audited_as_denials() {
    let t = mount_tree(&[
        ("data/data.txt", "d"),
        ("out/note.txt", "n"),
        ("secret.txt", "CANARY"),
    ]);
    std::os::unix::fs::symlink("../secret.txt", t.path().join("out/link")).unwrap();
    std::os::unix::fs::symlink(t.path().join("secret.txt"), t.path().join("out/abs")).unwrap();
    let before = snapshot(t.path());
    let r = cli(t.path(), "", &[], "probe", &[]);
    assert_eq!(r.code, Some(0), "{}", r.stdout);
    for (target, violation) in [
        ("/work/out/link", "fs_read_denied"),
        ("/work/out/abs", "fs_read_denied"),
    ] {
        let evs = r.events(target);
        assert!(!evs.is_empty(), "no record of {target}");
        for ev in evs {
            assert_eq!(ev["decision"], "denied", "{ev}");
            assert!(
                ev["violation"] == violation || ev["violation"] == "fs_write_denied",
                "{ev}"
            );
        }
    }
    assert!(!r.stdout.contains("CANARY"));
    // The neighbour: the allowed write is recorded as allowed, and is the
    // only change.
    let fine = r.events("/work/out/fine.txt");
    assert!(fine.iter().all(|e| e["decision"] == "allowed"), "{fine:?}");
    let mut after = snapshot(t.path());
    after.remove(Path::new("out/fine.txt"));
    after.retain(|p, _| {
        !p.starts_with("cache")
            && !p.ends_with("r.json")
            && !p.ends_with("a.jsonl")
            && !p.ends_with("caps.toml")
    });
    let mut before = before;
    before.retain(|p, _| !p.ends_with("caps.toml"));
    assert_eq!(after, before);
}

#[test]
fn symlinks_leading_out_of_the_write_mount_are_never_made() {
    let t = mount_tree(&[("data/notes.txt", "n"), ("secret.txt", "CANARY")]);
    let r = cli(t.path(), "", &[], "abuse", &["links"]);
    assert_eq!(r.code, Some(0), "{}", r.stdout);
    assert!(
        r.stdout
            .contains("/work/out/up -> ../../secret.txt: refused"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout.contains("/work/out/abs -> /etc/passwd: refused"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout
            .contains("/work/out/sneaky -> sub/../../x: refused"),
        "{}",
        r.stdout
    );
    // The neighbour: a link that stays inside is made.
    assert!(
        r.stdout.contains("/work/out/fine -> notes.txt: made"),
        "{}",
        r.stdout
    );
    let out: Vec<_> = std::fs::read_dir(t.path().join("out"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(out, ["fine"], "the host tree holds only the inside link");
    for (target, v) in [
        ("/work/out/up", "fs_write_denied"),
        ("/work/out/abs", "fs_write_denied"),
        ("/work/out/sneaky", "fs_write_denied"),
    ] {
        let evs = r.events(target);
        assert!(evs.iter().any(|e| e["violation"] == v), "{target}: {evs:?}");
    }
}

#[test]
fn renaming_or_removing_a_mount_root_is_a_recorded_denial() {
    let t = mount_tree(&[("data/notes.txt", "n"), ("out/keep.txt", "k")]);
    let before = snapshot(&t.path().join("out"));
    let r = cli(t.path(), "", &[], "abuse", &["rename-root"]);
    assert_eq!(r.code, Some(0), "{}", r.stdout);
    assert!(
        r.stdout.contains("rename /work/out: refused"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout.contains("remove /work/out: refused"),
        "{}",
        r.stdout
    );
    let root_denials = r
        .audit
        .iter()
        .filter(|e| e["violation"] == "fs_write_denied")
        .filter(|e| !e["target"].as_str().unwrap().contains("keep"))
        .count();
    assert!(root_denials >= 2, "{:?}", r.audit);
    assert_eq!(snapshot(&t.path().join("out")), before);
    // The neighbour: renaming a file inside the mount works.
    assert!(
        r.stdout.contains("rename /work/out/keep.txt: ok"),
        "{}",
        r.stdout
    );
}

#[test]
fn guest_writes_stop_at_the_write_quota() {
    let t = mount_tree(&[("data/notes.txt", "n")]);
    let total = |dir: &Path| -> u64 {
        std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().metadata().unwrap().len())
            .sum()
    };
    // Bytes: 1 MB files under a 3.5 MB quota.
    let r = cli(
        t.path(),
        "[budget]\nmax_write_bytes = 3500000\n",
        &[],
        "abuse",
        &["fill", "1000000"],
    );
    assert_eq!(r.code, Some(124), "{}", r.stdout);
    assert_eq!(r.report["violation"], "max_write_bytes");
    let written = total(&t.path().join("out"));
    assert!(written <= 3_500_000, "{written} bytes on the host");
    assert_eq!(r.report["usage"]["write_bytes"].as_u64(), Some(written));
    // Files: tiny files under max_files = 5.
    std::fs::remove_dir_all(t.path().join("out")).unwrap();
    std::fs::create_dir(t.path().join("out")).unwrap();
    let r = cli(
        t.path(),
        "[budget]\nmax_files = 5\n",
        &[],
        "abuse",
        &["fill", "10"],
    );
    assert_eq!(r.code, Some(124), "{}", r.stdout);
    assert_eq!(r.report["violation"], "max_files");
    assert_eq!(std::fs::read_dir(t.path().join("out")).unwrap().count(), 5);
    // Sparse growth counts.
    let r = cli(
        t.path(),
        "[budget]\nmax_write_bytes = 1000000\n",
        &[],
        "abuse",
        &["grow", "10000000000"],
    );
    assert_eq!(r.report["violation"], "max_write_bytes", "{}", r.stdout);
    // A size no file can have (past a signed 64-bit offset) is refused as
    // the OS refuses it, with nothing charged: the run goes on.
    let r = cli(
        t.path(),
        "[budget]\nmax_write_bytes = 1000000\n",
        &[],
        "abuse",
        &["grow", "9223372036854775808"],
    );
    assert_eq!(r.stdout, "grow: Err(InvalidInput)\n");
    assert_eq!(r.report["violation"], serde_json::Value::Null);
    assert_eq!(r.report["usage"]["write_bytes"].as_u64(), Some(0));
    // So does the hole a write far past the end would leave, by a seek
    // (a stream) or positioned: halted with the file never grown. Its
    // neighbour, a short hole, lands and is charged hole and byte.
    for mode in ["hole", "hole-at"] {
        let r = cli(
            t.path(),
            "[budget]\nmax_write_bytes = 1000000\n",
            &[],
            "abuse",
            &[mode, "10000000000"],
        );
        assert_eq!(r.report["violation"], "max_write_bytes", "{}", r.stdout);
        let hole = t.path().join("out/hole.bin");
        assert_eq!(std::fs::metadata(&hole).unwrap().len(), 0, "{mode}");
        let r = cli(
            t.path(),
            "[budget]\nmax_write_bytes = 1000000\n",
            &[],
            "abuse",
            &[mode, "1000"],
        );
        assert_eq!(r.stdout, format!("{mode}: Ok(())\n"));
        assert_eq!(std::fs::metadata(&hole).unwrap().len(), 1001, "{mode}");
        assert_eq!(r.report["usage"]["write_bytes"].as_u64(), Some(1001));
    }
    // A stream started where no file can reach (past a signed 64-bit
    // offset, which only WASI's own call can ask for): its write is
    // `invalid`, as the OS answers, nothing charged and the run going on.
    // The neighbour, a stream at a short hole, lands and is charged.
    let r = cli(
        t.path(),
        "[budget]\nmax_write_bytes = 1000000\n",
        &[],
        "abuse",
        &["stream-at", &(1u64 << 63).to_string()],
    );
    assert_eq!(r.stdout, "stream-at: Err(\"invalid\")\n");
    assert_eq!(r.report["violation"], serde_json::Value::Null);
    assert_eq!(r.report["usage"]["write_bytes"].as_u64(), Some(0));
    let r = cli(
        t.path(),
        "[budget]\nmax_write_bytes = 1000000\n",
        &[],
        "abuse",
        &["stream-at", "1000"],
    );
    assert_eq!(r.stdout, "stream-at: Ok(())\n");
    assert_eq!(
        std::fs::metadata(t.path().join("out/hole.bin"))
            .unwrap()
            .len(),
        1001
    );
    assert_eq!(r.report["usage"]["write_bytes"].as_u64(), Some(1001));
    // The neighbour: within the quota, writes land and are counted.
    std::fs::remove_dir_all(t.path().join("out")).unwrap();
    std::fs::create_dir(t.path().join("out")).unwrap();
    let r = cli(
        t.path(),
        "[budget]\nmax_files = 3\nmax_write_bytes = 100000\n",
        &[],
        "abuse",
        &["fill", "1000"],
    );
    assert_eq!(r.report["violation"], "max_files");
    assert_eq!(total(&t.path().join("out")), 3000);
    assert_eq!(r.report["usage"]["write_bytes"].as_u64(), Some(3000));
    assert_eq!(r.report["limits"]["files"].as_u64(), Some(3));
}

#[test]
fn deterministic_runs_show_virtual_file_times() {
    let t = mount_tree(&[("data/notes.txt", "n")]);
    let a = cli(t.path(), "", &["--deterministic"], "abuse", &["times"]);
    std::thread::sleep(Duration::from_millis(1100));
    let b = cli(t.path(), "", &["--deterministic"], "abuse", &["times"]);
    assert_eq!(a.code, Some(0), "{}", a.stdout);
    assert_eq!(a.stdout, b.stdout);
    assert!(
        a.stdout.contains("modified Some(1767225600000000000)"),
        "{}",
        a.stdout
    );
    // The neighbour: a normal run sees the host's clock.
    let c = cli(t.path(), "", &[], "abuse", &["times"]);
    assert!(!c.stdout.contains("1767225600000000000"), "{}", c.stdout);
}

#[test]
fn a_run_holds_at_most_max_open_files_at_once() {
    let t = mount_tree(&[("data/notes.txt", "n")]);
    let max = sbx_wasm::wasm::MAX_OPEN_FILES;
    let n = (max * 3).to_string();
    let r = cli(
        t.path(),
        "",
        &[],
        "abuse",
        &["hoard", "/work/notes.txt", &n],
    );
    assert_eq!(r.code, Some(0), "{} {}", r.stdout, r.report);
    // Past the bound an open fails softly, as the OS's own limit does, and
    // closing one makes room again (the neighbour).
    assert!(
        r.stdout.contains(&format!("held {max}, then Some(")),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout.contains("after closing one: Ok(())"),
        "{}",
        r.stdout
    );
    // Every open is an op on record, the failed one too (the gate decides
    // before the bound is looked at, so a denial past the bound is still
    // one on record): the held, the failed, the one after closing.
    let opens = r.events("/work/notes.txt").len();
    assert_eq!(opens, max + 2, "{:?}", r.audit.first());
    assert!(
        r.events("/work/notes.txt")
            .iter()
            .all(|e| e["violation"].is_null())
    );
}
