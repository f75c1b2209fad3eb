//! stdin streamed; large writes whole or halted.

use super::*;

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
