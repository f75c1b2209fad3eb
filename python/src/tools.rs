//! A Python callable as a tool the gate calls. The callable is reached
//! only through the registry the run's gate holds: allow-listed by name,
//! its input checked first, budgeted and audited like every tool.

use pyo3::prelude::*;
use sbx_wasm::tools::{Tool, ToolError, ToolLimits};

/// `call(input_json) -> str` and `check(input_json) -> None | str`, both
/// Python callables made by the package's `_tools` module (which binds
/// the JSON to the function's signature and encodes its result).
pub(crate) struct PyTool {
    pub(crate) call: Py<PyAny>,
    pub(crate) check: Py<PyAny>,
}

/// A Python exception as the guest sees a failed call: its type and
/// message, nothing of the host's traceback.
fn failure(py: Python<'_>, e: PyErr) -> String {
    let kind = e
        .get_type(py)
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "Exception".into());
    let message = e.value(py).str().map(|s| s.to_string()).unwrap_or_default();
    if message.is_empty() {
        kind
    } else {
        format!("{kind}: {message}")
    }
}

impl Tool for PyTool {
    fn call(&self, input: &str, _limits: ToolLimits) -> Result<String, ToolError> {
        Python::attach(|py| {
            let out = self
                .call
                .call1(py, (input,))
                .map_err(|e| ToolError::Failed(failure(py, e)))?;
            out.extract::<String>(py)
                .map_err(|e| ToolError::Failed(failure(py, e)))
        })
    }

    fn check_input(&self, input: &str) -> Result<(), String> {
        Python::attach(|py| match self.check.call1(py, (input,)) {
            Ok(v) if v.is_none(py) => Ok(()),
            Ok(v) => Err(v
                .extract::<String>(py)
                .unwrap_or_else(|_| "input refused".into())),
            Err(e) => Err(failure(py, e)),
        })
    }
}
