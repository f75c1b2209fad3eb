//! What a served run leaves once its client has its answer: a worker
//! answers before its helper has removed the run's private /tmp, and the
//! folder goes right after.

use super::served::{Served, tree};
use sbx_wasm_tests::snapshot;
use std::time::{Duration, Instant};

#[test]
fn a_served_runs_private_tmp_is_removed_once_it_has_answered() {
    // The worker makes the run's /tmp under its TMPDIR, which must be the
    // client's for the worker to take the run.
    let tmpdir = tempfile::tempdir().unwrap();
    let env = [("TMPDIR", tmpdir.path().to_str().unwrap())];
    let served = Served::start(&env);
    let t = tree(
        "",
        &[(
            "t.py",
            "import os\nopen('/tmp/x', 'w').write('x' * 100)\nprint(os.listdir('/tmp'))\n",
        )],
    );
    for extra in [&[][..], &["--no-server"]] {
        let ran = served.run(t.path(), "t.py", extra, &env);
        assert_eq!(ran.code(), Some(0), "{}", ran.stderr());
        assert_eq!(ran.served(), extra.is_empty(), "{}", ran.stderr());
        // The run had its own /tmp, on the host under TMPDIR...
        assert_eq!(ran.stdout(), "['x']\n");
        // ...removed by the run's helper: at once by a run in its own
        // process, right after answering by a warm worker.
        let deadline = Instant::now() + Duration::from_secs(5);
        while !snapshot(tmpdir.path()).is_empty() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(
            snapshot(tmpdir.path()).is_empty(),
            "{:?}",
            snapshot(tmpdir.path())
        );
    }
}
