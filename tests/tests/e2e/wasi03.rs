//! WASI 0.3 commands (`guest-examples/agents/src/bin/p3_agent.rs`, built
//! with the `wasip3` bindings): they run under the same budgets as 0.2
//! guests, see the run's arguments, environment, clocks and randomness
//! (deterministic mode included), read and write granted folders through
//! the gate (ops, audit, the write quota), and one importing what no host
//! lends is refused before compiling. 0.2 components keep their own
//! engine beside them.

use sbx_wasm::wasm::{RunOptions, WasmHost, WasmRun};
use sbx_wasm::{Capabilities, CapabilitiesBuilder, Violation};
use sbx_wasm_tests::{guest, mount_tree, sbx_cached, sbx_in, snapshot};
use std::time::{Duration, Instant};

fn run(host: &WasmHost, caps: CapabilitiesBuilder, args: &[&str]) -> WasmRun {
    let agent = host
        .prepare(&host.load(&guest("p3_agent")).unwrap())
        .unwrap();
    let opts = RunOptions::new(caps.build().unwrap()).args(args.iter().copied());
    host.run_prepared(&agent, opts).unwrap()
}

fn out(run: &WasmRun) -> String {
    String::from_utf8_lossy(&run.stdout).into_owned()
}

#[test]
fn a_wasi_0_3_command_runs_with_the_runs_arguments_environment_and_clocks() {
    let host = WasmHost::new().unwrap();
    let caps = || Capabilities::builder().env("GREETING", "bonjour");
    let run1 = run(&host, caps(), &["hello", "x"]);
    assert!(run1.trap.is_none(), "{:?}", run1.trap);
    assert_eq!(run1.report.violation, None);
    let text = out(&run1);
    assert!(
        text.starts_with("hello from wasi 0.3: args=3 greeting=bonjour random="),
        "{text}"
    );
    // Randomness differs between two live runs ...
    let run2 = run(&host, caps(), &["hello", "x"]);
    assert_ne!(out(&run2), text);
    // ... and a deterministic run is the same every time: seeded random,
    // the fixed wall clock (2026-01-01), the virtual monotonic clock.
    let det = |seed| {
        let agent = host
            .prepare(&host.load(&guest("p3_agent")).unwrap())
            .unwrap();
        let opts = RunOptions::new(caps().build().unwrap())
            .args(["hello"])
            .deterministic(seed);
        out(&host.run_prepared(&agent, opts).unwrap())
    };
    let a = det(7);
    assert_eq!(a, det(7));
    assert!(a.ends_with("mono=0 wall=1767225600\n"), "{a}");
    assert_ne!(a, det(8));
    // A guest's failure status is its exit code 1, as for 0.2.
    let failed = run(&host, caps(), &["fail"]);
    assert_eq!(failed.report.exit_code, Some(1), "{:?}", failed.report);
    assert_eq!(out(&failed), "failing\n");
}

#[test]
fn a_wasi_0_3_command_meets_the_same_budgets() {
    let host = WasmHost::new().unwrap();
    let wall = |ms| Capabilities::builder().max_wall(Duration::from_millis(ms));
    // CPU: the epoch deadline on the 0.3 engine (its own epoch advances).
    let spun = run(&host, wall(300), &["spin"]);
    assert_eq!(spun.report.violation, Some(Violation::MaxWall));
    // A wait in the host: the real-time backstop ends it at the wall, not
    // at the 600 s it asked for.
    let started = Instant::now();
    let slept = run(&host, wall(300), &["sleep", "600000"]);
    assert_eq!(slept.report.violation, Some(Violation::MaxWall));
    assert!(started.elapsed() < Duration::from_secs(30));
    // The allowed neighbour: a short wait finishes.
    let short = run(&host, wall(20_000), &["sleep", "10"]);
    assert_eq!(short.report.violation, None, "{:?}", short.trap);
    assert_eq!(out(&short), "slept 10 ms\n");
    // Memory.
    let grown = run(
        &host,
        Capabilities::builder().max_memory_bytes(32 << 20),
        &["grow"],
    );
    assert_eq!(grown.report.violation, Some(Violation::MaxMemory));
    // Output: a 0.3 stream hands the refusal back to the guest, which
    // ignores it; the run still halts, and no byte past the budget left.
    let flooded = run(
        &host,
        Capabilities::builder().max_output_bytes(1000),
        &["flood", "1000000"],
    );
    assert_eq!(flooded.report.violation, Some(Violation::MaxOutputBytes));
    assert_eq!(flooded.stdout.len(), 1000);
    // The neighbour within the budget completes and says all were taken.
    let fits = run(
        &host,
        Capabilities::builder().max_output_bytes(1 << 20),
        &["flood", "10"],
    );
    assert_eq!(fits.report.violation, None);
    assert!(
        out(&fits).ends_with("flooded: 10 of 10 lines taken\n"),
        "{}",
        out(&fits)
    );
}

#[test]
fn a_wasi_0_3_command_reads_granted_folders_through_the_gate_and_changes_nothing() {
    let host = WasmHost::new().unwrap();
    let t = mount_tree(&[("data/in.txt", "hello p3\n")]);
    std::fs::create_dir(t.path().join("data/sub")).unwrap();
    let before = snapshot(t.path());
    let caps = || {
        Capabilities::builder()
            .base_dir(t.path())
            .read_mount("data", "/data")
    };
    let run1 = run(&host, caps(), &["files", "/data"]);
    assert!(run1.trap.is_none(), "{:?}", run1.trap);
    // The allowed calls first (a read, a stat, a listing), then every
    // refusal with the code 0.2's gate gives for it.
    assert_eq!(
        out(&run1),
        "preopens: /data /\nread: hello p3\n\nstat: 9 bytes\nlist: in.txt sub\n\
         dotdot: ErrorCode::NotPermitted\nwrite: ErrorCode::NotPermitted\n\
         mkdir: ErrorCode::NotPermitted\nunlink: ErrorCode::NotPermitted\n\
         absolute: ErrorCode::NotPermitted\noutside: ErrorCode::NoEntry\n"
    );
    // Each call charged as an op, each refusal on record by its name.
    assert_eq!(run1.report.usage.ops, 8);
    let said: Vec<Violation> = run1.report.denials.iter().map(|d| d.violation).collect();
    assert_eq!(
        said,
        [
            Violation::PathTraversal,
            Violation::FsWriteDenied,
            Violation::FsWriteDenied,
            Violation::FsWriteDenied,
            Violation::InvalidRequest,
            Violation::FsReadDenied,
        ]
    );
    // Nothing on the host changed.
    assert_eq!(snapshot(t.path()), before);
    // The op budget is hard for 0.3's calls too.
    let short = run(&host, caps().max_ops(3), &["files", "/data"]);
    assert_eq!(short.report.violation, Some(Violation::MaxOps));
    // Without folders it finds only the empty root.
    let bare = run(&host, Capabilities::builder(), &["dirs"]);
    assert_eq!(out(&bare), "1 folders\n/\n");
}

/// What the `writes` mode prints under a write mount at `/out`.
const WRITES: &str = "put: ok\nstat: 15 bytes\nmkdir: ok\nrename: ok\nlink: ok\n\
                      link itself: ErrorCode::NotPermitted\n\
                      rmdir itself: ErrorCode::Access\nrename itself: ErrorCode::Access\n\
                      unlink missing: ErrorCode::NoEntry\nsymlink out: ErrorCode::NotPermitted\n";

/// The same under the CLI with its kernel wall up: a hard link from a
/// mount's root is refused as the OS refuses a link to any folder, where
/// the wall alone would answer `io` (Landlock's `EXDEV`: the root's parent
/// is outside the grant).
#[test]
fn under_the_kernel_wall_a_0_3_command_gets_the_same_answers() {
    let t = mount_tree(&[]);
    std::fs::write(
        t.path().join("caps.toml"),
        "[fs]\nwrite = [{ host = \"out\", guest = \"/out\" }]\n",
    )
    .unwrap();
    let ran = std::process::Command::new(sbx_wasm_tests::sbx_bin())
        .current_dir(t.path())
        .args(["run", "--summary", "--caps", "caps.toml"])
        .arg(guest("p3_agent"))
        .args(["--", "writes", "/out"])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&ran.stderr);
    assert!(stderr.contains("kernel wall up"), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&ran.stdout), WRITES, "{stderr}");
    assert!(!t.path().join("out/self").exists());
}

#[test]
fn a_wasi_0_3_command_writes_through_the_gate_within_the_quota() {
    let host = WasmHost::new().unwrap();
    let t = mount_tree(&[]);
    let caps = || {
        Capabilities::builder()
            .base_dir(t.path())
            .write_mount("out", "/out")
    };
    let wrote = run(&host, caps(), &["writes", "/out"]);
    assert!(wrote.trap.is_none(), "{:?}", wrote.trap);
    assert_eq!(out(&wrote), WRITES);
    // What the host folder holds now: the file, moved, and nothing else
    // (the link out of the grant was never made).
    let out_dir = t.path().join("out");
    assert_eq!(
        std::fs::read_to_string(out_dir.join("dir/moved.txt")).unwrap(),
        "written by 0.3\n"
    );
    assert_eq!(
        std::fs::read_to_string(out_dir.join("alias.txt")).unwrap(),
        "written by 0.3\n"
    );
    assert_eq!(std::fs::read_dir(&out_dir).unwrap().count(), 2);
    assert!(!out_dir.join("link").exists());
    assert!(!out_dir.join("self").exists());
    // Bytes and creations charged as 0.2's are; the mount root's removal
    // and rename and the link out on record.
    assert_eq!(wrote.report.usage.write_bytes, 15);
    assert_eq!(wrote.report.usage.files, 3);
    let said: Vec<Violation> = wrote.report.denials.iter().map(|d| d.violation).collect();
    assert_eq!(said, [Violation::FsWriteDenied; 3]);

    // The quota is hard, and no chunk past it is written: a megabyte into
    // 100 KB halts with the file at most the quota.
    let quota = || caps().max_write_bytes(100_000).max_files(3);
    let _ = std::fs::remove_dir_all(&out_dir);
    std::fs::create_dir(&out_dir).unwrap();
    let big = run(&host, quota(), &["fill", "1000000", "1"]);
    assert_eq!(big.report.violation, Some(Violation::MaxWriteBytes));
    let len = std::fs::metadata(out_dir.join("fill0.bin")).unwrap().len();
    assert!(len <= 100_000, "{len} bytes written");
    // Creations likewise: the fourth file is never made.
    let _ = std::fs::remove_dir_all(&out_dir);
    std::fs::create_dir(&out_dir).unwrap();
    let many = run(&host, quota(), &["fill", "10", "10"]);
    assert_eq!(many.report.violation, Some(Violation::MaxFiles));
    assert_eq!(std::fs::read_dir(&out_dir).unwrap().count(), 3);
    // A write far past the end is charged its hole: halted, nothing
    // grown. Its neighbour, a short hole, is charged hole and byte.
    let _ = std::fs::remove_dir_all(&out_dir);
    std::fs::create_dir(&out_dir).unwrap();
    let far = run(&host, quota(), &["hole", "10000000000"]);
    assert_eq!(far.report.violation, Some(Violation::MaxWriteBytes));
    assert_eq!(
        std::fs::metadata(out_dir.join("hole.bin")).unwrap().len(),
        0
    );
    let near = run(&host, quota(), &["hole", "1000"]);
    assert_eq!(out(&near), "hole: Ok(())\n");
    assert_eq!(
        std::fs::metadata(out_dir.join("hole.bin")).unwrap().len(),
        1001
    );
    assert_eq!(near.report.usage.write_bytes, 1001);
    // A stream from where no file can reach (past a signed 64-bit offset)
    // is `invalid`, as the OS answers: nothing charged, the run going on.
    let past = run(&host, quota(), &["hole", &(1u64 << 63).to_string()]);
    assert_eq!(out(&past), "hole: Err(ErrorCode::Invalid)\n");
    assert_eq!(past.report.violation, None, "{:?}", past.trap);
    assert_eq!(past.report.usage.write_bytes, 0);
    // Growth by `set-size` likewise; a size no file can have (past a
    // signed 64-bit offset) is `invalid`, as the OS answers, nothing
    // charged and the run going on.
    let grown = run(&host, quota(), &["resize", "1000"]);
    assert_eq!(out(&grown), "resize: Ok(())\n", "{:?}", grown.trap);
    assert_eq!(
        std::fs::metadata(out_dir.join("grown.bin")).unwrap().len(),
        1000
    );
    assert_eq!(grown.report.usage.write_bytes, 1000);
    let huge = run(&host, quota(), &["resize", &u64::MAX.to_string()]);
    assert_eq!(out(&huge), "resize: Err(ErrorCode::Invalid)\n");
    assert_eq!(huge.report.violation, None, "{:?}", huge.trap);
    assert_eq!(huge.report.usage.write_bytes, 0);
    assert_eq!(
        std::fs::metadata(out_dir.join("grown.bin")).unwrap().len(),
        0
    );
    // The neighbour within both: completes, every byte there.
    let _ = std::fs::remove_dir_all(&out_dir);
    std::fs::create_dir(&out_dir).unwrap();
    let fits = run(&host, quota(), &["fill", "1000", "3"]);
    assert_eq!(fits.report.violation, None, "{:?}", fits.trap);
    assert_eq!(out(&fits), "filled 3 of 3\n");
    assert_eq!(
        std::fs::read(out_dir.join("fill2.bin")).unwrap(),
        vec![7u8; 1000]
    );
}

#[test]
fn wasi_0_3_components_keep_an_engine_of_their_own() {
    let host = WasmHost::new().unwrap();
    let p3 = host.load(&guest("p3_agent")).unwrap();
    let p2 = host.load(&guest("noop")).unwrap();
    // 0.2 components compile on the host's engine (no concurrency
    // support, which cost their runs); 0.3 ones on the other.
    assert!(wasmtime::Engine::same(p2.engine(), host.engine()));
    assert!(!wasmtime::Engine::same(p3.engine(), host.engine()));
    // Both run on the one host, one after the other and again.
    for _ in 0..2 {
        let a = host
            .run(
                &p2,
                RunOptions::new(Capabilities::builder().build().unwrap()),
            )
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&a.stdout), "ok\n");
        let b = host
            .run(
                &p3,
                RunOptions::new(Capabilities::builder().build().unwrap()).args(["hello"]),
            )
            .unwrap();
        assert!(out(&b).starts_with("hello from wasi 0.3"), "{}", out(&b));
    }
    // A 0.3 command that exports no handler is not a service.
    let err = host
        .prepare_service(&p3)
        .err()
        .expect("refused")
        .to_string();
    assert!(err.contains("not a wasi:http service"), "{err}");
    // Instances made ahead are for 0.2 commands; a 0.3 one says so.
    let agent = host.prepare(&p3).unwrap();
    let err = agent.keep_warm(1).err().expect("refused").to_string();
    assert!(err.contains("WASI 0.3 command"), "{err}");
    assert!(host.prepare(&p2).unwrap().keep_warm(1).is_ok());
}

#[test]
fn a_wasi_0_3_component_importing_what_no_host_lends_is_refused_before_compiling_by_name() {
    let t = tempfile::tempdir().unwrap();
    std::fs::write(t.path().join("caps.toml"), "").unwrap();
    // A service's handler, imported: exported by services, never lent.
    let importing =
        wat::parse_str(r#"(component (import "wasi:http/handler@0.3.0" (instance)))"#).unwrap();
    std::fs::write(t.path().join("handler.wasm"), importing).unwrap();
    let out = sbx_in(t.path(), &["run", "--caps", "caps.toml", "handler.wasm"]);
    assert_eq!(out.status.code(), Some(125));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("\"wasi:http/handler@0.3.0\""), "{err}");
    assert!(err.contains("refused before compiling"), "{err}");
    // The neighbour through the same door: the 0.3 command without
    // sockets runs, exit 0; compiled (on the 0.3 engine) and cached the
    // first time, served from the cache the second.
    let agent = guest("p3_agent");
    for said in ["compiled, now cached", "; cached"] {
        let ok = sbx_cached(
            t.path(),
            &[
                "run",
                "--caps",
                "caps.toml",
                "--summary",
                agent.to_str().unwrap(),
                "--",
                "hello",
            ],
        );
        let err = String::from_utf8_lossy(&ok.stderr);
        assert_eq!(ok.status.code(), Some(0), "{err}");
        assert!(String::from_utf8_lossy(&ok.stdout).starts_with("hello from wasi 0.3"));
        assert!(err.contains(said), "{said}: {err}");
    }
}
