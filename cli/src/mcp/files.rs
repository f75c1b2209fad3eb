//! The files a run wrote, in its answer: a `resource_link` to each
//! (`sbx://...`, read with `resources/read`), and each image among them
//! (PNG, JPEG, GIF, WebP, at most 1 MiB) inline as `image` content, so a
//! chart a script saved reaches the model as a picture. The images are
//! read back through the gate, as one more op set of the same call (on
//! record as `TOOL files`); a file the run wrote and then removed is not
//! linked.

use super::door::Door;
use super::ops;
use super::reply::Ids;
use super::session::Session;
use super::uris::uri;
use rmcp::model::{CallToolResult, ContentBlock, Resource};
use sbx_wasm::{AuditEvent, Decision, OpKind, Output};
use serde_json::{Value, json};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// The most files linked in one answer.
const MAX_LINKED: usize = 32;
/// The most images sent inline, and the largest.
const MAX_IMAGES: usize = 4;
const MAX_IMAGE_BYTES: usize = 1 << 20;

/// The guest paths `audit` wrote and did not remove after, in the order
/// first written.
pub(crate) fn written(audit: &[AuditEvent]) -> Vec<String> {
    let mut paths: Vec<String> = Vec::new();
    for d in audit.iter().filter(|d| d.decision == Decision::Allowed) {
        match d.op.kind() {
            Some(OpKind::FsWrite) if !paths.contains(&d.target) => paths.push(d.target.clone()),
            Some(OpKind::FsRemove) => paths.retain(|p| p != &d.target),
            _ => {}
        }
    }
    paths
}

fn image_type(path: &str) -> Option<&'static str> {
    let ext = path.rsplit_once('.')?.1.to_ascii_lowercase();
    Some(match ext.as_str() {
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        _ => return None,
    })
}

/// Add the links and images of the files `paths` to `answer` (and their
/// URIs to its structured content as `files`).
pub(crate) async fn attach(
    answer: &mut CallToolResult,
    paths: &[String],
    at: (&Arc<Door>, &Session, &Ids<'_>, &str),
    cancel: CancellationToken,
) {
    let (door, session, ids, tool) = at;
    let linked = &paths[..paths.len().min(MAX_LINKED)];
    if linked.is_empty() {
        return;
    }
    let uris: Vec<String> = linked.iter().map(|p| uri(p)).collect();
    if let Some(Value::Object(s)) = &mut answer.structured_content {
        s.insert("files".into(), json!(uris));
    }
    for (path, u) in linked.iter().zip(&uris) {
        let name = path.rsplit('/').next().unwrap_or(path);
        let mut link = Resource::new(u.clone(), name.to_string());
        if let Some(t) = image_type(path) {
            link = link.with_mime_type(t);
        }
        answer.content.push(ContentBlock::resource_link(link));
    }
    let images: Vec<&String> = (linked.iter())
        .filter(|p| image_type(p).is_some())
        .take(MAX_IMAGES)
        .collect();
    if images.is_empty() {
        return;
    }
    let reads = (images.iter())
        .map(|p| json!({ "op": "fs_read", "path": p }))
        .collect();
    let tag = format!("{tool} files");
    let Ok((results, _)) = ops::perform(door, session, ids, &tag, reads, (cancel, None)).await
    else {
        return;
    };
    for (path, result) in images.iter().zip(&results) {
        if let Some(Output::Data { content }) = &result.output
            && content.0.len() <= MAX_IMAGE_BYTES
            && let Some(t) = image_type(path)
        {
            let data =
                base64::Engine::encode(&base64::engine::general_purpose::STANDARD, &content.0);
            answer.content.push(ContentBlock::image(data, t));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(op: &'static str, target: &str, decision: Decision) -> AuditEvent {
        let mut e: AuditEvent = serde_json::from_value(json!({
            "seq": 1, "op": op, "target": target, "decision": "allowed",
            "violation": null, "hard": false, "rule": null, "bytes": 0,
            "detail": null, "elapsed_ms": 0
        }))
        .unwrap();
        e.decision = decision;
        e
    }

    #[test]
    fn written_keeps_what_stayed_in_first_order() {
        let audit = [
            event("fs_write", "/o/a.png", Decision::Allowed),
            event("fs_write", "/o/b.txt", Decision::Allowed),
            event("fs_write", "/o/a.png", Decision::Allowed),
            event("fs_write", "/o/denied", Decision::Denied),
            event("fs_read", "/o/c", Decision::Allowed),
            event("fs_write", "/o/gone", Decision::Allowed),
            event("fs_remove", "/o/gone", Decision::Allowed),
        ];
        assert_eq!(written(&audit), ["/o/a.png", "/o/b.txt"]);
        assert_eq!(image_type("/o/A.PNG"), Some("image/png"));
        assert_eq!(image_type("/o/b.txt"), None);
    }
}
