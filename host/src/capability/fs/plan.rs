//! The file capability's plan form:
//! `{"op": "fs_write", "path": "/work/out/r.txt", "content": "text"}`.

use super::FsOp;
use crate::capability::Op;
use base64::Engine as _;
use serde::Deserialize;
use serde_json::Value;

/// Op names of the file capability in plans.
pub(crate) const PLAN_OPS: &[&str] = &[
    "fs_read",
    "fs_write",
    "fs_list",
    "fs_stat",
    "fs_remove",
    "fs_mkdir",
];

#[derive(Deserialize)]
#[serde(tag = "op", deny_unknown_fields)]
enum PlanOp {
    #[serde(rename = "fs_read")]
    Read { path: String },
    #[serde(rename = "fs_write")]
    Write {
        path: String,
        content: Option<String>,
        content_base64: Option<String>,
    },
    #[serde(rename = "fs_list")]
    List { path: String },
    #[serde(rename = "fs_stat")]
    Stat { path: String },
    #[serde(rename = "fs_remove")]
    Remove { path: String },
    #[serde(rename = "fs_mkdir")]
    Mkdir { path: String },
}

/// The file op a plan object asks for.
pub(crate) fn from_plan(_kind: &str, v: Value) -> Result<Op, String> {
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
pub(crate) fn aimed_at(kind: &str, path: String) -> Op {
    Op::Fs(match kind {
        "fs_write" => FsOp::Write {
            path,
            content: Vec::new(),
        },
        "fs_list" => FsOp::List { path },
        "fs_stat" => FsOp::Stat { path },
        "fs_remove" => FsOp::Remove { path },
        "fs_mkdir" => FsOp::Mkdir { path },
        _ => FsOp::Read { path },
    })
}
