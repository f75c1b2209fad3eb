//! The tool capability alone: a tool runs only when the grant allows it
//! *and* it is registered; the permit carries the implementation the check
//! found, and the effect calls exactly that.

use super::{ToolError, ToolRegistry};
use crate::capability::tests::{Rig, denied};
use crate::capability::{Op, Output};
use crate::caps::Capabilities;
use crate::services::Services;
use crate::violation::Violation;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

fn rig(calls: &Arc<AtomicUsize>) -> Rig {
    let caps = Capabilities::builder()
        .allow_tool("upper")
        .allow_tool("unregistered")
        .build()
        .unwrap();
    let mut tools = ToolRegistry::new();
    for name in ["upper", "shell"] {
        let calls = calls.clone();
        tools.register(name, move |s: &str| {
            calls.fetch_add(1, Ordering::SeqCst);
            Ok::<_, ToolError>(s.to_uppercase())
        });
    }
    Rig::new(caps, Services::default().tools(tools))
}

#[test]
fn an_allowed_registered_tool_is_permitted_and_called_once() {
    let calls = Arc::new(AtomicUsize::new(0));
    let rig = rig(&calls);
    let op = Op::tool("upper", "abc");
    let permit = rig.check(&op).unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 0, "the check calls nothing");
    match rig.perform(&op, permit).unwrap() {
        Output::ToolOutput { output } => assert_eq!(output, "ABC"),
        other => panic!("{other:?}"),
    }
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

#[test]
fn a_tool_not_allowed_or_not_registered_is_denied_and_never_called() {
    let calls = Arc::new(AtomicUsize::new(0));
    let rig = rig(&calls);
    // Registered but not granted; granted but not registered; neither.
    for name in ["shell", "unregistered", "rm_rf"] {
        assert_eq!(
            denied(rig.check(&Op::tool(name, "x"))),
            Violation::ToolDenied,
            "{name}"
        );
    }
    assert_eq!(calls.load(Ordering::SeqCst), 0);
    assert!(rig.check(&Op::tool("upper", "x")).is_ok());
}

/// A command tool with a declared `input_schema` takes only input the
/// schema accepts: anything else is `invalid_request` at the check, and the
/// program never starts (it would leave a mark in its folder).
#[test]
fn a_command_tools_input_schema_is_enforced_before_it_runs() {
    let dir = tempfile::tempdir().unwrap();
    let schema = r#"{"type":"object","properties":{"text":{"type":"string","maxLength":20}},"required":["text"],"additionalProperties":false}"#;
    let tool = super::CommandTool {
        argv: vec!["sh".into(), "-c".into(), "touch ran; cat".into()],
        cwd: dir.path().to_path_buf(),
        input_schema: Some(schema.into()),
        ..Default::default()
    };
    let caps = Capabilities::builder().allow_tool("echo").build().unwrap();
    let mut tools = ToolRegistry::new();
    tools.register("echo", tool);
    let rig = Rig::new(caps, Services::default().tools(tools));
    let huge = format!(r#"{{"text":"{}"}}"#, "x".repeat(100_000));
    for bad in [
        "plain words",
        r#"{"text": 5}"#,
        r#"{}"#,
        r#"{"text":"a","extra":1}"#,
        huge.as_str(),
    ] {
        let denial = rig.check(&Op::tool("echo", bad)).unwrap_err();
        assert_eq!(denial.violation, Violation::InvalidRequest, "{bad:.40}");
        // The rule, never the value.
        assert!(denial.message.len() < 600, "{}", denial.message);
        assert!(!denial.message.contains("xxxxxxxxxx"), "{}", denial.message);
    }
    assert!(
        !dir.path().join("ran").exists(),
        "a refused input reached the tool"
    );
    // The allowed neighbour runs, with its input as it came.
    let good = r#"{"text":"hello"}"#;
    let op = Op::tool("echo", good);
    let permit = rig.check(&op).unwrap();
    match rig.perform(&op, permit).unwrap() {
        Output::ToolOutput { output } => assert_eq!(output, good),
        other => panic!("{other:?}"),
    }
    assert!(dir.path().join("ran").exists());
}

/// A schema that cannot check anything is the caps file's error, at load:
/// a bad pattern, or a `$ref` the host would have to fetch or read.
#[test]
fn an_input_schema_that_does_not_load_is_refused_with_the_caps_file() {
    for schema in [
        r#"{"type":"object","properties":{"a":{"type":"string","pattern":"("}}}"#,
        r#"{"type":"object","$ref":"https://example.com/schema.json"}"#,
        r#"{"type":"object","$ref":"file:///etc/passwd"}"#,
    ] {
        let toml = format!(
            "[tools]\nallow = [\"t\"]\n[tools.command.t]\nargv = [\"cat\"]\ninput_schema = '{schema}'\n"
        );
        let err = Capabilities::from_toml(&toml, std::path::Path::new("."), None).unwrap_err();
        assert!(err.to_string().contains("input_schema"), "{schema}: {err}");
    }
    let fine = "[tools]\nallow = [\"t\"]\n[tools.command.t]\nargv = [\"cat\"]\n\
                input_schema = '{\"type\":\"object\"}'\n";
    assert!(Capabilities::from_toml(fine, std::path::Path::new("."), None).is_ok());
}
