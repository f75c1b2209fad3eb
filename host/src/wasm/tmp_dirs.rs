//! Private `/tmp` folders, made ahead of the runs and removed after them,
//! on a thread of this module's own.
//!
//! Removing a run's private `/tmp` (a walk of the folder and its `rmdir`)
//! on the run's path cost about 0.7 ms of a 0.9 ms warm Python `print(1)`
//! when runs came a few milliseconds apart (release build, 2 ms between
//! runs: 0.85-0.92 ms against 0.16 ms for the same run with a fixed
//! `/tmp`; back to back the difference vanished), and making it 0.13 ms.
//! A run now takes a folder made ahead (or makes one, when none is ready)
//! and hands it back when it ends; the thread removes it and makes the
//! next. Each run still gets a new, empty folder that no run had before.
//!
//! Folders still here when the process exits (one made ahead, any queued
//! for removal, one being made as the exit began: waited for, up to a
//! second) are removed by an exit handler, so a program that ends right
//! after its run leaves nothing in the temp folder.
//!
//! A forked child (Python's `multiprocessing` on Linux) inherits the queue
//! without its thread, and the folders in it are its parent's: the one
//! made ahead would become the private `/tmp` of a run in each process,
//! and nothing would remove the child's. The queue is its maker's alone;
//! another process makes and removes its folders on the run's path.

use std::collections::VecDeque;
use std::sync::{Condvar, Mutex, MutexGuard, OnceLock};
use tempfile::TempDir;

struct Queue {
    state: Mutex<State>,
    changed: Condvar,
    /// The process that made the queue (and whose thread serves it).
    pid: u32,
}

#[derive(Default)]
struct State {
    /// Folders whose runs have ended, oldest first.
    remove: VecDeque<TempDir>,
    /// A new, empty folder for the next run.
    ready: Option<TempDir>,
    /// A run has asked for a folder (until then none is made ahead: a
    /// program that never runs Python makes none).
    wanted: bool,
    /// The worker is making a folder that is not `ready` yet.
    making: bool,
    /// The process is exiting: nothing more is made.
    closed: bool,
}

static QUEUE: OnceLock<Option<Queue>> = OnceLock::new();

/// The queue and its thread, started at first use; `None` when the thread
/// could not start (folders are then made and removed on the run's path).
fn queue() -> Option<&'static Queue> {
    QUEUE
        .get_or_init(|| {
            std::thread::Builder::new()
                .name("sbx-tmp".into())
                .spawn(|| work(queue().expect("started after the queue is set")))
                .ok()?;
            on_exit();
            Some(Queue {
                state: Mutex::new(State::default()),
                changed: Condvar::new(),
                pid: std::process::id(),
            })
        })
        .as_ref()
        .filter(|q| q.pid == std::process::id())
}

fn lock(q: &Queue) -> MutexGuard<'_, State> {
    q.state.lock().unwrap_or_else(|p| p.into_inner())
}

/// A new, empty folder in the temp folder: the one made ahead, or one
/// made now.
pub(super) fn fresh() -> std::io::Result<TempDir> {
    let ahead = queue().and_then(|q| {
        let mut state = lock(q);
        state.wanted = true;
        let ahead = state.ready.take();
        drop(state);
        q.changed.notify_one();
        ahead
    });
    match ahead {
        // Still where it was made (a cleaner of the temp folder may have
        // taken it meanwhile).
        Some(dir) if dir.path().is_dir() => Ok(dir),
        _ => super::python::new_tmp(),
    }
}

/// Remove `dir` (and what the run left in it) soon, off the caller's path.
pub(super) fn remove_later(dir: TempDir) {
    match queue() {
        Some(q) => {
            lock(q).remove.push_back(dir);
            q.changed.notify_one();
        }
        None => drop(dir),
    }
}

enum Job {
    Remove(std::path::PathBuf),
    Make,
}

fn work(q: &'static Queue) {
    loop {
        let job = {
            let mut state = lock(q);
            loop {
                if let Some(dir) = state.remove.front() {
                    break Job::Remove(dir.path().to_path_buf());
                }
                if state.wanted && state.ready.is_none() && !state.closed {
                    state.making = true;
                    break Job::Make;
                }
                state = q.changed.wait(state).unwrap_or_else(|p| p.into_inner());
            }
        };
        match job {
            Job::Remove(path) => {
                // Removed while still queued, so an exit now finds it in
                // the queue and removes what is left.
                let _ = std::fs::remove_dir_all(&path);
                if let Some(done) = lock(q).remove.pop_front() {
                    // Already removed: let it go without a second walk.
                    let _ = done.keep();
                }
            }
            Job::Make => {
                let made = super::python::new_tmp();
                let mut state = lock(q);
                match made {
                    // Also while the process exits: the exit handler,
                    // waiting for it, removes it with the rest.
                    Ok(dir) => {
                        if state.ready.is_none() {
                            state.ready = Some(dir);
                        }
                    }
                    // No temp folder to make it in: runs make their own
                    // (and report why they cannot).
                    Err(_) => state.wanted = false,
                }
                state.making = false;
                drop(state);
                q.changed.notify_all();
            }
        }
    }
}

/// At exit, remove the folder made ahead and every one still queued.
fn on_exit() {
    #[cfg(target_os = "linux")]
    extern "C" fn drain() {
        // Never starts the queue (no thread is spawned at exit).
        let _ = std::panic::catch_unwind(|| {
            // A forked child leaves its parent's folders alone.
            let ours = |q: &&Queue| q.pid == std::process::id();
            if let Some(q) = QUEUE.get().and_then(Option::as_ref).filter(ours) {
                let mut state = lock(q);
                state.closed = true;
                // A folder being made (a run that ended just before the
                // exit asks for the next one) is waited for, briefly: it
                // is then `ready`, removed below.
                let deadline = std::time::Instant::now() + std::time::Duration::from_secs(1);
                while state.making {
                    let left = deadline.saturating_duration_since(std::time::Instant::now());
                    if left.is_zero() {
                        break;
                    }
                    state = q
                        .changed
                        .wait_timeout(state, left)
                        .map(|(s, _)| s)
                        .unwrap_or_else(|p| p.into_inner().0);
                }
                let left = (std::mem::take(&mut state.remove), state.ready.take());
                drop(state);
                drop(left);
            }
        });
    }
    #[cfg(target_os = "linux")]
    {
        // SAFETY: `atexit` registers a plain function without arguments;
        // `drain` unwinds nowhere (panics are caught) and only takes a
        // lock the worker holds for a push, a pop or a swap.
        #[allow(unsafe_code)]
        unsafe {
            libc::atexit(drain);
        }
    }
}
