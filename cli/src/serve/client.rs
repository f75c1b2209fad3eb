//! `sbx-wasm run script.py` with a server running: hand the run to one of
//! its warm workers, with this process's stdin, stdout and stderr, and
//! exit with the run's code. Without a server (or when the worker does not
//! take the run) `run` goes on in this process, as if none were there.

use super::wire::{self, CANCEL, Reply, Request};
use std::io::Write;
use std::os::unix::net::UnixStream;
use std::path::Path;

/// The run's exit code, if a warm worker of a server for `runner` ran it;
/// `None`: run it here (no server, or it did not take the run).
pub(crate) fn hand_over(runner: &Path, verbose: bool) -> Option<i32> {
    let dir = sbx_wasm::wasm::ArtifactCache::default_dir()?;
    let socket = wire::socket_path(&dir, runner).ok()?;
    let conn = UnixStream::connect(&socket).ok()?;
    // The folder is this user's (0700); the peer must be too.
    let peer = rustix::net::sockopt::socket_peercred(&conn).ok()?;
    if peer.uid != rustix::process::getuid() {
        return None;
    }
    let request = Request {
        args: std::env::args_os()
            .skip(2)
            .map(|a| a.into_string().ok())
            .collect::<Option<_>>()?,
        cwd: std::env::current_dir().ok()?,
        env: std::env::vars_os()
            .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
            .collect(),
        runner: std::fs::canonicalize(runner).ok()?,
        context: super::context::Context::here(),
    };
    wire::send_with_fds(&conn, &request, &wire::stdio()).ok()?;
    await_answer(&conn, verbose)
}

/// The worker's answer. The first Ctrl-C (or SIGTERM) cancels the run, as
/// it would here, by a [`CANCEL`] to the server (the worker then writes
/// the report); a second ends this process at once. The signals are
/// watched through a socket pair, from this thread: no thread is started.
fn await_answer(conn: &UnixStream, verbose: bool) -> Option<i32> {
    use rustix::event::{PollFd, PollFlags, poll};
    use signal_hook::consts::{SIGINT, SIGTERM};
    let (mut woken, wake) = UnixStream::pair().ok()?;
    let mut ids = Vec::new();
    for sig in [SIGINT, SIGTERM] {
        ids.push(signal_hook::low_level::pipe::register(sig, wake.try_clone().ok()?).ok()?);
    }
    let mut taken = false;
    let mut cancelled = false;
    let answer = loop {
        let mut fds = [
            PollFd::new(conn, PollFlags::IN),
            PollFd::new(&woken, PollFlags::IN),
        ];
        match poll(&mut fds, None) {
            Ok(_) | Err(rustix::io::Errno::INTR) => {}
            Err(_) => break Some(crate::exit::EXIT_INTERNAL),
        }
        let (replied, signalled) = (!fds[0].revents().is_empty(), !fds[1].revents().is_empty());
        if signalled {
            let _ = std::io::Read::read(&mut woken, &mut [0u8; 16]);
            if cancelled {
                std::process::exit(crate::exit::EXIT_CANCELLED);
            }
            cancelled = true;
            let _ = (&*conn).write_all(&[CANCEL]);
        }
        if !replied {
            continue;
        }
        match wire::recv::<Reply>(conn) {
            // (`Running` is the worker's word to the server alone.)
            Ok(Reply::Taken | Reply::Running) => taken = true,
            Ok(Reply::Exit(code)) => break Some(code),
            Ok(Reply::Fallback(why)) => {
                if verbose {
                    eprintln!("sbx-wasm: running here, not in a warm worker: {why}");
                }
                break None;
            }
            Ok(Reply::Failed(why)) => {
                eprintln!("sbx-wasm: error: {why}");
                break Some(crate::exit::EXIT_INTERNAL);
            }
            // Before a worker had it, nothing ran: run it here.
            Err(_) if !taken => break None,
            Err(e) => {
                eprintln!("sbx-wasm: error: the Python server went away during the run: {e}");
                break Some(crate::exit::EXIT_INTERNAL);
            }
        }
    };
    for id in ids {
        signal_hook::low_level::unregister(id);
    }
    answer
}
