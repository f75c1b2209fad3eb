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
//! Each capability reads its own ops (`capability/*/plan.rs`); this reads
//! the list. A malformed *op* becomes an `invalid_request` denial in its place (a model
//! proposing nonsense is an event to record, not a crash); a file that is not
//! a JSON list is an error.

use crate::capability::op_from_plan;
pub use crate::capability::{op_aimed_at, plan_ops};
use crate::error::Error;
use crate::op::Op;
use serde_json::Value;

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
    if name.is_empty() {
        return Op::Invalid {
            op: name,
            reason: format!("the object has no \"op\" name (ops: {})", plan_ops()),
        };
    }
    op_from_plan(&name, v).unwrap_or_else(|reason| Op::Invalid { op: name, reason })
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
        assert!(matches!(&ops[7], Op::Net(r) if r.method == "POST"));
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
