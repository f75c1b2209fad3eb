//! `run_wasm`: one of the components in a folder the tool was given, run
//! under the grant; each compiled and linked once per tool (again only when
//! its file changes).

use crate::record::{OnRun, hand_back};
use crate::{RunOutcome, SandboxToolError, feedback, parameters};
use rig_core::tool::{Tool, ToolContext, ToolExecutionError};
use sbx_wasm::Capabilities;
use sbx_wasm::Services;
use sbx_wasm::tools::ToolRegistry;
use sbx_wasm::wasm::{PreparedAgent, RunOptions, WasmHost, WasmRun};
use schemars::JsonSchema;
use serde::Deserialize;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

/// Arguments of `run_wasm`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct WasmArgs {
    /// The file name of a component the tool offers, e.g. `summarize.wasm`.
    pub component: String,
    /// Arguments for the component (after `argv[0]`).
    #[serde(default)]
    pub args: Vec<String>,
}

/// A component prepared once, and the file it was prepared from (size and
/// modification time) so a changed file is prepared again.
type Prepared = HashMap<String, ((u64, Option<SystemTime>), PreparedAgent)>;

/// `run_wasm`: run one of the components in a folder under the grant.
#[derive(Clone)]
pub struct RunWasm {
    host: WasmHost,
    caps: Capabilities,
    tools: ToolRegistry,
    folder: PathBuf,
    prepared: Arc<Mutex<Prepared>>,
    on_run: Option<OnRun>,
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
            prepared: Arc::default(),
            on_run: None,
        }
    }

    /// Host tools the component may call (if the grant allows them).
    pub fn with_tools(mut self, tools: ToolRegistry) -> Self {
        self.tools = tools;
        self
    }

    /// Call `f` with every finished run, as [`RunPython::on_run`](crate::RunPython::on_run).
    pub fn on_run(mut self, f: impl Fn(&WasmRun) + Send + Sync + 'static) -> Self {
        self.on_run = Some(Arc::new(f));
        self
    }

    /// How many components this tool has prepared (compiled and linked).
    pub fn prepared(&self) -> usize {
        self.prepared.lock().map_or(0, |p| p.len())
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

    /// The prepared component `name` at `path`: kept from an earlier call
    /// while the file is unchanged, else loaded and prepared now.
    fn agent(&self, name: &str, path: &Path) -> Result<PreparedAgent, SandboxToolError> {
        let stamp = std::fs::metadata(path)
            .map(|m| (m.len(), m.modified().ok()))
            .unwrap_or((0, None));
        if let Ok(prepared) = self.prepared.lock()
            && let Some((seen, agent)) = prepared.get(name)
            && *seen == stamp
        {
            return Ok(agent.clone());
        }
        let agent = self.host.prepare(&self.host.load(path)?)?;
        if let Ok(mut prepared) = self.prepared.lock() {
            prepared.insert(name.to_string(), (stamp, agent.clone()));
        }
        Ok(agent)
    }
}

impl Tool for RunWasm {
    const NAME: &'static str = "run_wasm";
    type Args = WasmArgs;
    type Output = RunOutcome;
    type Error = SandboxToolError;

    fn description(&self) -> String {
        let reachable = crate::reachable(&self.caps, &self.tools, &[]);
        format!(
            "Run a WebAssembly component in a sandbox, by file name. {} The answer has its \
             output, how it ended, and every refused attempt.",
            self.caps.room_for_model(&reachable)
        )
    }

    fn parameters(&self) -> serde_json::Value {
        parameters::<WasmArgs>()
    }

    fn map_error(&self, error: SandboxToolError) -> ToolExecutionError {
        feedback(error)
    }

    async fn call(
        &self,
        context: &mut ToolContext,
        args: WasmArgs,
    ) -> Result<RunOutcome, SandboxToolError> {
        let path = self.offered(&args.component)?;
        let agent = self.agent(&args.component, &path)?;
        let opts = RunOptions::new(self.caps.clone())
            .program_name(args.component)
            .services(Services::new().tools(self.tools.clone()))
            .args(args.args);
        let run = self.host.run_prepared_async(&agent, opts).await?;
        hand_back(&run, context, self.on_run.as_ref());
        Ok(run.into())
    }
}
