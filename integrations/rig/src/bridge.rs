//! A rig user's own tools, reached from the sandboxed code: each is
//! registered as an sbx tool (allow-listed by its rig name, audited and
//! budgeted by the gate like any other), its arguments decoded into the
//! tool's own `Args` and its output sent back as text (JSON for structured
//! output). The tool runs on the agent's tokio runtime while the guest
//! waits, within the run's time left and until a cancel.

use rig_core::tool::{IntoToolOutput, Tool, ToolContext};
use sbx_wasm::tools::{ToolError, ToolRegistry};
use std::sync::Arc;

/// Registers one rig tool into a run's registry, on the runtime the run
/// is called from.
pub(crate) type Registrar = Arc<dyn Fn(&mut ToolRegistry, tokio::runtime::Handle) + Send + Sync>;

/// The registrar of `tool`, and its name.
pub(crate) fn registrar<T>(tool: T) -> (String, Registrar)
where
    T: Tool + 'static,
    T::Args: Send + 'static,
    T::Output: 'static,
{
    let tool = Arc::new(tool);
    let register = move |tools: &mut ToolRegistry, runtime: tokio::runtime::Handle| {
        let call = tool.clone();
        tools.register_async(T::NAME, runtime, move |input: String| {
            let tool = call.clone();
            async move { run(&*tool, &input).await }
        });
        tools.describe(T::NAME, tool.description(), tool.parameters());
    };
    (T::NAME.to_string(), Arc::new(register))
}

/// One call of `tool` with the guest's `input`.
async fn run<T: Tool>(tool: &T, input: &str) -> Result<String, ToolError> {
    let args: T::Args = serde_json::from_str(input).map_err(|e| {
        ToolError::Failed(format!(
            "the input does not match the tool's arguments: {e}"
        ))
    })?;
    // A context of its own: the sandboxed call carries none of the agent's
    // inbound values (credentials stay with the agent's own calls).
    let mut context = ToolContext::new();
    let output = tool
        .call(&mut context, args)
        .await
        .map_err(|e| ToolError::Failed(tool.map_error(e).to_string()))?;
    let output = output
        .into_tool_output()
        .map_err(|e| ToolError::Failed(e.to_string()))?;
    if let Some(text) = output.as_text() {
        return Ok(text.to_string());
    }
    if let Some(value) = output.as_json() {
        return Ok(value.to_string());
    }
    serde_json::to_string(&output).map_err(|e| ToolError::Failed(e.to_string()))
}
