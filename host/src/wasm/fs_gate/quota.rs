//! File output streams charged to the write quota.

use super::Res;
use crate::budget::WriteMeter;
use crate::flow::{FlowState, Sink};
use crate::violation::Violation;
use crate::wasm::{HardLimit, HostState};
use std::sync::Arc;
use wasmtime::component::Resource;
use wasmtime_wasi::p2::{DynOutputStream, FsError, OutputStream, Pollable, StreamError};

/// A file output stream (`write-via-stream`, `append-via-stream`) whose
/// bytes are charged to the write quota before they are written.
pub(super) struct QuotaStream {
    inner: DynOutputStream,
    meter: Arc<WriteMeter>,
    /// The run's mark and the mount written into, with the file's name,
    /// when the grant labels anything: a write the mark does not let reach
    /// the mount is refused (soft).
    flow: Option<(Arc<FlowState>, Sink, String)>,
    /// Where it started: the hole still to charge (with the first bytes
    /// written, then 0), or where no file can reach (every write fails as
    /// the OS's would, `invalid`, nothing charged).
    start: Start,
}

/// Where a metered stream starts.
pub(super) enum Start {
    /// At or past the file's end: the hole left, charged with the first
    /// bytes written (0 at the end, or for appends).
    Hole(u64),
    /// Past a signed 64-bit offset, where no file can be written.
    PastAnyFile,
}

impl QuotaStream {
    fn charge(&mut self, n: usize) -> Result<(), StreamError> {
        let hole = match self.start {
            Start::Hole(hole) => hole,
            Start::PastAnyFile => {
                let invalid = std::io::Error::from_raw_os_error(libc::EINVAL);
                return Err(StreamError::LastOperationFailed(wasmtime::Error::new(
                    invalid,
                )));
            }
        };
        if let Some((flow, sink, name)) = &self.flow
            && let Err(d) = flow.stream_write(sink, crate::OpKind::FsWrite.name(), name)
        {
            return Err(StreamError::LastOperationFailed(wasmtime::Error::msg(
                format!("flow_denied: {}", d.message),
            )));
        }
        let due = (n as u64).saturating_add(hole);
        if self.meter.try_bytes(due) {
            self.start = Start::Hole(0);
            Ok(())
        } else {
            Err(StreamError::Trap(wasmtime::Error::new(HardLimit(
                Violation::MaxWriteBytes,
            ))))
        }
    }
}

#[wasmtime_wasi::async_trait]
impl Pollable for QuotaStream {
    async fn ready(&mut self) {
        self.inner.ready().await
    }
}

#[wasmtime_wasi::async_trait]
impl OutputStream for QuotaStream {
    fn write(&mut self, bytes: bytes::Bytes) -> Result<(), StreamError> {
        self.charge(bytes.len())?;
        self.inner.write(bytes)
    }

    fn flush(&mut self) -> Result<(), StreamError> {
        self.inner.flush()
    }

    fn check_write(&mut self) -> Result<usize, StreamError> {
        self.inner.check_write()
    }

    fn write_zeroes(&mut self, nelem: usize) -> Result<(), StreamError> {
        self.charge(nelem)?;
        self.inner.write_zeroes(nelem)
    }

    async fn cancel(&mut self) {
        self.inner.cancel().await
    }
}

/// Swap the stream wasmtime-wasi made for one that charges the quota.
pub(super) fn metered(
    state: &mut HostState,
    fd: u32,
    r: Result<Resource<DynOutputStream>, FsError>,
    start: Start,
) -> Res<Resource<DynOutputStream>> {
    let stream = match r {
        Ok(s) => s,
        Err(e) => return Ok((Err(e.downcast()?),)),
    };
    let inner = state.table.delete(stream)?;
    let meter = state.gate.write_meter();
    let flow = state
        .flow_sink(fd)
        .map(|sink| (state.gate.flow_state(), sink, state.fd_name(fd)));
    let wrapped: DynOutputStream = Box::new(QuotaStream {
        inner,
        meter,
        flow,
        start,
    });
    Ok((Ok(state.table.push(wrapped)?),))
}
