//! Reading what a run gave back, and asserting a denial: one helper per
//! need, shared by every test module.

use sbx_wasm::{Output, SandboxResult, Violation};

/// Bytes as text (lossy): a guest's stdout or stderr, a file read back.
pub fn utf8(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Everything a command printed: stdout, then stderr.
pub fn said(o: &std::process::Output) -> String {
    format!("{}{}", utf8(&o.stdout), utf8(&o.stderr))
}

/// The text an allowed op returned: file content, a response body or a
/// tool's output.
pub fn result_text(r: &SandboxResult) -> String {
    match &r.output {
        Some(Output::Data { content }) => String::from_utf8(content.0.clone()).unwrap(),
        Some(Output::Response { body, .. }) => String::from_utf8(body.0.clone()).unwrap(),
        Some(Output::ToolOutput { output }) => output.clone(),
        other => panic!("no text output: {other:?} / {r:?}"),
    }
}

/// `r` is a refusal with violation `v`: not ok, hard exactly when `v` is a
/// budget, no output, and the canary of the test tree nowhere in it.
pub fn assert_denied(r: &SandboxResult, v: Violation) {
    assert!(!r.ok, "expected {v}, got allowed: {r:?}");
    assert_eq!(r.violation(), Some(v), "{r:?}");
    assert_eq!(r.hard(), v.is_hard(), "{r:?}");
    assert!(r.output.is_none(), "a denial carries no output: {r:?}");
    let shown = serde_json::to_string(r).unwrap();
    assert!(!shown.contains(crate::CANARY), "canary leaked: {shown}");
}
