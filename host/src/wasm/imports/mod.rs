//! The `sbx:agent` world (`wit/`, one file per interface): its bindings,
//! and the one mapping of a gate result to a guest answer. Soft denials
//! return as values; a hard limit traps. Each interface's host side has
//! its own file here (`net.rs`, `tools.rs`): the capability's WIT adapter.

use super::{HardLimit, HostState};
use crate::op::{Output, SandboxResult};

mod net;
mod tools;

wasmtime::component::bindgen!({
    path: "../wit",
    world: "agent",
    imports: { default: trappable },
});

use sbx::agent::types::{Denial, Error};

/// Turn a gate result into the WIT result, or a trap for a hard limit.
pub(crate) fn answer<T>(
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
