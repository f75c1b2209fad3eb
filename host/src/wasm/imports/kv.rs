//! The key-value capability's WIT adapter (the wasm door's side of it):
//! each `sbx:agent/kv` call is one [`Op::Kv`] through the run's gate.

use super::super::HostState;
use super::answer;
use super::sbx::agent::kv::Host;
use super::sbx::agent::types::Error;
use crate::capability::kv::KvOp;
use crate::capability::{Op, Output};

impl Host for HostState {
    fn get(&mut self, key: String) -> wasmtime::Result<Result<Vec<u8>, Error>> {
        let r = self.gate_mut().decide(Op::Kv(KvOp::Get { key }));
        answer(r, |out| match out {
            Output::Data { content } => Some(content.0),
            _ => None,
        })
    }

    fn put(&mut self, key: String, value: Vec<u8>) -> wasmtime::Result<Result<(), Error>> {
        let r = self.gate_mut().decide(Op::Kv(KvOp::Put { key, value }));
        answer(r, |out| matches!(out, Output::Written { .. }).then_some(()))
    }

    fn delete(&mut self, key: String) -> wasmtime::Result<Result<(), Error>> {
        let r = self.gate_mut().decide(Op::Kv(KvOp::Delete { key }));
        answer(r, |out| matches!(out, Output::Removed).then_some(()))
    }

    fn list(&mut self, prefix: String) -> wasmtime::Result<Result<Vec<String>, Error>> {
        let r = self.gate_mut().decide(Op::Kv(KvOp::List { prefix }));
        answer(r, |out| match out {
            Output::Keys { keys } => Some(keys),
            _ => None,
        })
    }
}
