//! The helper of a confined `run`: the confined process may not create
//! processes, nor create files outside its mounts, so a helper started
//! before confinement does both for it.
//!
//! The helper is this binary re-executed as `sbx-wasm __tool-helper`. It is
//! told, once, on its first stdin line, the caps file's command tools, the
//! run's record files (report, audit log, recording: it opens their
//! folders then, and says so, before the guest starts; see `output.rs`)
//! and the run's private folders to remove at the end (a Python run's
//! /tmp); then it answers one request per line: run one of those commands
//! (by name, with their argv, folder and timeout from the caps file), or
//! write one record's text. So the authority it keeps outside the kernel
//! wall is "run these N programs, write these M files, remove these K
//! folders at the end", nothing more.
//!
//! It never outlives the run: the kernel kills it when its parent dies
//! (parent-death signal), it exits when its stdin closes, and the run
//! waits for it.

use crate::output::Record;
use sbx_wasm::tools::{CommandTool, Tool, ToolError, ToolLimits, ToolRegistry};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The argument that starts the helper.
pub(crate) const HELPER_ARG: &str = "__tool-helper";

struct Conn {
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    /// The configuration's answer is still to be read (it was sent without
    /// waiting: nothing had to be in place before the guest started).
    owed: bool,
}

impl Conn {
    /// One request, one answer line.
    fn ask(&mut self, request: &Value) -> std::io::Result<Value> {
        self.send(request)?;
        self.settle()?;
        self.answer()
    }

    /// Read the configuration's answer if it is still owed: an error if
    /// the helper could not take its configuration.
    fn settle(&mut self) -> std::io::Result<()> {
        if std::mem::take(&mut self.owed)
            && let Some(why) = self.answer()?["failed"].as_str()
        {
            return Err(std::io::Error::other(why.to_string()));
        }
        Ok(())
    }

    fn send(&mut self, request: &Value) -> std::io::Result<()> {
        // One write: the pipe is unbuffered, and `writeln!` of a JSON
        // value wrote it piece by piece (a system call for each quote,
        // brace and string: about 100 for the table a run starts with).
        let mut sent = request.to_string();
        sent.push('\n');
        self.stdin.write_all(sent.as_bytes())
    }

    fn answer(&mut self) -> std::io::Result<Value> {
        let mut line = String::new();
        if self.stdout.read_line(&mut line)? == 0 {
            return Err(std::io::Error::other("exited"));
        }
        serde_json::from_str(&line).map_err(std::io::Error::other)
    }
}

/// The running helper, for the run's end: write the records, then wait
/// for it.
pub(crate) struct Helper {
    child: Child,
    conn: Option<Arc<Mutex<Conn>>>,
    /// Its stdout once its stdin is closed: it closes as the helper exits.
    closing: Option<ChildStdout>,
}

impl Helper {
    /// Write record `index` (in the order given to `configure`).
    pub(crate) fn write(&self, index: usize, text: &str) -> std::io::Result<()> {
        let mut conn = self
            .conn
            .as_ref()
            .ok_or_else(|| std::io::Error::other("helper finished"))?
            .lock()
            .map_err(|_| std::io::Error::other("helper lock poisoned"))?;
        let answer = conn.ask(&json!({ "write": index, "text": text }))?;
        match answer["failed"].as_str() {
            Some(why) => Err(std::io::Error::other(why.to_string())),
            None => Ok(()),
        }
    }
}

impl Helper {
    /// Export the run's telemetry from the helper (the run's own process is
    /// behind the kernel wall by now, which keeps it from reaching a
    /// collector). Nothing without `--features otel` or an OTLP endpoint.
    pub(crate) fn telemetry(&self, info: &sbx_wasm::telemetry::RunInfo<'_>) {
        // Not even the run's records cross the pipe unless they are sent on.
        if !sbx_wasm::telemetry::wanted() {
            return;
        }
        let Some(conn) = self.conn.as_ref() else {
            return;
        };
        let Ok(mut conn) = conn.lock() else {
            return;
        };
        let start_ms = crate::output::epoch_ms(info.start);
        let _ = conn.ask(&json!({ "telemetry": {
            "kind": info.kind, "program": info.program, "start_ms": start_ms,
            "report": info.report, "audit": info.audit,
        }}));
    }
}

impl Helper {
    /// Close its stdin (the run's tool handles are gone by now): it
    /// removes the run's private folders and exits while the caller does
    /// something else (the run's own teardown), to be waited for on drop.
    /// Nothing more can be asked of it after.
    pub(crate) fn close(&mut self) {
        let conn = self
            .conn
            .take()
            .and_then(|c| Arc::try_unwrap(c).ok())
            .and_then(|m| m.into_inner().ok());
        if let Some(Conn { stdin, stdout, .. }) = conn {
            drop(stdin);
            self.closing = Some(stdout.into_inner());
        }
    }
}

impl Drop for Helper {
    /// Close its stdin (if [`Helper::close`] did not) and wait for it to
    /// exit, killing it if it has not within two seconds (a tool it is
    /// still running gets no longer than that): no run leaves a process
    /// behind, even under a parent that does not reap.
    fn drop(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(2);
        self.close();
        // Its stdout closes as it exits: wake on that, not on a nap.
        if let Some(out) = self.closing.take()
            && until_closed(out, deadline)
        {
            let _ = self.child.wait();
            return;
        }
        loop {
            match self.child.try_wait() {
                Ok(Some(_)) | Err(_) => return,
                Ok(None) if Instant::now() >= deadline => {
                    let _ = self.child.kill();
                    let _ = self.child.wait();
                    return;
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(1)),
            }
        }
    }
}

/// Read `out` until it closes (true) or `deadline` passes (false).
fn until_closed(mut out: ChildStdout, deadline: Instant) -> bool {
    use rustix::event::{PollFd, PollFlags, Timespec};
    let mut buf = [0u8; 256];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return false;
        }
        let timeout = Timespec {
            tv_sec: i64::try_from(left.as_secs()).unwrap_or(i64::MAX),
            tv_nsec: left.subsec_nanos().into(),
        };
        let mut fds = [PollFd::new(&out, PollFlags::IN)];
        match rustix::event::poll(&mut fds, Some(&timeout)) {
            Ok(0) | Err(_) => return false,
            Ok(_) => match std::io::Read::read(&mut out, &mut buf) {
                Ok(0) => return true,
                Ok(_) => {}
                Err(_) => return false,
            },
        }
    }
}

/// A registry whose command tools run in a helper process, and the helper,
/// which also writes each record file on request (and exports the run's
/// telemetry, when an OTLP endpoint is set). No helper is started when
/// there is nothing for it to do.
pub(crate) fn spawn(
    tools: &BTreeMap<String, CommandTool>,
    records: &[PathBuf],
    remove: &[PathBuf],
) -> std::io::Result<(ToolRegistry, Option<Helper>)> {
    if !needed(tools, records, !remove.is_empty()) {
        return Ok((ToolRegistry::new(), None));
    }
    Started::start()?.configure(tools, records, remove)
}

/// Whether a run with these command tools and records, and with folders
/// to remove at its end (`removes`), needs a helper at all.
pub(crate) fn needed(
    tools: &BTreeMap<String, CommandTool>,
    records: &[PathBuf],
    removes: bool,
) -> bool {
    !tools.is_empty() || !records.is_empty() || removes || sbx_wasm::telemetry::wanted()
}

/// A helper process started before its run is known (a warm worker
/// starts one while it waits), told its tools and files by
/// [`Started::configure`]. Dropped unconfigured, its stdin closes and it
/// exits at once (it dies with its parent in any case).
pub(crate) struct Started {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Started {
    pub(crate) fn start() -> std::io::Result<Started> {
        let mut child = Command::new(std::env::current_exe()?)
            .arg(HELPER_ARG)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()?;
        let stdin = child.stdin.take().expect("piped");
        let stdout = BufReader::new(child.stdout.take().expect("piped"));
        Ok(Started {
            child,
            stdin,
            stdout,
        })
    }

    /// Tell the helper its command tools, the record files it writes and
    /// the folders it removes at the end; with records, returns once it has
    /// opened their folders (so before the guest can move them). Without,
    /// nothing of it must be in place before the guest starts: its answer
    /// is read with the first request's (a served run saved the round trip
    /// to a process asleep in `read`, 0.2 to 0.6 ms).
    pub(crate) fn configure(
        self,
        tools: &BTreeMap<String, CommandTool>,
        records: &[PathBuf],
        remove: &[PathBuf],
    ) -> std::io::Result<(ToolRegistry, Option<Helper>)> {
        let Started {
            child,
            stdin,
            stdout,
        } = self;
        let table: serde_json::Map<String, Value> = tools
            .iter()
            .map(|(name, t)| {
                let spec = json!({
                    "argv": t.argv,
                    "cwd": t.cwd,
                    "timeout_ms": t.timeout.map(|d| d.as_millis() as u64),
                });
                (name.clone(), spec)
            })
            .collect();
        // Relative paths (records, a tool's folder) mean what they mean
        // here: a helper started ahead may have another folder.
        let cwd = std::env::current_dir()?;
        let first = json!({
            "tools": Value::Object(table), "records": records, "remove": remove, "cwd": cwd,
        });
        let mut conn = Conn {
            stdin,
            stdout,
            owed: true,
        };
        conn.send(&first)?;
        if !records.is_empty() {
            conn.settle()?;
        }
        let conn = Arc::new(Mutex::new(conn));
        let mut registry = ToolRegistry::new();
        for name in tools.keys() {
            registry.register(
                name.clone(),
                HelperTool {
                    name: name.clone(),
                    conn: conn.clone(),
                },
            );
        }
        Ok((
            registry,
            Some(Helper {
                child,
                conn: Some(conn),
                closing: None,
            }),
        ))
    }
}

struct HelperTool {
    name: String,
    conn: Arc<Mutex<Conn>>,
}

impl Tool for HelperTool {
    fn call(&self, input: &str, limits: ToolLimits) -> Result<String, ToolError> {
        let gone = |e: &dyn std::fmt::Display| ToolError::Failed(format!("tool helper: {e}"));
        let mut conn = self.conn.lock().map_err(|e| gone(&e))?;
        let request = json!({
            "name": self.name,
            "input": input,
            "timeout_ms": limits.timeout.as_millis() as u64,
            "max_output_bytes": limits.max_output_bytes,
        });
        let answer = conn.ask(&request).map_err(|e| gone(&e))?;
        if let Some(out) = answer["ok"].as_str() {
            return Ok(out.to_string());
        }
        if answer["timeout"] == true {
            return Err(ToolError::Timeout);
        }
        Err(ToolError::Failed(
            answer["failed"].as_str().unwrap_or("no answer").to_string(),
        ))
    }
}

/// The helper's main loop: serve requests until stdin closes.
pub(crate) fn serve() -> i32 {
    // Die with the run: a helper must never outlive its parent (a process
    // left behind per run would fill the process table under a parent that
    // does not reap). If the parent is already gone, stop now.
    let parent = rustix::process::getppid();
    let _ = rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL));
    if rustix::process::getppid() != parent {
        return 0;
    }
    let stdin = std::io::stdin();
    let mut lines = stdin.lock().lines();
    let Some(Ok(first)) = lines.next() else {
        return 2;
    };
    let Ok(first) = serde_json::from_str::<Value>(&first) else {
        return 2;
    };
    let code = serve_configured(&first, lines);
    // The run's private folders (the wall kept the run from removing them),
    // whatever became of the rest: the run may not have waited for the
    // answer to its configuration, and must leave none behind.
    for dir in first["remove"].as_array().into_iter().flatten() {
        if let Some(dir) = dir.as_str() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
    code
}

/// Take the configuration `first` (answering it), then serve requests.
fn serve_configured(first: &Value, lines: impl Iterator<Item = std::io::Result<String>>) -> i32 {
    if let Some(cwd) = first["cwd"].as_str()
        && std::env::set_current_dir(cwd).is_err()
    {
        return 2;
    }
    let Some(table) = first["tools"].as_object().cloned() else {
        return 2;
    };
    // The records' folders, opened now: a run with records waits for this
    // answer before its guest starts.
    let records: Result<Vec<Record>, String> = first["records"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|p| Record::open(Path::new(p.as_str().unwrap_or(""))).map_err(|e| format!("{e:#}")))
        .collect();
    let answer = match &records {
        Ok(_) => json!({ "ok": "" }),
        Err(why) => json!({ "failed": why }),
    };
    let mut out = std::io::stdout().lock();
    if writeln!(out, "{answer}")
        .and_then(|()| out.flush())
        .is_err()
    {
        return 2;
    }
    drop(out);
    let Ok(records) = records else { return 2 };
    serve_requests(table, &records, lines)
}

fn serve_requests(
    table: serde_json::Map<String, Value>,
    records: &[Record],
    lines: impl Iterator<Item = std::io::Result<String>>,
) -> i32 {
    let mut tools = BTreeMap::new();
    for (name, spec) in table {
        let argv: Vec<String> = spec["argv"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|s| s.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default();
        let tool = CommandTool {
            argv,
            cwd: PathBuf::from(spec["cwd"].as_str().unwrap_or(".")),
            timeout: spec["timeout_ms"].as_u64().map(Duration::from_millis),
            ..CommandTool::default()
        };
        tools.insert(name, tool);
    }
    let mut out = std::io::stdout().lock();
    for line in lines {
        let Ok(line) = line else { break };
        let answer = match serde_json::from_str::<Value>(&line) {
            Ok(req) if req.get("write").is_some() => {
                let record = req["write"]
                    .as_u64()
                    .and_then(|i| usize::try_from(i).ok())
                    .and_then(|i| records.get(i));
                match (record, req["text"].as_str()) {
                    (Some(r), Some(text)) => match r.write(text) {
                        Ok(()) => json!({ "ok": "" }),
                        Err(e) => json!({ "failed": e.to_string() }),
                    },
                    _ => json!({ "failed": "not a record this helper was given" }),
                }
            }
            Ok(req) if req.get("telemetry").is_some() => {
                telemetry(&req["telemetry"]);
                json!({ "ok": "" })
            }
            Ok(req) => match tools.get(req["name"].as_str().unwrap_or("")) {
                Some(tool) => {
                    let limits = ToolLimits::new(
                        Duration::from_millis(req["timeout_ms"].as_u64().unwrap_or(0)),
                        req["max_output_bytes"].as_u64().unwrap_or(0),
                    );
                    match tool.call(req["input"].as_str().unwrap_or(""), limits) {
                        Ok(s) => json!({ "ok": s }),
                        Err(ToolError::Timeout) => json!({ "timeout": true }),
                        Err(e) => json!({ "failed": e.to_string() }),
                    }
                }
                None => json!({ "failed": "not a tool this helper was given" }),
            },
            Err(e) => json!({ "failed": format!("bad request: {e}") }),
        };
        if writeln!(out, "{answer}")
            .and_then(|()| out.flush())
            .is_err()
        {
            break;
        }
    }
    0
}

/// Export a run's telemetry, as the run's process asked (`Helper::telemetry`).
fn telemetry(t: &Value) {
    let (Ok(report), Ok(audit)) = (
        serde_json::from_value::<sbx_wasm::RunReport>(t["report"].clone()),
        serde_json::from_value::<Vec<sbx_wasm::AuditEvent>>(t["audit"].clone()),
    ) else {
        return;
    };
    let start = std::time::UNIX_EPOCH + Duration::from_millis(t["start_ms"].as_u64().unwrap_or(0));
    let telemetry = sbx_wasm::telemetry::Telemetry::from_env();
    telemetry.run(&sbx_wasm::telemetry::RunInfo {
        kind: t["kind"].as_str().unwrap_or("run"),
        program: t["program"].as_str().unwrap_or(""),
        start,
        report: &report,
        audit: &audit,
        call: None,
    });
    telemetry.shutdown();
}
