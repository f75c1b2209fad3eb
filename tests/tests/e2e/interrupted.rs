//! "Denied" means "not performed": an allowed fetch or tool call that a
//! cancel (or the wall) cuts short once it has begun is recorded as
//! `interrupted`, with how far it got, beside the op refused before it
//! began, which stays `denied`. A counting server and a flag the tool sets
//! show which effects happened.

use sbx_wasm::Services;
use sbx_wasm::tools::ToolRegistry;
use sbx_wasm::{CancelHandle, Capabilities, Op, Sandbox};
use sbx_wasm_tests::LoopbackServer;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

fn cancel_after(cancel: &CancelHandle, ms: u64) -> std::thread::JoinHandle<()> {
    let cancel = cancel.clone();
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(ms));
        cancel.cancel();
    })
}

#[test]
fn a_tool_cancelled_mid_call_is_interrupted_and_one_refused_before_is_denied() {
    let done = Arc::new(AtomicBool::new(false));
    let flag = done.clone();
    let mut tools = ToolRegistry::new();
    tools.register("slow", move |_: &str| {
        std::thread::sleep(Duration::from_millis(800));
        flag.store(true, Ordering::SeqCst);
        Ok::<_, sbx_wasm::tools::ToolError>("done".to_string())
    });
    let caps = Capabilities::builder().allow_tool("slow").build().unwrap();
    let cancel = CancelHandle::new();
    let mut sandbox = Sandbox::builder(caps)
        .services(Services::new().tools(tools))
        .cancel(cancel.clone())
        .build()
        .unwrap();
    let t = cancel_after(&cancel, 100);
    let first = sandbox.run(Op::tool("slow", ""));
    t.join().unwrap();
    assert_eq!(first.denial.unwrap().violation.as_str(), "cancelled");
    // The call went on and finished: the record must not say "denied".
    std::thread::sleep(Duration::from_millis(1200));
    assert!(done.load(Ordering::SeqCst), "the tool ran to completion");
    done.store(false, Ordering::SeqCst);
    // The neighbour: after the cancel, the next call is refused before it
    // starts, and the tool never runs.
    let second = sandbox.run(Op::tool("slow", ""));
    assert!(second.denial.is_some());
    std::thread::sleep(Duration::from_millis(1000));
    assert!(!done.load(Ordering::SeqCst), "the refused call did not run");
    let audit = sandbox.audit();
    assert_eq!(audit[0].decision, "interrupted");
    let detail = audit[0].detail.clone().unwrap_or_default();
    assert!(detail.contains("may have done its work"), "{detail}");
    assert_eq!(audit[1].decision, "denied");
}

#[test]
fn a_fetch_cancelled_while_the_server_holds_it_is_interrupted() {
    let server = LoopbackServer::start();
    let caps = Capabilities::builder()
        .allow_egress(server.origin())
        .build()
        .unwrap();
    let cancel = CancelHandle::new();
    let mut sandbox = Sandbox::builder(caps)
        .cancel(cancel.clone())
        .build()
        .unwrap();
    let t = cancel_after(&cancel, 200);
    let stalled = sandbox.run(Op::fetch(format!("{}/stall", server.origin())));
    t.join().unwrap();
    assert!(stalled.denial.is_some());
    // The request reached the server.
    assert_eq!(server.connections(), 1);
    let after = sandbox.run(Op::fetch(format!("{}/status", server.origin())));
    assert!(after.denial.is_some());
    // The refused one opened no connection.
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(server.connections(), 1);
    let audit = sandbox.audit();
    assert_eq!(audit[0].decision, "interrupted", "{:?}", audit[0]);
    assert!(
        audit[0]
            .detail
            .as_deref()
            .unwrap_or("")
            .contains("may have reached the server"),
        "{:?}",
        audit[0]
    );
    assert_eq!(audit[1].decision, "denied");
    // The report lists both as halting denials of the run.
    assert_eq!(
        sandbox.report().violation.map(|v| v.as_str()),
        Some("cancelled")
    );
}
