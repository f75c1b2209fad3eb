//! A progress line for slow component loads: compiling a large component
//! (the 19 MB Python runner takes seconds) should not look like a hang.
//! Fast loads (a cache hit) print nothing.

use std::io::{IsTerminal, Write};
use std::path::Path;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Silence before the first progress line.
const QUIET_FOR: Duration = Duration::from_secs(1);

/// Run `load` (which may compile `path`), telling stderr what is happening
/// if it takes longer than a second.
pub(crate) fn while_loading<T>(path: &Path, load: impl FnOnce() -> T) -> T {
    let (done_tx, done_rx) = mpsc::channel::<()>();
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let size = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    let watcher = std::thread::spawn(move || {
        let started = Instant::now();
        if done_rx.recv_timeout(QUIET_FOR) != Err(mpsc::RecvTimeoutError::Timeout) {
            return;
        }
        let tty = std::io::stderr().is_terminal();
        let what = format!(
            "sbx-wasm: compiling {name} ({:.1} MiB); the cache makes this a one-time cost",
            size as f64 / (1024.0 * 1024.0)
        );
        if tty {
            eprint!("{what}... ");
        } else {
            eprintln!("{what}");
        }
        while let Err(mpsc::RecvTimeoutError::Timeout) =
            done_rx.recv_timeout(Duration::from_secs(1))
        {
            if tty {
                eprint!("\r{what}... {} s ", started.elapsed().as_secs());
                let _ = std::io::stderr().flush();
            }
        }
        let took = format!("{:.1} s", started.elapsed().as_secs_f64());
        if tty {
            eprintln!("\r{what}... done in {took}");
        } else {
            eprintln!("sbx-wasm: compiled {name} in {took}");
        }
    });
    let out = load();
    let _ = done_tx.send(());
    let _ = watcher.join();
    out
}
