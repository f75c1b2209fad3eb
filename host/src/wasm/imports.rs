//! The `sbx:agent` imports: `net.fetch` and `tools.call` go through the same
//! gate as plan ops. Soft denials return as values; a hard limit traps.

use super::{HardLimit, HostState};
use crate::net::FetchRequest;
use crate::op::{Op, Output, SandboxResult};

wasmtime::component::bindgen!({
    path: "../wit",
    world: "agent",
    imports: { default: trappable },
});

use sbx::agent::net::{Request, Response};
use sbx::agent::types::{Denial, Error};

/// Turn a gate result into the WIT result, or a trap for a hard limit.
fn answer<T>(
    r: SandboxResult,
    ok: impl FnOnce(Output) -> Option<T>,
) -> wasmtime::Result<Result<T, Error>> {
    if let Some(d) = &r.denial {
        if d.hard {
            return Err(wasmtime::Error::new(HardLimit(d.violation)));
        }
        return Ok(Err(Error::Denied(Denial {
            violation: d.violation.as_str().to_string(),
            message: d.message.clone(),
        })));
    }
    if let Some(e) = r.error {
        return Ok(Err(Error::Failed(e.message)));
    }
    match r.output.and_then(ok) {
        Some(v) => Ok(Ok(v)),
        None => Ok(Err(Error::Failed("unexpected result kind".into()))),
    }
}

impl sbx::agent::types::Host for HostState {}

impl sbx::agent::net::Host for HostState {
    fn fetch(&mut self, req: Request) -> wasmtime::Result<Result<Response, Error>> {
        let r = self.gate.run(Op::Net(FetchRequest {
            method: req.method,
            url: req.url,
            headers: req.headers,
            body: req.body,
        }));
        answer(r, |out| match out {
            Output::Response {
                status,
                headers,
                body,
            } => Some(Response {
                status,
                headers,
                body: body.0,
            }),
            _ => None,
        })
    }
}

impl sbx::agent::tools::Host for HostState {
    fn call(&mut self, name: String, input: String) -> wasmtime::Result<Result<String, Error>> {
        let r = self.gate.run(Op::tool(name, input));
        answer(r, |out| match out {
            Output::ToolOutput { output } => Some(output),
            _ => None,
        })
    }

    fn granted(&mut self) -> wasmtime::Result<Vec<String>> {
        Ok(self.gate.caps().tools().iter().cloned().collect())
    }
}
