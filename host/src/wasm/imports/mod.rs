//! The `sbx:agent` world (`host/wit/`, one file per interface): its bindings,
//! and the one mapping of a gate result to a guest answer. Soft denials
//! return as values; a hard limit traps. Each interface's host side has
//! its own file here (`net.rs`, `tools.rs`, `kv.rs`, `fs.rs`): the capability's WIT adapter;
//! `http/` and `sockets/` are the network capability's doors for standard
//! components (wasi:http, wasi:sockets);
//! `outcome.rs` takes a script runner's report of how the script failed.

use super::{HardLimit, HostState};
use crate::gate::Decided;
use crate::op::{Failure, Output};

mod fs;
mod http;
mod kv;
mod net;
mod outcome;
mod sockets;
mod tools;

pub(crate) use http::{
    HttpDoor, add_03_to_linker as add_http_03_to_linker, add_to_linker as add_http_to_linker,
    incoming_03,
};
pub use http::{MAX_BODIES as MAX_HTTP_BODIES, MAX_BODY_BYTES_HELD as MAX_HTTP_BODY_BYTES_HELD};
pub(crate) use sockets::{
    SocketDoor, add_03_to_linker as add_sockets_03_to_linker,
    add_to_linker as add_sockets_to_linker,
};

wasmtime::component::bindgen!({
    path: "wit",
    world: "agent",
    imports: { default: trappable },
});

use sbx::agent::types::{Denial, Error};

/// Turn a gate decision into the WIT result, or a trap for a hard limit.
/// Everything is moved, not copied: the record kept its own strings.
pub(crate) fn answer<T>(
    r: Decided,
    ok: impl FnOnce(Output) -> Option<T>,
) -> wasmtime::Result<Result<T, Error>> {
    match r.outcome {
        Err(Failure::Denied(d)) if d.hard => Err(wasmtime::Error::new(HardLimit(d.violation))),
        Err(Failure::Denied(d)) => Ok(Err(Error::Denied(Denial {
            violation: d.violation.as_str().to_string(),
            message: d.message,
        }))),
        Err(Failure::Error(e)) => Ok(Err(Error::Failed(e.message))),
        Ok(out) => match ok(out) {
            Some(v) => Ok(Ok(v)),
            None => Ok(Err(Error::Failed("unexpected result kind".into()))),
        },
    }
}

impl sbx::agent::types::Host for HostState {}
