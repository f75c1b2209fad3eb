//! The epoch thread under the run's kernel wall, tested in a process of
//! its own (confinement is irreversible and would bind every other test).

use super::WasmHost;
use crate::confine::Policy;
use crate::report::Landlock;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// In the child that runs `test` alone, the folder its parent made for
/// it (a confined process could not remove its own); in the parent, runs
/// that child, checks it passed and removes the folder: `None`.
fn in_own_process(test: &str) -> Option<PathBuf> {
    const CHILD: &str = "SBX_CONFINE_THREAD_DIR";
    if let Some(dir) = std::env::var_os(CHILD) {
        return Some(dir.into());
    }
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD, dir.path())
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout) + String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    assert!(said.contains("1 passed"), "{said}");
    None
}

/// What the epoch thread gets reading `path`: Ok, or the error's kind.
fn read_on_epoch_thread(host: &WasmHost, path: &Path) -> Result<(), std::io::ErrorKind> {
    let (tx, rx) = std::sync::mpsc::channel();
    let path = path.to_path_buf();
    host.shared
        .ticker_jobs
        .lock()
        .unwrap()
        .send(Box::new(move || {
            let _ = tx.send(std::fs::read(&path).map(drop).map_err(|e| e.kind()));
        }))
        .unwrap();
    rx.recv_timeout(std::time::Duration::from_secs(5)).unwrap()
}

#[test]
fn the_epoch_thread_is_under_the_same_landlock_rules_as_the_run() {
    let name = "wasm::confine_thread::the_epoch_thread_is_under_the_same_landlock_rules_as_the_run";
    let Some(dir) = in_own_process(name) else {
        return;
    };
    let (granted, outside) = (dir.join("granted"), dir.join("outside"));
    for (folder, file) in [(&granted, "in.txt"), (&outside, "out.txt")] {
        std::fs::create_dir(folder).unwrap();
        std::fs::write(folder.join(file), file).unwrap();
    }
    let host = WasmHost::new().unwrap();
    // Before: the epoch thread reads both.
    assert_eq!(
        read_on_epoch_thread(&host, &outside.join("out.txt")),
        Ok(())
    );

    let policy = Policy {
        read: vec![granted.clone()],
        write: Vec::new(),
        runtime_read: Vec::new(),
        runtime_write_files: Vec::new(),
        tcp_connect: Some(BTreeSet::new()),
        tcp_bind: BTreeSet::new(),
        tcp_note: None,
        seccomp: true,
    };
    let wall = host.confine(&policy);
    if wall.landlock == Landlock::NotEnforced {
        eprintln!("skipped: this kernel has no Landlock ({:?})", wall.notes);
        return;
    }
    assert!(wall.up, "{wall:?}");
    assert!(
        !wall.notes.iter().any(|n| n.contains("epoch thread")),
        "{wall:?}"
    );
    // After: the granted folder, not the other one, on that thread too.
    assert_eq!(read_on_epoch_thread(&host, &granted.join("in.txt")), Ok(()));
    assert_eq!(
        read_on_epoch_thread(&host, &outside.join("out.txt")),
        Err(std::io::ErrorKind::PermissionDenied)
    );
    // And on this one.
    assert_eq!(
        std::fs::read(outside.join("out.txt")).map_err(|e| e.kind()),
        Err(std::io::ErrorKind::PermissionDenied)
    );
}
