//! What the application gets back of a run its agent made: the report and
//! the audit, through rig's tool context (the published result metadata
//! of the call) and, when asked, a callback.

use rig_core::tool::{ContextValue, ToolContext};
use sbx_wasm::wasm::WasmRun;
use sbx_wasm::{AuditEvent, RunReport};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// A sandboxed run's report and audit, published into the call's
/// [`ToolContext`] result (`context.result::<SandboxRecord>()`), where
/// rig's dispatch hands result metadata back to the application; the model
/// never sees it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SandboxRecord {
    /// How the run ended, what it used, what was refused.
    pub report: RunReport,
    /// Every decision the gate made, in order.
    pub audit: Vec<AuditEvent>,
}

impl ContextValue for SandboxRecord {
    const KEY: &'static str = "sbx_wasm.run";
}

/// Called with each finished run (before the model sees its outcome).
pub(crate) type OnRun = Arc<dyn Fn(&WasmRun) + Send + Sync>;

/// Hand `run` to the application: the callback, then the call's context.
pub(crate) fn hand_back(run: &WasmRun, context: &mut ToolContext, on_run: Option<&OnRun>) {
    if let Some(f) = on_run {
        f(run);
    }
    let record = SandboxRecord {
        report: run.report.clone(),
        audit: run.audit.clone(),
    };
    // Only an encoding failure can refuse it; the outcome goes on either way.
    let _ = context.insert_result(record);
}
