//! WASI semantics under the gate: a plain WASI program granted folders sees
//! under the sandbox what it sees under a bare wasmtime with the same
//! folders (the baseline in `bench/src/bare.rs`), except where the grant
//! refuses something, and then with the error code WASI itself gives.

use sbx_wasm_bench::bare::Bare;
use sbx_wasm_tests::{guest, mount_caps, mount_tree, sbx_bin};
use serde_json::Value;
use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};

/// The guest's stdout under a bare wasmtime with `dirs` preopened.
fn under_wasmtime(dirs: &[(&Path, &str, bool)], args: &[&str]) -> String {
    let bare = Bare::new().unwrap();
    let pre = bare.load_file(&guest("wasi_semantics")).unwrap();
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(bare.run_with_dirs(&pre, dirs, args))
        .unwrap()
}

/// The guest's stdout and report under `sbx-wasm run` with `caps`.
fn under_sbx(dir: &Path, caps: &str, args: &[&str]) -> (String, Value) {
    std::fs::write(dir.join("caps.toml"), caps).unwrap();
    let out = Command::new(sbx_bin())
        .current_dir(dir)
        .env("SBX_WASM_CACHE_DIR", dir.join("cache"))
        .args(["run", "--caps", "caps.toml", "--report", "r.json"])
        .arg(guest("wasi_semantics"))
        .arg("--")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let report = std::fs::read_to_string(dir.join("r.json")).unwrap();
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        serde_json::from_str(&report).unwrap(),
    )
}

#[test]
fn a_plain_wasi_program_sees_what_it_sees_under_wasmtime() {
    let t = mount_tree(&[("data/data.txt", "d")]);
    let (data, out) = (t.path().join("data"), t.path().join("out"));
    let wasmtime = under_wasmtime(&[(&data, "/work", false), (&out, "/work/out", true)], &[]);
    let (sbx, report) = under_sbx(t.path(), &mount_caps(""), &[]);
    // The one difference: the empty root preopen, listed last (so the
    // first preopen is still the first mount), through which nothing is
    // found, as with no preopen there.
    let extra = [
        "preopen 2: /",
        "absolute on /: not-permitted",
        "write through read-only /: no-entry",
        "read through /: no-entry",
    ];
    for line in extra {
        assert!(sbx.lines().any(|l| l == line), "{line:?} in\n{sbx}");
    }
    let sbx: String = sbx
        .lines()
        .filter(|l| !extra.contains(l))
        .map(|l| format!("{l}\n"))
        .collect();
    assert_eq!(sbx, wasmtime);
    // The refusals, with WASI's own codes, beside the allowed read.
    for line in [
        "preopen 0: /work",
        "write through the first (/work): not-permitted",
        "empty path on /work: no-entry",
        "absolute on /work: not-permitted",
        "write through read-only /work: not-permitted",
        "read through /work: ok",
        "outside every mount: Err(NotFound)",
    ] {
        assert!(
            wasmtime.lines().any(|l| l == line),
            "{line:?} in\n{wasmtime}"
        );
    }
    // The report keeps the project's names for them.
    let denials: Vec<&str> = report["denials"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["violation"].as_str().unwrap())
        .collect();
    assert!(denials.contains(&"fs_write_denied"), "{report}");
    assert!(denials.contains(&"invalid_request"), "{report}");
    assert!(denials.contains(&"fs_read_denied"), "{report}");
}

#[test]
fn a_folder_granted_at_the_root_works_as_under_wasmtime() {
    let t = mount_tree(&[("data/data.txt", "d")]);
    let (data, out) = (t.path().join("data"), t.path().join("out"));
    let wasmtime = under_wasmtime(&[(&data, "/", false), (&out, "/out", true)], &[]);
    let caps = "[fs]\nread = [{ host = \"data\", guest = \"/\" }]\n\
                write = [{ host = \"out\", guest = \"/out\" }]\n";
    let (sbx, _) = under_sbx(t.path(), caps, &[]);
    assert_eq!(sbx, wasmtime);
    // No empty root: the grant's own root is the first preopen, and a
    // relative path reaches it.
    assert!(sbx.starts_with("preopen 0: /\npreopen 1: /out\n"), "{sbx}");
    assert!(!sbx.contains("preopen 2"), "{sbx}");
    assert!(sbx.contains("relative data.txt: Ok(\"d\")"), "{sbx}");
    // The neighbour: the same program under a grant at /work finds no
    // data.txt relative to the root.
    let (sbx, _) = under_sbx(t.path(), &mount_caps(""), &[]);
    assert!(sbx.contains("relative data.txt: Err(NotFound)"), "{sbx}");
}

#[test]
fn a_closed_stdout_is_a_closed_stream_to_the_guest() {
    let t = mount_tree(&[("data/data.txt", "d")]);
    std::fs::write(t.path().join("caps.toml"), mount_caps("")).unwrap();
    let mut child = Command::new(sbx_bin())
        .current_dir(t.path())
        .env("SBX_WASM_CACHE_DIR", t.path().join("cache"))
        .args(["run", "--caps", "caps.toml", "--report", "r.json"])
        .arg(guest("wasi_semantics"))
        .args(["--", "closed-stdout"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Read a little, then go away.
    let mut stdout = child.stdout.take().unwrap();
    let mut first = [0u8; 16];
    stdout.read_exact(&mut first).unwrap();
    drop(stdout);
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    let status = child.wait().unwrap();
    // The guest saw its stream closed and chose to stop: exit 0, not a
    // budget halt after 16 MiB written into nothing.
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("stdout closed after"), "{stderr}");
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(t.path().join("r.json")).unwrap()).unwrap();
    assert_eq!(report["status"], "completed");
    assert!(
        report["notes"][0].as_str().unwrap().starts_with("stdout:"),
        "{report}"
    );
    assert!(
        report["usage"]["output_bytes"].as_u64().unwrap() < 1 << 20,
        "{report}"
    );
}
