//! What a guest may not do to the host around its run, through the real
//! CLI: reach the artifact cache (machine code the host later runs
//! natively) or its key by a mount; alter a cache entry or its index so
//! that a later run executes other code; bend where the host writes the
//! run's report, audit log and recording by rearranging its write mount;
//! erase them by planting folders at their names.

use super::python::warm_cache;
use sbx_wasm_tests::{guest, python_runner, sbx_bin, snapshot, utf8};
use std::path::Path;
use std::process::{Command, Output};

fn sbx(dir: &Path, cache: &Path, key: &Path, args: &[&str]) -> Output {
    Command::new(sbx_bin())
        .env("SBX_WASM_CACHE_DIR", cache)
        .env("SBX_WASM_CACHE_KEY", key)
        .env("SBX_WASM_PYTHON_RUNNER", python_runner())
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn a_grant_over_the_cache_or_its_key_is_refused_before_the_run_and_lint_says_error() {
    let t = tempfile::tempdir().unwrap();
    let r = t.path();
    std::fs::create_dir_all(r.join("ws/.cache")).unwrap();
    std::fs::create_dir_all(r.join("conf")).unwrap();
    std::fs::write(r.join("ws/notes.txt"), "n").unwrap();
    std::fs::write(
        r.join("caps.toml"),
        "[fs]\nwrite = [{ host = \"ws\", guest = \"/work\" }]\n",
    )
    .unwrap();
    let noop = guest("noop");
    let args = ["run", "--caps", "caps.toml", noop.to_str().unwrap()];
    let key = r.join("conf/cache.key");
    // A workspace-local cache inside the write mount: refused, naming both
    // paths, and nothing in the mount changed (not even a cache made).
    let before = snapshot(&r.join("ws"));
    let out = sbx(r, &r.join("ws/.cache"), &key, &args);
    assert_eq!(out.status.code(), Some(125), "{}", utf8(&out.stderr));
    let err = utf8(&out.stderr);
    assert!(err.contains("overlaps the artifact cache"), "{err}");
    assert!(
        err.contains("/ws/.cache") && err.contains("mount /work"),
        "{err}"
    );
    assert_eq!(snapshot(&r.join("ws")), before);
    // The key's folder mounted for reading: refused too.
    std::fs::write(
        r.join("caps-key.toml"),
        "[fs]\nread = [{ host = \"conf\", guest = \"/conf\" }]\n",
    )
    .unwrap();
    let out = sbx(
        r,
        &r.join("cache"),
        &key,
        &["run", "--caps", "caps-key.toml", noop.to_str().unwrap()],
    );
    assert_eq!(out.status.code(), Some(125), "{}", utf8(&out.stderr));
    assert!(utf8(&out.stderr).contains("the artifact cache's key"));
    // `policy lint` loads the grant and calls the overlap an error.
    let out = sbx(
        r,
        &r.join("ws/.cache"),
        &key,
        &["policy", "lint", "caps.toml"],
    );
    assert_eq!(out.status.code(), Some(1), "{}", utf8(&out.stderr));
    let said = utf8(&out.stdout);
    assert!(said.starts_with("error: the write mount /work"), "{said}");
    // The allowed neighbour: the same grant with the cache outside it runs.
    let out = sbx(r, &r.join("cache"), &key, &args);
    assert_eq!(out.status.code(), Some(0), "{}", utf8(&out.stderr));
    assert_eq!(utf8(&out.stdout), "ok\n");
    let out = sbx(r, &r.join("cache"), &key, &["policy", "lint", "caps.toml"]);
    assert!(
        !utf8(&out.stdout).contains("error:"),
        "{}",
        utf8(&out.stdout)
    );
}

/// The cache's one entry (`*.cwasm`) for what has run so far.
fn entries(cache: &Path) -> Vec<std::path::PathBuf> {
    let mut v: Vec<_> = std::fs::read_dir(cache)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "cwasm"))
        .collect();
    v.sort();
    v
}

fn sha256_hex(bytes: &[u8]) -> String {
    sbx_wasm::replay::sha256_hex(bytes)
}

/// What `cache.rs` calls a file's stamp, as anyone who can stat it can
/// compute it.
fn stamp(p: &Path) -> String {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(p).unwrap();
    format!(
        "{} {} {} {}.{} {}.{}",
        m.dev(),
        m.ino(),
        m.len(),
        m.mtime(),
        m.mtime_nsec(),
        m.ctime(),
        m.ctime_nsec()
    )
}

#[test]
fn an_entry_or_index_rewritten_by_someone_without_the_key_is_compiled_again_not_run() {
    let t = tempfile::tempdir().unwrap();
    let r = t.path();
    std::fs::write(r.join("caps.toml"), "").unwrap();
    let (cache, key) = (r.join("cache"), r.join("conf/cache.key"));
    let (noop, benign) = (guest("noop"), guest("benign"));
    let run = |component: &Path| {
        let out = sbx(
            r,
            &cache,
            &key,
            &[
                "run",
                "--summary",
                "--caps",
                "caps.toml",
                component.to_str().unwrap(),
            ],
        );
        (utf8(&out.stdout), utf8(&out.stderr))
    };
    let (ok, _) = run(&noop);
    assert_eq!(ok, "ok\n");
    let noop_entry = entries(&cache).remove(0);
    let (benign_out, _) = run(&benign);
    assert_ne!(benign_out, ok);
    let benign_entry = entries(&cache)
        .into_iter()
        .find(|p| *p != noop_entry)
        .unwrap();
    // The allowed neighbour: untouched, the entry loads.
    let (out, err) = run(&noop);
    assert_eq!(out, ok);
    assert!(err.ends_with("; cached\n"), "{err}");

    // Put benign's machine code in noop's entry and write a sum file that
    // agrees with it (the SHA-256, the stamp): all a writer of the folder
    // could do before the key.
    std::fs::copy(&benign_entry, &noop_entry).unwrap();
    let sum_file = noop_entry.with_extension("cwasm.sha256");
    let forged = format!(
        "{}\n{}\n",
        sha256_hex(&std::fs::read(&noop_entry).unwrap()),
        stamp(&noop_entry)
    );
    std::fs::write(&sum_file, &forged).unwrap();
    let (out, err) = run(&noop);
    assert_eq!(out, ok, "noop's own code ran, not the planted one");
    assert!(
        err.ends_with("recompiled (bad cache entry replaced)\n"),
        "{err}"
    );
    // Same with a tag line copied from another entry's sum file.
    std::fs::copy(&benign_entry, &noop_entry).unwrap();
    let other_tag = std::fs::read_to_string(benign_entry.with_extension("cwasm.sha256")).unwrap();
    let tag = other_tag.lines().nth(2).unwrap();
    std::fs::write(
        &sum_file,
        format!(
            "{}\n{}\n{tag}\n",
            sha256_hex(&std::fs::read(&noop_entry).unwrap()),
            stamp(&noop_entry)
        ),
    )
    .unwrap();
    let (out, _) = run(&noop);
    assert_eq!(out, ok);

    // The index that names a component file's content: pointed at benign's
    // entry, with the file's current stamp. The run reads and hashes the
    // file instead, and runs noop.
    let benign_sum = benign_entry
        .file_name()
        .unwrap()
        .to_string_lossy()
        .split('-')
        .next()
        .unwrap()
        .to_string();
    let mut indexes = 0;
    for e in std::fs::read_dir(&cache).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|e| e == "source") {
            let body = std::fs::read_to_string(&p).unwrap();
            let stamp_line = body.lines().next().unwrap().to_string();
            std::fs::write(&p, format!("{stamp_line}\n{benign_sum}\n")).unwrap();
            indexes += 1;
        }
    }
    assert_eq!(indexes, 2);
    let (out, err) = run(&noop);
    assert_eq!(out, ok, "{err}");
}

#[test]
fn records_go_where_the_operator_named_them_whatever_the_guest_moved() {
    let t = tempfile::tempdir().unwrap();
    let r = t.path();
    // The write mount holds the records' folder and a link that points
    // outside every mount (one the threat model allows to be there).
    std::fs::create_dir_all(r.join("ws/logs")).unwrap();
    std::fs::create_dir_all(r.join("outside")).unwrap();
    std::os::unix::fs::symlink(r.join("outside"), r.join("ws/escape")).unwrap();
    std::fs::write(
        r.join("caps.toml"),
        "[fs]\nwrite = [{ host = \"ws\", guest = \"/work\" }]\n",
    )
    .unwrap();
    // The guest moves the records' folder aside and renames the link to
    // its name, then plants a folder where the recording will go.
    std::fs::write(
        r.join("swap.py"),
        "import os\nos.rename('/work/logs', '/work/moved')\nos.rename('/work/escape', '/work/logs')\n\
         os.mkdir('/work/moved/rec.json')\nopen('/work/moved/rec.json/x', 'w').write('x')\nprint('swapped')\n",
    )
    .unwrap();
    for wall in [&["--no-kernel-confinement"][..], &[]] {
        let _ = std::fs::remove_dir_all(r.join("ws"));
        std::fs::create_dir_all(r.join("ws/logs")).unwrap();
        std::os::unix::fs::symlink(r.join("outside"), r.join("ws/escape")).unwrap();
        let mut args = vec![
            "run",
            "--no-server",
            "--caps",
            "caps.toml",
            "swap.py",
            "--report",
            "ws/logs/report.json",
            "--audit",
            "ws/logs/audit.jsonl",
            "--record",
            "ws/logs/rec.json",
        ];
        args.extend(wall);
        let out = sbx(r, warm_cache(), &r.join("conf/cache.key"), &args);
        let err = utf8(&out.stderr);
        // The guest ran and ended well: its exit code says so, and stderr
        // names the one record that could not be written, and where it is.
        assert_eq!(out.status.code(), Some(0), "{wall:?}: {err}");
        assert_eq!(utf8(&out.stdout), "swapped\n");
        assert!(err.contains("cannot write ws/logs/rec.json"), "{err}");
        assert!(err.contains("kept in .rec.json.sbx-"), "{err}");
        // Nothing outside the mount; the report and audit in the folder the
        // operator named, now at /work/moved.
        assert_eq!(
            std::fs::read_dir(r.join("outside")).unwrap().count(),
            0,
            "{wall:?}"
        );
        let report: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(r.join("ws/moved/report.json")).unwrap())
                .unwrap();
        assert_eq!(report["status"], "completed");
        let audit = std::fs::read_to_string(r.join("ws/moved/audit.jsonl")).unwrap();
        assert!(audit.lines().count() > 0, "{audit}");
        for line in audit.lines() {
            serde_json::from_str::<serde_json::Value>(line).unwrap();
        }
    }
}

#[test]
fn records_the_guest_leaves_alone_are_written_whole_with_no_temp_file_left() {
    let t = tempfile::tempdir().unwrap();
    let r = t.path();
    std::fs::create_dir_all(r.join("ws/logs")).unwrap();
    std::fs::write(
        r.join("caps.toml"),
        "[fs]\nwrite = [{ host = \"ws\", guest = \"/work\" }]\n",
    )
    .unwrap();
    std::fs::write(
        r.join("plain.py"),
        "print(sorted(__import__('os').listdir('/work/logs')))\n",
    )
    .unwrap();
    let out = sbx(
        r,
        warm_cache(),
        &r.join("conf/cache.key"),
        &[
            "run",
            "--no-server",
            "--caps",
            "caps.toml",
            "plain.py",
            "--report",
            "ws/logs/report.json",
            "--audit",
            "ws/logs/audit.jsonl",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", utf8(&out.stderr));
    // No staged file was there for the guest to see or replace.
    assert_eq!(utf8(&out.stdout), "[]\n");
    let mut names: Vec<_> = std::fs::read_dir(r.join("ws/logs"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["audit.jsonl", "report.json"]);
}
