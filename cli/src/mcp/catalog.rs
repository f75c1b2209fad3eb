//! The tools the MCP door lists: its own (fixed names clients and docs rely
//! on) and every tool the caps file grants with a command, each with its
//! input schema.

use super::door::Door;
use rmcp::model::{Tool, ToolAnnotations};
use serde_json::{Map, Value, json};
use std::sync::Arc;

/// The door's own tool names; a granted tool may not take one.
pub(crate) const BUILT_IN: &[&str] = &[
    "run_python",
    "run_wasm",
    "read_file",
    "write_file",
    "list_files",
    "fetch",
];

fn schema(v: Value) -> Arc<Map<String, Value>> {
    Arc::new(v.as_object().cloned().unwrap_or_default())
}

fn run_args() -> Value {
    json!({
        "args": { "type": "array", "items": { "type": "string" },
                  "description": "Arguments (sys.argv[1:] for Python)." },
        "stdin": { "type": "string", "description": "Text on the program's standard input." }
    })
}

fn with_run_args(mut props: Value) -> Value {
    if let (Some(p), Value::Object(extra)) = (props.as_object_mut(), run_args()) {
        p.extend(extra);
    }
    props
}

/// Everything listed, for `door`'s grant.
pub(crate) fn tools(door: &Door) -> Vec<Tool> {
    let mut out = Vec::new();
    let mounts: Vec<String> = door
        .caps
        .mounts()
        .iter()
        .map(|m| format!("{} ({})", m.guest.as_str(), m.access.as_str()))
        .collect();
    let seen = if mounts.is_empty() && door.scratch_root.is_none() {
        "no folders".to_string()
    } else {
        let mut seen = mounts.join(", ");
        if door.scratch_root.is_some() {
            if !seen.is_empty() {
                seen += ", ";
            }
            seen += "/scratch (read-write, kept for this session)";
        }
        seen
    };
    let result = "Returns stdout, stderr, status (completed, exited, hard_limit, trapped, \
                  cancelled, busy, refused), exit code, violation, denials and usage.";
    if door.python.is_some() {
        out.push(Tool::new(
            "run_python",
            format!(
                "Run a Python 3 script in a sandbox (CPython in WebAssembly). It sees {seen}. \
                 Network and tools only through the `sbx` module: sbx.fetch(url, method, \
                 headers, body) and sbx.call_tool(name, input); sbx.granted_tools() lists the \
                 tools. A refused operation raises sbx.Denied (a PermissionError). {result}"
            ),
            schema(json!({
                "type": "object",
                "properties": with_run_args(json!({
                    "code": { "type": "string", "description": "The Python source to run." }
                })),
                "required": ["code"],
            })),
        ));
    }
    if door.components.is_some() {
        out.push(Tool::new(
            "run_wasm",
            format!(
                "Run a WebAssembly component (wasm32-wasip2 command) from the server's \
                 components folder, named by its file name. It sees {seen}. {result}"
            ),
            schema(json!({
                "type": "object",
                "properties": with_run_args(json!({
                    "component": { "type": "string", "description": "File name, e.g. agent.wasm." }
                })),
                "required": ["component"],
            })),
        ));
    }
    let path = json!({ "type": "string", "description": "A guest path, e.g. /work/a.txt." });
    // The read-only ops take a path and nothing else.
    let reading = |name: &'static str, what: &str| {
        Tool::new(
            name,
            format!("{what} under a granted folder ({seen})."),
            schema(json!({"type": "object", "properties": {"path": path}, "required": ["path"]})),
        )
        .annotate(ToolAnnotations::new().read_only(true))
    };
    out.push(reading("read_file", "Read a text file"));
    out.push(Tool::new(
        "write_file",
        format!("Write a text file under a read-write folder ({seen})."),
        schema(json!({
            "type": "object",
            "properties": { "path": path, "content": { "type": "string" } },
            "required": ["path", "content"],
        })),
    ));
    out.push(reading("list_files", "List a folder"));
    out.push(Tool::new(
        "fetch",
        "Fetch a URL the grant's egress rules allow (HTTP or HTTPS).",
        schema(json!({
            "type": "object",
            "properties": {
                "url": { "type": "string" },
                "method": { "type": "string", "description": "Default GET." },
                "headers": { "type": "object", "additionalProperties": { "type": "string" } },
                "body": { "type": "string" },
            },
            "required": ["url"],
        })),
    ));
    for d in &door.granted_tools {
        out.push(Tool::new(
            d.name.clone(),
            if d.description.is_empty() {
                format!("The granted tool {}.", d.name)
            } else {
                d.description.clone()
            },
            schema(d.input_schema.clone()),
        ));
    }
    out
}
