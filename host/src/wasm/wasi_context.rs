//! The guest's WASI context for one run: what the guest sees of the host
//! through WASI, built from the run's options and nothing ambient.

use super::clocks::{FixedWallClock, TickMonotonic, seed_bytes};
use super::imports::SocketDoor;
use super::options::RunOptions;
use super::output::{MeteredOutput, Sink, Stream};
use super::{LoadError, WasmHost};
use crate::budget::OutputMeter;
use crate::events::Event;
use std::sync::Arc;
use wasmtime_wasi::p2::pipe::MemoryInputPipe;
use wasmtime_wasi::{WasiCtx, WasiCtxBuilder};

/// Each output stream's name, and the stream (which says whether its
/// reader went away).
pub(super) type Closed = [(&'static str, MeteredOutput); 2];

impl WasmHost {
    /// The guest's WASI: the caps' env, args, stdin, metered stdout and
    /// stderr, and under `deterministic` virtual clocks and seeded
    /// randomness; TCP only when the grant holds a tcp rule, every lookup
    /// and connection through the socket door it returns (charging what
    /// sockets receive to `meter`, what they send to `sent`). Nothing
    /// inherited but what `opts` asks for.
    pub(super) fn wasi_context(
        &self,
        opts: &RunOptions,
        [meter, sent]: [&Arc<OutputMeter>; 2],
        secrets: &crate::net::RunSecrets,
        flow: &Arc<crate::flow::FlowState>,
    ) -> Result<(WasiCtx, Closed, SocketDoor), LoadError> {
        // No preopens: the run's `get-directories` lends the folders the
        // grant opened (`WasmHost::lend`), not ones opened here by path.
        let mut wasi = WasiCtxBuilder::new();
        let env: Vec<(&String, &String)> = opts.caps.env().iter().collect();
        wasi.envs(&env);
        // A secret's env var holds this run's placeholder, never the value.
        wasi.envs(&secrets.placeholders());
        // Copied once, into the context (not into a list of our own first).
        wasi.arg(&opts.program_name).args(&opts.args);
        if opts.inherit_stdin {
            // Streamed as the guest reads it, never read ahead: a guest that
            // never reads is not held by an open pipe, and one blocked
            // reading ends at max_wall like any blocked call.
            wasi.inherit_stdin();
        } else if !opts.stdin.is_empty() {
            // Shared with the options, not copied. Empty: WASI's default,
            // a stream at its end, as an empty pipe would be.
            wasi.stdin(MemoryInputPipe::new(opts.stdin.clone()));
        }
        let sink = |s: &Option<Sink>| s.clone().expect("Capture::new set every sink");
        let (stdout, stderr) = (
            Stream::new(meter.clone(), sink(&opts.stdout))
                .with_events(opts.events.clone(), Event::Stdout)
                .with_flow(flow, crate::OpName::Stdout)
                .shared(),
            Stream::new(meter.clone(), sink(&opts.stderr))
                .with_events(opts.events.clone(), Event::Stderr)
                .with_flow(flow, crate::OpName::Stderr)
                .shared(),
        );
        let closed = [("stdout", stdout.clone()), ("stderr", stderr.clone())];
        wasi.stdout(stdout);
        wasi.stderr(stderr);
        if let Some(seed) = opts.deterministic {
            wasi.wall_clock(FixedWallClock);
            wasi.monotonic_clock(TickMonotonic::default());
            wasi.secure_random(wasmtime_wasi::Deterministic::new(seed_bytes(seed)));
            wasi.insecure_random(wasmtime_wasi::Deterministic::new(seed_bytes(seed ^ 0x5eed)));
            wasi.insecure_random_seed(u128::from(seed));
        }
        // wasmtime-wasi's defaults are no TCP, no UDP, no lookups (the
        // door replaces those) and an address check that refuses all.
        let egress = opts.caps.egress();
        let tcp = if egress.grants_sockets() || egress.grants_udp() {
            let (door, check) = SocketDoor::granted([meter.clone(), sent.clone()], egress);
            wasi.allow_tcp(egress.grants_sockets())
                .allow_udp(egress.grants_udp())
                .socket_addr_check(check);
            door
        } else {
            SocketDoor::default()
        };
        Ok((wasi.build(), closed, tcp))
    }
}
