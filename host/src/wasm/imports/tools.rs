//! The tool capability's WIT adapter (the wasm door's side of it): `sbx:agent/tools.call` runs one
//! [`Op::Tool`] through the run's gate; `granted` lists the allow-list.

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
        Ok(self.gate_mut().caps().tools().iter().cloned().collect())
    }
}
