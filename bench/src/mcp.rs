//! The MCP row: `run_python` `print(1)` as a round trip over the MCP door's
//! stdio transport (JSON-RPC written and read by this harness, as a client
//! would), against the same snippet run through the library directly
//! (`PythonRunner::run_source`), both with the runner already compiled.

use super::{Res, Row};
use crate::timing::{fmt, side_by_side};
use sbx_wasm::Capabilities;
use sbx_wasm::wasm::{ArtifactCache, PythonRunner, RunOptions, WasmHost};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};

/// One JSON-RPC message, one line.
fn send(to: &mut impl Write, v: &Value) -> Res<()> {
    writeln!(to, "{v}")?;
    to.flush()?;
    Ok(())
}

/// Lines until the response to `id`.
fn answer(from: &mut impl BufRead, id: u64) -> Res<Value> {
    let mut line = String::new();
    loop {
        line.clear();
        if from.read_line(&mut line)? == 0 {
            return Err("the MCP server closed its stdout".into());
        }
        let v: Value = serde_json::from_str(&line)?;
        if v["id"] == id {
            return Ok(v);
        }
    }
}

/// An MCP server over stdio, handshaken, driven by this harness.
struct StdioServer {
    child: std::process::Child,
    to: std::process::ChildStdin,
    from: BufReader<std::process::ChildStdout>,
    id: u64,
}

impl StdioServer {
    fn start(mut cmd: Command) -> Res<StdioServer> {
        let mut child = (cmd.stdin(Stdio::piped()).stdout(Stdio::piped()))
            .stderr(Stdio::null())
            .spawn()?;
        let to = child.stdin.take().ok_or("no stdin")?;
        let from = BufReader::new(child.stdout.take().ok_or("no stdout")?);
        let mut s = StdioServer {
            child,
            to,
            from,
            id: 0,
        };
        send(
            &mut s.to,
            &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "bench", "version": "1"}}}),
        )?;
        answer(&mut s.from, 0)?;
        send(
            &mut s.to,
            &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        )?;
        Ok(s)
    }

    /// One `tools/call` of `tool` with `arguments`: the response.
    fn call(&mut self, tool: &str, arguments: Value) -> Res<Value> {
        self.id += 1;
        send(
            &mut self.to,
            &json!({"jsonrpc": "2.0", "id": self.id, "method": "tools/call", "params": {
                "name": tool, "arguments": arguments}}),
        )?;
        answer(&mut self.from, self.id)
    }

    /// One `run_python` `print(1)` round trip.
    fn print_one(&mut self) -> Res<()> {
        let r = self.call("run_python", json!({"code": "print(1)"}))?;
        if r["result"]["structuredContent"]["stdout"] != "1\n" {
            return Err(format!("unexpected answer: {r}").into());
        }
        Ok(())
    }

    fn stop(self) -> Res<()> {
        let StdioServer { mut child, to, .. } = self;
        drop(to);
        child.wait()?;
        Ok(())
    }
}

/// The MCP rows: `run_python print(1)` through the door against the same
/// snippet through the library (what the door and the protocol add), and
/// against a bare rmcp server over the same engine (`bare-mcp`, what the
/// door adds to a minimal MCP wrapper).
pub(crate) fn mcp_rows(sbx: &Path, runner: &Path, caps_file: &Path) -> Res<Vec<Row>> {
    let mut door_cmd = Command::new(sbx);
    door_cmd
        .args(["mcp", "--caps"])
        .arg(caps_file)
        .arg("--python-runner")
        .arg(runner);
    let mut door = StdioServer::start(door_cmd)?;

    let cache = std::env::var_os("SBX_WASM_CACHE_DIR").ok_or("SBX_WASM_CACHE_DIR is not set")?;
    let host = WasmHost::new()?.with_cache(ArtifactCache::open(cache)?);
    // As the door keeps it: one instance ready.
    let python = PythonRunner::load(&host, runner)?.keep_warm(1)?;
    let caps = Capabilities::from_file(caps_file)?;
    let (a, b) = side_by_side(
        30,
        || door.print_one(),
        || {
            let run = python.run_source(&host, "print(1)", RunOptions::new(caps.clone()))?;
            if run.stdout != b"1\n" {
                return Err("the library run printed something else".into());
            }
            Ok(())
        },
    )?;
    let ratio = a.as_secs_f64() / b.as_secs_f64();
    let mut rows = vec![Row {
        id: "MCP",
        what: "run_python print(1) over MCP stdio (vs the library's run_source)".into(),
        ours: fmt(a),
        theirs: fmt(b),
        ratio,
        goal: "<= 1.1x",
        met: ratio <= 1.1,
    }];

    // The bare server sits beside this harness in the release build.
    let bare_bin = std::env::current_exe()?.with_file_name("bare-mcp");
    if bare_bin.exists() {
        let mut bare_cmd = Command::new(&bare_bin);
        bare_cmd.arg(runner).arg(caps_file);
        let mut bare = StdioServer::start(bare_cmd)?;
        let (a, b) = side_by_side(30, || door.print_one(), || bare.print_one())?;
        bare.stop()?;
        let ratio = a.as_secs_f64() / b.as_secs_f64();
        rows.push(Row {
            id: "MCPr",
            what: "run_python print(1) over MCP stdio (vs a bare rmcp server, same engine)".into(),
            ours: fmt(a),
            theirs: fmt(b),
            ratio,
            goal: "<= 1.2x",
            met: ratio <= 1.2,
        });
    } else {
        eprintln!("bench: MCPr skipped: {} is not built", bare_bin.display());
    }
    match std::env::var_os("MCP_RUN_PYTHON") {
        Some(peer) => match peer_row(&mut door, Path::new(&peer)) {
            Ok(row) => rows.push(row),
            Err(e) => eprintln!("bench: MCPp skipped: mcp-run-python did not run here: {e}"),
        },
        None => eprintln!("bench: MCPp skipped: MCP_RUN_PYTHON is not set (compare.sh sets it)"),
    }
    door.stop()?;
    Ok(rows)
}

/// The peer: `mcp-run-python` (Pyodide under Deno, from PyPI), warm, its
/// `run_python_code` against the door's `run_python`, both `print(1)`.
/// (It shares one interpreter between calls and has no time limit; the
/// door isolates each call and bounds it.)
fn peer_row(door: &mut StdioServer, peer: &Path) -> Res<Row> {
    let mut cmd = Command::new(peer);
    cmd.arg("stdio");
    let mut peer = StdioServer::start(cmd)?;
    let mut peer_print = || -> Res<()> {
        let r = peer.call("run_python_code", json!({"python_code": "print(1)"}))?;
        if !r["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or("")
            .contains('1')
        {
            return Err(format!("unexpected answer: {r}").into());
        }
        Ok(())
    };
    let (a, b) = side_by_side(30, || door.print_one(), &mut peer_print)?;
    peer.stop()?;
    let ratio = a.as_secs_f64() / b.as_secs_f64();
    Ok(Row {
        id: "MCPp",
        what: "run_python print(1) over MCP stdio, isolated per call (vs mcp-run-python, warm)"
            .into(),
        ours: fmt(a),
        theirs: fmt(b),
        ratio,
        goal: "<= 1.0x",
        met: ratio <= 1.0,
    })
}
