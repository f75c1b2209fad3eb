//! [rig](https://crates.io/crates/rig-core) tools backed by sbx-wasm: a
//! rig agent's model writes Python, or picks a wasm component, and the code
//! runs under a capability grant instead of on the host.
//!
//! - [`RunPython`] (`run_python {code, args?}`): the script runs in the
//!   Python runner under the grant; the agent's own rig tools can be handed
//!   to it ([`RunPython::with_rig_tool`]): the script calls them through
//!   the gate, allow-listed by name, budgeted and audited;
//! - [`RunWasm`] (`run_wasm {component, args?}`): a component file from a
//!   folder the tool was given (never any host path the model names),
//!   compiled and linked once per tool.
//!
//! Each tool's description tells the model the room the grant gives
//! (folders, network origins, tools, limits), so it need not find out by
//! being refused. Both answer with a [`RunOutcome`]: status, exit code,
//! violation, the script's error, the captured stdout and stderr, the
//! denials, a usage line. A denial or a halt is an answer the model reads,
//! not a tool error; a tool error means the host could not run the code at
//! all (a bad component name, no room in the pool). The application gets
//! the whole report and audit of every run: a [`SandboxRecord`] in the
//! call's rig tool context, and an `on_run` callback.
//!
//! ```no_run
//! use sbx_wasm::Capabilities;
//! use sbx_wasm::wasm::{PythonRunner, WasmHost};
//! use sbx_wasm_rig::RunPython;
//!
//! let host = WasmHost::new().map_err(|e| format!("{e:#}"))?;
//! let python = PythonRunner::load(&host, &PythonRunner::locate(None)?)?;
//! let caps = Capabilities::from_file("caps.toml")?;
//! let tool = RunPython::new(host, python, caps);
//! // rig_agent::AgentBuilder::new(model).tool(tool).build()
//! # let _ = tool;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod bridge;
mod python;
mod record;
mod wasm;

pub use python::{PythonArgs, RunPython};
pub use record::SandboxRecord;
pub use wasm::{RunWasm, WasmArgs};

use rig_core::tool::ToolExecutionError;
use sbx_wasm::wasm::{LoadError, WasmRun};
use schemars::JsonSchema;
use serde::Serialize;

/// What a sandboxed run tells the model.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RunOutcome {
    /// `completed`, `exited`, `hard_limit`, `trapped` or `cancelled`.
    pub status: String,
    /// The guest's exit code, when it exited.
    pub exit_code: Option<i32>,
    /// The hard violation that halted the run, if any.
    pub violation: Option<String>,
    /// For a script that ended on an uncaught exception: `Kind at line N:
    /// message`.
    pub error: Option<String>,
    /// What the code printed (bounded by the grant's output budget).
    pub stdout: String,
    /// What the code printed on stderr.
    pub stderr: String,
    /// Each refused attempt: `op target: violation`.
    pub denials: Vec<String>,
    /// Operations, output and wall time used, against the limits.
    pub usage: String,
}

impl From<WasmRun> for RunOutcome {
    fn from(run: WasmRun) -> Self {
        let r = &run.report;
        let name = |v: serde_json::Value| v.as_str().unwrap_or_default().to_string();
        RunOutcome {
            status: name(serde_json::to_value(r.status).unwrap_or_default()),
            exit_code: r.exit_code,
            violation: r.violation.map(|v| v.as_str().to_string()),
            error: r.error.as_ref().map(|e| match e.line {
                Some(line) => format!("{} at line {line}: {}", e.kind, e.message),
                None => format!("{}: {}", e.kind, e.message),
            }),
            stdout: String::from_utf8_lossy(&run.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&run.stderr).into_owned(),
            denials: r
                .denials
                .iter()
                .map(|d| format!("{} {}: {}", d.op, d.target, d.violation))
                .collect(),
            usage: format!(
                "ops {}/{}, output {}/{} B, wall {}/{} ms",
                r.usage.ops,
                r.limits.ops,
                r.usage.output_bytes,
                r.limits.output_bytes,
                r.usage.wall_ms,
                r.limits.wall_ms
            ),
        }
    }
}

/// Why a tool could not run the code at all.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum SandboxToolError {
    /// The host could not load or start the run.
    #[error(transparent)]
    Load(#[from] LoadError),
    /// The model named a component the tool does not offer.
    #[error("{0}")]
    NoSuchComponent(String),
    /// The agent's rig tools were given to the script, and the call is not
    /// on a tokio runtime they could run on.
    #[error("{0}")]
    NoRuntime(String),
}

/// The tools a run can reach, as a description names them: allowed by
/// `caps`, and registered in `tools` or among `also` (given at call time).
fn reachable(
    caps: &sbx_wasm::Capabilities,
    tools: &sbx_wasm::tools::ToolRegistry,
    also: &[&str],
) -> Vec<String> {
    caps.tools()
        .iter()
        .filter(|t| tools.get(t).is_some() || also.contains(&t.as_str()))
        .cloned()
        .collect()
}

/// A tool error the model may read: what it asked for that could not run
/// (never a host path or a secret: the messages name the request only).
fn feedback(error: SandboxToolError) -> ToolExecutionError {
    let message = error.to_string();
    ToolExecutionError::from_error(error).with_model_feedback(message)
}

/// The schema of `T`, inline (as tool parameters are given to models).
fn parameters<T: JsonSchema>() -> serde_json::Value {
    let mut schema = serde_json::to_value(schemars::schema_for!(T)).unwrap_or_default();
    if let Some(map) = schema.as_object_mut() {
        map.remove("$schema");
    }
    schema
}
