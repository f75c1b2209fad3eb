//! The network capability's WIT adapter: `sbx:agent/net.fetch` runs one
//! [`Op::Net`] through the run's gate.

use super::FetchRequest;
use crate::op::{Op, Output};
use crate::wasm::HostState;
use crate::wasm::imports::answer;
use crate::wasm::imports::sbx::agent::net::{Host, Request, Response};
use crate::wasm::imports::sbx::agent::types::Error;

impl Host for HostState {
    fn fetch(&mut self, req: Request) -> wasmtime::Result<Result<Response, Error>> {
        let r = self.gate_mut().run(Op::Net(FetchRequest {
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
