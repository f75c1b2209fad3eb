//! The guest's WASI context for one run: what the guest sees of the host
//! through WASI, built from the run's options and nothing ambient.

use super::clocks::{FixedWallClock, TickMonotonic, seed_bytes};
use super::imports::SocketDoor;
use super::options::RunOptions;
use super::output::{MeteredOutput, Sink};
use super::{LoadError, WasmHost, setup};
use crate::budget::OutputMeter;
use crate::events::Event;
use crate::fs::Access;
use std::sync::Arc;
use wasmtime_wasi::p2::pipe::MemoryInputPipe;
use wasmtime_wasi::{FsPerms, WasiCtx, WasiCtxBuilder};

/// Each output stream's name and whether its reader went away.
pub(super) type Closed = [(
    &'static str,
    Arc<std::sync::atomic::AtomicBool>,
    MeteredOutput,
); 2];

impl WasmHost {
    /// The guest's WASI: the empty root and the mounts preopened, the caps'
    /// env, args, stdin, metered stdout and stderr, and under
    /// `deterministic` virtual clocks and seeded randomness; TCP only when
    /// the grant holds a tcp rule, every lookup and connection through the
    /// socket door it returns (charging what sockets receive to `meter`,
    /// what they send to `sent`). Nothing inherited but what `opts` asks
    /// for.
    pub(super) fn wasi_context(
        &self,
        opts: &RunOptions,
        [meter, sent]: [&Arc<OutputMeter>; 2],
        secrets: &crate::net::RunSecrets,
        flow: &Arc<crate::flow::FlowState>,
    ) -> Result<(WasiCtx, Closed, SocketDoor), LoadError> {
        let mut wasi = WasiCtxBuilder::new();
        // The grant's mounts first: a program that takes "the directory it
        // was given" takes the first preopen.
        for m in opts.caps.mounts() {
            let perms = match m.access {
                Access::ReadOnly => FsPerms::ReadOnly,
                Access::ReadWrite => FsPerms::ReadWrite,
            };
            wasi.preopened_dir(&m.host, m.guest.as_str(), perms)
                .map_err(|e| setup(format!("cannot preopen {}: {e:#}", m.host.display())))?;
        }
        // Then the empty root, last, unless the grant mounts a folder at `/`
        // (which then plays its part): it makes absolute paths outside
        // every mount reach the host, where they are refused and recorded.
        let root_mounted = opts.caps.mounts().iter().any(|m| m.guest.as_str() == "/");
        if !root_mounted
            && wasi
                .preopened_dir(self.empty_root()?, "/", FsPerms::ReadOnly)
                .is_err()
        {
            // Gone behind our back (no /proc, and a tmp cleaner): make a
            // new one, once.
            self.drop_empty_root();
            wasi.preopened_dir(self.empty_root()?, "/", FsPerms::ReadOnly)
                .map_err(|e| setup(format!("cannot preopen the empty root: {e:#}")))?;
        }
        let env: Vec<(&String, &String)> = opts.caps.env().iter().collect();
        wasi.envs(&env);
        // A secret's env var holds this run's placeholder, never the value.
        wasi.envs(&secrets.placeholders());
        let mut argv = vec![opts.program_name.clone()];
        argv.extend(opts.args.iter().cloned());
        wasi.args(&argv);
        if opts.inherit_stdin {
            // Streamed as the guest reads it, never read ahead: a guest that
            // never reads is not held by an open pipe, and one blocked
            // reading ends at max_wall like any blocked call.
            wasi.inherit_stdin();
        } else {
            wasi.stdin(MemoryInputPipe::new(opts.stdin.as_ref().clone()));
        }
        let sink = |s: &Option<Sink>| s.clone().expect("Capture::new set every sink");
        let (stdout, stderr) = (
            MeteredOutput::new(meter.clone(), sink(&opts.stdout))
                .with_events(opts.events.clone(), Event::Stdout)
                .with_flow(flow, crate::OpName::Stdout),
            MeteredOutput::new(meter.clone(), sink(&opts.stderr))
                .with_events(opts.events.clone(), Event::Stderr)
                .with_flow(flow, crate::OpName::Stderr),
        );
        let closed = [
            ("stdout", stdout.closed_flag(), stdout.clone()),
            ("stderr", stderr.closed_flag(), stderr.clone()),
        ];
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
