//! `sbx-wasm-tti`: time to interactive, measured the way the hosted
//! sandbox providers' benchmarks measure it: from asking for a sandbox to
//! holding the result of its first command, here `print(1)` in Python
//! under a grant with a read mount and a write mount. Three doors:
//!
//! - `cli`: `sbx-wasm run --no-server hello.py`, a process per sandbox
//!   (the runner compiled once into the cache beforehand);
//! - `library`: `PythonRunner::run_source` in this process, one instance
//!   kept warm (as an embedder and the MCP door keep it);
//! - `mcp`: a `run_python` call to one `sbx-wasm mcp` server over stdio,
//!   calls pipelined (a sandbox per call).
//!
//! Three patterns, `TTI_N` sandboxes each (100 unless set): *sequential*
//! (one after another), *staggered* (one started every `TTI_GAP_MS`, 25
//! unless set, whether or not the one before is done) and *burst* (all at
//! once). Each sandbox's time runs from its own start; the table gives the
//! median, p95 and p99. `bench/tti.sh` builds and runs it with:
//!
//! - `SBX_BIN`: the release `sbx-wasm`;
//! - `PYTHON_RUNNER`: the Python runner component;
//! - `SBX_WASM_CACHE_DIR`: a cache folder of the bench's own.

use sbx_wasm::Capabilities;
use sbx_wasm::wasm::{ArtifactCache, PythonRunner, RunOptions, WasmHost};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Arc, Barrier, Condvar, Mutex};
use std::time::{Duration, Instant};

type Res<T> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

/// One sandbox, asked for, used once, its result checked.
type Sandbox<'a> = &'a (dyn Fn() -> Res<()> + Sync);

fn env_path(name: &str) -> Res<PathBuf> {
    std::env::var_os(name)
        .map(PathBuf::from)
        .ok_or_else(|| format!("{name} is not set (bench/tti.sh sets it)").into())
}

fn env_num(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// `n` sandboxes one after another.
fn sequential(n: usize, f: Sandbox) -> Res<Vec<Duration>> {
    (0..n)
        .map(|_| {
            let t = Instant::now();
            f()?;
            Ok(t.elapsed())
        })
        .collect()
}

/// `n` sandboxes, one started every `gap`, whether or not the one before
/// is done.
fn staggered(n: usize, gap: Duration, f: Sandbox) -> Res<Vec<Duration>> {
    let t0 = Instant::now();
    let wait = |i: usize| {
        let start = t0 + gap * i as u32;
        std::thread::sleep(start.saturating_duration_since(Instant::now()));
    };
    on_threads(n, &wait, f)
}

/// `n` sandboxes asked for at the same moment.
fn burst(n: usize, f: Sandbox) -> Res<Vec<Duration>> {
    let ready = Barrier::new(n);
    on_threads(
        n,
        &|_| {
            ready.wait();
        },
        f,
    )
}

/// `n` sandboxes, each on a thread of its own, sandbox `i` asked for once
/// `wait(i)` returns; the time each took from then.
fn on_threads(n: usize, wait: &(dyn Fn(usize) + Sync), f: Sandbox) -> Res<Vec<Duration>> {
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..n)
            .map(|i| {
                s.spawn(move || {
                    wait(i);
                    let t = Instant::now();
                    f()?;
                    Ok(t.elapsed())
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().map_err(|_| "a sandbox's thread panicked")?)
            .collect()
    })
}

/// The value at `p` (0..=1) of `sorted`, nearest rank.
fn at(sorted: &[Duration], p: f64) -> Duration {
    let rank = ((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

/// An `sbx-wasm mcp` server over stdio whose calls may overlap: each
/// caller writes its request and waits for the answer with its id, which
/// a reader thread hands over.
struct Mcp {
    child: Child,
    to: Mutex<ChildStdin>,
    answers: Arc<(Mutex<HashMap<u64, Value>>, Condvar)>,
    next: std::sync::atomic::AtomicU64,
}

impl Mcp {
    fn start(sbx: &Path, caps_file: &Path, runner: &Path) -> Res<Mcp> {
        let mut child = Command::new(sbx)
            .args(["mcp", "--caps"])
            .arg(caps_file)
            .arg("--python-runner")
            .arg(runner)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()?;
        let to = Mutex::new(child.stdin.take().ok_or("no stdin")?);
        let from = BufReader::new(child.stdout.take().ok_or("no stdout")?);
        let answers: Arc<(Mutex<HashMap<u64, Value>>, Condvar)> = Arc::default();
        let shared = answers.clone();
        std::thread::spawn(move || {
            for line in from.lines() {
                let Ok(line) = line else { break };
                let Ok(v) = serde_json::from_str::<Value>(&line) else {
                    continue;
                };
                if let Some(id) = v["id"].as_u64() {
                    let (map, arrived) = &*shared;
                    map.lock().unwrap().insert(id, v);
                    arrived.notify_all();
                }
            }
        });
        let mcp = Mcp {
            child,
            to,
            answers,
            next: 1.into(),
        };
        mcp.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "tti", "version": "1"}}),
        )?;
        mcp.write(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))?;
        Ok(mcp)
    }

    fn write(&self, v: &Value) -> Res<()> {
        let mut to = self.to.lock().unwrap();
        writeln!(to, "{v}")?;
        to.flush()?;
        Ok(())
    }

    fn request(&self, method: &str, params: Value) -> Res<Value> {
        let id = self.next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.write(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))?;
        let (map, arrived) = &*self.answers;
        let mut map = map.lock().unwrap();
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            if let Some(v) = map.remove(&id) {
                return Ok(v);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(format!("no answer to request {id} in 120 s").into());
            }
            map = arrived.wait_timeout(map, left).unwrap().0;
        }
    }

    fn print_one(&self) -> Res<()> {
        let r = self.request(
            "tools/call",
            json!({"name": "run_python", "arguments": {"code": "print(1)"}}),
        )?;
        match r["result"]["structuredContent"]["stdout"].as_str() {
            Some("1\n") => Ok(()),
            _ => Err(format!("unexpected answer: {r}").into()),
        }
    }
}

impl Drop for Mcp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn main() -> Res<()> {
    let sbx = env_path("SBX_BIN")?;
    let runner = env_path("PYTHON_RUNNER")?;
    let cache = env_path("SBX_WASM_CACHE_DIR")?;
    let n = env_num("TTI_N", 100) as usize;
    let gap = Duration::from_millis(env_num("TTI_GAP_MS", 25));

    let scratch = tempfile::tempdir()?;
    let dir = scratch.path();
    std::fs::create_dir_all(dir.join("data"))?;
    std::fs::create_dir_all(dir.join("out"))?;
    let caps = Capabilities::builder()
        .read_mount(dir.join("data"), "/work")
        .write_mount(dir.join("out"), "/work/out")
        .max_wall(Duration::from_secs(60))
        .build()?;
    let caps_file = dir.join("caps.toml");
    std::fs::write(&caps_file, caps.to_toml())?;
    let script = dir.join("hello.py");
    std::fs::write(&script, "print(1)\n")?;
    let compiled = Command::new(&sbx).arg("compile").arg(&runner).status()?;
    if !compiled.success() {
        return Err(format!("`sbx-wasm compile` of the runner failed: {compiled}").into());
    }

    let cli = || -> Res<()> {
        let out = Command::new(&sbx)
            .args(["run", "--no-stdin", "--no-server", "--caps"])
            .arg(&caps_file)
            .arg("--python-runner")
            .arg(&runner)
            .arg(&script)
            .stderr(Stdio::null())
            .output()?;
        if out.stdout != b"1\n" {
            return Err(format!("`sbx-wasm run` printed {:?}", out.stdout).into());
        }
        Ok(())
    };
    let host = WasmHost::new()?.with_cache(ArtifactCache::open(&cache)?);
    let python = PythonRunner::load(&host, &runner)?.keep_warm(1)?;
    let library = || -> Res<()> {
        let run = python.run_source(&host, "print(1)", RunOptions::new(caps.clone()))?;
        if run.stdout != b"1\n" {
            return Err(format!("run_source printed {:?}", run.stdout).into());
        }
        Ok(())
    };
    let mcp = Mcp::start(&sbx, &caps_file, &runner)?;
    let over_mcp = || mcp.print_one();

    let doors: [(&str, Sandbox); 3] = [("cli", &cli), ("library", &library), ("mcp", &over_mcp)];
    println!(
        "time to interactive: ask for a sandbox, run `print(1)`, hold the result; \
         {n} sandboxes a pattern, staggered every {} ms; {} cores",
        gap.as_millis(),
        std::thread::available_parallelism().map_or(0, |p| p.get())
    );
    println!();
    println!("| door | pattern | median | p95 | p99 | slowest |");
    println!("|------|---------|-------:|----:|----:|--------:|");
    for (door, f) in doors {
        // One unmeasured first (page cache, the warm instance).
        f()?;
        for pattern in ["sequential", "staggered", "burst"] {
            let mut times = match pattern {
                "sequential" => sequential(n, f)?,
                "staggered" => staggered(n, gap, f)?,
                _ => burst(n, f)?,
            };
            times.sort();
            println!(
                "| {door} | {pattern} | {} | {} | {} | {} |",
                ms(at(&times, 0.5)),
                ms(at(&times, 0.95)),
                ms(at(&times, 0.99)),
                ms(times[times.len() - 1]),
            );
        }
    }
    println!();
    println!(
        "For comparison, as the providers' own published benchmarks give them (their \
         figures, their machines and networks, not measured here): E2B about 0.44 s and \
         Daytona about 0.11 s median from asking for a sandbox to a first command's result."
    );
    Ok(())
}
