//! `sbx-wasm python serve`: warm workers for `sbx-wasm run script.py`.
//!
//! A `run` of a Python script in a fresh process spends most of its time
//! before the script's first line: starting, reading the runner's compiled
//! metadata, instantiating it. The server keeps `--ready` worker processes
//! that have done all of that ([`worker`]); `run` ([`client`]) hands its
//! request and its stdin, stdout and stderr to the server over a UNIX
//! socket in the cache folder, the server gives them to a ready worker,
//! and the worker runs the script as `run` would have, confined to the
//! grant, then ends. Each worker serves one run, so runs share nothing but
//! the runner file; the server itself runs no guest code.
//!
//! The socket is in the user's own cache folder (`0700`), and the server
//! and client each check that the other end runs as the same user.

pub(crate) mod client;
pub(crate) mod context;
pub(crate) mod wire;

/// The argument that starts a warm worker (the runner's path follows);
/// the worker is `run`'s (`crate::commands::run::worker`).
pub(crate) const WORKER_ARG: &str = "__python-worker";

use anyhow::{Context, Result, bail};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};
use wire::{CANCEL, Reply, Request};

#[derive(clap::Args, Debug)]
pub(crate) struct ServeArgs {
    /// The Python runner to keep workers of (default: the one `run` finds).
    #[arg(long, value_name = "FILE")]
    python_runner: Option<PathBuf>,
    /// Keep workers of the data runner instead, for `run --data` (numpy,
    /// pandas, matplotlib; each worker holds its prepared interpreter).
    #[arg(long, conflicts_with = "python_runner")]
    data: bool,
    /// Workers kept ready. Each is a process holding the runner loaded
    /// and instantiated, with a tool helper process: about 12 MiB of its
    /// own; the runner's code and memory image are mapped from the
    /// artifact, not copied (about 120 MiB more counted resident, the
    /// file's pages shared with every worker and the page cache).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=64))]
    ready: u32,
}

/// How long a request waits for a ready worker before the client is told
/// to run it itself.
const WAIT_FOR_WORKER: Duration = Duration::from_secs(10);
/// How long a new worker may take to get ready (its first load may compile
/// the runner).
const WORKER_START: Duration = Duration::from_secs(300);
/// How long a worker has to end its run after its client went away (it is
/// cancelled at once) before it is killed.
const CANCEL_GRACE: Duration = Duration::from_secs(5);
/// Requests served at once; past it a client runs its script itself.
const MAX_CLIENTS: usize = 64;

impl ServeArgs {
    pub(crate) fn execute(&self) -> Result<i32> {
        let (lang, how) = match self.data {
            true => (crate::scripts::Lang::Data, "run --data"),
            false => (crate::scripts::Lang::Python, "run"),
        };
        let runner = lang.find_runner(self.python_runner.as_deref())?;
        let runner = std::fs::canonicalize(&runner)
            .with_context(|| format!("cannot resolve {}", runner.display()))?;
        let cache = crate::common::open_cache()?;
        let socket = wire::socket_path(cache.dir(), &runner)?;
        claim(&socket)?;
        // The first worker is made before anyone is told to come: a runner
        // that cannot load is this command's error.
        let first = Worker::start(&runner).context("the first worker did not get ready")?;
        let listener = UnixListener::bind(&socket)
            .with_context(|| format!("cannot listen at {}", socket.display()))?;
        std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o600))?;
        let pool = Arc::new(Pool::new(runner.clone(), self.ready as usize, first));
        let refill = std::thread::spawn({
            let pool = pool.clone();
            move || pool.refill()
        });
        stop_on_signals(pool.clone(), socket.clone())?;
        println!("{}", socket.display());
        eprintln!(
            "sbx-wasm: serving Python runs of {} with {} worker(s) kept ready; \
             `sbx-wasm {how} SCRIPT.py` uses them (--no-server does not); Ctrl-C stops",
            runner.display(),
            self.ready
        );
        let mut clients: Vec<std::thread::JoinHandle<()>> = Vec::new();
        for conn in listener.incoming() {
            if pool.stopping() {
                break;
            }
            let Ok(conn) = conn else { continue };
            clients.retain(|c| !c.is_finished());
            if clients.len() >= MAX_CLIENTS {
                let _ = wire::send(&conn, &Reply::Fallback("the server is at capacity".into()));
                continue;
            }
            let pool = pool.clone();
            clients.push(std::thread::spawn(move || serve_one(&conn, &pool)));
        }
        let _ = std::fs::remove_file(&socket);
        // Idle workers go (their socket closes); runs under way finish.
        pool.stop();
        let _ = refill.join();
        for c in clients {
            let _ = c.join();
        }
        Ok(crate::exit::EXIT_OK)
    }
}

/// Take `socket` for this server: refuse if a server answers there, and
/// remove what a server that ended without cleaning up left.
fn claim(socket: &Path) -> Result<()> {
    let dir = socket.parent().context("socket path has no folder")?;
    std::fs::create_dir_all(dir)?;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
    if UnixStream::connect(socket).is_ok() {
        bail!(
            "a server already serves this runner for this sbx-wasm at {}",
            socket.display()
        );
    }
    match std::fs::remove_file(socket) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(e).with_context(|| format!("cannot remove the stale {}", socket.display()))
        }
        _ => Ok(()),
    }
}

/// The first SIGINT or SIGTERM stops taking requests (runs under way
/// finish); a second ends the server at once, and its workers with it.
fn stop_on_signals(pool: Arc<Pool>, socket: PathBuf) -> Result<()> {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM])
        .context("cannot watch for Ctrl-C")?;
    std::thread::Builder::new()
        .name("sbx-signals".into())
        .spawn(move || {
            for _ in signals.forever() {
                if pool.stopping() {
                    let _ = std::fs::remove_file(&socket);
                    std::process::exit(crate::exit::EXIT_CANCELLED);
                }
                pool.stop();
                // Wake the accept loop.
                let _ = UnixStream::connect(&socket);
            }
        })
        .context("cannot watch for Ctrl-C")?;
    Ok(())
}

/// One request: check the peer, hand the request to a ready worker, relay
/// a cancel, pass the worker's answer back.
fn serve_one(conn: &UnixStream, pool: &Pool) {
    let same_user = rustix::net::sockopt::socket_peercred(conn)
        .is_ok_and(|peer| peer.uid == rustix::process::getuid());
    if !same_user {
        return;
    }
    // A client that connects and says nothing does not hold a thread.
    let _ = conn.set_read_timeout(Some(Duration::from_secs(5)));
    let Ok((request, fds)) = wire::recv_with_fds::<Request>(conn) else {
        return;
    };
    let _ = conn.set_read_timeout(None);
    let Some(mut worker) = pool.take(WAIT_FOR_WORKER) else {
        let _ = wire::send(conn, &Reply::Fallback("no worker ready".into()));
        return;
    };
    let borrowed: Vec<BorrowedFd<'_>> = fds.iter().map(OwnedFd::as_fd).collect();
    if wire::send_with_fds(&worker.control, &request, &borrowed).is_err() {
        let _ = wire::send(conn, &Reply::Fallback("the worker went away".into()));
        pool.ended();
        worker.end();
        return;
    }
    drop(fds);
    let _ = wire::send(conn, &Reply::Taken);
    let reply = worker.watch(conn);
    let _ = wire::send(conn, &reply);
    pool.ended();
    worker.end();
}

/// A worker process and the server's end of its socket.
struct Worker {
    child: Child,
    control: UnixStream,
}

impl Worker {
    /// Start a worker of `runner` and wait until it is ready.
    fn start(runner: &Path) -> Result<Worker> {
        let (ours, theirs) = UnixStream::pair()?;
        // This very binary, even if the file has been replaced since.
        let exe = match Path::new("/proc/self/exe").exists() {
            true => PathBuf::from("/proc/self/exe"),
            false => std::env::current_exe()?,
        };
        let mut child = Command::new(exe)
            .arg(WORKER_ARG)
            .arg(runner)
            .stdin(Stdio::from(OwnedFd::from(theirs)))
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .context("cannot start a worker")?;
        ours.set_read_timeout(Some(WORKER_START))?;
        match wire::recv::<wire::WorkerReady>(&ours) {
            Ok(_) => {
                ours.set_read_timeout(None)?;
                Ok(Worker {
                    child,
                    control: ours,
                })
            }
            Err(e) => {
                let _ = child.kill();
                let status = child.wait()?;
                bail!("the worker ended before it was ready ({status}; {e})")
            }
        }
    }

    /// The worker's answer, relaying the client's cancel (SIGINT, as a
    /// Ctrl-C would be) and cancelling the run if the client goes away.
    fn watch(&mut self, conn: &UnixStream) -> Reply {
        use rustix::event::{PollFd, PollFlags, Timespec, poll};
        use rustix::process::{Pid, Signal, kill_process};
        let pid = Pid::from_child(&self.child);
        let mut kill_at: Option<Instant> = None;
        let mut running = false;
        loop {
            let timeout = kill_at.map(|at| {
                let left = at.saturating_duration_since(Instant::now());
                Timespec {
                    tv_sec: left.as_secs() as i64,
                    tv_nsec: left.subsec_nanos().into(),
                }
            });
            let client = if kill_at.is_none() {
                PollFlags::IN
            } else {
                PollFlags::empty()
            };
            let mut fds = [
                PollFd::new(&self.control, PollFlags::IN),
                PollFd::new(conn, client),
            ];
            match poll(&mut fds, timeout.as_ref()) {
                Ok(0) => {
                    let _ = kill_process(pid, Signal::KILL);
                    kill_at = Some(Instant::now() + CANCEL_GRACE);
                    continue;
                }
                Err(rustix::io::Errno::INTR) => continue,
                Err(_) => return Reply::Failed("cannot watch the worker".into()),
                Ok(_) => {}
            }
            if !fds[0].revents().is_empty() {
                match wire::recv::<Reply>(&self.control) {
                    Ok(Reply::Running) => running = true,
                    // Past `Running` the guest has run in that process: a
                    // fallback then (which only a worker taken over could
                    // ask for) would run the script a second time.
                    Ok(Reply::Fallback(_)) if running => {
                        return Reply::Failed(
                            "the worker asked to give back a run it began".into(),
                        );
                    }
                    Ok(reply) => return reply,
                    Err(_) => {
                        return Reply::Failed(format!(
                            "the warm worker ended without finishing the run ({})",
                            self.child
                                .wait()
                                .map(|s| s.to_string())
                                .unwrap_or_else(|e| e.to_string())
                        ));
                    }
                }
            }
            if !fds[1].revents().is_empty() {
                let mut byte = [0u8; 1];
                match std::io::Read::read(&mut &*conn, &mut byte) {
                    Ok(1) if byte[0] == CANCEL => {
                        let _ = kill_process(pid, Signal::INT);
                    }
                    Ok(1) => {}
                    // The client is gone: cancel the run, so that it ends
                    // with its report and its private /tmp removed.
                    _ => {
                        let _ = kill_process(pid, Signal::TERM);
                        kill_at = Some(Instant::now() + CANCEL_GRACE);
                    }
                }
            }
        }
    }

    /// Reap the worker (it ends once it has answered; an idle one ends
    /// when its socket closes).
    fn end(mut self) {
        drop(self.control);
        let _ = self.child.wait();
    }
}

/// The ready workers, refilled by a thread of their own.
struct Pool {
    runner: PathBuf,
    want: usize,
    state: Mutex<PoolState>,
    changed: Condvar,
}

struct PoolState {
    ready: Vec<Worker>,
    /// Workers taken whose run has not ended.
    running: usize,
    /// Requests waiting for a ready worker.
    waiting: usize,
    stopping: bool,
}

impl PoolState {
    /// Whether to make a worker now: one is wanted and either it is not
    /// taken from a run under way (a new worker's start takes a core for
    /// several milliseconds; the runs' own exits come first) or a request
    /// is waiting for it.
    fn short(&self, want: usize) -> bool {
        !self.stopping
            && (self.ready.len() + self.running < want || self.waiting > self.ready.len())
    }
}

impl Pool {
    fn new(runner: PathBuf, want: usize, first: Worker) -> Pool {
        Pool {
            runner,
            want,
            state: Mutex::new(PoolState {
                ready: vec![first],
                running: 0,
                waiting: 0,
                stopping: false,
            }),
            changed: Condvar::new(),
        }
    }

    fn stopping(&self) -> bool {
        self.state.lock().map(|s| s.stopping).unwrap_or(true)
    }

    /// Stop: no more workers are made, and the idle ones end.
    fn stop(&self) {
        let idle = match self.state.lock() {
            Ok(mut s) => {
                s.stopping = true;
                std::mem::take(&mut s.ready)
            }
            Err(_) => Vec::new(),
        };
        self.changed.notify_all();
        for w in idle {
            w.end();
        }
    }

    /// A ready worker, waiting at most `wait` for one; [`Pool::ended`] once
    /// its run is over.
    fn take(&self, wait: Duration) -> Option<Worker> {
        let mut state = self.state.lock().ok()?;
        state.waiting += 1;
        self.changed.notify_all();
        let (mut state, _) = self
            .changed
            .wait_timeout_while(state, wait, |s| s.ready.is_empty() && !s.stopping)
            .ok()?;
        state.waiting -= 1;
        let worker = state.ready.pop();
        if worker.is_some() {
            state.running += 1;
        }
        drop(state);
        self.changed.notify_all();
        worker
    }

    /// A run taken from the pool has ended (its answer is on its way).
    fn ended(&self) {
        if let Ok(mut s) = self.state.lock() {
            s.running = s.running.saturating_sub(1);
        }
        self.changed.notify_all();
    }

    /// Keep `want` workers ready until the server stops and its runs under
    /// way have ended.
    fn refill(&self) {
        loop {
            {
                let Ok(state) = self.state.lock() else { return };
                // A worker's parent-death signal follows the thread that
                // started it: this thread outlives every run it started.
                let Ok(state) = self.changed.wait_while(state, |s| match s.stopping {
                    true => s.running > 0,
                    false => !s.short(self.want),
                }) else {
                    return;
                };
                if state.stopping {
                    return;
                }
            }
            match Worker::start(&self.runner) {
                Ok(w) => match self.state.lock() {
                    Ok(mut s) if !s.stopping => s.ready.push(w),
                    _ => w.end(),
                },
                Err(e) => {
                    eprintln!("sbx-wasm: warning: {e:#}; trying again in a second");
                    std::thread::sleep(Duration::from_secs(1));
                }
            }
            self.changed.notify_all();
        }
    }
}
