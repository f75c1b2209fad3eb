//! An async agent loop that runs model-proposed code under a grant.
//!
//! A real loop would ask a model for code, compile it to a component and
//! feed the report back to the model. Here the "proposals" are component
//! files given on the command line, run one after another under one caps
//! file, on one engine (each compiled once). Each run streams its events
//! (output chunks, gate decisions) as they happen, returns its output
//! captured, and is cancelled if it runs past 2 s of the loop's patience:
//!
//! ```sh
//! cargo build --release --target wasm32-wasip2 --manifest-path guest-examples/Cargo.toml
//! cargo run -p sbx-wasm --example agent_loop -- examples/seed/caps.toml \
//!     guest-examples/target/wasm32-wasip2/release/benign.wasm \
//!     guest-examples/target/wasm32-wasip2/release/spin.wasm
//! ```

use sbx_wasm::Services;
use sbx_wasm::events::{Event, EventSink};
use sbx_wasm::tools::{ToolError, ToolRegistry};
use sbx_wasm::wasm::{RunOptions, WasmHost};
use sbx_wasm::{CancelHandle, Capabilities};
use std::time::Duration;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let caps_path = args
        .next()
        .ok_or("usage: agent_loop CAPS.toml AGENT.wasm...")?;
    let caps = Capabilities::from_file(&caps_path)?;
    let host = WasmHost::new().map_err(|e| format!("{e:#}"))?;

    for proposal in args {
        // The model's code: compile it (a bad proposal is an error to feed
        // back, not a crash of the loop).
        let agent = match host.load(proposal.as_ref()).and_then(|c| host.prepare(&c)) {
            Ok(a) => a,
            Err(e) => {
                println!("{proposal}: rejected: {e}");
                continue;
            }
        };
        // Tools are plain Rust closures; the grant decides which may run.
        let mut tools = ToolRegistry::new();
        tools.register("word_count", |input: &str| {
            Ok::<_, ToolError>(input.split_whitespace().count().to_string())
        });
        // Events, for a UI: printed here as they arrive, on a thread of
        // their own (the channel is bounded; a slow reader drops events,
        // never stalls the guest).
        let (tx, rx) = std::sync::mpsc::sync_channel(1024);
        let printer = std::thread::spawn(move || {
            for event in rx {
                match event {
                    Event::Decision(d) => {
                        eprintln!("  [gate] {} {} {}", d.op, d.target, d.decision)
                    }
                    Event::Stdout(b) => eprint!("  [out] {}", String::from_utf8_lossy(&b)),
                    _ => {}
                }
            }
        });
        let cancel = CancelHandle::new();
        let opts = RunOptions::new(caps.clone())
            .services(Services::new().tools(tools))
            .events(EventSink::new(tx))
            .cancel(cancel.clone());
        // The loop's patience: 2 s, then the run is cancelled; it still
        // returns, with status `cancelled` and its report and audit so far.
        let stop = cancel.clone();
        let patience = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_secs(2)).await;
            stop.cancel();
        });
        let run = host.run_prepared_async(&agent, opts).await?;
        patience.abort();
        let _ = printer.join();
        // What goes back to the model: the guest's output and the report.
        println!("{proposal}: {}", serde_json::to_string(&run.report)?);
        println!("{}", String::from_utf8_lossy(&run.stdout));
    }
    Ok(())
}
