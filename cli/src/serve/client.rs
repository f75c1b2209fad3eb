//! `sbx-wasm run script.py` with a server running: hand the run to one of
//! its warm workers, with this process's stdin, stdout and stderr, and
//! exit with the run's code. Without a server (or when the worker does not
//! take the run) `run` goes on in this process, as if none were there.

use super::wire::{self, CANCEL, Reply, Request};
use std::io::Write;
use std::os::unix::net::UnixStream;
use std::path::Path;

/// The run's exit code, if a warm worker of a server for `runner` ran it;
/// `None`: run it here (no server, or it did not take the run). Under
/// `--verbose` a run not handed over says why.
pub(crate) fn hand_over(runner: &Path, verbose: bool) -> Option<i32> {
    match connect(runner) {
        Ok((conn, request)) => {
            wire::send_with_fds(&conn, &request, &wire::stdio()).ok()?;
            await_answer(&conn, verbose)
        }
        Err(why) => {
            if verbose {
                eprintln!("sbx-wasm: running here, not in a warm worker: {why}");
            }
            None
        }
    }
}

/// A connection to the server for `runner`, and the request to send it.
fn connect(runner: &Path) -> Result<(UnixStream, Request), String> {
    let dir = sbx_wasm::wasm::ArtifactCache::default_dir()
        .ok_or("no cache folder, so no server's socket to look for")?;
    let socket = wire::socket_path(&dir, runner)
        .map_err(|e| format!("no socket name for {}: {e}", runner.display()))?;
    let conn = UnixStream::connect(&socket).map_err(|e| {
        format!(
            "no `python serve` for the runner {} ({}: {e}; a server serves the runner \
             file it was started with, from this sbx-wasm binary)",
            runner.display(),
            socket.display()
        )
    })?;
    // The folder is this user's (0700); the peer must be too.
    let peer = rustix::net::sockopt::socket_peercred(&conn)
        .map_err(|e| format!("cannot tell who serves {}: {e}", socket.display()))?;
    if peer.uid != rustix::process::getuid() {
        return Err(format!("{} is served by another user", socket.display()));
    }
    let args = std::env::args_os()
        .skip(2)
        .map(|a| a.into_string().ok())
        .collect::<Option<_>>()
        .ok_or("an argument is not UTF-8")?;
    let env = std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .collect();
    let request = Request {
        args,
        cwd: std::env::current_dir().map_err(|e| format!("no current folder: {e}"))?,
        env,
        runner: std::fs::canonicalize(runner)
            .map_err(|e| format!("cannot resolve {}: {e}", runner.display()))?,
        context: super::context::Context::here(),
    };
    Ok((conn, request))
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
