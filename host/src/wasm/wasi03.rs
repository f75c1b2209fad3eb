//! WASI 0.3 commands (the `@0.3.0` interfaces and the component model's
//! async ABI): what a 0.3 guest is lent, and how its `run` is called.
//!
//! A 0.3 guest gets the interfaces that read the run's WASI context, so the
//! run's arguments, environment, metered stdout and stderr, stdin, clocks
//! (the injected and deterministic ones included) and randomness (seeded
//! under `--deterministic`) are the same as a 0.2 guest's. Its folders go
//! through the gate as 0.2's do (`fs_gate/wasi03.rs`: every path call
//! admitted, writes metered against the write quota).
//! Its wasi:http client and its TCP connections go through the egress
//! rules as 0.2's do (`imports/http/wasi03.rs`, `imports/sockets/wasi03.rs`).

use super::{HostState, LoadError};
use wasmtime::Store;
use wasmtime::component::Linker;
use wasmtime_wasi::p3::bindings::filesystem::{preopens, types};

/// The WASI 0.3 interfaces a guest may import, beside 0.2's in the same
/// linker (a component may import both: Rust's `wasm32-wasip2` standard
/// library speaks 0.2 while its own code speaks 0.3).
pub(super) fn add_to_linker(linker: &mut Linker<HostState>) -> wasmtime::Result<()> {
    wasmtime_wasi::p3::cli::add_to_linker(linker)?;
    wasmtime_wasi::p3::clocks::add_to_linker(linker)?;
    wasmtime_wasi::p3::random::add_to_linker(linker)?;
    // The descriptor type and its methods, then the path calls and the
    // preopens shadowed by the gate's (read-only folders).
    types::add_to_linker::<_, wasmtime_wasi::filesystem::WasiFilesystem>(
        linker,
        <HostState as wasmtime_wasi::filesystem::WasiFilesystemView>::filesystem,
    )?;
    preopens::add_to_linker::<_, wasmtime_wasi::filesystem::WasiFilesystem>(
        linker,
        <HostState as wasmtime_wasi::filesystem::WasiFilesystemView>::filesystem,
    )?;
    super::fs_gate::wasi03::add_to_linker(linker)?;
    super::imports::add_http_03_to_linker(linker)?;
    super::imports::add_sockets_03_to_linker(linker)
}

/// What a prepared command's `run` export is: 0.2's or 0.3's.
#[derive(Clone)]
pub(super) enum Entry {
    /// `wasi:cli/run@0.2.x`.
    P2(wasmtime_wasi::p2::bindings::CommandPre<HostState>),
    /// `wasi:cli/run@0.3.0`.
    P3 {
        pre: wasmtime_wasi::p3::bindings::CommandPre<HostState>,
    },
}

impl Entry {
    /// `pre` as a 0.3 command, else as a 0.2 one, else why it is neither.
    /// Only a component compiled on the 0.3 engine (`wasi03`) can export
    /// 0.3's `run` (an async export does not validate on the 0.2 one), so
    /// only there is it looked for; and there first: a component exporting
    /// both runs means its 0.3 one (Rust binaries for `wasm32-wasip2`
    /// export 0.2's `run` from the standard library's start-up whether or
    /// not their `main` is what runs).
    pub(super) fn new(
        pre: wasmtime::component::InstancePre<HostState>,
        wasi03: bool,
        name: &str,
    ) -> Result<Entry, LoadError> {
        if wasi03 && let Ok(p3) = wasmtime_wasi::p3::bindings::CommandPre::new(pre.clone()) {
            return Ok(Entry::P3 { pre: p3 });
        }
        wasmtime_wasi::p2::bindings::CommandPre::new(pre)
            .map(Entry::P2)
            .map_err(|e| LoadError::Rejected {
                path: name.to_string(),
                message: format!(
                    "not a WASI command (no wasi:cli/run export, of 0.2 or 0.3): {e:#}"
                ),
            })
    }

    /// The 0.2 command, for what only 0.2 commands have (warm instances).
    pub(super) fn p2(&self) -> Option<&wasmtime_wasi::p2::bindings::CommandPre<HostState>> {
        match self {
            Entry::P2(pre) => Some(pre),
            Entry::P3 { .. } => None,
        }
    }

    /// The component either command runs.
    pub(super) fn component(&self) -> &wasmtime::component::Component {
        match self {
            Entry::P2(pre) => pre.instance_pre().component(),
            Entry::P3 { pre } => pre.instance_pre().component(),
        }
    }
}

/// The handles a 0.3 guest may hold at once (streams, futures, pending
/// host calls, resources), against wasmtime's 100,000 for any store. Each
/// is host memory outside the guest's `max_memory`: an hour-long wait left
/// pending costs the host about a KiB (its timer), so 100,000 of them
/// grew one run by about 110 MiB (measured); 16,384 keep that near 20 MiB,
/// and a command holds a few dozen.
pub const MAX_WASI03_HANDLES: usize = 16_384;

/// Instantiate a 0.3 command in `store` and call its `run` inside the
/// store's event loop; `Ok(Err(()))` is the guest's failure status.
pub(super) async fn call(
    pre: &wasmtime_wasi::p3::bindings::CommandPre<HostState>,
    store: &mut Store<HostState>,
) -> wasmtime::Result<Result<(), ()>> {
    store.set_max_component_handles(MAX_WASI03_HANDLES);
    let command = pre.instantiate_async(&mut *store).await?;
    store
        .run_concurrent(async |a| command.wasi_cli_run().call_run(a).await)
        .await?
}
