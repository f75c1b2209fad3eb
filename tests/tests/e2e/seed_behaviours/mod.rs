//! The 26 behaviours of the seed lab's `test_lab.py`, on real folders and a
//! real loopback HTTP server. Each denial has its allowed neighbour, and each
//! "no side effect" claim is a before/after snapshot of the host tree.

mod budgets;
mod capabilities;

use sbx_wasm::Services;
use sbx_wasm::fs::{canonical, has_traversal};
use sbx_wasm::tools::{ToolError, ToolRegistry};
use sbx_wasm::{Capabilities, Op, Sandbox, SandboxedAgent, Status, TickClock, Violation};
use sbx_wasm_tests::{DATA, LoopbackServer, World, assert_denied, result_text};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

fn summarize_tools(calls: Arc<AtomicUsize>) -> ToolRegistry {
    let mut tools = ToolRegistry::new();
    let c = calls.clone();
    tools.register("summarize", move |input: &str| {
        c.fetch_add(1, Ordering::SeqCst);
        Ok::<_, ToolError>(format!("summary of {} bytes", input.len()))
    });
    let c = calls;
    tools.register("shell", move |_: &str| {
        c.fetch_add(1, Ordering::SeqCst);
        Ok::<_, ToolError>("pwned".into())
    });
    tools
}

fn sandbox(world: &World, caps: Capabilities) -> Sandbox {
    let _ = world;
    Sandbox::builder(caps)
        .services(
            Services::new()
                .tools(summarize_tools(Arc::new(AtomicUsize::new(0))))
                .clock(Arc::new(TickClock::new(Duration::from_millis(1)))),
        )
        .build()
        .unwrap()
}

/// The seed's world with its default grant.
fn seed() -> (World, Sandbox) {
    let w = World::new();
    let sb = sandbox(&w, w.caps_builder().build().unwrap());
    (w, sb)
}
