//! `NativeSandbox`: one grant, its tools, and the runners it keeps warm.
//! Every run releases the GIL: the guest runs on a thread of its own, and
//! a Python tool it calls takes the GIL only for that call.

use crate::caps::NativeCaps;
use crate::errors;
use crate::events::{NativeCancel, NativeEvents};
use crate::runners;
use crate::tools::PyTool;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use sbx_wasm::tools::{ToolRegistry, valid_tool_name};
use sbx_wasm::wasm::{
    Language, LoadError, PreparedAgent, RunOptions, ScriptRunner, WasmHost, WasmRun,
};
use sbx_wasm::{Capabilities, Sandbox, SandboxedAgent, Services};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::SystemTime;

/// A component file's modification time and length, and the process
/// that prepared it.
type Stamp = (SystemTime, u64, u32);

/// What a run hands back: `(json, stdout, stderr)`.
type RunOut = (String, Py<PyBytes>, Py<PyBytes>);

#[pyclass(frozen, module = "sbx_wasm._native")]
pub(crate) struct NativeSandbox {
    caps: Capabilities,
    tools: Mutex<ToolRegistry>,
    python_runner: Option<PathBuf>,
    js_runner: Option<PathBuf>,
    /// Components by path, prepared once, again when the file changes or
    /// the engine does (a forked child has its own).
    components: Mutex<HashMap<PathBuf, (Stamp, PreparedAgent)>>,
}

/// The run's options a caller may set per call.
#[derive(FromPyObject)]
#[pyo3(from_item_all)]
pub(crate) struct CallOptions {
    args: Vec<String>,
    stdin: Option<Vec<u8>>,
    cancel: Option<Py<NativeCancel>>,
    events: Option<Py<NativeEvents>>,
}

#[pymethods]
impl NativeSandbox {
    #[new]
    #[pyo3(signature = (caps, python_runner=None, js_runner=None))]
    fn new(caps: &NativeCaps, python_runner: Option<PathBuf>, js_runner: Option<PathBuf>) -> Self {
        NativeSandbox {
            caps: caps.caps.clone(),
            tools: Mutex::new(ToolRegistry::new()),
            python_runner,
            js_runner,
            components: Mutex::new(HashMap::new()),
        }
    }

    /// Register `call` as the tool `name`. The grant still decides: a
    /// name it does not allow is refused (`tool_denied`) before `check`
    /// or `call` runs.
    fn add_tool(
        &self,
        name: &str,
        description: &str,
        schema_json: &str,
        call: Py<PyAny>,
        check: Py<PyAny>,
    ) -> PyResult<()> {
        if !valid_tool_name(name) {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "tool name {name:?}: 1 to 64 letters, digits, `_`, `-` or `.`"
            )));
        }
        let schema: serde_json::Value = serde_json::from_str(schema_json)
            .map_err(|e| pyo3::exceptions::PyValueError::new_err(format!("schema: {e}")))?;
        lock(&self.tools).register_described(name, description, schema, PyTool { call, check });
        Ok(())
    }

    /// The tools a guest can reach (allowed by the grant and registered),
    /// with their schemas, as JSON.
    fn tool_definitions(&self) -> String {
        let defs = lock(&self.tools).definitions(self.caps.tools());
        serde_json::to_string(&defs).unwrap_or_else(|_| "[]".into())
    }

    fn run_python(&self, py: Python<'_>, code: &str, call: CallOptions) -> PyResult<RunOut> {
        self.run_script(py, code, call, || {
            runners::python(&self.caps, self.python_runner.as_deref())
        })
    }

    fn run_javascript(&self, py: Python<'_>, code: &str, call: CallOptions) -> PyResult<RunOut> {
        self.run_script(py, code, call, || {
            runners::javascript(&self.caps, self.js_runner.as_deref())
        })
    }

    fn run_wasm(&self, py: Python<'_>, path: PathBuf, call: CallOptions) -> PyResult<RunOut> {
        let opts = self.options(py, call);
        let run = py.detach(|| {
            let (host, agent) = self.component(&path)?;
            host.run_prepared(&agent, opts)
        });
        out(py, run.map_err(errors::load)?)
    }

    /// Run a plan (a JSON list of ops) through the gate: no wasm.
    fn exec_plan(&self, py: Python<'_>, plan: &str, call: CallOptions) -> PyResult<String> {
        let ops = sbx_wasm::plan::parse_plan(plan)
            .map_err(|e| errors::PlanError::new_err(e.to_string()))?;
        let mut builder = Sandbox::builder(self.caps.clone())
            .services(Services::new().tools(lock(&self.tools).clone()));
        if let Some(c) = &call.cancel {
            builder = builder.cancel(c.get().handle.clone());
        }
        if let Some(sink) = call.events.as_ref().and_then(|e| e.get().take_sink()) {
            builder = builder.events(sink);
        }
        let sandbox = builder.build().map_err(errors::setup)?;
        py.detach(move || {
            let mut agent = SandboxedAgent::new(sandbox);
            let run = agent.run_all(ops);
            let json = serde_json::json!({
                "results": run.results,
                "stopped_reason": run.stopped_reason,
                "report": run.report,
                "audit": agent.sandbox().audit(),
            });
            Ok(json.to_string())
        })
    }
}

impl NativeSandbox {
    /// Run `code` on the runner `load` gives, the GIL released.
    fn run_script<L: Language>(
        &self,
        py: Python<'_>,
        code: &str,
        call: CallOptions,
        load: impl FnOnce() -> Result<(WasmHost, ScriptRunner<L>), LoadError> + Send,
    ) -> PyResult<RunOut> {
        let opts = self.options(py, call);
        let run = py.detach(|| {
            let (host, runner) = load()?;
            runner.run_source(&host, code, opts)
        });
        out(py, run.map_err(errors::load)?)
    }

    fn options(&self, py: Python<'_>, call: CallOptions) -> RunOptions {
        let tools = lock(&self.tools).clone();
        let mut opts = RunOptions::new(self.caps.clone())
            .services(Services::new().tools(tools))
            .args(call.args);
        if let Some(bytes) = call.stdin {
            opts = opts.stdin(bytes);
        }
        if let Some(c) = &call.cancel {
            opts = opts.cancel(c.get().handle.clone());
        }
        if let Some(sink) = call
            .events
            .as_ref()
            .and_then(|e| e.bind(py).get().take_sink())
        {
            opts = opts.events(sink);
        }
        opts
    }

    /// The component at `path`, compiled and linked once (again when its
    /// modification time or length changes, or in a forked child).
    fn component(&self, path: &std::path::Path) -> Result<(WasmHost, PreparedAgent), LoadError> {
        let host = runners::host(&self.caps)?;
        let meta = std::fs::metadata(path).map_err(|source| LoadError::Read {
            path: path.display().to_string(),
            source,
        })?;
        let stamp = (
            meta.modified().unwrap_or(SystemTime::UNIX_EPOCH),
            meta.len(),
            std::process::id(),
        );
        let mut map = lock(&self.components);
        if let Some((s, agent)) = map.get(path)
            && *s == stamp
        {
            return Ok((host, agent.clone()));
        }
        let agent = host.prepare(&host.load(path)?)?;
        map.insert(path.to_path_buf(), (stamp, agent.clone()));
        Ok((host, agent))
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn out(py: Python<'_>, run: WasmRun) -> PyResult<RunOut> {
    let json = serde_json::json!({
        "report": run.report,
        "audit": run.audit,
        "trap": run.trap,
        "queued_ms": run.queued.as_secs_f64() * 1000.0,
    });
    Ok((
        json.to_string(),
        PyBytes::new(py, &run.stdout).unbind(),
        PyBytes::new(py, &run.stderr).unbind(),
    ))
}
