//! `read_file`, `write_file`, `list_files`, `fetch`, the `kv_*` tools and
//! each granted tool: one op through the gate, under the session's grant, with the violation
//! names of every other door. The MCP arguments become the op's plan form,
//! so a wrong type is the gate's `invalid_request`, recorded like any
//! other denial.

use super::door::{Door, Session};
use super::reply::{self, Ids};
use rmcp::model::{CallToolResult, JsonObject};
use serde_json::{Value, json};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// The plan form of a call of `tool` with `args`: a single-op tool's
/// arguments are its op's plan arguments; any other name is a tool call
/// (granted or not: the gate decides).
pub(crate) fn plan_form(tool: &str, args: &JsonObject) -> Value {
    match super::catalog::single_op(tool) {
        Some(kind) => {
            let mut op = args.clone();
            op.insert("op".into(), Value::String(kind.name().into()));
            Value::Object(op)
        }
        None => json!({ "op": "tool_call", "name": tool, "input": Value::Object(args.clone()) }),
    }
}

/// Run one op for `session` (its slot already held).
pub(crate) async fn run(
    door: &Arc<Door>,
    session: &Session,
    ids: &Ids<'_>,
    tool: &str,
    args: &JsonObject,
    client_cancel: CancellationToken,
) -> CallToolResult {
    let op = sbx_wasm::plan::op_from_json(plan_form(tool, args));
    let (cancel, _watch) = door.cancel_switch(client_cancel);
    let caps = session.caps.clone();
    let services = session.services();
    // A fetch or a tool blocks: off the runtime's workers.
    let done = tokio::task::spawn_blocking(move || {
        let mut sandbox = crate::common::sandbox(caps, services, false, Some(cancel))
            .map_err(|e| format!("{e:#}"))?;
        let result = sandbox.run(op);
        Ok::<_, String>((result, sandbox.report(), sandbox.audit().to_vec()))
    })
    .await
    .map_err(|e| e.to_string())
    .and_then(|r| r);
    match done {
        Ok((result, report, audit)) => {
            door.finish_call(session, ids, tool, &report, &audit);
            reply::op(&result, &report, ids)
        }
        Err(reason) => door.turn_away(ids, tool, "refused", &reason),
    }
}
