//! What a socket's bytes are charged to: what a connection receives to
//! `max_output_bytes` as the guest reads it, what it sends to
//! `max_sent_bytes` as the guest writes it, before it is sent. 0.2's
//! streams are wrapped here (`finish-connect` and `accept` wrap each
//! connection's two); 0.3's pass the relay (`wasm/relay.rs`), which charges
//! with the same [`Charge`].

use crate::wasm::relay::Charge;
use bytes::Bytes;
use wasmtime_wasi::p2::{
    DynInputStream, DynOutputStream, InputStream, OutputStream, Pollable, StreamError, StreamResult,
};

/// [`Charge::take`], as a stream's error.
fn take(charge: &Charge, n: usize) -> StreamResult<()> {
    charge.take(n).map_err(StreamError::Trap)
}

/// What a connection receives, charged as it is read.
pub(super) struct Charged {
    pub(super) inner: DynInputStream,
    pub(super) charge: Charge,
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
        take(&self.charge, bytes.len())?;
        Ok(bytes)
    }

    fn skip(&mut self, n: usize) -> StreamResult<usize> {
        let skipped = self.inner.skip(n)?;
        take(&self.charge, skipped)?;
        Ok(skipped)
    }

    async fn cancel(&mut self) {
        self.inner.cancel().await;
    }
}

/// What a connection sends, charged before it is handed to the socket
/// (the write that would pass the budget sends nothing). Every way of
/// writing (`write`, `write-zeroes`, `blocking-write-and-flush`, `splice`
/// into it) ends in [`OutputStream::write`].
pub(super) struct ChargedOut {
    pub(super) inner: DynOutputStream,
    pub(super) charge: Charge,
}

#[wasmtime_wasi::async_trait]
impl Pollable for ChargedOut {
    async fn ready(&mut self) {
        self.inner.ready().await;
    }
}

#[wasmtime_wasi::async_trait]
impl OutputStream for ChargedOut {
    fn write(&mut self, bytes: Bytes) -> StreamResult<()> {
        take(&self.charge, bytes.len())?;
        self.inner.write(bytes)
    }

    fn flush(&mut self) -> StreamResult<()> {
        self.inner.flush()
    }

    fn check_write(&mut self) -> StreamResult<usize> {
        self.inner.check_write()
    }

    async fn cancel(&mut self) {
        self.inner.cancel().await;
    }
}
