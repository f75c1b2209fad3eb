//! A catalog tool's stdout as MCP content blocks (`output = "content"`).
//!
//! The guest writes the JSON, so the door checks it before a client sees
//! it: a list (or `{"content": [...]}`) of at most [`MAX_BLOCKS`] blocks of
//! the kinds `text`, `image`, `audio` and `resource` (embedded), image and
//! audio data valid base64 under an `image/` or `audio/` type, an embedded
//! resource's blob valid base64. `_meta` and annotations are dropped (they
//! are the protocol's and the server's to set, not a guest's), and so is
//! `resource_link` (the door links the files a run wrote itself, so a link
//! is never one a guest made up). The size is the run's: stdout is under
//! its output budget.

use base64::Engine;
use rmcp::model::{ContentBlock, ResourceContents};
use serde_json::Value;

/// The most blocks one answer carries.
const MAX_BLOCKS: usize = 64;

fn base64_ok(data: &str) -> bool {
    base64::engine::general_purpose::STANDARD
        .decode(data.as_bytes())
        .is_ok()
}

/// `stdout` as content blocks, or why it is not.
pub(crate) fn blocks(stdout: &[u8]) -> Result<Vec<ContentBlock>, String> {
    let value: Value = serde_json::from_slice(stdout).map_err(|e| {
        format!("the tool's output is not JSON, which its output = \"content\" asks for ({e})")
    })?;
    let list = match value {
        Value::Array(list) => list,
        Value::Object(mut o) => match o.remove("content") {
            Some(Value::Array(list)) => list,
            _ => return Err("the tool's output is an object without a `content` list".into()),
        },
        _ => return Err("the tool's output is not a list of content blocks".into()),
    };
    if list.len() > MAX_BLOCKS {
        return Err(format!(
            "the tool's output has {} content blocks; at most {MAX_BLOCKS} are taken",
            list.len()
        ));
    }
    (list.into_iter().enumerate())
        .map(|(i, v)| block(v).map_err(|why| format!("content block {i}: {why}")))
        .collect()
}

fn block(value: Value) -> Result<ContentBlock, String> {
    let kind = (value.get("type").and_then(Value::as_str).unwrap_or("")).to_string();
    if !["text", "image", "audio", "resource"].contains(&kind.as_str()) {
        return Err(format!(
            "the type {} is not one a tool's output may carry (text, image, audio, resource)",
            sbx_wasm::bound::quote(&kind)
        ));
    }
    let block: ContentBlock =
        serde_json::from_value(value).map_err(|e| format!("not a {kind} block ({e})"))?;
    Ok(match block {
        ContentBlock::Text(mut t) => {
            (t.meta, t.annotations) = (None, None);
            ContentBlock::Text(t)
        }
        ContentBlock::Image(mut m) => {
            if !m.mime_type.starts_with("image/") || !base64_ok(&m.data) {
                return Err("an image needs an image/ mimeType and base64 data".into());
            }
            (m.meta, m.annotations) = (None, None);
            ContentBlock::Image(m)
        }
        ContentBlock::Audio(mut a) => {
            if !a.mime_type.starts_with("audio/") || !base64_ok(&a.data) {
                return Err("audio needs an audio/ mimeType and base64 data".into());
            }
            (a.meta, a.annotations) = (None, None);
            ContentBlock::Audio(a)
        }
        ContentBlock::Resource(mut r) => {
            r.resource = match r.resource {
                ResourceContents::TextResourceContents {
                    uri,
                    mime_type,
                    text,
                    ..
                } => ResourceContents::TextResourceContents {
                    uri,
                    mime_type,
                    text,
                    meta: None,
                },
                ResourceContents::BlobResourceContents {
                    uri,
                    mime_type,
                    blob,
                    ..
                } => {
                    if !base64_ok(&blob) {
                        return Err("an embedded resource's blob is not base64".into());
                    }
                    ResourceContents::BlobResourceContents {
                        uri,
                        mime_type,
                        blob,
                        meta: None,
                    }
                }
                _ => return Err("an embedded resource is text or a blob".into()),
            };
            (r.meta, r.annotations) = (None, None);
            ContentBlock::Resource(r)
        }
        ContentBlock::ResourceLink(_) => return Err("a resource link is the door's to make".into()),
        _ => return Err(format!("a {kind} block is not one a tool answers with")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn of(v: Value) -> Result<Vec<ContentBlock>, String> {
        blocks(v.to_string().as_bytes())
    }

    #[test]
    fn the_four_kinds_are_taken_and_their_meta_dropped() {
        let got = of(json!({"content": [
            {"type": "text", "text": "hi", "_meta": {"x": 1}, "annotations": {"priority": 1.0}},
            {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
            {"type": "audio", "data": "UklGRg==", "mimeType": "audio/wav"},
            {"type": "resource", "resource": {"uri": "test://r", "mimeType": "text/plain", "text": "t"}},
        ]}))
        .unwrap();
        assert_eq!(got.len(), 4);
        let text = serde_json::to_value(&got[0]).unwrap();
        assert_eq!(text, json!({"type": "text", "text": "hi"}));
    }

    #[test]
    fn what_a_guest_may_not_send_is_refused_with_where() {
        let cases = [
            (json!("text"), "not a list"),
            (json!({"x": 1}), "without a `content` list"),
            (
                json!([{"type": "resource_link", "uri": "file:///etc/passwd", "name": "x"}]),
                "block 0",
            ),
            (
                json!([{"type": "image", "data": "not base64!", "mimeType": "image/png"}]),
                "base64",
            ),
            (
                json!([{"type": "image", "data": "AAAA", "mimeType": "text/html"}]),
                "image/",
            ),
            (
                json!([{"type": "text", "text": "a"}, {"type": "text"}]),
                "block 1",
            ),
            (
                json!([{"type": "resource", "resource": {"uri": "u", "blob": "%%"}}]),
                "blob",
            ),
        ];
        for (value, why) in cases {
            let err = of(value.clone()).unwrap_err();
            assert!(err.contains(why), "{value}: {err}");
        }
        let many: Vec<Value> = (0..=MAX_BLOCKS)
            .map(|_| json!({"type": "text", "text": "x"}))
            .collect();
        assert!(of(Value::Array(many)).unwrap_err().contains("at most"));
        assert!(blocks(b"{not json").unwrap_err().contains("not JSON"));
    }
}
