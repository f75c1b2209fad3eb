//! The tools the MCP door lists: its own (fixed names clients and docs rely
//! on), every tool the caps file grants with a command, and the catalog's
//! script tools, each with its input schema.

use rmcp::model::{Tool, ToolAnnotations};
use sbx_wasm::Capabilities;
use sbx_wasm::OpKind;
use sbx_wasm::tools::ToolDefinition;
use serde_json::{Map, Value, json};
use std::sync::Arc;

/// The door's tools that run one op of the library: each one's input
/// schema is the op's plan arguments ([`OpKind::plan_schema`], derived
/// from the type the plan parser reads) and its call becomes that plan
/// object, so the door never restates a capability's arguments.
pub(crate) const SINGLE_OPS: &[(&str, OpKind)] = &[
    ("read_file", OpKind::FsRead),
    ("write_file", OpKind::FsWrite),
    ("list_files", OpKind::FsList),
    ("fetch", OpKind::NetFetch),
    ("kv_get", OpKind::KvGet),
    ("kv_put", OpKind::KvPut),
    ("kv_delete", OpKind::KvDelete),
    ("kv_list", OpKind::KvList),
];

/// The door's tools that run a program.
const PROGRAMS: &[&str] = &[
    "run_python",
    "run_python_data",
    "run_javascript",
    "run_wasm",
];

/// The op a single-op tool named `tool` runs.
pub(crate) fn single_op(tool: &str) -> Option<OpKind> {
    SINGLE_OPS.iter().find(|(t, _)| *t == tool).map(|(_, k)| *k)
}

/// Whether `name` is one of the door's own tools (a granted tool may not
/// take one).
pub(crate) fn built_in(name: &str) -> bool {
    PROGRAMS.contains(&name) || single_op(name).is_some()
}

/// What the listing depends on: the grant and what the door offers.
pub(crate) struct Offer<'a> {
    pub(crate) caps: &'a Capabilities,
    pub(crate) scratch: bool,
    pub(crate) python: bool,
    pub(crate) js: bool,
    pub(crate) data: bool,
    pub(crate) components: bool,
    pub(crate) granted_tools: &'a [ToolDefinition],
    pub(crate) catalog: &'a super::catalog::Catalog,
}

/// The input of a tool that runs source: `code`, described as `what`,
/// and the run's arguments.
fn code_schema(what: &str, flow: bool) -> Arc<Map<String, Value>> {
    schema(json!({
        "type": "object",
        "properties": with_run_args(json!({
            "code": { "type": "string", "description": what }
        }), flow),
        "required": ["code"],
    }))
}

fn schema(v: Value) -> Arc<Map<String, Value>> {
    Arc::new(v.as_object().cloned().unwrap_or_default())
}

fn run_args() -> Value {
    json!({
        "args": { "type": "array", "items": { "type": "string" },
                  "description": "Arguments (sys.argv[1:] for Python, process.argv.slice(2) for JavaScript)." },
        "stdin": { "type": "string", "description": "Text on the program's standard input." }
    })
}

/// `props` and the arguments every run takes; `labels` too when the grant
/// labels anything.
fn with_run_args(mut props: Value, flow: bool) -> Value {
    if let (Some(p), Value::Object(extra)) = (props.as_object_mut(), run_args()) {
        p.extend(extra);
        if flow {
            p.insert(
                "labels".into(),
                json!({ "type": "array", "items": { "type": "string" },
                        "description": "Labels (of the grant's [flow]) that the code or its input carries: the run is held to where they may go." }),
            );
        }
    }
    props
}

/// Everything listed, for what the door offers.
pub(crate) fn tools(door: &Offer<'_>) -> Vec<Tool> {
    let mut out = Vec::new();
    let mounts: Vec<String> = door
        .caps
        .mounts()
        .iter()
        .map(|m| format!("{} ({})", m.guest.as_str(), m.access.as_str()))
        .collect();
    let seen = if mounts.is_empty() && !door.scratch {
        "no folders".to_string()
    } else {
        let mut seen = mounts.join(", ");
        if door.scratch {
            if !seen.is_empty() {
                seen += ", ";
            }
            seen += "/scratch (read-write, kept for this session)";
        }
        seen
    };
    let flow = !door.caps.flow().is_empty();
    let result = "Returns stdout, stderr, status (completed, exited, hard_limit, trapped, \
                  cancelled, busy, refused), exit code, violation, denials and usage.";
    if door.python {
        out.push(Tool::new(
            "run_python",
            format!(
                "Run a Python 3 script in a sandbox (CPython in WebAssembly). It sees {seen}. \
                 The network only to the granted origins, with urllib.request, http.client, \
                 requests or sbx.fetch(url, method, headers, body); tools with \
                 sbx.call_tool(name, input) (sbx.granted_tools() lists them). A refused \
                 operation raises sbx.Denied (a PermissionError). {result}"
            ),
            code_schema("The Python source to run.", flow),
        ));
    }
    if door.data {
        out.push(Tool::new(
            "run_python_data",
            format!(
                "Run a Python 3 script for data work in a sandbox (CPython in WebAssembly \
                 with numpy, pandas, matplotlib (Agg), scipy, scikit-learn and statsmodels). \
                 It sees {seen}. No network and no tools (use run_python for those); no \
                 threads. A refused file operation raises PermissionError. {result}"
            ),
            code_schema("The Python source to run.", flow),
        ));
    }
    if door.js {
        out.push(Tool::new(
            "run_javascript",
            format!(
                "Run a JavaScript or TypeScript module in a sandbox (SpiderMonkey in \
                 WebAssembly; types are stripped, not checked; top-level await works). It \
                 sees {seen}: `fs` (import from 'fs' or 'fs/promises': readFile, writeFile, \
                 readdir, stat, mkdir, rm and their Sync forms). The network only to the \
                 granted origins, with the global fetch; tools as `await tools.NAME(args)` \
                 (sbx.granted() lists them). No npm packages. A refused operation throws \
                 SbxDenied (its `violation` and `reason`). {result}"
            ),
            code_schema("The JavaScript or TypeScript source to run.", flow),
        ));
    }
    if door.components {
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
                }), flow),
                "required": ["component"],
            })),
        ));
    }
    for (name, kind) in SINGLE_OPS {
        // The store's tools only when the grant holds a store.
        if kind.capability() == "kv" && door.caps.kv().is_none() {
            continue;
        }
        let description = match (kind.capability(), kind.writes()) {
            ("fs", true) => format!("{} under a read-write folder ({seen}).", kind.summary()),
            ("fs", false) => format!("{} under a granted folder ({seen}).", kind.summary()),
            ("kv", _) => format!("{} (kept for this session).", kind.summary()),
            _ => format!("{}.", kind.summary()),
        };
        let tool = Tool::new(*name, description, schema(kind.plan_schema()));
        out.push(match kind.read_only() {
            true => tool.annotate(ToolAnnotations::new().read_only(true)),
            false => tool,
        });
    }
    for d in door.granted_tools {
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
    for t in &door.catalog.tools {
        out.push(Tool::new(
            t.name.clone(),
            t.description.clone(),
            schema(t.input_schema.clone()),
        ));
    }
    out
}
