//! The tool capability's WIT adapter (the wasm door's side of it): `sbx:agent/tools.call` runs one
//! [`Op::Tool`] through the run's gate; `granted` lists the tools a call
//! can reach (allowed and registered).

use super::super::HostState;
use super::answer;
use super::sbx::agent::tools::Host;
use super::sbx::agent::types::Error;
use crate::capability::{Op, Output};

impl Host for HostState {
    fn call(&mut self, name: String, input: String) -> wasmtime::Result<Result<String, Error>> {
        let r = self.gate_mut().decide(Op::tool(name, input));
        answer(r, |out| match out {
            Output::ToolOutput { output } => Some(output),
            _ => None,
        })
    }

    fn granted(&mut self) -> wasmtime::Result<Vec<String>> {
        // Exactly what a call can reach: allowed and registered.
        Ok(self.gate_mut().reachable_tools())
    }
}
