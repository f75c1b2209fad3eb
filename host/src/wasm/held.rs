//! What a run holds open on the host at once: files and sockets.
//!
//! Each file a guest opens in a mount and each TCP socket it makes is a
//! descriptor of the host process, shared by every run the process hosts
//! and by the host itself. `max_ops` bounds how many a run opens over its
//! life, not how many it keeps: a guest that opens and never closes would
//! spend the process's descriptors up to its limit (and starve the other
//! runs of an MCP server or of `serve`). So each kind has a bound on how
//! many a run holds at once; past it, opening one more fails as the OS
//! fails it at its own limit, softly, and closing one makes room.

use super::HostState;
use std::collections::HashSet;
use wasmtime::component::{LinkerInstance, Resource, ResourceType};

/// Files and folders a run may hold open at once (besides its mounts'
/// own preopened folders). Past it, an `open-at` the gate allowed fails
/// with `io`, the code wasmtime-wasi gives for the OS's own "too many open
/// files" (the gate decides first, so a denial is on record whatever the
/// run holds).
pub const MAX_OPEN_FILES: usize = 512;

/// TCP sockets a run may hold at once. Past it, `create-tcp-socket` fails
/// with `new-socket-limit`, the code WASI gives for the OS's own limit.
pub const MAX_OPEN_SOCKETS: usize = 64;

/// The resources of one kind a run holds, by resource rep.
#[derive(Debug)]
pub(crate) struct Held {
    reps: HashSet<u32>,
    max: usize,
}

impl Held {
    pub(crate) fn new(max: usize) -> Self {
        Held {
            reps: HashSet::new(),
            max,
        }
    }

    pub(crate) fn files() -> Self {
        Held::new(MAX_OPEN_FILES)
    }

    pub(crate) fn sockets() -> Self {
        Held::new(MAX_OPEN_SOCKETS)
    }

    /// Whether one more would pass the bound.
    pub(crate) fn full(&self) -> bool {
        self.reps.len() >= self.max
    }

    pub(crate) fn hold(&mut self, rep: u32) {
        self.reps.insert(rep);
    }

    /// `rep` is gone (a rep the run did not hold, such as a preopen, is
    /// ignored: only what `hold` counted is released); whether it held it.
    pub(crate) fn release(&mut self, rep: u32) -> bool {
        self.reps.remove(&rep)
    }
}

/// Define host resource `name` of `inst` again, its drop what
/// wasmtime-wasi's is (the entry leaves the table, which closes what it
/// holds) followed by `forget`, which frees what the run kept of it.
pub(crate) fn on_drop<R: Send + 'static>(
    inst: &mut LinkerInstance<'_, HostState>,
    name: &str,
    forget: fn(&mut HostState, u32),
) -> wasmtime::Result<()> {
    inst.resource(name, ResourceType::host::<R>(), move |mut store, rep| {
        let state = store.data_mut();
        state.table.delete(Resource::<R>::new_own(rep))?;
        forget(state, rep);
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bound_counts_what_is_held_and_frees_on_release() {
        let mut h = Held::new(2);
        h.hold(7);
        h.release(3); // never held: no room made
        assert!(!h.full());
        h.hold(9);
        assert!(h.full());
        h.hold(9); // the same rep again is one held
        h.release(7);
        assert!(!h.full());
    }
}
