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

pub(crate) fn mcp_row(sbx: &Path, runner: &Path, caps_file: &Path) -> Res<Row> {
    let mut server = Command::new(sbx)
        .args(["mcp", "--caps"])
        .arg(caps_file)
        .arg("--python-runner")
        .arg(runner)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()?;
    let mut to = server.stdin.take().ok_or("no stdin")?;
    let mut from = BufReader::new(server.stdout.take().ok_or("no stdout")?);
    send(
        &mut to,
        &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "bench", "version": "1"}}}),
    )?;
    answer(&mut from, 0)?;
    send(
        &mut to,
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    )?;

    let cache = std::env::var_os("SBX_WASM_CACHE_DIR").ok_or("SBX_WASM_CACHE_DIR is not set")?;
    let host = WasmHost::new()?.with_cache(ArtifactCache::open(cache)?);
    // As the door keeps it: one instance ready.
    let python = PythonRunner::load(&host, runner)?.keep_warm(1)?;
    let caps = Capabilities::from_file(caps_file)?;

    let mut id = 0;
    let (a, b) = side_by_side(
        30,
        || {
            id += 1;
            send(
                &mut to,
                &json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
                    "name": "run_python", "arguments": {"code": "print(1)"}}}),
            )?;
            let r = answer(&mut from, id)?;
            if r["result"]["structuredContent"]["stdout"] != "1\n" {
                return Err(format!("unexpected answer: {r}").into());
            }
            Ok(())
        },
        || {
            let run = python.run_source(&host, "print(1)", RunOptions::new(caps.clone()))?;
            if run.stdout != b"1\n" {
                return Err("the library run printed something else".into());
            }
            Ok(())
        },
    )?;
    drop(to);
    server.wait()?;
    let ratio = a.as_secs_f64() / b.as_secs_f64();
    Ok(Row {
        id: "MCP",
        what: "run_python print(1) over MCP stdio (vs the library's run_source)".into(),
        ours: fmt(a),
        theirs: fmt(b),
        ratio,
        goal: "<= 1.2x",
        met: ratio <= 1.2,
    })
}
