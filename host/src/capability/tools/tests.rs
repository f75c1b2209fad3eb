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
