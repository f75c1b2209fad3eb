//! `python serve --data`: warm workers of the data runner, for `run
//! --data`. The runner is the one its build keeps in the user's cache
//! folder (where an installed sbx-wasm builds its runners too), so the
//! runner's own folders, lent read-only, lie inside the artifact cache.

use super::served::{Ran, first_line, tree};
use sbx_wasm_tests::{data_runner, sbx_bin, snapshot, user_cache};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const SCRIPT: &str = r#"
import numpy as np
print(float(np.arange(1_000_000, dtype=np.float64).sum()))
open("/work/out/done.txt", "w").write("done")
try:
    open("/etc/passwd").read()
    print("passwd READ")
except OSError as e:
    print("passwd refused:", type(e).__name__)
"#;

/// The data runner as its build keeps it: `data-runners/STAMP/` in the
/// user's cache folder, the stamp the checkout's copy was built from.
fn kept_runner() -> PathBuf {
    let built = data_runner();
    let stamp = std::fs::read_to_string(built.with_extension("wasm.stamp")).unwrap();
    let kept = user_cache()
        .join("data-runners")
        .join(stamp.trim())
        .join("sbx-data.wasm");
    assert!(kept.is_file(), "{} was not kept", kept.display());
    kept
}

fn run(tree: &Path, runner: &Path, extra: &[&str]) -> Ran {
    let _ = std::fs::remove_file(tree.join("out/done.txt"));
    let out = Command::new(sbx_bin())
        .current_dir(tree)
        .env("SBX_WASM_DATA_RUNNER", runner)
        .args([
            "run",
            "--data",
            "--verbose",
            "--summary",
            "--caps",
            "caps.toml",
        ])
        .args(["--report", "report.json"])
        .args(extra)
        .arg("script.py")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    Ran::read(tree, out)
}

#[test]
fn the_data_runner_kept_in_the_user_cache_runs_and_is_served() {
    super::super::python_data::ready();
    let runner = kept_runner();
    let t = tree("[budget]\nmax_wall_ms = 120000\n", &[("script.py", SCRIPT)]);
    let data = snapshot(&t.path().join("data"));
    let expected = "499999500000.0\npasswd refused: FileNotFoundError\n";

    // In its own process: its folders inside the cache are the host's to
    // lend, not a grant reaching the cache.
    let own = run(t.path(), &runner, &["--no-server"]);
    assert_eq!(own.code(), Some(0), "{}", own.stderr());
    assert!(!own.served(), "{}", own.stderr());
    assert_eq!(own.stdout(), expected);

    let mut server = Command::new(sbx_bin())
        .env("SBX_WASM_DATA_RUNNER", &runner)
        .args(["python", "serve", "--data"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (line, _out) = first_line(&mut server);
    // Stopped however the test ends: its socket is in the user's cache.
    let server = Stopped(server);
    assert!(
        line.trim().ends_with(".sock"),
        "the server did not start: {line:?}"
    );
    // Twice: each run has a worker of its own, made ready after the last.
    for _ in 0..2 {
        let ran = run(t.path(), &runner, &[]);
        assert!(ran.served(), "not served: {}", ran.stderr());
        assert_eq!(ran.code(), Some(0), "{}", ran.stderr());
        assert_eq!(ran.stdout(), expected);
        assert_eq!(ran.denials(), own.denials());
        assert_eq!(ran.denials(), ["fs_read_denied"], "{}", ran.report);
        assert_eq!(
            std::fs::read_to_string(t.path().join("out/done.txt")).unwrap(),
            "done"
        );
    }
    drop(server);
    assert_eq!(snapshot(&t.path().join("data")), data);
}

/// A server, ended (SIGTERM) when dropped.
struct Stopped(std::process::Child);

impl Drop for Stopped {
    fn drop(&mut self) {
        let _ = Command::new("kill").arg(self.0.id().to_string()).status();
        let _ = self.0.wait();
    }
}
