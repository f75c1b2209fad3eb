//! `run_python`: model-written Python under the grant, with the host's
//! tools and the agent's own rig tools reachable through the gate.

use crate::bridge::{Registrar, registrar};
use crate::record::{OnRun, hand_back};
use crate::{RunOutcome, SandboxToolError, feedback, parameters};
use rig_core::tool::{Tool, ToolContext, ToolExecutionError};
use sbx_wasm::Capabilities;
use sbx_wasm::Services;
use sbx_wasm::tools::ToolRegistry;
use sbx_wasm::wasm::{PythonRunner, RunOptions, WasmHost, WasmRun};
use schemars::JsonSchema;
use serde::Deserialize;
use std::sync::Arc;

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
    rig_tools: Vec<(String, Registrar)>,
    on_run: Option<OnRun>,
}

impl RunPython {
    /// Run scripts with `python` on `host` under `caps`.
    pub fn new(host: WasmHost, python: PythonRunner, caps: Capabilities) -> Self {
        RunPython {
            host,
            python,
            caps,
            tools: ToolRegistry::new(),
            rig_tools: Vec::new(),
            on_run: None,
        }
    }

    /// Host tools the script may call (`sbx.tools.NAME(...)`), if the
    /// grant allows them.
    pub fn with_tools(mut self, tools: ToolRegistry) -> Self {
        self.tools = tools;
        self
    }

    /// One of the agent's own rig tools, callable from the script as
    /// `sbx.tools.NAME(...)` (its rig name) when the grant allows that
    /// name: each call goes through the gate (allow-listed, budgeted,
    /// audited), runs the tool on the agent's tokio runtime with the
    /// arguments decoded into its `Args`, and returns its output (JSON
    /// decoded). It takes the place of a host tool of the same name.
    pub fn with_rig_tool<T>(mut self, tool: T) -> Self
    where
        T: Tool + 'static,
        T::Args: Send + 'static,
        T::Output: 'static,
    {
        self.rig_tools.push(registrar(tool));
        self
    }

    /// Call `f` with every finished run (its report, audit and output),
    /// before the model reads the outcome. Each call's
    /// [`SandboxRecord`](crate::SandboxRecord) is also published into its
    /// rig tool context.
    pub fn on_run(mut self, f: impl Fn(&WasmRun) + Send + Sync + 'static) -> Self {
        self.on_run = Some(Arc::new(f));
        self
    }

    /// The names of the tools a script can reach: allowed by the grant,
    /// and registered or given as rig tools.
    fn reachable(&self) -> Vec<String> {
        let rig: Vec<&str> = self
            .rig_tools
            .iter()
            .map(|(name, _)| name.as_str())
            .collect();
        crate::reachable(&self.caps, &self.tools, &rig)
    }
}

impl Tool for RunPython {
    const NAME: &'static str = "run_python";
    type Args = PythonArgs;
    type Output = RunOutcome;
    type Error = SandboxToolError;

    fn description(&self) -> String {
        format!(
            "Run a Python 3 script in a sandbox. {} Open files with open(); fetch with \
             urllib, requests or sbx.fetch; call a tool with sbx.tools.NAME(**args) (its \
             result decoded). A refused attempt raises sbx.Denied (a PermissionError) and \
             nothing happens; the answer has the output, how it ended, and every refused \
             attempt.",
            self.caps.room_for_model(&self.reachable())
        )
    }

    fn parameters(&self) -> serde_json::Value {
        parameters::<PythonArgs>()
    }

    fn map_error(&self, error: SandboxToolError) -> ToolExecutionError {
        feedback(error)
    }

    async fn call(
        &self,
        context: &mut ToolContext,
        args: PythonArgs,
    ) -> Result<RunOutcome, SandboxToolError> {
        let mut tools = self.tools.clone();
        if !self.rig_tools.is_empty() {
            // The agent's own tools run on its tokio runtime; called from
            // another executor, the script cannot reach them.
            let runtime = tokio::runtime::Handle::try_current().map_err(|_| {
                SandboxToolError::NoRuntime(
                    "the agent's rig tools run on a tokio runtime, and this call is not on one"
                        .into(),
                )
            })?;
            for (_, register) in &self.rig_tools {
                register(&mut tools, runtime.clone());
            }
        }
        let opts = RunOptions::new(self.caps.clone())
            .services(Services::new().tools(tools))
            .args(args.args);
        let run = self
            .python
            .run_source_async(&self.host, &args.code, opts)
            .await?;
        hand_back(&run, context, self.on_run.as_ref());
        Ok(run.into())
    }
}
