//! The network capability's WIT adapter (the wasm door's side of it): `sbx:agent/net.fetch` runs one
//! [`Op::Net`] through the run's gate.

use super::super::HostState;
use super::answer;
use super::sbx::agent::net::{Host, Request, Response};
use super::sbx::agent::types::Error;
use crate::capability::{Op, Output};
use crate::net::FetchRequest;

impl Host for HostState {
    fn fetch(&mut self, req: Request) -> wasmtime::Result<Result<Response, Error>> {
        let r = self.gate_mut().decide(Op::Net(FetchRequest {
            method: req.method,
            url: req.url,
            headers: req.headers,
            body: req.body,
            redirects: Default::default(),
            timeouts: Default::default(),
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
