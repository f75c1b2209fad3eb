//! The bench's grant and run options, shared by the rows that run the
//! sandbox in-process (P3, P4, P5, P6): one full grant, a tool registry
//! with a `noop` tool, and services made once, as an embedder holds them.

use super::Res;
use sbx_wasm::tools::{ToolError, ToolRegistry};
use sbx_wasm::wasm::{PreparedAgent, RunOptions, WasmHost};
use sbx_wasm::{Capabilities, Services};
use std::path::Path;

/// A full grant over a scratch folder: a read mount, a write mount, an
/// egress rule, two tools, generous budgets.
pub(crate) fn full_grant(dir: &Path) -> Res<Capabilities> {
    std::fs::create_dir_all(dir.join("data"))?;
    std::fs::create_dir_all(dir.join("out"))?;
    Ok(Capabilities::builder()
        .read_mount(dir.join("data"), "/work")
        .write_mount(dir.join("out"), "/work/out")
        .allow_egress("https://api.example.com")
        .allow_tool("noop")
        .allow_tool("other")
        .max_ops(1_000_000)
        .build()?)
}

fn tools() -> ToolRegistry {
    let mut t = ToolRegistry::new();
    t.register("noop", |_: &str| Ok::<_, ToolError>(String::new()));
    t
}

/// A run's options; the services made once and cloned, as an embedder does.
pub(crate) fn opts(caps: &Capabilities, args: &[&str]) -> RunOptions {
    static SERVICES: std::sync::OnceLock<Services> = std::sync::OnceLock::new();
    let services = SERVICES
        .get_or_init(|| Services::new().tools(tools()))
        .clone();
    RunOptions::new(caps.clone())
        .args(args.iter().copied())
        .services(services)
}

pub(crate) fn run_ours(host: &WasmHost, agent: &PreparedAgent, o: RunOptions) -> Res<()> {
    let run = host.run_prepared(agent, o)?;
    if run.report.exit_code != Some(0) {
        return Err(format!("guest ended {:?} {:?}", run.report, run.trap).into());
    }
    Ok(())
}
