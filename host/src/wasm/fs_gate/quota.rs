//! File output streams charged to the write quota.

use super::Res;
use crate::budget::WriteMeter;
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
}

impl QuotaStream {
    fn charge(&self, n: usize) -> Result<(), StreamError> {
        if self.meter.try_bytes(n as u64) {
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
    r: Result<Resource<DynOutputStream>, FsError>,
) -> Res<Resource<DynOutputStream>> {
    let stream = match r {
        Ok(s) => s,
        Err(e) => return Ok((Err(e.downcast()?),)),
    };
    let inner = state.table.delete(stream)?;
    let meter = state.gate.write_meter();
    let wrapped: DynOutputStream = Box::new(QuotaStream { inner, meter });
    Ok((Ok(state.table.push(wrapped)?),))
}
