//! The tool capability's plan form:
//! `{"op": "tool_call", "name": "summarize", "input": {"text": "..."}}`.
//! A JSON input that is not a string is passed on as its JSON text.

use super::ToolCall;
use crate::capability::Op;
use crate::capability::kind::{OpKind, portable_schema, variant_schema};
use serde::Deserialize;
use serde_json::Value;

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(tag = "op", rename_all = "snake_case", deny_unknown_fields)]
enum PlanOp {
    ToolCall {
        /// The granted tool's name.
        name: String,
        /// The tool's input: a string, or any JSON value (passed on as its
        /// JSON text).
        #[serde(default)]
        input: Value,
    },
}

/// The arguments of a tool call in a plan, as a JSON schema.
pub(crate) fn plan_schema(kind: OpKind) -> Value {
    variant_schema(portable_schema::<PlanOp>(), kind)
}

/// The tool call a plan object asks for.
pub(crate) fn from_plan(_kind: OpKind, v: Value) -> Result<Op, String> {
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
pub(crate) fn aimed_at(_kind: OpKind, name: String) -> Op {
    Op::tool(name, "")
}
