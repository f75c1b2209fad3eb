//! A run's cancel switch and its event stream, as Python objects.

use pyo3::prelude::*;
use pyo3::types::PyBytes;
use sbx_wasm::CancelHandle;
use sbx_wasm::events::{Event, EventSink};
use std::sync::Mutex;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::Duration;

/// Ends a run from another thread or task: guest code at its next epoch
/// tick, a guest waiting in WASI at once.
#[pyclass(frozen, module = "sbx_wasm._native")]
#[derive(Default)]
pub(crate) struct NativeCancel {
    pub(crate) handle: CancelHandle,
}

#[pymethods]
impl NativeCancel {
    #[new]
    fn new() -> Self {
        Self::default()
    }

    fn cancel(&self) {
        self.handle.cancel();
    }

    fn cancelled(&self) -> bool {
        self.handle.is_cancelled()
    }
}

/// The events of one run, read as they happen. The sink is bounded: a
/// reader that falls behind loses events (the report counts them), the
/// guest never waits for it.
#[pyclass(frozen, module = "sbx_wasm._native")]
pub(crate) struct NativeEvents {
    rx: Mutex<Receiver<Event>>,
    sink: Mutex<Option<EventSink>>,
}

#[pymethods]
impl NativeEvents {
    /// A stream holding at most `capacity` unread events; `lines` sends
    /// output as whole lines.
    #[new]
    #[pyo3(signature = (capacity=1024, lines=true))]
    fn new(capacity: usize, lines: bool) -> Self {
        let (tx, rx) = std::sync::mpsc::sync_channel(capacity.clamp(1, 1 << 20));
        let sink = EventSink::new(tx);
        let sink = if lines { sink.lines() } else { sink };
        NativeEvents {
            rx: Mutex::new(rx),
            sink: Mutex::new(Some(sink)),
        }
    }

    /// The next event as `(kind, payload)`: `("stdout" | "stderr", bytes)`
    /// or `("decision" | "started", json)`; `("idle", None)` when nothing
    /// came within `timeout` seconds; `None` once the run has ended and
    /// every event was read.
    #[pyo3(signature = (timeout=0.25))]
    fn next<'py>(
        &self,
        py: Python<'py>,
        timeout: f64,
    ) -> PyResult<Option<(&'static str, Py<PyAny>)>> {
        let wait = Duration::from_secs_f64(timeout.clamp(0.0, 3600.0));
        let got = py.detach(|| {
            let rx = self.rx.lock().unwrap_or_else(|p| p.into_inner());
            rx.recv_timeout(wait)
        });
        let event = match got {
            Ok(e) => e,
            Err(RecvTimeoutError::Timeout) => return Ok(Some(("idle", py.None()))),
            Err(RecvTimeoutError::Disconnected) => return Ok(None),
        };
        let json = |v: serde_json::Value| -> PyResult<Py<PyAny>> {
            Ok(pyo3::types::PyString::new(py, &v.to_string())
                .into_any()
                .unbind())
        };
        Ok(Some(match event {
            Event::Stdout(b) => ("stdout", PyBytes::new(py, &b).into_any().unbind()),
            Event::Stderr(b) => ("stderr", PyBytes::new(py, &b).into_any().unbind()),
            Event::Decision(d) => (
                "decision",
                json(serde_json::to_value(d).unwrap_or_default())?,
            ),
            Event::Started { seq, op, target } => (
                "started",
                json(serde_json::json!({"seq": seq, "op": op, "target": target}))?,
            ),
            _ => ("other", py.None()),
        }))
    }
}

impl NativeEvents {
    /// The sink for the one run this stream is for (a second run gets
    /// none: its events would interleave with the first's).
    pub(crate) fn take_sink(&self) -> Option<EventSink> {
        self.sink.lock().unwrap_or_else(|p| p.into_inner()).take()
    }
}
