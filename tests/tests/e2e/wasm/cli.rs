//! `sbx-wasm run` end to end, and the artifact cache.

use super::*;

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
    let report = t.json("r.json");
    assert_eq!(report["status"], "completed");
    assert_eq!(report["exit_code"], 0);
    let audit = std::fs::read_to_string(t.path("a.jsonl")).unwrap();
    assert_eq!(sbx_wasm_tests::audit_records(&audit).len(), 9);

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
    let report = t.json("r.json");
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
    let opts = RunOptions::new(t.caps().build().unwrap());
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

#[test]
fn ctrl_c_cancels_the_run_and_its_report_is_written() {
    let t = Tree::new();
    write_caps(
        t.dir.path(),
        "[budget]\nmax_wall_ms = 60000\nmax_fuel = 1000000000000000\n",
    );
    let spin = guest("spin");
    let mut child = std::process::Command::new(sbx_bin())
        .current_dir(t.dir.path())
        .args([
            "run",
            "--caps",
            "caps.toml",
            "--report",
            "r.json",
            "--audit",
            "a.jsonl",
        ])
        .arg(&spin)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Let the guest start spinning, then Ctrl-C (one sent during the
    // compile would cancel the run as well).
    std::thread::sleep(Duration::from_millis(1500));
    let start = Instant::now();
    let pid = i32::try_from(child.id()).unwrap();
    assert_eq!(unsafe { libc::kill(pid, libc::SIGINT) }, 0);
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "{status:?}");
    assert!(
        start.elapsed() < Duration::from_secs(20),
        "{:?}",
        start.elapsed()
    );
    let report = t.json("r.json");
    assert_eq!(report["status"], "cancelled", "{report}");
    assert_eq!(report["violation"], "cancelled");
    assert!(t.path("a.jsonl").exists());
}

#[test]
fn a_wall_only_grant_runs_code_compiled_without_fuel() {
    let t = Tree::new();
    write_caps(
        t.dir.path(),
        "[budget]\nmax_fuel = \"off\"\nmax_wall_ms = 400\n",
    );
    let spin = guest("spin");
    let spin = spin.to_str().unwrap();
    // Compiled for the engine this grant runs on...
    let out = sbx(t.dir.path(), &["compile", "--caps", "caps.toml", spin]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("compiled in"));
    // ...so the run finds it cached, ends at the wall, and says fuel was off.
    let out = sbx(
        t.dir.path(),
        &[
            "run",
            "--summary",
            "--caps",
            "caps.toml",
            "--report",
            "r.json",
            spin,
        ],
    );
    let summary = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(124), "{summary}");
    assert!(
        summary.contains("hard_limit (max_wall)") && summary.contains("fuel off"),
        "{summary}"
    );
    assert!(summary.ends_with("; cached\n"), "{summary}");
    let report = t.json("r.json");
    assert_eq!(report["limits"]["fuel"], serde_json::Value::Null);
    // The neighbour: the metering engine's artifact is another entry.
    let out = sbx(t.dir.path(), &["compile", spin]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("compiled in"));
}
