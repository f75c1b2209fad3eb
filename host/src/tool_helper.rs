//! Command tools for a confined `run`: the confined process may not create
//! processes, so a helper, started before confinement, runs them.
//!
//! The helper is this binary re-executed as `sbx-wasm __tool-helper`. It is
//! told the caps file's command tools once, on its first stdin line, and then
//! answers one request per line: it runs only those commands (by name, with
//! their argv, folder and timeout from the caps file), so the authority it
//! keeps outside the kernel wall is "run these N programs", nothing more.

use sbx_wasm::tools::{CommandTool, Tool, ToolError, ToolLimits, ToolRegistry};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The argument that starts the helper.
pub(crate) const HELPER_ARG: &str = "__tool-helper";

struct Conn {
    _child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

/// A registry whose command tools run in a helper process.
pub(crate) fn spawn(tools: &BTreeMap<String, CommandTool>) -> std::io::Result<ToolRegistry> {
    let mut registry = ToolRegistry::new();
    if tools.is_empty() {
        return Ok(registry);
    }
    let mut child = Command::new(std::env::current_exe()?)
        .arg(HELPER_ARG)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()?;
    let mut stdin = child.stdin.take().expect("piped");
    let stdout = BufReader::new(child.stdout.take().expect("piped"));
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
    writeln!(stdin, "{}", Value::Object(table))?;
    let conn = Arc::new(Mutex::new(Conn {
        _child: child,
        stdin,
        stdout,
    }));
    for name in tools.keys() {
        registry.register(
            name.clone(),
            HelperTool {
                name: name.clone(),
                conn: conn.clone(),
            },
        );
    }
    Ok(registry)
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
        writeln!(conn.stdin, "{request}").map_err(|e| gone(&e))?;
        let mut line = String::new();
        match conn.stdout.read_line(&mut line) {
            Ok(0) => return Err(gone(&"exited")),
            Ok(_) => {}
            Err(e) => return Err(gone(&e)),
        }
        let answer: Value = serde_json::from_str(&line).map_err(|e| gone(&e))?;
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
    let stdin = std::io::stdin();
    let mut lines = stdin.lock().lines();
    let Some(Ok(first)) = lines.next() else {
        return 2;
    };
    let Ok(Value::Object(table)) = serde_json::from_str::<Value>(&first) else {
        return 2;
    };
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
        };
        tools.insert(name, tool);
    }
    let mut out = std::io::stdout().lock();
    for line in lines {
        let Ok(line) = line else { break };
        let answer = match serde_json::from_str::<Value>(&line) {
            Ok(req) => match tools.get(req["name"].as_str().unwrap_or("")) {
                Some(tool) => {
                    let limits = ToolLimits {
                        timeout: Duration::from_millis(req["timeout_ms"].as_u64().unwrap_or(0)),
                        max_output_bytes: req["max_output_bytes"].as_u64().unwrap_or(0),
                    };
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
