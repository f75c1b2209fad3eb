//! A warm worker: a process that exists for one Python run, kept by
//! `python serve` (`crate::serve`). Started by the
//! server before any run is known, it loads the runner, instantiates it
//! (with nothing granted) and says it is ready; then it takes one request,
//! checks it can run it exactly as the client's own process would, puts
//! the client's stdio in place of its own, and runs it through `run`'s own
//! code (caps, private /tmp, tool helper, kernel wall, report, audit).
//! It then tells the server the exit code and ends: nothing of a run is
//! left for another.
//!
//! Instantiation happens before the run's kernel wall goes up: the runner
//! is the server's (trusted) component and no input of the run exists yet.
//! The script, the caps and the arguments arrive afterwards.

use super::{Ready, RunArgs};
use crate::serve::wire::{self, Reply, Request, WorkerReady};
use sbx_wasm::Capabilities;
use sbx_wasm::net::SecretSource;
use std::os::fd::OwnedFd;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};

/// The variables a run reads from its environment besides the secrets
/// the caps take from it: the tools' `PATH`, and where private folders go.
const RUN_READS: [&str; 2] = ["PATH", "TMPDIR"];

/// The worker's life: ready, one run, its exit code to the server.
pub(crate) fn main(runner: &Path) -> i32 {
    // Never outlive the server (an idle worker holds a loaded runner).
    let parent = rustix::process::getppid();
    let _ = rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL));
    if rustix::process::getppid() != parent {
        return 0;
    }
    // The server's end of the conversation is our stdin; keep it on a
    // descriptor of its own, for stdin will be the client's.
    let control = match rustix::io::fcntl_dupfd_cloexec(rustix::stdio::stdin(), 3) {
        Ok(fd) => UnixStream::from(fd),
        Err(e) => return fail(&format!("no control socket on stdin: {e}")),
    };
    let prepared = match prepare(runner) {
        Ok(p) => p,
        Err(e) => return fail(&format!("{e:#}")),
    };
    let ready = WorkerReady {
        pid: std::process::id(),
    };
    if wire::send(&control, &ready).is_err() {
        return 0;
    }
    // Ready as soon as the instance is; its code and memory are then
    // mapped while the worker waits, step by step, until a request comes
    // (what is not mapped by then faults in during the run, as it would
    // have): a request close behind the last one (an agent's scripts back
    // to back) waits for one step at most, not for the whole image.
    prepared.agent.map_ahead(|| pending(&control));
    // The server closes the socket to let an idle worker go.
    let Ok((request, fds)) = wire::recv_with_fds::<Request>(&control) else {
        return 0;
    };
    let (args, caps) = match admit(&request, &prepared.runner, fds) {
        Ok(taken) => taken,
        Err(why) => {
            let _ = wire::send(&control, &Reply::Fallback(why));
            return 0;
        }
    };
    if wire::send(&control, &Reply::Running).is_err() {
        return 0;
    }
    let mut ready = Ready {
        host: prepared.host,
        agent: prepared.agent,
        runner: prepared.runner,
        caps,
        helper: prepared.helper,
        closing: None,
    };
    let code = args.execute_ready(&mut ready);
    let _ = wire::send(&control, &Reply::Exit(code));
    // The client has its answer (its records written, its output done)
    // while the helper removes the run's private /tmp: waited for here.
    drop(ready.closing.take());
    // The run is over and reported: the loaded runner and the finished
    // instance go with the process, not one by one.
    std::process::exit(0)
}

/// Whether the server has sent something (a request, or the socket's
/// end) that the worker has yet to read.
fn pending(control: &UnixStream) -> bool {
    use rustix::event::{PollFd, PollFlags, Timespec, poll};
    let mut fds = [PollFd::new(control, PollFlags::IN)];
    let now = Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // An error is as good as an answer: the worker goes to read it.
    poll(&mut fds, Some(&now)).map_or(true, |n| n > 0)
}

/// The host and the runner, loaded and instantiated ahead.
struct Prepared {
    host: sbx_wasm::wasm::WasmHost,
    agent: sbx_wasm::wasm::PreparedAgent,
    runner: PathBuf,
    helper: Option<crate::tool_helper::Started>,
}

fn prepare(runner: &Path) -> anyhow::Result<Prepared> {
    let runner = std::fs::canonicalize(runner)?;
    let host = crate::common::require_cache(crate::common::engine()?)?;
    let component = host.load(&runner)?;
    // Mapped once the server has been told the worker is ready (`main`).
    let agent = host.prepare(&component)?.instantiate_ahead_unmapped()?;
    // A run under a kernel wall needs a helper outside it; one without
    // (`--no-kernel-confinement`) lets this one go.
    let helper = Some(crate::tool_helper::Started::start()?);
    Ok(Prepared {
        host,
        agent,
        runner,
        helper,
    })
}

/// The run's arguments and grant, if this worker can run `request` as the
/// client's process would; else why not (nothing has been written to the
/// client's streams, so it runs the request itself and says what is
/// wrong, if anything is). On success the client's stdio are ours.
fn admit(
    request: &Request,
    runner: &Path,
    fds: Vec<OwnedFd>,
) -> Result<(RunArgs, Capabilities), String> {
    let [stdin, stdout, stderr]: [OwnedFd; wire::STDIO] =
        fds.try_into().map_err(|_| "not three stdio descriptors")?;
    let args = crate::commands::run_args(&request.args)
        .ok_or("arguments `run` would refuse (or its help)")?;
    if !args.is_python() || args.no_cache || request.runner != runner {
        return Err("not a cached run of this worker's runner".into());
    }
    // Its effects must be the client's own: same user, umask, limits,
    // namespaces, cgroup and confinement.
    if let Some(why) = request
        .context
        .differs(&crate::serve::context::Context::here())
    {
        return Err(why);
    }
    // Byte-identical output for identical input is promised from the
    // run's first instruction on a fresh instance: an instance made ahead,
    // with the real clock and randomness of an idle state, is not one.
    if args.deterministic || args.seed.is_some() || args.record.is_some() {
        return Err("a deterministic or recorded run starts on a fresh instance".into());
    }
    std::env::set_current_dir(&request.cwd).map_err(|e| format!("working folder: {e}"))?;
    let caps = Capabilities::from_file(&args.caps).map_err(|e| e.to_string())?;
    if !caps.budget().meter_fuel {
        return Err("a wall-only grant runs on an engine without fuel".into());
    }
    let secrets = caps.secrets().iter().filter_map(|s| match s.source() {
        SecretSource::Env(var) => Some(var.as_str()),
        _ => None,
    });
    for var in RUN_READS.into_iter().chain(secrets) {
        let theirs = request.env.iter().find(|(k, _)| k == var).map(|(_, v)| v);
        if theirs != std::env::var(var).ok().as_ref() {
            return Err(format!("the environment differs ({var})"));
        }
    }
    rustix::stdio::dup2_stdin(&stdin).map_err(|e| e.to_string())?;
    rustix::stdio::dup2_stdout(&stdout).map_err(|e| e.to_string())?;
    rustix::stdio::dup2_stderr(&stderr).map_err(|e| e.to_string())?;
    Ok((args, caps))
}

/// A worker that could not get ready says why on the server's stderr.
fn fail(why: &str) -> i32 {
    eprintln!("sbx-wasm: warm worker: {why}");
    crate::exit::EXIT_INTERNAL
}
