//! Model-written Python through the real CLI and the real runner component
//! (`host/runners/python`, built by this crate's build script): the shipped
//! examples end to end, every hard limit reached from Python, fetch and tools
//! as Python functions beside their denied neighbours, the standard library
//! agents use, clear errors for what cannot work, and the artifact cache.

use crate::scripts::Py;
pub(crate) use crate::scripts::warm_cache;
use sbx_wasm_tests::{LoopbackServer, python_runner, snapshot, utf8};
use serde_json::Value;
use std::path::Path;
use std::process::Stdio;

#[test]
fn analysis_example_writes_the_summary_it_computed_from_the_csv() {
    let py = Py::example();
    let data_before = snapshot(&py.path("data"));
    let ran = py.run("analyze.py", &[]);
    assert_eq!(ran.code(), Some(0), "{}", ran.stderr());
    assert!(ran.denials().is_empty(), "{}", ran.report);

    // The same numbers, computed here from the same file.
    let csv = std::fs::read_to_string(py.path("data/sales.csv")).unwrap();
    let mut rows = 0;
    let mut by_region = std::collections::BTreeMap::<String, f64>::new();
    for line in csv.lines().skip(1) {
        let f: Vec<&str> = line.split(',').collect();
        let revenue = f[3].parse::<f64>().unwrap() * f[4].parse::<f64>().unwrap();
        *by_region.entry(f[1].to_string()).or_default() += revenue;
        rows += 1;
    }
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(py.path("out/summary.json")).unwrap())
            .unwrap();
    assert_eq!(summary["rows"], rows);
    let total: f64 = by_region.values().sum();
    assert!((summary["revenue_total"].as_f64().unwrap() - total).abs() < 0.01);
    for (region, revenue) in &by_region {
        let got = summary["revenue_by_region"][region].as_f64().unwrap();
        assert!((got - revenue).abs() < 0.01, "{region}: {got} != {revenue}");
    }
    assert!(ran.stdout().contains("wrote /work/out/summary.json"));
    assert_eq!(
        snapshot(&py.path("data")),
        data_before,
        "the read mount changed"
    );
}

#[test]
fn hostile_example_sees_every_attempt_denied_then_halts() {
    let py = Py::example();
    let before = snapshot(py.dir.path());
    let ran = py.run("hostile.py", &[]);
    ran.assert_seed_hostile();
    let stdout = ran.stdout();
    assert!(
        stdout.contains("read /work/notes.txt: 63 bytes"),
        "{stdout}"
    );
    assert!(!stdout.contains("ALLOWED"), "{stdout}");
    assert!(stdout.contains("exfiltrate to evil.example: denied (egress_denied)"));
    // Only the report written by the test itself is new.
    let mut after = snapshot(py.dir.path());
    after.remove(Path::new("report.json"));
    assert_eq!(after, before, "the host tree changed");
}

#[test]
fn fetch_and_tools_are_python_functions_beside_their_denied_neighbours() {
    let granted = LoopbackServer::start();
    let other = LoopbackServer::start();
    let py = Py::new(
        "max_wall_ms = 20000",
        &format!(
            "[net]\nallow = [\"{}\"]\n[tools]\nallow = [\"word_count\"]\n\
             [tools.command.word_count]\nargv = [\"wc\", \"-w\"]\n",
            granted.origin()
        ),
    );
    py.write(
        "agent.py",
        &format!(
            r#"
import sbx
r = sbx.fetch("{granted}/status")
print("granted", r.status, r.text().strip())
try:
    sbx.fetch("{other}/status")
    print("other ALLOWED")
except sbx.Denied as e:
    print("other", e.violation)
print("tools", sbx.granted_tools())
print("count", sbx.call_tool("word_count", "three little words").strip())
try:
    sbx.call_tool("shell", "id")
except sbx.Denied as e:
    print("shell", e.violation, isinstance(e, PermissionError))
"#,
            granted = granted.origin(),
            other = other.origin()
        ),
    );
    let ran = py.run("agent.py", &[]);
    assert_eq!(ran.code(), Some(0), "{}", ran.stderr());
    let stdout = ran.stdout();
    assert!(stdout.contains("granted 200"), "{stdout}");
    assert!(stdout.contains("other egress_denied"), "{stdout}");
    assert!(stdout.contains("tools ['word_count']"), "{stdout}");
    assert!(stdout.contains("count 3"), "{stdout}");
    assert!(stdout.contains("shell tool_denied True"), "{stdout}");
    assert_eq!(ran.denials(), ["egress_denied", "tool_denied"]);
    assert_eq!(granted.connections(), 1);
    assert_eq!(other.connections(), 0, "a denied fetch reached the network");
}

#[test]
fn infinite_loop_ends_as_max_fuel_or_max_wall() {
    let py = Py::new("max_fuel = 2000000000\nmax_wall_ms = 10000", "");
    py.write(
        "spin.py",
        "print('spinning', flush=True)\nwhile True:\n    pass\n",
    );
    let ran = py.run("spin.py", &[]);
    assert_eq!(ran.code(), Some(124), "{}", ran.stderr());
    assert!(
        ["max_fuel", "max_wall"].contains(&ran.violation()),
        "{}",
        ran.report
    );
    assert!(ran.stdout().contains("spinning"));
}

#[test]
fn memory_bomb_ends_as_max_memory() {
    let py = Py::new("max_memory_bytes = 67108864", "");
    py.write(
        "bomb.py",
        "hoard = []\nwhile True:\n    hoard.append(bytearray(1 << 20))\n",
    );
    let ran = py.run("bomb.py", &[]);
    assert_eq!(ran.code(), Some(124), "{}", ran.stderr());
    assert_eq!(ran.violation(), "max_memory", "{}", ran.report);
    let peak = ran.report["usage"]["memory_peak_bytes"].as_u64().unwrap();
    assert!(peak <= 64 << 20, "peak {peak} over the limit");
}

#[test]
fn output_flood_ends_as_max_output_bytes() {
    let py = Py::new("max_output_bytes = 100000", "");
    py.write("flood.py", "while True:\n    print('x' * 1000)\n");
    let ran = py.run("flood.py", &[]);
    assert_eq!(ran.code(), Some(124), "{}", ran.stderr());
    assert_eq!(ran.violation(), "max_output_bytes", "{}", ran.report);
    assert!(
        ran.out.stdout.len() <= 100_000,
        "{} bytes",
        ran.out.stdout.len()
    );
}

#[test]
fn standard_library_for_agents_works_and_the_rest_fails_clearly() {
    let py = Py::new("max_wall_ms = 20000", "");
    py.write(
        "stdlib.py",
        r#"
import csv, json, re, math, datetime, pathlib, statistics, sys
rows = list(csv.DictReader(pathlib.Path("/work/table.csv").open()))
scores = [int(r["score"]) for r in rows]
out = {
    "names": [r["name"] for r in rows],
    "mean": statistics.mean(scores),
    "sqrt": math.sqrt(16),
    "words": re.findall(r"\w+", "a-b c"),
    "day": datetime.date(2026, 11, 29).isoformat(),
    "argv": sys.argv,
}
pathlib.Path("/work/out/r.json").write_text(json.dumps(out))
import subprocess, socket
try:
    subprocess.run(["ls"])
except OSError as e:
    print("subprocess:", e)
try:
    socket.create_connection(("127.0.0.1", 9), timeout=1)
except OSError as e:
    print("socket:", type(e).__name__)
try:
    import numpy
except ModuleNotFoundError as e:
    print("numpy:", e)
"#,
    );
    let ran = py.run("stdlib.py", &["--flag", "x"]);
    assert_eq!(ran.code(), Some(0), "{}", ran.stderr());
    let got: Value =
        serde_json::from_str(&std::fs::read_to_string(py.path("out/r.json")).unwrap()).unwrap();
    assert_eq!(
        got,
        serde_json::json!({"names": ["ada", "bob"], "mean": 4, "sqrt": 4.0,
            "words": ["a", "b", "c"], "day": "2026-11-29", "argv": ["stdlib.py", "--flag", "x"]})
    );
    let stdout = ran.stdout();
    assert!(
        stdout.contains("subprocess: [Errno 58] wasi does not support processes"),
        "{stdout}"
    );
    // A raw connection is refused inside the runner, naming egress.
    assert!(stdout.contains("socket: PermissionError"), "{stdout}");
    // numpy is the data runner's, and the message says how to reach it.
    assert!(
        stdout.contains("numpy: No module named 'numpy'") && stdout.contains("sbx-wasm run --data"),
        "{stdout}"
    );
    // Failed imports are answered inside the runner: no filesystem probes.
    assert!(ran.denials().is_empty(), "{}", ran.report);
}

#[test]
fn exit_status_exceptions_and_stdin() {
    let py = Py::new("max_wall_ms = 20000", "");
    py.write("ok.py", "import sys\nsys.exit(0)\n");
    py.write("fails.py", "import sys\nsys.exit(7)\n");
    py.write("raises.py", "raise ValueError('bad input')\n");
    assert_eq!(py.run("ok.py", &[]).code(), Some(0));
    // The script's own code (the runner tells the host; WASI 0.2 alone
    // would carry 1), and a code whose low byte is 0 still a failure.
    assert_eq!(py.run("fails.py", &[]).code(), Some(7));
    py.write("fails256.py", "import sys\nsys.exit(256)\n");
    assert_eq!(py.run("fails256.py", &[]).code(), Some(1));
    let ran = py.run("raises.py", &[]);
    assert_eq!(ran.code(), Some(1));
    assert!(
        ran.stderr().contains("ValueError: bad input"),
        "{}",
        ran.stderr()
    );

    // A script that reads its own stdin.
    py.write("echo.py", "import sys\nprint(sys.stdin.read().upper())\n");
    let mut child = py
        .cmd(warm_cache())
        .args(["run", "--caps", "caps.toml", "--python-runner"])
        .arg(python_runner())
        .arg("echo.py")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child.stdin.take().unwrap().write_all(b"piped").unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(utf8(&out.stdout).trim(), "PIPED");
}

#[test]
fn bad_scripts_and_a_missing_runner_are_setup_errors() {
    let py = Py::new("", "");
    std::fs::write(py.path("latin1.py"), b"print('caf\xe9')\n").unwrap();
    let ran = py.run("latin1.py", &[]);
    assert_eq!(ran.code(), Some(125));
    assert!(ran.stderr().contains("not UTF-8"), "{}", ran.stderr());

    let ran = py.run("missing.py", &[]);
    assert_eq!(ran.code(), Some(125));
    assert!(
        ran.stderr().contains("cannot read missing.py"),
        "{}",
        ran.stderr()
    );

    py.write("ok.py", "print(1)\n");
    let out = py
        .cmd(warm_cache())
        .args([
            "run",
            "--caps",
            "caps.toml",
            "--python-runner",
            "nope.wasm",
            "ok.py",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(125));
    assert!(
        utf8(&out.stderr).contains("the Python runner named by --python-runner does not exist"),
        "{}",
        utf8(&out.stderr)
    );

    // A file that is not named .py runs as Python only when asked.
    py.write("agent.txt", "print('as python')\n");
    let out = py
        .cmd(warm_cache())
        .args(["run", "--caps", "caps.toml", "--python", "--python-runner"])
        .arg(python_runner())
        .arg("agent.txt")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", utf8(&out.stderr));
    assert_eq!(utf8(&out.stdout).trim(), "as python");
}

#[test]
fn second_run_of_a_script_uses_the_cached_runner() {
    let cache = tempfile::tempdir().unwrap();
    let py = Py::new("", "");
    py.write("hello.py", "print('hello')\n");
    let first = py.run_with(cache.path(), "hello.py", &[]);
    assert_eq!(first.code(), Some(0), "{}", first.stderr());
    assert!(
        first.stderr().contains("compiled, now cached"),
        "{}",
        first.stderr()
    );
    // A compile (seconds for the runner) says so while it lasts; a cache
    // hit says nothing of it.
    assert!(
        first.stderr().contains("one-time cost") && first.stderr().contains("sbx-wasm: compiled "),
        "{}",
        first.stderr()
    );
    let second = py.run_with(cache.path(), "hello.py", &[]);
    assert_eq!(second.code(), Some(0));
    assert!(second.stderr().contains("; cached"), "{}", second.stderr());
    assert!(
        !second.stderr().contains("compiling"),
        "{}",
        second.stderr()
    );
    assert_eq!(second.stdout(), "hello\n");
}

#[test]
fn the_runner_fits_the_pool_sized_from_the_caps() {
    use sbx_wasm::wasm::{Allocator, PoolSizes, RunOptions, WasmHost};
    let py = Py::new("", "");
    let caps = sbx_wasm::Capabilities::from_file(py.path("caps.toml")).unwrap();
    let host = WasmHost::with_pool(PoolSizes::for_caps(&caps, 2))
        .unwrap()
        .with_cache(sbx_wasm::wasm::ArtifactCache::open(warm_cache()).unwrap());
    assert!(
        matches!(host.allocator(), Allocator::Pooling(_)),
        "{:?}",
        host.allocator()
    );
    let agent = host.prepare(&host.load(&python_runner()).unwrap()).unwrap();
    for i in 0..3 {
        let opts = RunOptions::new(caps.clone()).args(["-c".into(), format!("print({i} * 7)")]);
        let run = host.run_prepared(&agent, opts).unwrap();
        assert_eq!(run.report.exit_code, Some(0), "{:?}", run.trap);
        // Captured by default.
        assert_eq!(utf8(&run.stdout), format!("{}\n", i * 7));
    }
}

#[test]
fn disk_usage_is_the_write_quota_left() {
    let py = Py::new("max_write_bytes = 100000", "");
    py.write(
        "space.py",
        r#"
import errno, shutil
print(tuple(shutil.disk_usage("/work/out")))
with open("/work/out/a.bin", "wb") as f:
    f.write(b"x" * 4000)
usage = shutil.disk_usage("/work")
print(tuple(usage), usage.free == usage.total - usage.used)
for path in ("/work/missing", "/etc"):
    try:
        shutil.disk_usage(path)
    except FileNotFoundError as e:
        print("missing:", e.errno == errno.ENOENT)
"#,
    );
    let ran = py.run("space.py", &[]);
    assert_eq!(ran.code(), Some(0), "{}", ran.stderr());
    assert_eq!(
        ran.stdout(),
        "(100000, 0, 100000)\n(100000, 4000, 96000) True\nmissing: True\nmissing: True\n"
    );
    // The write it measured happened; a path outside the mounts is the
    // stat refused on record, one inside that is missing only not found.
    assert_eq!(std::fs::read(py.path("out/a.bin")).unwrap().len(), 4000);
    assert_eq!(ran.denials(), ["fs_read_denied"], "{}", ran.report);
    assert_eq!(ran.report["denials"][0]["target"], "/etc");
}

/// The processes carrying `marker` in their environment (a run's helper
/// inherits the run's).
fn processes_marked(marker: &str) -> Vec<String> {
    let needle = format!("SBX_TEST_MARK={marker}");
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().parse::<u32>().is_ok())
        .filter(|e| {
            std::fs::read(e.path().join("environ"))
                .map(|env| env.split(|b| *b == 0).any(|v| v == needle.as_bytes()))
                .unwrap_or(false)
        })
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect()
}

/// A run in its own process starts its helper before loading the runner
/// (their starts overlap) and lets go of the runner while the helper
/// removes the run's private /tmp: the folder is gone and the helper has
/// exited when the command returns. Beside it, a run refused after its
/// helper started (no such runner) leaves neither a folder nor a process.
#[test]
fn own_process_run_leaves_no_private_tmp_and_no_helper_behind() {
    let py = Py::new("max_ops = 100", "");
    let tmpdir = tempfile::tempdir().unwrap();
    py.write(
        "t.py",
        "import os\nopen('/tmp/x', 'w').write('x' * 100)\nprint(os.listdir('/tmp'))\n",
    );
    let nanos = std::time::UNIX_EPOCH.elapsed().unwrap().as_nanos();
    let marker = format!("{}-{nanos}", std::process::id());
    let run = |runner: &Path| {
        py.cmd(warm_cache())
            .env("TMPDIR", tmpdir.path())
            .env("SBX_TEST_MARK", &marker)
            .args([
                "run",
                "--no-server",
                "--caps",
                "caps.toml",
                "--python-runner",
            ])
            .arg(runner)
            .arg("t.py")
            .output()
            .unwrap()
    };
    let ran = run(&python_runner());
    assert_eq!(ran.status.code(), Some(0), "{}", utf8(&ran.stderr));
    // The script had its /tmp, on the host under TMPDIR...
    assert_eq!(utf8(&ran.stdout), "['x']\n");
    // ...and nothing of it, nor of its helper, is left.
    assert!(
        snapshot(tmpdir.path()).is_empty(),
        "{:?}",
        snapshot(tmpdir.path())
    );
    assert_eq!(processes_marked(&marker), Vec::<String>::new());

    let ran = run(&py.path("no-such-runner.wasm"));
    assert_eq!(ran.status.code(), Some(125), "{}", utf8(&ran.stderr));
    assert!(snapshot(tmpdir.path()).is_empty());
    // The helper started ahead exits when its stdin closes with the run.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while !processes_marked(&marker).is_empty() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert_eq!(processes_marked(&marker), Vec::<String>::new());
}
