//! `read_file`, `write_file`, `list_files`, `fetch`, the `kv_*` tools and
//! each granted tool: one op through the gate, under the session's grant, with the violation
//! names of every other door. The MCP arguments become the op's plan form,
//! so a wrong type is the gate's `invalid_request`, recorded like any
//! other denial.

use super::door::Door;
use super::reply::{self, Ids};
use super::session::Session;
use rmcp::model::{CallToolResult, JsonObject};
use rmcp::service::{Peer, RoleServer};
use sbx_wasm::ask::Approver;
use serde_json::{Value, json};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// The plan form of a call of `tool` with `args`: a single-op tool's
/// arguments are its op's plan arguments; any other name is a tool call
/// (granted or not: the gate decides).
pub(crate) fn plan_form(tool: &str, args: &JsonObject) -> Value {
    match super::listing::single_op(tool) {
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
    (client_cancel, peer): (CancellationToken, &Peer<RoleServer>),
) -> CallToolResult {
    let op = plan_form(tool, args);
    let asks = super::approve::approver(&session.caps, peer);
    match perform(door, session, ids, tool, vec![op], (client_cancel, asks)).await {
        Ok((results, report)) => {
            door.count_ran();
            let mut answer = reply::op(&results[0], &report, ids);
            reply::labels(&mut answer, session.caps.flow(), &report.labels);
            answer
        }
        Err(reason) => door.turn_away(ids, tool, "refused", &reason),
    }
}

/// Run `ops` (plan form) for `session` in one sandbox, in order, and
/// record the call as `tool`: every result and the report, or why none ran
/// (not recorded: the caller turns the call away).
pub(crate) async fn perform(
    door: &Arc<Door>,
    session: &Session,
    ids: &Ids<'_>,
    tool: &str,
    ops: Vec<Value>,
    (client_cancel, asks): (CancellationToken, Option<Arc<dyn Approver>>),
) -> Result<(Vec<sbx_wasm::SandboxResult>, sbx_wasm::RunReport), String> {
    let (cancel, _watch) = door.cancel_switch(client_cancel);
    let caps = session.caps.clone();
    let labels = session.labels_with(&sbx_wasm::flow::Mark::default());
    let mut services = session.services();
    if let Some(a) = asks {
        services = services.approver(a);
    }
    // A fetch or a tool blocks: off the runtime's workers.
    let done = tokio::task::spawn_blocking(move || {
        let mut sandbox = crate::common::sandbox(caps, services, false, Some(cancel), labels)
            .map_err(|e| format!("{e:#}"))?;
        let results: Vec<_> = (ops.into_iter())
            .map(|op| sandbox.run(sbx_wasm::plan::op_from_json(op)))
            .collect();
        Ok::<_, String>((results, sandbox.report(), sandbox.audit().to_vec()))
    })
    .await
    .map_err(|e| e.to_string())
    .and_then(|r| r);
    let (results, report, audit) = done?;
    door.finish_call(session, ids, tool, &report, &audit);
    Ok((results, report))
}
