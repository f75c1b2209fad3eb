//! The key-value capability's plan form:
//! `{"op": "kv_put", "key": "notes/q3", "value": "text"}`.

use super::KvOp;
use crate::capability::Op;
use crate::capability::kind::{OpKind, portable_schema, variant_schema};
use serde::Deserialize;
use serde_json::Value;

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(tag = "op", deny_unknown_fields)]
enum PlanOp {
    #[serde(rename = "kv_get")]
    Get {
        /// The key (1 to 256 bytes, no control characters).
        key: String,
    },
    #[serde(rename = "kv_put")]
    Put {
        /// The key (1 to 256 bytes, no control characters).
        key: String,
        /// The value, as text.
        value: String,
    },
    #[serde(rename = "kv_delete")]
    Delete {
        /// The key.
        key: String,
    },
    #[serde(rename = "kv_list")]
    List {
        /// Only keys starting with this (default: every key).
        #[serde(default)]
        prefix: String,
    },
}

/// The arguments of the kv op `kind` in a plan, as a JSON schema.
pub(crate) fn plan_schema(kind: OpKind) -> Value {
    variant_schema(portable_schema::<PlanOp>(), kind)
}

/// The kv op a plan object asks for.
pub(crate) fn from_plan(_kind: OpKind, v: Value) -> Result<Op, String> {
    let p: PlanOp = serde_json::from_value(v).map_err(|e| e.to_string())?;
    Ok(Op::Kv(match p {
        PlanOp::Get { key } => KvOp::Get { key },
        PlanOp::Put { key, value } => KvOp::Put {
            key,
            value: value.into_bytes(),
        },
        PlanOp::Delete { key } => KvOp::Delete { key },
        PlanOp::List { prefix } => KvOp::List { prefix },
    }))
}

/// The kv op `kind` on `key`, with an empty value.
pub(crate) fn aimed_at(kind: OpKind, key: String) -> Op {
    Op::Kv(match kind {
        OpKind::KvPut => KvOp::Put {
            key,
            value: Vec::new(),
        },
        OpKind::KvDelete => KvOp::Delete { key },
        OpKind::KvList => KvOp::List { prefix: key },
        _ => KvOp::Get { key },
    })
}
