//! The file capability's plan form:
//! `{"op": "fs_write", "path": "/work/out/r.txt", "content": "text"}`.

use super::FsOp;
use crate::capability::Op;
use crate::capability::kind::{OpKind, portable_schema, variant_schema};
use base64::Engine as _;
use serde::Deserialize;
use serde_json::Value;

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(tag = "op", deny_unknown_fields)]
enum PlanOp {
    #[serde(rename = "fs_read")]
    Read {
        /// A guest path, e.g. /work/a.txt.
        path: String,
    },
    #[serde(rename = "fs_write")]
    Write {
        /// A guest path under a read-write folder, e.g. /work/out/r.txt.
        path: String,
        /// The text to write (or give `content_base64`).
        content: Option<String>,
        /// The bytes to write, base64 (or give `content`).
        content_base64: Option<String>,
    },
    #[serde(rename = "fs_list")]
    List {
        /// A guest folder, e.g. /work.
        path: String,
    },
    #[serde(rename = "fs_stat")]
    Stat {
        /// A guest path, e.g. /work/a.txt.
        path: String,
    },
    #[serde(rename = "fs_remove")]
    Remove {
        /// A guest path under a read-write folder.
        path: String,
    },
    #[serde(rename = "fs_mkdir")]
    Mkdir {
        /// A guest path under a read-write folder.
        path: String,
    },
}

/// The arguments of the file op `kind` in a plan, as a JSON schema.
pub(crate) fn plan_schema(kind: OpKind) -> Value {
    variant_schema(portable_schema::<PlanOp>(), kind)
}

/// The file op a plan object asks for.
pub(crate) fn from_plan(_kind: OpKind, v: Value) -> Result<Op, String> {
    let p: PlanOp = serde_json::from_value(v).map_err(|e| e.to_string())?;
    Ok(Op::Fs(match p {
        PlanOp::Read { path } => FsOp::Read { path },
        PlanOp::Write {
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
            FsOp::Write { path, content }
        }
        PlanOp::List { path } => FsOp::List { path },
        PlanOp::Stat { path } => FsOp::Stat { path },
        PlanOp::Remove { path } => FsOp::Remove { path },
        PlanOp::Mkdir { path } => FsOp::Mkdir { path },
    }))
}

/// The file op `kind` on `path`, writing nothing.
pub(crate) fn aimed_at(kind: OpKind, path: String) -> Op {
    Op::Fs(match kind {
        OpKind::FsWrite => FsOp::Write {
            path,
            content: Vec::new(),
        },
        OpKind::FsList => FsOp::List { path },
        OpKind::FsStat => FsOp::Stat { path },
        OpKind::FsRemove => FsOp::Remove { path },
        OpKind::FsMkdir => FsOp::Mkdir { path },
        _ => FsOp::Read { path },
    })
}
