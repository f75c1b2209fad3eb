//! `read_file`, `write_file`, `list_files`, `fetch` and each granted tool:
//! one op through the gate, under the session's grant, with the violation
//! names of every other door. The MCP arguments become the op's plan form,
//! so a wrong type is the gate's `invalid_request`, recorded like any
//! other denial.

use super::door::{Door, Session};
use super::reply::{self, Ids};
use rmcp::model::{CallToolResult, JsonObject};
use serde_json::{Value, json};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// The plan form of a call of `tool` with `args`.
pub(crate) fn plan_form(tool: &str, args: &JsonObject) -> Value {
    let arg = |k: &str| args.get(k).cloned().unwrap_or(Value::Null);
    match tool {
        "read_file" => json!({ "op": "fs_read", "path": arg("path") }),
        "list_files" => json!({ "op": "fs_list", "path": arg("path") }),
        "write_file" => json!({ "op": "fs_write", "path": arg("path"), "content": arg("content") }),
        "fetch" => {
            let mut op = json!({ "op": "net_fetch", "url": arg("url") });
            for k in ["method", "body"] {
                if let Some(v) = args.get(k) {
                    op[k] = v.clone();
                }
            }
            // MCP clients send headers as an object; plans take pairs.
            match args.get("headers") {
                Some(Value::Object(h)) => {
                    op["headers"] = h.iter().map(|(k, v)| json!([k, v])).collect();
                }
                Some(other) => op["headers"] = other.clone(),
                None => {}
            }
            op
        }
        granted => {
            json!({ "op": "tool_call", "name": granted, "input": Value::Object(args.clone()) })
        }
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
    // A fetch or a tool blocks: off the runtime's workers.
    let done = tokio::task::spawn_blocking(move || {
        let mut sandbox =
            crate::common::sandbox(caps, false, Some(cancel)).map_err(|e| format!("{e:#}"))?;
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
