//! The tool capability's WIT adapter (the wasm door's side of it): `sbx:agent/tools.call` runs one
//! [`Op::Tool`] through the run's gate; `granted` lists the tools a call
//! can reach (allowed and registered), `definitions` the same with what a
//! model is told of each.

use super::super::HostState;
use super::answer;
use super::sbx::agent::tools::{Definition, Host};
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

    fn definitions(&mut self) -> wasmtime::Result<Vec<Definition>> {
        let definitions = self.gate_mut().reachable_tool_definitions();
        Ok(definitions
            .into_iter()
            .map(|d| Definition {
                name: d.name,
                description: d.description,
                input_schema: d.input_schema.to_string(),
            })
            .collect())
    }
}
