//! An agent loop that runs model-proposed code under a grant.
//!
//! A real loop would ask a model for code, compile it to a component and
//! feed the report back to the model. Here the "proposals" are component
//! files given on the command line, run one after another under one caps
//! file, on one engine (compiled once, reused for every run):
//!
//! ```sh
//! cargo build --release --target wasm32-wasip2 --manifest-path guest-examples/Cargo.toml
//! cargo run -p sbx-wasm --example agent_loop -- examples/seed/caps.toml \
//!     guest-examples/target/wasm32-wasip2/release/benign.wasm \
//!     guest-examples/target/wasm32-wasip2/release/spin.wasm
//! ```

use sbx_wasm::Capabilities;
use sbx_wasm::tools::{ToolError, ToolRegistry};
use sbx_wasm::wasm::{RunOptions, WasmHost};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let caps_path = args
        .next()
        .ok_or("usage: agent_loop CAPS.toml AGENT.wasm...")?;
    let caps = Capabilities::from_file(&caps_path)?;
    let host = WasmHost::new().map_err(|e| format!("{e:#}"))?;

    for proposal in args {
        // The model's code: compile it (a bad proposal is an error to feed
        // back, not a crash of the loop).
        let component = match host.load(proposal.as_ref()) {
            Ok(c) => c,
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
        let run = host.run(&component, RunOptions::new(caps.clone()).tools(tools))?;
        // What goes back to the model: the guest's output (captured) and
        // the report.
        let text = String::from_utf8_lossy(&run.stdout).into_owned();
        println!("{proposal}: {}", serde_json::to_string(&run.report)?);
        println!("{text}");
    }
    Ok(())
}
