//! Guest stdout and stderr, streamed to a host sink and counted against
//! `max_output_bytes`. The write that would pass the budget writes what fits,
//! then traps: a hard halt the report names, instead of the guest's `println!`
//! panicking on a full pipe with nothing said about why.

use super::HardLimit;
use crate::budget::OutputMeter;
use crate::violation::Violation;
use std::io::Write;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi::p2::{OutputStream, Pollable, StreamError, StreamResult};

/// Where guest output goes.
pub type Sink = Arc<Mutex<dyn Write + Send>>;

/// A metered stdout or stderr.
#[derive(Clone)]
pub(crate) struct MeteredOutput {
    meter: Arc<OutputMeter>,
    sink: Sink,
}

impl MeteredOutput {
    pub(crate) fn new(meter: Arc<OutputMeter>, sink: Sink) -> Self {
        MeteredOutput { meter, sink }
    }

    /// Write what the budget allows; `false` when some bytes did not fit.
    fn put(&self, bytes: &[u8]) -> bool {
        let n = bytes.len() as u64;
        let (take, fits) = if self.meter.try_charge(n) {
            (bytes.len(), true)
        } else {
            let left = self.meter.left();
            self.meter.try_charge(left);
            self.meter.mark_breached();
            (
                usize::try_from(left).unwrap_or(usize::MAX).min(bytes.len()),
                false,
            )
        };
        if let Ok(mut sink) = self.sink.lock() {
            let _ = sink.write_all(&bytes[..take]);
            let _ = sink.flush();
        }
        fits
    }
}

impl IsTerminal for MeteredOutput {
    fn is_terminal(&self) -> bool {
        false
    }
}

#[wasmtime_wasi::async_trait]
impl Pollable for MeteredOutput {
    async fn ready(&mut self) {}
}

impl OutputStream for MeteredOutput {
    fn write(&mut self, bytes: bytes::Bytes) -> StreamResult<()> {
        if self.put(&bytes) {
            Ok(())
        } else {
            Err(StreamError::Trap(wasmtime::Error::new(HardLimit(
                Violation::MaxOutputBytes,
            ))))
        }
    }

    fn flush(&mut self) -> StreamResult<()> {
        Ok(())
    }

    fn check_write(&mut self) -> StreamResult<usize> {
        Ok(64 * 1024)
    }
}

impl tokio::io::AsyncWrite for MeteredOutput {
    fn poll_write(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        if self.put(buf) {
            Poll::Ready(Ok(buf.len()))
        } else {
            Poll::Ready(Err(std::io::Error::other("max_output_bytes")))
        }
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

impl StdoutStream for MeteredOutput {
    fn p2_stream(&self) -> Box<dyn OutputStream> {
        Box::new(self.clone())
    }

    fn async_stream(&self) -> Box<dyn tokio::io::AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }
}
