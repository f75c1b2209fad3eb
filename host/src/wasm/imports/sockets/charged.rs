//! What a connection receives, charged to `max_output_bytes` as the guest
//! reads it: `finish-connect` wraps each connection's input stream in this.

use crate::budget::OutputMeter;
use crate::violation::Violation;
use crate::wasm::HardLimit;
use bytes::Bytes;
use std::sync::Arc;
use wasmtime_wasi::p2::{DynInputStream, InputStream, Pollable, StreamError, StreamResult};

/// What a connection receives, charged to `max_output_bytes` as it is read.
pub(super) struct Charged {
    pub(super) inner: DynInputStream,
    pub(super) meter: Arc<OutputMeter>,
}

impl Charged {
    fn charge(&self, n: usize) -> StreamResult<()> {
        if self.meter.try_charge(n as u64) {
            return Ok(());
        }
        self.meter.mark_breached();
        Err(StreamError::Trap(wasmtime::Error::new(HardLimit(
            Violation::MaxOutputBytes,
        ))))
    }
}

#[wasmtime_wasi::async_trait]
impl Pollable for Charged {
    async fn ready(&mut self) {
        self.inner.ready().await;
    }
}

#[wasmtime_wasi::async_trait]
impl InputStream for Charged {
    fn read(&mut self, size: usize) -> StreamResult<Bytes> {
        let bytes = self.inner.read(size)?;
        self.charge(bytes.len())?;
        Ok(bytes)
    }

    fn skip(&mut self, n: usize) -> StreamResult<usize> {
        let skipped = self.inner.skip(n)?;
        self.charge(skipped)?;
        Ok(skipped)
    }

    async fn cancel(&mut self) {
        self.inner.cancel().await;
    }
}
