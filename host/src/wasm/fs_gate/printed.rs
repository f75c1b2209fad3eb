//! File reads fingerprinted for the flow rules' evidence (`[flow] evidence
//! = true`): bytes a guest reads through WASI from a labelled mount are
//! fingerprinted as they pass, so a later send that carries them is noted
//! in its audit record. Nothing is wrapped when the grant asks for no
//! evidence.

use super::Res;
use crate::flow::FlowState;
use crate::wasm::HostState;
use std::sync::Arc;
use wasmtime::component::Resource;
use wasmtime_wasi::p2::{DynInputStream, FsError, InputStream, Pollable, StreamResult};

/// A file input stream whose bytes are fingerprinted under `label`.
struct PrintedStream {
    inner: DynInputStream,
    flow: Arc<FlowState>,
    label: String,
}

#[wasmtime_wasi::async_trait]
impl Pollable for PrintedStream {
    async fn ready(&mut self) {
        self.inner.ready().await
    }
}

#[wasmtime_wasi::async_trait]
impl InputStream for PrintedStream {
    fn read(&mut self, size: usize) -> StreamResult<bytes::Bytes> {
        let bytes = self.inner.read(size)?;
        self.flow.fingerprint(&self.label, &bytes);
        Ok(bytes)
    }

    async fn cancel(&mut self) {
        self.inner.cancel().await
    }
}

impl HostState {
    /// The label whose evidence a read through descriptor `fd` gathers:
    /// its mount's, when the grant asks for evidence.
    pub(super) fn evidence_label(&self, fd: u32) -> Option<String> {
        let via = &self.fs_paths.get(&fd)?.via;
        self.gate.evidence_label(via)
    }
}

/// Swap the stream wasmtime-wasi made for one that fingerprints what it
/// reads, when `label` says the file's mount is labelled.
pub(super) fn printed(
    state: &mut HostState,
    label: Option<String>,
    r: Result<Resource<DynInputStream>, FsError>,
) -> Res<Resource<DynInputStream>> {
    let stream = match r {
        Ok(s) => s,
        Err(e) => return Ok((Err(e.downcast()?),)),
    };
    let Some(label) = label else {
        return Ok((Ok(stream),));
    };
    let inner = state.table.delete(stream)?;
    let flow = state.gate.flow_state();
    let wrapped: DynInputStream = Box::new(PrintedStream { inner, flow, label });
    Ok((Ok(state.table.push(wrapped)?),))
}
