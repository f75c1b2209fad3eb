//! The JSON plan: a list of model-proposed ops, one object each.
//!
//! ```json
//! [
//!   {"op": "fs_read", "path": "/work/data.txt"},
//!   {"op": "fs_write", "path": "/work/out/r.txt", "content": "text"},
//!   {"op": "net_fetch", "url": "https://api.example.com/x", "method": "GET"},
//!   {"op": "tool_call", "name": "summarize", "input": {"text": "..."}}
//! ]
//! ```
//!
//! A malformed *op* becomes an `invalid_request` denial in its place (a model
//! proposing nonsense is an event to record, not a crash); a file that is not
//! a JSON list is an error.

use crate::error::Error;
use crate::op::Op;
use base64::Engine as _;
use serde::Deserialize;
use serde_json::Value;

#[derive(Deserialize)]
#[serde(tag = "op", rename_all = "snake_case", deny_unknown_fields)]
enum PlanOp {
    FsRead {
        path: String,
    },
    FsWrite {
        path: String,
        content: Option<String>,
        content_base64: Option<String>,
    },
    FsList {
        path: String,
    },
    FsStat {
        path: String,
    },
    FsRemove {
        path: String,
    },
    FsMkdir {
        path: String,
    },
    NetFetch {
        url: String,
        method: Option<String>,
        #[serde(default)]
        headers: Vec<(String, String)>,
        body: Option<String>,
    },
    ToolCall {
        name: String,
        #[serde(default)]
        input: Value,
    },
}

/// Op names a plan may use.
pub const PLAN_OPS: &str =
    "fs_read, fs_write, fs_list, fs_stat, fs_remove, fs_mkdir, net_fetch, tool_call";

fn to_op(p: PlanOp) -> Result<Op, String> {
    Ok(match p {
        PlanOp::FsRead { path } => Op::FsRead { path },
        PlanOp::FsWrite {
            path,
            content,
            content_base64,
        } => {
            let content = match (content, content_base64) {
                (Some(t), None) => t.into_bytes(),
                (None, Some(b)) => base64::engine::general_purpose::STANDARD
                    .decode(b)
                    .map_err(|e| format!("content_base64 is not base64: {e}"))?,
                (None, None) => return Err("fs_write needs `content` or `content_base64`".into()),
                (Some(_), Some(_)) => {
                    return Err("fs_write takes `content` or `content_base64`, not both".into());
                }
            };
            Op::FsWrite { path, content }
        }
        PlanOp::FsList { path } => Op::FsList { path },
        PlanOp::FsStat { path } => Op::FsStat { path },
        PlanOp::FsRemove { path } => Op::FsRemove { path },
        PlanOp::FsMkdir { path } => Op::FsMkdir { path },
        PlanOp::NetFetch {
            url,
            method,
            headers,
            body,
        } => {
            let method = method.unwrap_or_else(|| "GET".into()).to_ascii_uppercase();
            if method.is_empty() || !method.bytes().all(|b| b.is_ascii_alphabetic()) {
                return Err(format!("method {method:?} is not an HTTP method"));
            }
            Op::NetFetch {
                method,
                url,
                headers,
                body: body.unwrap_or_default().into_bytes(),
            }
        }
        PlanOp::ToolCall { name, input } => Op::ToolCall {
            name,
            input: match input {
                Value::String(s) => s,
                Value::Null => String::new(),
                other => other.to_string(),
            },
        },
    })
}

/// Turn one JSON value into an op; anything malformed becomes [`Op::Invalid`].
pub fn op_from_json(v: Value) -> Op {
    let name = v
        .get("op")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    if !v.is_object() {
        return Op::Invalid {
            op: name,
            reason: "an operation must be a JSON object with an \"op\" key".into(),
        };
    }
    match serde_json::from_value::<PlanOp>(v) {
        Ok(p) => to_op(p).unwrap_or_else(|reason| Op::Invalid { op: name, reason }),
        Err(e) => Op::Invalid {
            op: name,
            reason: format!("{e} (ops: {PLAN_OPS})"),
        },
    }
}

/// Parse a plan: a JSON list of op objects.
pub fn parse_plan(text: &str) -> Result<Vec<Op>, Error> {
    let v: Value = serde_json::from_str(text).map_err(|e| Error::Plan(format!("not JSON: {e}")))?;
    let Value::Array(items) = v else {
        return Err(Error::Plan(
            "expected a JSON list of operations, e.g. [{\"op\": \"fs_read\", \"path\": \"/work/a.txt\"}]".into(),
        ));
    };
    Ok(items.into_iter().map(op_from_json).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_op_parses() {
        let ops = parse_plan(
            &json!([
                {"op": "fs_read", "path": "/a"},
                {"op": "fs_write", "path": "/a", "content": "x"},
                {"op": "fs_write", "path": "/a", "content_base64": "AAE="},
                {"op": "fs_list", "path": "/a"},
                {"op": "fs_stat", "path": "/a"},
                {"op": "fs_remove", "path": "/a"},
                {"op": "fs_mkdir", "path": "/a"},
                {"op": "net_fetch", "url": "http://x/", "method": "post", "body": "b", "headers": [["a", "b"]]},
                {"op": "tool_call", "name": "t", "input": {"k": 1}},
            ])
            .to_string(),
        )
        .unwrap();
        assert!(
            ops.iter().all(|o| !matches!(o, Op::Invalid { .. })),
            "{ops:?}"
        );
        assert_eq!(ops[2], Op::write("/a", vec![0u8, 1]));
        assert_eq!(ops[8], Op::tool("t", r#"{"k":1}"#));
        assert!(matches!(&ops[7], Op::NetFetch { method, .. } if method == "POST"));
    }

    #[test]
    fn malformed_ops_become_invalid_not_errors() {
        let ops = parse_plan(
            &json!([
                42,
                {"path": "/a"},
                {"op": "fs_delete_everything", "path": "/"},
                {"op": "fs_read", "path": "/a", "extra": 1},
                {"op": "fs_write", "path": "/a"},
                {"op": "fs_read"},
                {"op": "net_fetch", "url": "http://x/", "method": "GET /evil"},
            ])
            .to_string(),
        )
        .unwrap();
        assert_eq!(ops.len(), 7);
        for op in &ops {
            assert!(matches!(op, Op::Invalid { .. }), "{op:?}");
        }
    }

    #[test]
    fn a_plan_must_be_a_list() {
        assert!(parse_plan("{}").is_err());
        assert!(parse_plan("not json").is_err());
        assert_eq!(parse_plan("[]").unwrap(), vec![]);
    }
}
