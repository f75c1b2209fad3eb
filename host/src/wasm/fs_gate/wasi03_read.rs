//! WASI 0.3's file reads, which arrive as streams: fingerprinted for the
//! flow rules' evidence (`[flow] evidence = true`) as the guest takes
//! them, when the file's mount is labelled, by passing wasmtime-wasi's
//! read stream through the relay (`wasm/relay.rs`). Nothing is relayed
//! when the grant asks for no evidence. The read's `done` is
//! wasmtime-wasi's own: its stream ends as soon as the relay's reader is
//! gone, so it never waits on a guest that stopped reading.

use crate::wasm::HostState;
use crate::wasm::relay::{Print, Through, relay};
use wasmtime::AsContextMut;
use wasmtime::component::{Access, LinkerInstance, Resource};
use wasmtime_wasi::filesystem::{Descriptor, WasiFilesystem, WasiFilesystemView};
use wasmtime_wasi::p3::bindings::filesystem::types::HostDescriptorWithStore;

/// Shadow `read-via-stream` in `t`, 0.3's filesystem types.
pub(super) fn add(t: &mut LinkerInstance<'_, HostState>) -> wasmtime::Result<()> {
    t.func_wrap(
        "[method]descriptor.read-via-stream",
        |mut store, (fd, offset): (Resource<Descriptor>, u64)| {
            let state = store.data_mut();
            let print = state.evidence_label(fd.rep()).map(|label| Print {
                flow: state.gate.flow_state(),
                label,
            });
            let (inner, done) = {
                let access = Access::<HostState, WasiFilesystem>::new(
                    store.as_context_mut(),
                    <HostState as WasiFilesystemView>::filesystem,
                );
                <WasiFilesystem as HostDescriptorWithStore<HostState>>::read_via_stream(
                    access, fd, offset,
                )?
            };
            let Some(print) = print else {
                return Ok(((inner, done),));
            };
            let through = Through {
                print: Some(print),
                ..Through::default()
            };
            Ok(((relay(&mut store, inner, through)?.0, done),))
        },
    )
}
