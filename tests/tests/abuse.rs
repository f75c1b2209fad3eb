//! The host itself under abuse, written from the attacker's side: what a
//! hostile plan, guest or script passes in (size, type, timing) and what
//! that costs the host, beside the allowed neighbour of each case. Host
//! memory bounded by the grant, stdin streamed, large writes whole or
//! halted, response headers charged, every special-purpose address refused,
//! credentials dropped at a cross-origin hop, an audit that tells the truth,
//! links that stay inside, the write quota, deterministic file times.

use sbx_wasm::bound::{MAX_RECORD_TARGET_BYTES, MAX_URL_BYTES};
use sbx_wasm::net::StaticResolver;
use sbx_wasm::tools::{ToolError, ToolRegistry};
use sbx_wasm::{Capabilities, Op, Sandbox, SandboxResult, TickClock, Violation};
use sbx_wasm_tests::{
    BIG_HEADER_BYTES, LoopbackServer, World, guest, mount_caps, mount_tree, python_runner,
    repo_root, sbx_bin, snapshot,
};
use serde_json::Value;
use std::io::Write;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn denied(r: &SandboxResult, v: Violation) {
    assert!(!r.ok, "expected {v}, got {r:?}");
    assert_eq!(r.violation(), Some(v), "{r:?}");
}

fn with_tools(w: &World, caps: Capabilities) -> Sandbox {
    let _ = w;
    let mut tools = ToolRegistry::new();
    tools.register("summarize", |s: &str| {
        Ok::<_, ToolError>(format!("{} bytes", s.len()))
    });
    Sandbox::builder(caps).tools(tools).build().unwrap()
}

// --- 1. host memory: bounded inputs, bounded records ----------------------

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
        sb.run(Op::NetFetch {
            method: "GET".into(),
            url: "https://api.example/".into(),
            headers: vec![("X-Big".into(), big.clone())],
            body: Vec::new(),
        }),
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
    assert!(lines > 50, "the guest made {lines} calls");
    let longest = audit.lines().map(str::len).max().unwrap();
    assert!(
        longest < 2 * MAX_RECORD_TARGET_BYTES,
        "audit line of {longest} bytes"
    );
    // The README's bound: the host's own size, plus the guest's memory
    // (64 MiB here), plus a few transient copies of the largest request.
    let grew_mib = (peak - base) / 1024;
    eprintln!(
        "peak RSS {} MiB against {} MiB with empty strings",
        peak / 1024,
        base / 1024
    );
    assert!(
        grew_mib < 64 + 48,
        "host grew {grew_mib} MiB over its baseline"
    );
}

// --- 2. stdin is streamed -------------------------------------------------

fn noop_caps(dir: &Path, budget: &str) -> PathBuf {
    let p = dir.join("caps.toml");
    std::fs::write(&p, mount_caps(&format!("[budget]\n{budget}"))).unwrap();
    p
}

/// Run with a stdin pipe we hold open (never closed, never written unless
/// `feed`), and wait at most `limit` for the run to end.
fn run_with_open_stdin(
    dir: &Path,
    guest_args: &[&str],
    feed: &[u8],
    limit: Duration,
) -> (Option<i32>, String, Value) {
    let report = dir.join("stdin-report.json");
    let _ = std::fs::remove_file(&report);
    let mut child = Command::new(sbx_bin())
        .current_dir(dir)
        .env("SBX_WASM_CACHE_DIR", dir.join("cache"))
        .args(["run", "--caps", "caps.toml", "--report"])
        .arg(&report)
        .args(guest_args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(feed).unwrap();
    let started = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break Some(s);
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    drop(stdin);
    let mut out = String::new();
    use std::io::Read;
    let _ = child.stdout.take().unwrap().read_to_string(&mut out);
    let report = std::fs::read_to_string(&report)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or(Value::Null);
    (status.and_then(|s| s.code()), out, report)
}

#[test]
fn an_open_stdin_never_holds_a_run() {
    let t = mount_tree(&[("data/notes.txt", "n")]);
    noop_caps(t.path(), "max_wall_ms = 1000\n");
    let noop = guest("noop").display().to_string();
    let abuse = guest("abuse").display().to_string();
    // A guest that never reads stdin is not held by a pipe left open.
    let (code, _, report) = run_with_open_stdin(t.path(), &[&noop], b"", Duration::from_secs(20));
    assert_eq!(code, Some(0), "the run waited for stdin to close");
    assert_eq!(report["status"], "completed");
    // A guest blocked reading it ends at max_wall, with its report.
    let (code, _, report) = run_with_open_stdin(
        t.path(),
        &[&abuse, "--", "stdin"],
        b"partial",
        Duration::from_secs(20),
    );
    assert_eq!(code, Some(124), "{report}");
    assert_eq!(report["violation"], "max_wall");
    // The neighbour: stdin that ends is read whole.
    let out = Command::new(sbx_bin())
        .current_dir(t.path())
        .env("SBX_WASM_CACHE_DIR", t.path().join("cache"))
        .args(["run", "--caps", "caps.toml", &abuse, "--", "stdin"])
        .stdin(std::fs::File::open(repo_root().join("README.md")).unwrap())
        .output()
        .unwrap();
    let n = std::fs::metadata(repo_root().join("README.md"))
        .unwrap()
        .len();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        format!("stdin: Ok({n}) bytes")
    );
}

// --- 3. large writes are whole or halted ----------------------------------

fn python(dir: &Path, script: &str, budget: &str) -> (Option<i32>, Vec<u8>, Value) {
    std::fs::write(
        dir.join("caps.toml"),
        mount_caps(&format!("[budget]\n{budget}")),
    )
    .unwrap();
    std::fs::write(dir.join("script.py"), script).unwrap();
    let report = dir.join("py-report.json");
    let _ = std::fs::remove_file(&report);
    let out = Command::new(sbx_bin())
        .current_dir(dir)
        .env(
            "SBX_WASM_CACHE_DIR",
            repo_root().join("target/sbx-test-cache"),
        )
        .args(["run", "--caps", "caps.toml", "--report"])
        .arg(&report)
        .arg("--python-runner")
        .arg(python_runner())
        .arg("script.py")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let report = std::fs::read_to_string(&report)
        .map(|t| serde_json::from_str(&t).unwrap())
        .unwrap_or(Value::Null);
    (out.status.code(), out.stdout, report)
}

#[test]
fn a_large_python_print_is_delivered_whole_or_halts_at_the_budget() {
    let t = mount_tree(&[]);
    // 100 KB of JSON in one print: every byte arrives, parseable.
    let (code, out, report) = python(
        t.path(),
        "import json\nprint(json.dumps({'k': 'v' * 100_000}))\n",
        "",
    );
    assert_eq!(code, Some(0), "{report}");
    let v: Value = serde_json::from_slice(&out).expect("whole JSON");
    assert_eq!(v["k"].as_str().unwrap().len(), 100_000);
    // 20 MB under a 1 MB budget: halted, exactly the budget delivered.
    let (code, out, report) = python(
        t.path(),
        "print('x' * 20_000_000)\n",
        "max_output_bytes = 1000000\n",
    );
    assert_eq!(code, Some(124), "{report}");
    assert_eq!(report["violation"], "max_output_bytes");
    assert_eq!(out.len(), 1_000_000);
    // The neighbour: a small print, unchanged.
    let (code, out, _) = python(t.path(), "print('hi')\n", "");
    assert_eq!((code, out), (Some(0), b"hi\n".to_vec()));
}

// --- 4. response headers are charged --------------------------------------

#[test]
fn response_headers_count_against_max_output_bytes() {
    let w = World::new();
    let s = LoopbackServer::start();
    let fetch = |budget: u64| {
        let caps = w
            .caps_builder()
            .allow_egress(s.origin())
            .max_output_bytes(budget)
            .build()
            .unwrap();
        let mut sb = Sandbox::new(caps).unwrap();
        let r = sb.run(Op::fetch(format!("{}/headers", s.origin())));
        (r, sb.usage().output_bytes)
    };
    // 16 KiB of headers and a 2-byte body under a 1,000-byte budget: halted.
    let (r, _) = fetch(1_000);
    denied(&r, Violation::MaxOutputBytes);
    // The neighbour: with room, the charge is headers plus body.
    let (r, used) = fetch(100_000);
    assert!(r.ok, "{r:?}");
    assert_eq!(used, BIG_HEADER_BYTES as u64 + 2);
}

// --- 5. every special-purpose address ------------------------------------

#[test]
fn granted_names_answering_special_addresses_are_never_dialled() {
    let w = World::new();
    let s = LoopbackServer::start();
    let ip = |a: &str| a.parse::<IpAddr>().unwrap();
    let resolver = StaticResolver::new()
        .with("translated.test", [ip("::ffff:0:a9fe:a9fe")])
        .with("bench6.test", [ip("2001:2::1")])
        .with("doc6.test", [ip("3fff::1")])
        .with("local.test", [ip("127.0.0.1")]);
    let caps = w
        .caps_builder()
        .allow_egress("http://translated.test")
        .allow_egress("http://bench6.test")
        .allow_egress("http://doc6.test")
        .allow_egress(format!("http://local.test:{}", s.port))
        .allow_egress(s.origin())
        .build()
        .unwrap();
    let mut sb = Sandbox::builder(caps).resolver(resolver).build().unwrap();
    for host in ["translated.test", "bench6.test", "doc6.test"] {
        let r = sb.run(Op::fetch(format!("http://{host}/")));
        denied(&r, Violation::EgressDenied);
    }
    assert_eq!(s.connections(), 0);
    // The neighbour: a name answering an address an IP rule names.
    let r = sb.run(Op::fetch(format!("http://local.test:{}/status", s.port)));
    assert!(r.ok, "{r:?}");
    assert_eq!(s.connections(), 1);
}

// --- 6. cross-origin hops, client-IP headers, control characters ----------

#[test]
fn a_cross_origin_hop_forwards_only_safelisted_headers() {
    let w = World::new();
    let a = LoopbackServer::start();
    let b = LoopbackServer::start();
    let caps = w
        .caps_builder()
        .allow_egress(a.origin())
        .allow_egress(b.origin())
        .max_redirects(2)
        .build()
        .unwrap();
    let mut sb = Sandbox::new(caps).unwrap();
    let fetch = |sb: &mut Sandbox, url: String| {
        sb.run(Op::NetFetch {
            method: "GET".into(),
            url,
            headers: vec![
                ("X-Api-Key".into(), "k-secret".into()),
                ("Authorization".into(), "Bearer t-secret".into()),
                ("Accept".into(), "application/json".into()),
            ],
            body: Vec::new(),
        })
    };
    let r = fetch(
        &mut sb,
        format!("{}/redirect-to/127.0.0.1:{}/status", a.origin(), b.port),
    );
    assert!(r.ok, "{r:?}");
    let seen = b.headers().join("\n").to_ascii_lowercase();
    assert!(seen.contains("accept: application/json"), "{seen}");
    assert!(
        !seen.contains("secret"),
        "a credential crossed origins: {seen}"
    );
    let ev = sb.audit().last().unwrap();
    let detail = ev.detail.as_deref().unwrap_or("");
    assert!(
        detail.contains("X-Api-Key") && detail.contains("Authorization"),
        "{detail}"
    );
    // The neighbour: a same-origin hop keeps them.
    let r = fetch(&mut sb, format!("{}/redirect-same", a.origin()));
    assert!(r.ok, "{r:?}");
    assert!(
        a.headers()
            .iter()
            .filter(|h| h.contains("k-secret"))
            .count()
            >= 2
    );
    // Client-IP headers and control characters never leave.
    let before = (a.connections(), b.connections());
    for (k, v) in [
        ("X-Real-IP", "10.0.0.1"),
        ("True-Client-IP", "10.0.0.1"),
        ("X-Ok", "a\u{b}b"),
        ("X-Ok", "a\u{7f}"),
    ] {
        let r = sb.run(Op::NetFetch {
            method: "GET".into(),
            url: format!("{}/status", a.origin()),
            headers: vec![(k.into(), v.into())],
            body: Vec::new(),
        });
        denied(&r, Violation::InvalidRequest);
    }
    assert_eq!((a.connections(), b.connections()), before);
}

#[test]
fn request_bounds_are_checked_before_the_rule_and_check_agrees_with_run() {
    let w = World::new();
    let caps = w.caps_builder().build().unwrap();
    let mut sb = Sandbox::new(caps).unwrap();
    // A denied host with a forbidden header: the bounds decide first.
    let op = Op::NetFetch {
        method: "GET".into(),
        url: "https://evil.example/".into(),
        headers: vec![("Host".into(), "x".into())],
        body: Vec::new(),
    };
    assert_eq!(
        sb.check(&op).unwrap_err().violation,
        Violation::InvalidRequest
    );
    denied(&sb.run(op), Violation::InvalidRequest);
    // The neighbour: the same request without it meets the rule.
    let op = Op::fetch("https://evil.example/");
    assert_eq!(
        sb.check(&op).unwrap_err().violation,
        Violation::EgressDenied
    );
}

// --- 7. the audit tells the truth ---------------------------------------

#[test]
fn a_fetch_halted_after_it_connected_keeps_its_rule_and_wall_time_is_real() {
    let w = World::new();
    let s = LoopbackServer::start();
    let caps = w
        .caps_builder()
        .allow_egress(s.origin())
        .max_wall(Duration::from_millis(600))
        .build()
        .unwrap();
    let mut sb = Sandbox::new(caps).unwrap();
    let r = sb.run(Op::fetch(format!("{}/stall", s.origin())));
    denied(&r, Violation::MaxWall);
    let ev = sb.audit().last().unwrap();
    assert_eq!(ev.rule.as_deref(), Some(s.origin().as_str()), "{ev:?}");
    assert!(ev.address.is_some(), "{ev:?}");
    assert!(sb.report().usage.wall_ms >= 500, "{:?}", sb.report().usage);
    // The neighbour: an allowed fetch records its rule too.
    let caps = w.caps_builder().allow_egress(s.origin()).build().unwrap();
    let mut sb = Sandbox::new(caps).unwrap();
    assert!(sb.run(Op::fetch(format!("{}/status", s.origin()))).ok);
    assert_eq!(sb.audit()[0].rule.as_deref(), Some(s.origin().as_str()));
}

// --- 9. the write quota (plans) ------------------------------------------

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
        .clock(TickClock::new(Duration::from_millis(1)))
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

// --- wasm guests through the CLI ----------------------------------------

struct Ran {
    code: Option<i32>,
    stdout: String,
    report: Value,
    audit: Vec<Value>,
}

impl Ran {
    /// The audit events for `target`.
    fn events(&self, target: &str) -> Vec<&Value> {
        self.audit
            .iter()
            .filter(|e| e["target"] == target)
            .collect()
    }
}

/// `sbx-wasm run --caps caps.toml GUEST -- ARGS` in a mount tree whose caps
/// file gets `extra`.
fn cli(dir: &Path, extra: &str, flags: &[&str], guest_name: &str, args: &[&str]) -> Ran {
    std::fs::write(dir.join("caps.toml"), mount_caps(extra)).unwrap();
    let (report, audit) = (dir.join("r.json"), dir.join("a.jsonl"));
    let out = Command::new(sbx_bin())
        .current_dir(dir)
        .env("SBX_WASM_CACHE_DIR", dir.join("cache"))
        .args(["run", "--caps", "caps.toml", "--report"])
        .arg(&report)
        .arg("--audit")
        .arg(&audit)
        .args(flags)
        .arg(guest(guest_name))
        .arg("--")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let report = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    let audit = std::fs::read_to_string(&audit)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    Ran {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        report,
        audit,
    }
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

// --- under load and after crashes ----------------------------------------

/// Run `argv` as the child of a Python process that made itself a
/// subreaper (as a PID 1 in a container would be, but one that never
/// reaps); print how many processes are left as its children afterwards:
/// orphans the run left behind, alive or zombie.
const SUBREAPER: &str = r#"
import ctypes, os, subprocess, sys, time
ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
subprocess.run(sys.argv[1:], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
time.sleep(0.5)
left = 0
for pid in filter(str.isdigit, os.listdir("/proc")):
    try:
        stat = open(f"/proc/{pid}/stat").read()
    except OSError:
        continue
    if int(stat.rsplit(")", 1)[1].split()[1]) == os.getpid():
        left += 1
print(left)
"#;

fn tool_caps(dir: &Path, budget: &str) {
    std::fs::write(
        dir.join("caps.toml"),
        mount_caps(&format!(
            "[tools]\nallow = [\"word_count\"]\n[tools.command.word_count]\nargv = [\"wc\", \"-w\"]\n\
             [budget]\n{budget}"
        )),
    )
    .unwrap();
}

#[test]
fn a_run_leaves_no_process_behind_under_a_subreaper() {
    let t = mount_tree(&[("data/notes.txt", "n")]);
    tool_caps(t.path(), "");
    let sbx = sbx_bin().display().to_string();
    let seed = guest("seed").display().to_string();
    for extra in [&[][..], &["--report", "r.json"][..]] {
        let out = Command::new("python3")
            .current_dir(t.path())
            .env("SBX_WASM_CACHE_DIR", t.path().join("cache"))
            .args(["-c", SUBREAPER, &sbx, "run", "--caps", "caps.toml"])
            .args(extra)
            .args([&seed, "--", "http://127.0.0.1:9/"])
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8_lossy(&out.stdout).trim(),
            "0",
            "processes left behind: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // The neighbour: the helper did run the tool (the seed guest calls it).
    let out = Command::new(&sbx)
        .current_dir(t.path())
        .env("SBX_WASM_CACHE_DIR", t.path().join("cache"))
        .args([
            "run",
            "--caps",
            "caps.toml",
            &seed,
            "--",
            "http://127.0.0.1:9/",
        ])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("tool word_count: ok"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

/// Children of `pid`, from /proc.
fn children(pid: u32) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|p| {
            std::fs::read_to_string(format!("/proc/{p}/stat")).is_ok_and(|s| {
                s.rsplit_once(')')
                    .and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse::<u32>().ok())
                    == Some(pid)
            })
        })
        .collect()
}

#[test]
fn kill_9_in_the_middle_of_a_run_leaves_no_report_no_root_and_no_helper() {
    let t = mount_tree(&[("data/notes.txt", "n")]);
    tool_caps(t.path(), "max_wall_ms = 60000\n");
    let tmp = t.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let mut child = Command::new(sbx_bin())
        .current_dir(t.path())
        .env("SBX_WASM_CACHE_DIR", t.path().join("cache"))
        .env("TMPDIR", &tmp)
        .args([
            "run",
            "--caps",
            "caps.toml",
            "--report",
            "r.json",
            "--audit",
            "a.jsonl",
        ])
        .arg(guest("sleepy"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until the guest is running (it says so), then kill -9.
    let mut line = String::new();
    use std::io::BufRead;
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line.trim(), "going to sleep");
    let helpers = children(child.id());
    assert_eq!(helpers.len(), 1, "the tool helper runs beside the guest");
    child.kill().unwrap();
    child.wait().unwrap();
    // The helper dies with its parent.
    let deadline = Instant::now() + Duration::from_secs(5);
    while Path::new(&format!("/proc/{}", helpers[0])).exists() {
        let zombie = std::fs::read_to_string(format!("/proc/{}/stat", helpers[0])).is_ok_and(|s| {
            s.rsplit_once(')')
                .is_some_and(|(_, r)| r.trim_start().starts_with('Z'))
        });
        if zombie {
            break;
        }
        assert!(Instant::now() < deadline, "the helper outlived its parent");
        std::thread::sleep(Duration::from_millis(20));
    }
    // No report (rather than an empty one), and nothing in the temp folder.
    assert!(
        !t.path().join("r.json").exists(),
        "a report file after a kill"
    );
    assert!(
        !t.path().join("a.jsonl").exists(),
        "an audit file after a kill"
    );
    let left: Vec<_> = std::fs::read_dir(&tmp).unwrap().collect();
    assert!(left.is_empty(), "left in the temp folder: {left:?}");
    // The next run clears the dead run's staged files and writes whole ones.
    let out = Command::new(sbx_bin())
        .current_dir(t.path())
        .env("SBX_WASM_CACHE_DIR", t.path().join("cache"))
        .args([
            "run",
            "--caps",
            "caps.toml",
            "--report",
            "r.json",
            "--audit",
            "a.jsonl",
        ])
        .arg(guest("noop"))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(t.path().join("r.json")).unwrap()).unwrap();
    assert_eq!(report["status"], "completed");
    let names: Vec<String> = std::fs::read_dir(t.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    assert!(names.is_empty(), "staged files left: {names:?}");
}

#[test]
fn a_killed_cache_writers_temp_file_is_shown_then_removed() {
    let cache = tempfile::tempdir().unwrap();
    let sbx = |args: &[&str]| {
        let out = Command::new(sbx_bin())
            .env("SBX_WASM_CACHE_DIR", cache.path())
            .args(args)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    sbx(&["cache", "dir"]); // creates the folder
    // A dead writer (pid beyond pid_max) a minute ago, and one just now.
    let (old, young) = (".tmp-4194305-0", ".tmp-4194305-1");
    for name in [old, young] {
        std::fs::write(cache.path().join(name), vec![0u8; 4096]).unwrap();
    }
    let f = std::fs::File::options()
        .write(true)
        .open(cache.path().join(old))
        .unwrap();
    f.set_modified(std::time::SystemTime::now() - Duration::from_secs(120))
        .unwrap();
    drop(f);
    let ls = sbx(&["cache", "ls"]);
    assert!(
        !cache.path().join(old).exists(),
        "the stale temp file stayed"
    );
    assert!(!ls.contains(old), "{ls}");
    // The neighbour: a young temp file may still be written; it stays, and
    // `cache ls` shows it.
    assert!(ls.contains(young) && ls.contains("partial"), "{ls}");
    assert!(cache.path().join(young).exists());
}

#[test]
fn fuel_usage_is_true_when_the_wall_ends_the_run() {
    let t = mount_tree(&[("data/notes.txt", "n")]);
    let r = cli(
        t.path(),
        "[budget]\nmax_fuel = 100000000000\nmax_wall_ms = 1000\n",
        &[],
        "spin",
        &[],
    );
    assert_eq!(r.report["violation"], "max_wall");
    let fuel = r.report["usage"]["fuel"].as_u64().unwrap();
    assert!(
        fuel > 100_000_000,
        "a second of spinning reported as {fuel} fuel"
    );
    // The neighbour: when fuel ends the run, usage is the whole budget.
    let r = cli(
        t.path(),
        "[budget]\nmax_fuel = 300000000\n",
        &[],
        "spin",
        &[],
    );
    assert_eq!(r.report["violation"], "max_fuel");
    assert_eq!(r.report["usage"]["fuel"].as_u64(), Some(300_000_000));
}
