//! The tool capability's WIT adapter: `sbx:agent/tools.call` runs one
//! [`Op::Tool`] through the run's gate; `granted` lists the allow-list.

use crate::op::{Op, Output};
use crate::wasm::HostState;
use crate::wasm::imports::answer;
use crate::wasm::imports::sbx::agent::tools::Host;
use crate::wasm::imports::sbx::agent::types::Error;

impl Host for HostState {
    fn call(&mut self, name: String, input: String) -> wasmtime::Result<Result<String, Error>> {
        let r = self.gate_mut().run(Op::tool(name, input));
        answer(r, |out| match out {
            Output::ToolOutput { output } => Some(output),
            _ => None,
        })
    }

    fn granted(&mut self) -> wasmtime::Result<Vec<String>> {
        Ok(self.gate_mut().caps().tools().iter().cloned().collect())
    }
}
