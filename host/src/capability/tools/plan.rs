//! The tool capability's plan form:
//! `{"op": "tool_call", "name": "summarize", "input": {"text": "..."}}`.
//! A JSON input that is not a string is passed on as its JSON text.

use super::ToolCall;
use crate::capability::Op;
use serde::Deserialize;
use serde_json::Value;

/// Op names of the tool capability in plans.
pub(crate) const PLAN_OPS: &[&str] = &["tool_call"];

#[derive(Deserialize)]
#[serde(tag = "op", rename_all = "snake_case", deny_unknown_fields)]
enum PlanOp {
    ToolCall {
        name: String,
        #[serde(default)]
        input: Value,
    },
}

/// The tool call a plan object asks for.
pub(crate) fn from_plan(_kind: &str, v: Value) -> Result<Op, String> {
    let PlanOp::ToolCall { name, input } = serde_json::from_value(v).map_err(|e| e.to_string())?;
    Ok(Op::Tool(ToolCall {
        name,
        input: match input {
            Value::String(s) => s,
            Value::Null => String::new(),
            other => other.to_string(),
        },
    }))
}

/// A call of tool `name` with no input.
pub(crate) fn aimed_at(_kind: &str, name: String) -> Op {
    Op::tool(name, "")
}
