//! The host's own memory: bounded inputs, bounded records, peak RSS.

use super::*;
use sbx_wasm::net::FetchRequest;

#[test]
fn huge_strings_are_refused_before_they_are_kept_and_records_stay_bounded() {
    let w = World::new();
    let caps = w
        .caps_builder()
        .allow_egress("https://api.example")
        .build()
        .unwrap();
    let mut sb = with_tools(&w, caps);
    let big = "A".repeat(8 << 20);
    let results = [
        sb.run(Op::tool(big.clone(), "x")),
        sb.run(Op::tool("summarize", "B".repeat(11 << 20))),
        sb.run(Op::fetch(format!("https://api.example/{big}"))),
        sb.run(Op::Net(FetchRequest {
            method: "GET".into(),
            url: "https://api.example/".into(),
            headers: vec![("X-Big".into(), big.clone())],
            body: Vec::new(),
            redirects: Default::default(),
            timeouts: Default::default(),
        })),
        sb.run(Op::read(format!("/work/{big}"))),
        sb.run(Op::write(format!("/work/out/{big}"), "x")),
    ];
    for r in &results {
        denied(r, Violation::InvalidRequest);
        let d = r.denial.as_ref().unwrap();
        assert!(
            d.message.len() < 400,
            "message repeats the input: {}",
            d.message.len()
        );
        assert!(
            r.target.len() <= MAX_RECORD_TARGET_BYTES + 64,
            "{}",
            r.target.len()
        );
    }
    for ev in sb.audit() {
        let line = serde_json::to_string(ev).unwrap();
        assert!(
            line.len() < 2 * MAX_RECORD_TARGET_BYTES,
            "audit line of {} bytes",
            line.len()
        );
    }
    let report = serde_json::to_string(&sb.report()).unwrap();
    assert!(report.len() < 16 * 1024, "report of {} bytes", report.len());
    // A long target is cut, and marked with its length and digest.
    assert!(
        results[0]
            .target
            .contains(&format!("({} bytes, sha256 ", big.len()))
    );

    // Allowed neighbours: a large but bounded tool input runs; a URL just
    // under the bound reaches the egress decision (and is denied by rule,
    // not as malformed).
    let ok = sb.run(Op::tool("summarize", "B".repeat(9 << 20)));
    assert!(ok.ok, "{ok:?}");
    let long_url = format!(
        "https://elsewhere.example/{}",
        "a".repeat(MAX_URL_BYTES - 100)
    );
    denied(&sb.run(Op::fetch(long_url)), Violation::EgressDenied);
    assert!(sb.run(Op::read("/work/data.txt")).ok);
}

/// Peak resident memory of `sbx-wasm ARGS` (KiB), from the kernel's
/// accounting of that one child.
fn peak_rss_kib(cmd: &mut Command) -> (i32, i64) {
    let child = cmd.spawn().unwrap();
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: a plain wait4 on our own child; rusage is written by the kernel.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(r, pid);
    std::mem::forget(child);
    (libc::WEXITSTATUS(status), usage.ru_maxrss)
}

#[test]
fn a_guest_passing_8_mib_strings_in_every_call_keeps_the_host_bounded() {
    let t = mount_tree(&[
        ("data/notes.txt", "n"),
        (
            "caps.toml",
            &mount_caps(
                "[net]\nallow = [\"http://127.0.0.1:9\"]\n[tools]\nallow = [\"summarize\"]\n\
                 [budget]\nmax_memory_bytes = 67108864\nmax_wall_ms = 3000\nmax_ops = 1000000\n\
                 max_fuel = 1000000000000\n",
            ),
        ),
    ]);
    let run = |mib: &str| {
        let audit = t.path().join(format!("audit-{mib}.jsonl"));
        let mut cmd = Command::new(sbx_bin());
        cmd.current_dir(t.path())
            .env("SBX_WASM_CACHE_DIR", t.path().join("cache"))
            .args(["run", "--caps", "caps.toml", "--audit"])
            .arg(&audit)
            .arg(guest("abuse"))
            .args(["--", "bigstrings", mib])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let (code, rss) = peak_rss_kib(&mut cmd);
        let audit = std::fs::read_to_string(&audit).unwrap();
        (code, rss, audit)
    };
    // The neighbour: the same loop with empty strings.
    let (code0, base, _) = run("0");
    let (code8, peak, audit) = run("8");
    assert_eq!((code0, code8), (124, 124), "both end at max_wall");
    let lines = audit.lines().count();
    // Enough calls that what passed through (8 MiB each) is well over the
    // bound below, so a host keeping copies would pass it; not more, as a
    // loaded machine makes fewer calls in the 3 s (about 100 when quiet).
    assert!(lines > 20, "the guest made {lines} calls");
    let longest = audit.lines().map(str::len).max().unwrap();
    assert!(
        longest < 2 * MAX_RECORD_TARGET_BYTES,
        "audit line of {longest} bytes"
    );
    // The README's bound: the host's own size, plus the guest's memory
    // (64 MiB here), plus a few transient copies of the largest request.
    let grew_mib = (peak - base) / 1024;
    eprintln!(
        "{lines} calls; peak RSS {} MiB against {} MiB with empty strings",
        peak / 1024,
        base / 1024
    );
    assert!(
        grew_mib < 64 + 48,
        "host grew {grew_mib} MiB over its baseline"
    );
}

#[test]
fn a_guest_hoarding_host_handles_is_halted_before_the_host_grows() {
    let t = mount_tree(&[("data/notes.txt", "n")]);
    std::fs::write(t.path().join("caps.toml"), mount_caps("")).unwrap();
    let run = |n: &str| {
        let mut cmd = Command::new(sbx_bin());
        cmd.current_dir(t.path())
            .env("SBX_WASM_CACHE_DIR", t.path().join("cache"))
            .args(["run", "--caps", "caps.toml"])
            .arg(guest("abuse"))
            .args(["--", "handles", n])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        peak_rss_kib(&mut cmd)
    };
    // The neighbour: a thousand resources held, the run completes.
    let (code, base) = run("1000");
    assert_eq!(code, 0);
    // Each pollable is host memory outside the guest's linear memory (so
    // outside max_memory): wasmtime's bound on the live handles of a store
    // (100,000) halts the run long before ten million, and the host's peak
    // stays within tens of MiB of the neighbour's.
    let (code, peak) = run("10000000");
    assert_ne!(code, 0, "ten million handles were made");
    let grew_mib = (peak - base) / 1024;
    eprintln!("peak RSS {} MiB against {} MiB", peak / 1024, base / 1024);
    assert!(grew_mib < 96, "the host grew by {grew_mib} MiB");
}

#[test]
fn a_wasi_0_3_guest_leaving_host_calls_pending_is_halted_before_the_host_grows() {
    let t = tempfile::tempdir().unwrap();
    std::fs::write(t.path().join("caps.toml"), "").unwrap();
    let run = |mode: &str, n: &str| {
        let mut cmd = Command::new(sbx_bin());
        cmd.current_dir(t.path())
            .env("SBX_WASM_CACHE_DIR", t.path().join("cache"))
            .args(["run", "--caps", "caps.toml"])
            .arg(guest("p3_agent"))
            .args(["--", mode, n])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        peak_rss_kib(&mut cmd)
    };
    // The neighbour: a thousand hour-long waits started at once and held,
    // the run completes.
    let (code, base) = run("waits", "1000");
    assert_eq!(code, 0);
    // Each pending host call is host memory (a timer) outside max_memory;
    // a 0.3 store holds at most 16,384 handles (wasmtime's own bound is
    // 100,000, which let this grow the host by about 110 MiB), so ten
    // million are halted early and the host stays near the neighbour.
    for mode in ["waits", "streams"] {
        let (code, peak) = run(mode, "10000000");
        assert_ne!(code, 0, "{mode}: ten million were made");
        let grew_mib = (peak - base) / 1024;
        eprintln!(
            "{mode}: peak RSS {} MiB against {} MiB",
            peak / 1024,
            base / 1024
        );
        assert!(grew_mib < 48, "{mode}: the host grew by {grew_mib} MiB");
    }
}
