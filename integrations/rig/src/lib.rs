//! [rig](https://crates.io/crates/rig-core) tools backed by sbx-wasm: a
//! rig agent's model writes Python, or picks a wasm component, and the code
//! runs under a capability grant instead of on the host.
//!
//! - [`RunPython`] (`run_python {code, args?}`): the script runs in the
//!   Python runner under the grant;
//! - [`RunWasm`] (`run_wasm {component, args?}`): a component file from a
//!   folder the tool was given (never any host path the model names).
//!
//! Both answer with a [`RunOutcome`]: status, exit code, violation, the
//! captured stdout and stderr, the denials, a usage line. A denial or a
//! halt is an answer the model reads, not a tool error; a tool error means
//! the host could not run the code at all (a bad component name, no room
//! in the pool).
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

use rig_core::tool::{Tool, ToolContext, ToolExecutionError};
use sbx_wasm::Capabilities;
use sbx_wasm::Services;
use sbx_wasm::tools::ToolRegistry;
use sbx_wasm::wasm::{LoadError, PythonRunner, RunOptions, WasmHost, WasmRun};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// What a sandboxed run tells the model.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RunOutcome {
    /// `completed`, `exited`, `hard_limit`, `trapped` or `cancelled`.
    pub status: String,
    /// The guest's exit code, when it exited.
    pub exit_code: Option<i32>,
    /// The hard violation that halted the run, if any.
    pub violation: Option<String>,
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

/// Arguments of `run_python`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct PythonArgs {
    /// The Python source to run.
    pub code: String,
    /// Arguments for the script (`sys.argv[1:]`).
    #[serde(default)]
    pub args: Vec<String>,
}

/// `run_python`: run model-written Python under the grant.
#[derive(Clone)]
pub struct RunPython {
    host: WasmHost,
    python: PythonRunner,
    caps: Capabilities,
    tools: ToolRegistry,
}

impl RunPython {
    /// Run scripts with `python` on `host` under `caps`.
    pub fn new(host: WasmHost, python: PythonRunner, caps: Capabilities) -> Self {
        RunPython {
            host,
            python,
            caps,
            tools: ToolRegistry::new(),
        }
    }

    /// Host tools the script may call through `sbx.call_tool` (if the grant
    /// allows them).
    pub fn with_tools(mut self, tools: ToolRegistry) -> Self {
        self.tools = tools;
        self
    }
}

impl Tool for RunPython {
    const NAME: &'static str = "run_python";
    type Args = PythonArgs;
    type Output = RunOutcome;
    type Error = SandboxToolError;

    fn description(&self) -> String {
        "Run a Python script in a sandbox. It sees only the folders, hosts and tools the \
         grant allows (the `sbx` module fetches and calls tools); the answer has its \
         output, how it ended, and every refused attempt."
            .into()
    }

    fn parameters(&self) -> serde_json::Value {
        parameters::<PythonArgs>()
    }

    fn map_error(&self, error: SandboxToolError) -> ToolExecutionError {
        feedback(error)
    }

    async fn call(
        &self,
        _context: &mut ToolContext,
        args: PythonArgs,
    ) -> Result<RunOutcome, SandboxToolError> {
        let opts = RunOptions::new(self.caps.clone())
            .services(Services::new().tools(self.tools.clone()))
            .args(args.args);
        let run = self
            .python
            .run_source_async(&self.host, &args.code, opts)
            .await?;
        Ok(run.into())
    }
}

/// Arguments of `run_wasm`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct WasmArgs {
    /// The file name of a component the tool offers, e.g. `summarize.wasm`.
    pub component: String,
    /// Arguments for the component (after `argv[0]`).
    #[serde(default)]
    pub args: Vec<String>,
}

/// `run_wasm`: run one of the components in a folder under the grant.
#[derive(Clone)]
pub struct RunWasm {
    host: WasmHost,
    caps: Capabilities,
    tools: ToolRegistry,
    folder: PathBuf,
}

impl RunWasm {
    /// Offer the `.wasm` files directly in `folder`, run on `host` under
    /// `caps`.
    pub fn new(host: WasmHost, caps: Capabilities, folder: impl Into<PathBuf>) -> Self {
        RunWasm {
            host,
            caps,
            tools: ToolRegistry::new(),
            folder: folder.into(),
        }
    }

    /// Host tools the component may call (if the grant allows them).
    pub fn with_tools(mut self, tools: ToolRegistry) -> Self {
        self.tools = tools;
        self
    }

    /// The component file `name` names, if this tool offers it: a plain
    /// `.wasm` file name, directly in the folder.
    fn offered(&self, name: &str) -> Result<PathBuf, SandboxToolError> {
        let plain = Path::new(name).file_name().is_some_and(|f| f == name);
        let path = self.folder.join(name);
        if plain && name.ends_with(".wasm") && path.is_file() {
            Ok(path)
        } else {
            Err(SandboxToolError::NoSuchComponent(format!(
                "{name:?} is not a component this tool offers (a .wasm file name in its folder)"
            )))
        }
    }
}

impl Tool for RunWasm {
    const NAME: &'static str = "run_wasm";
    type Args = WasmArgs;
    type Output = RunOutcome;
    type Error = SandboxToolError;

    fn description(&self) -> String {
        "Run a WebAssembly component in a sandbox, by file name. It sees only the folders, \
         hosts and tools the grant allows; the answer has its output, how it ended, and \
         every refused attempt."
            .into()
    }

    fn parameters(&self) -> serde_json::Value {
        parameters::<WasmArgs>()
    }

    fn map_error(&self, error: SandboxToolError) -> ToolExecutionError {
        feedback(error)
    }

    async fn call(
        &self,
        _context: &mut ToolContext,
        args: WasmArgs,
    ) -> Result<RunOutcome, SandboxToolError> {
        let path = self.offered(&args.component)?;
        let agent = self.host.prepare(&self.host.load(&path)?)?;
        let opts = RunOptions::new(self.caps.clone())
            .program_name(args.component)
            .services(Services::new().tools(self.tools.clone()))
            .args(args.args);
        Ok(self.host.run_prepared_async(&agent, opts).await?.into())
    }
}
