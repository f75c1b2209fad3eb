//! A run's event as the JSON a client is sent: in progress notifications
//! (`runs.rs`) and, for stderr and denials, in log messages
//! (`logging.rs`).

use sbx_wasm::OpKind;
use sbx_wasm::events::Event;
use serde_json::{Value, json};

/// Largest text one message carries; longer chunks are split.
const CHUNK: usize = 16 * 1024;

/// An event as progress messages: `{"stdout": text}`, `{"stderr": text}`
/// (split every 16 KiB), or `{"denied": {op, target, violation, hard}}`
/// (`{"interrupted": ...}` for an op cut short once it had begun).
/// Allowed decisions are not streamed.
pub(crate) fn messages(event: &Event) -> Vec<Value> {
    let chunks = |key: &str, bytes: &[u8]| -> Vec<Value> {
        let text = String::from_utf8_lossy(bytes);
        let mut out = Vec::new();
        let mut rest: &str = &text;
        while !rest.is_empty() {
            let mut end = rest.len().min(CHUNK);
            while !rest.is_char_boundary(end) {
                end -= 1;
            }
            out.push(json!({ key: &rest[..end] }));
            rest = &rest[end..];
        }
        out
    };
    match event {
        Event::Stdout(b) => chunks("stdout", b),
        Event::Stderr(b) => chunks("stderr", b),
        // What may take a while is shown in flight: a fetch, a tool call.
        Event::Started { seq, op, target }
            if matches!(op.kind(), Some(OpKind::NetFetch | OpKind::ToolCall)) =>
        {
            vec![json!({ "started": { "seq": seq, "op": op, "target": target } })]
        }
        // `denied`, or `interrupted` (begun, then cut short).
        Event::Decision(d) if d.decision != sbx_wasm::Decision::Allowed => vec![json!({
            d.decision.as_str(): {
                "op": d.op,
                "target": d.target,
                "violation": d.violation,
                "hard": d.hard,
                "detail": d.detail,
            }
        })],
        _ => Vec::new(),
    }
}
