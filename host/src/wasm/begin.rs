//! Everything of a run before its guest exists, shared by a command's run
//! (`run.rs`) and a service's request (`serve.rs`): the grant checked
//! against what the host protects, the private `/tmp`, the output meter
//! and captures, the WASI context and the gate, as the run's state.

use super::limits::MemoryLimiter;
use super::options::RunOptions;
use super::output::Sink;
use super::{HostState, LoadError, WasmHost, setup};
use crate::CancelHandle;
use crate::budget::{OutputMeter, TickClock};
use crate::gate::Sandbox;
use std::sync::Arc;
use std::sync::Mutex;
use std::time::Duration;
use wasmtime::Engine;
use wasmtime::component::ResourceTable;

impl WasmHost {
    /// Everything of a run before its guest exists: the grant checked
    /// against what the host protects, the private `/tmp`, the output
    /// meter and captures, the WASI context and the gate, as the run's
    /// state.
    pub(super) fn begin(
        &self,
        prepared_by: &Engine,
        what: &str,
        opts: RunOptions,
    ) -> Result<Begun, LoadError> {
        let wasi03 = |w: &Result<super::engine::Wasi03, String>| {
            w.as_ref()
                .is_ok_and(|w| Engine::same(prepared_by, &w.engine))
        };
        if !Engine::same(prepared_by, &self.shared.engine)
            && !self.shared.wasi03.get().is_some_and(wasi03)
        {
            return Err(setup(format!(
                "this {what} was prepared by another WasmHost; prepare it on this one"
            )));
        }
        // Before anything of the run exists: a grant that reaches what the
        // host runs natively (its cache, a runner) is no grant to run.
        self.protected
            .check(&opts.caps)
            .map_err(|e| LoadError::Setup(crate::Error::Caps(e)))?;
        let budget = *opts.caps.budget();
        let mut opts = opts;
        // Held to the end of the run: removed with it.
        let _tmp = super::run_inputs::private_tmp(&mut opts)?;
        let header = super::run_inputs::record_header(&mut opts)?;
        let deterministic = opts.deterministic.is_some();
        let meter = Arc::new(OutputMeter::new(budget.max_output_bytes));
        let sent = Arc::new(OutputMeter::new(budget.max_sent_bytes));
        let capture = Capture::new(&mut opts);
        let secrets = crate::net::RunSecrets::bind(opts.caps.secrets(), opts.deterministic);
        let flow = Arc::new(crate::flow::FlowState::new(
            opts.caps.flow().clone(),
            std::mem::take(&mut opts.labels),
        ));
        let (wasi, closed, tcp) = self.wasi_context(&opts, [&meter, &sent], &secrets, &flow)?;
        let RunOptions {
            caps,
            mut services,
            confine,
            cancel,
            events,
            tape,
            ..
        } = opts;
        if deterministic && services.as_ref().is_none_or(|s| !s.has_clock()) {
            let tick = Arc::new(TickClock::new(Duration::from_millis(1)));
            services = Some(services.unwrap_or_default().clock(tick));
        }
        let mut gate = Sandbox::builder(caps)
            .secrets(secrets)
            .output_meter(meter.clone())
            .sent_meter(sent)
            .guest_flow(flow);
        if let Some(s) = services {
            gate = gate.services(s);
        }
        if let Some(c) = &cancel {
            gate = gate.cancel(c.clone());
        }
        if let Some(e) = events {
            gate = gate.events(e);
        }
        if let Some(t) = tape {
            gate = gate.tape(crate::replay::Tape::from_spec(t));
        }
        let gate = gate.build()?;
        let preopens = self.unlent()?;
        let state = HostState {
            wasi,
            table: ResourceTable::new(),
            gate,
            limiter: MemoryLimiter::new(budget.max_memory_bytes),
            preopens,
            fs_paths: std::collections::HashMap::new(),
            open_files: super::held::Held::files(),
            deterministic,
            script_error: None,
            exit_code: None,
            http: Default::default(),
            tcp,
        };
        Ok(Begun {
            state,
            budget,
            deterministic,
            meter,
            capture,
            closed,
            header,
            confine,
            cancel,
            _tmp,
        })
    }
}

/// A run's state and what surrounds it, before its guest exists
/// ([`WasmHost::begin`]).
pub(super) struct Begun {
    pub(super) state: HostState,
    pub(super) budget: crate::Budget,
    pub(super) deterministic: bool,
    pub(super) meter: Arc<OutputMeter>,
    pub(super) capture: Capture,
    pub(super) closed: super::wasi_context::Closed,
    pub(super) header: Option<Box<crate::replay::Header>>,
    pub(super) confine: Option<Box<(crate::confine::Policy, bool)>>,
    pub(super) cancel: Option<CancelHandle>,
    /// Held to the end of the run: removed with it.
    pub(super) _tmp: super::run_inputs::PrivateTmp,
}

/// The buffers that hold stdout and stderr a run captures (the default):
/// bounded by the output meter, which every byte passes first.
pub(super) struct Capture {
    stdout: Option<Arc<Mutex<Vec<u8>>>>,
    stderr: Option<Arc<Mutex<Vec<u8>>>>,
}

impl Capture {
    /// A buffer for each stream `opts` does not send elsewhere, set as its
    /// sink.
    pub(super) fn new(opts: &mut RunOptions) -> Self {
        let buffer = |sink: &mut Option<Sink>| {
            if sink.is_some() {
                return None;
            }
            let buf = Arc::new(Mutex::new(Vec::new()));
            *sink = Some(buf.clone());
            Some(buf)
        };
        Capture {
            stdout: buffer(&mut opts.stdout),
            stderr: buffer(&mut opts.stderr),
        }
    }

    /// What was captured (empty for a stream sent elsewhere).
    pub(super) fn take(self) -> (Vec<u8>, Vec<u8>) {
        let take = |b: Option<Arc<Mutex<Vec<u8>>>>| {
            b.map(|b| std::mem::take(&mut *b.lock().unwrap_or_else(|p| p.into_inner())))
                .unwrap_or_default()
        };
        (take(self.stdout), take(self.stderr))
    }
}
