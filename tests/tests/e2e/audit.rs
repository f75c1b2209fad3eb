//! The audit log's chain and seal through the command line: a signed
//! `exec` log verifies; an edited, a removed and a cut record are each
//! found at their line; a key a guest could read is refused before
//! anything runs; a replayed run's log is the recorded one's, seal and all.

use sbx_wasm_tests::{mount_caps, mount_tree, sbx_in, utf8};
use std::path::Path;

const PLAN: &str = r#"[
  {"op": "fs_read", "path": "/work/a.txt"},
  {"op": "fs_read", "path": "/etc/passwd"},
  {"op": "fs_write", "path": "/work/out/r.txt", "content": "done"},
  {"op": "fs_list", "path": "/work"}
]"#;

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

    let out = sbx_in(
        t.path(),
        &[
            "exec",
            "--caps",
            "caps.toml",
            "--audit",
            "a.jsonl",
            "--audit-key",
            key.to_str().unwrap(),
            "plan.json",
        ],
    );
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
    let out = sbx_in(
        t.path(),
        &[
            "exec",
            "--caps",
            "caps.toml",
            "--audit",
            "a.jsonl",
            "--audit-key",
            key.to_str().unwrap(),
            "plan.json",
        ],
    );
    assert_eq!(out.status.code(), Some(2), "{}", utf8(&out.stderr));
    assert!(
        utf8(&out.stderr).contains("lies in mount /work"),
        "{}",
        utf8(&out.stderr)
    );
    assert!(!t.path().join("out/r.txt").exists(), "nothing ran");
    assert!(!t.path().join("a.jsonl").exists());
}
