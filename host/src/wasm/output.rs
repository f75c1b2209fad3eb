//! Guest stdout and stderr, streamed to a host sink and counted against
//! `max_output_bytes`. The write that would pass the budget writes what fits,
//! then traps: a hard halt the report names, instead of the guest's `println!`
//! panicking on a full pipe with nothing said about why. When the sink's
//! reader goes away (a closed pipe), the guest sees its stream closed, as it
//! would under any WASI host, instead of writing on into nothing until the
//! budget halts it.

use super::HardLimit;
use crate::budget::OutputMeter;
use crate::events::{Event, EventSink};
use crate::flow::{FlowState, Sink as FlowSink};
use crate::violation::Violation;
use std::io::Write;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi::p2::{OutputStream, Pollable, StreamError, StreamResult};

/// Where guest output goes.
pub type Sink = Arc<Mutex<dyn Write + Send>>;

/// Which event a chunk of this stream is (`Event::Stdout` or `Event::Stderr`).
pub(crate) type ChunkEvent = fn(Vec<u8>) -> Event;

/// A metered stdout or stderr: one allocation shared by its clones (the
/// WASI context's, the run's own, each stream the guest is handed), so a
/// clone or a drop is one reference count, not one per part.
#[derive(Clone)]
pub(crate) struct MeteredOutput(Arc<Stream>);

impl std::ops::Deref for MeteredOutput {
    type Target = Stream;
    fn deref(&self) -> &Stream {
        &self.0
    }
}

/// A stream's parts ([`MeteredOutput`]), set up before it is shared.
pub(crate) struct Stream {
    meter: Arc<OutputMeter>,
    sink: Sink,
    /// The sink refused a write: its reader is gone.
    closed: AtomicBool,
    /// Where each chunk is also announced, as which event, and the output
    /// held until its newline when the events go as whole lines (made only
    /// with the events: a run without a sink pays nothing for it).
    events: Option<(EventSink, ChunkEvent, Pending)>,
    /// The run's label mark, when the grant labels anything, and this
    /// stream's name: a write the mark does not let reach `stdout` is
    /// refused (soft: the guest sees a failed write).
    flow: Option<(Arc<FlowState>, crate::OpName)>,
}

/// Output held until its newline.
type Pending = Mutex<Vec<u8>>;

/// The most output held waiting for a newline.
const MAX_LINE: usize = 64 * 1024;

/// What became of one write.
enum Put {
    Written,
    /// Some bytes did not fit the budget (what fit was written).
    OverBudget,
    /// The sink is closed; nothing more goes out.
    Closed,
    /// The flow rules refused it (nothing was written): why.
    Refused(String),
}

impl Stream {
    /// A stream to `sink` charged to `meter`, to set up
    /// ([`Stream::with_events`], [`Stream::with_flow`]) and then share.
    pub(crate) fn new(meter: Arc<OutputMeter>, sink: Sink) -> Stream {
        Stream {
            meter,
            sink,
            closed: AtomicBool::new(false),
            events: None,
            flow: None,
        }
    }

    /// The stream, set up, as its clones share it.
    pub(crate) fn shared(self) -> MeteredOutput {
        MeteredOutput(Arc::new(self))
    }

    /// Send what output is still held for its newline (at the run's end).
    pub(crate) fn flush_events(&self) {
        let Some((events, kind, pending)) = &self.events else {
            return;
        };
        if let Ok(mut p) = pending.lock()
            && !p.is_empty()
        {
            events.send(kind(std::mem::take(&mut *p)));
        }
    }

    /// Announce `bytes` written: as they come, or as whole lines.
    fn announce(&self, bytes: &[u8]) {
        let Some((events, kind, pending)) = &self.events else {
            return;
        };
        if !events.wants_lines() {
            events.send(kind(bytes.to_vec()));
            return;
        }
        let Ok(mut p) = pending.lock() else {
            return;
        };
        p.extend_from_slice(bytes);
        while let Some(i) = p.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = p.drain(..=i).collect();
            events.send(kind(line));
        }
        if p.len() >= MAX_LINE {
            events.send(kind(std::mem::take(&mut *p)));
        }
    }

    /// Refuse writes that `flow`'s mark does not let reach `stdout`
    /// (`name` is the stream's, for the record).
    pub(crate) fn with_flow(mut self, flow: &Arc<FlowState>, name: crate::OpName) -> Self {
        if flow.tracks() {
            self.flow = Some((flow.clone(), name));
        }
        self
    }

    /// Also announce every chunk written to `events`, as `kind`.
    pub(crate) fn with_events(mut self, events: Option<EventSink>, kind: ChunkEvent) -> Self {
        self.events = events.map(|e| (e, kind, Pending::default()));
        self
    }

    /// Whether the sink's reader went away during the run.
    pub(crate) fn was_closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }

    /// Write what the budget allows.
    fn put(&self, bytes: &[u8]) -> Put {
        if self.closed.load(Ordering::SeqCst) {
            return Put::Closed;
        }
        if let Some((flow, name)) = &self.flow
            && let Err(d) = flow.stream_write(&FlowSink::Stdout, name.as_str(), name.as_str())
        {
            return Put::Refused(d.message);
        }
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
        if let Ok(mut sink) = self.sink.lock()
            && let Err(e) = sink.write_all(&bytes[..take]).and_then(|()| sink.flush())
            && e.kind() == std::io::ErrorKind::BrokenPipe
        {
            self.closed.store(true, Ordering::SeqCst);
            return Put::Closed;
        }
        if take > 0 {
            self.announce(&bytes[..take]);
        }
        if fits { Put::Written } else { Put::OverBudget }
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
        match self.put(&bytes) {
            Put::Written => Ok(()),
            Put::Closed => Err(StreamError::Closed),
            Put::Refused(why) => Err(StreamError::LastOperationFailed(wasmtime::Error::msg(
                format!("flow_denied: {why}"),
            ))),
            Put::OverBudget => Err(StreamError::Trap(wasmtime::Error::new(HardLimit(
                Violation::MaxOutputBytes,
            )))),
        }
    }

    fn flush(&mut self) -> StreamResult<()> {
        Ok(())
    }

    fn check_write(&mut self) -> StreamResult<usize> {
        if self.closed.load(Ordering::SeqCst) {
            return Err(StreamError::Closed);
        }
        Ok(64 * 1024)
    }
}

impl tokio::io::AsyncWrite for MeteredOutput {
    fn poll_write(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Poll::Ready(match self.put(buf) {
            Put::Written => Ok(buf.len()),
            Put::Closed => Err(std::io::ErrorKind::BrokenPipe.into()),
            Put::Refused(why) => Err(std::io::Error::new(
                std::io::ErrorKind::PermissionDenied,
                format!("flow_denied: {why}"),
            )),
            Put::OverBudget => Err(std::io::Error::other("max_output_bytes")),
        })
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A guest that never writes a newline cannot make the host hold more
    /// than 64 KiB of it for `lines()`: a full buffer goes out as it is.
    #[test]
    fn output_held_for_its_newline_is_capped() {
        let (tx, rx) = std::sync::mpsc::sync_channel(1024);
        let sink: Sink = Arc::new(Mutex::new(Vec::new()));
        let out = Stream::new(Arc::new(OutputMeter::new(1 << 30)), sink)
            .with_events(Some(EventSink::new(tx).lines()), Event::Stdout)
            .shared();
        let chunk = vec![b'x'; 1000];
        for _ in 0..200 {
            assert!(matches!(out.put(&chunk), Put::Written));
            let pending = &out.events.as_ref().unwrap().2;
            assert!(pending.lock().unwrap().len() < MAX_LINE);
        }
        out.flush_events();
        let sizes: Vec<usize> = rx
            .try_iter()
            .map(|e| match e {
                Event::Stdout(b) => b.len(),
                other => panic!("{other:?}"),
            })
            .collect();
        assert!(sizes.iter().all(|n| *n <= MAX_LINE + 1000), "{sizes:?}");
        assert_eq!(sizes.iter().sum::<usize>(), 200_000);
        assert_eq!(
            sizes.len(),
            4,
            "three full buffers, then the rest at the end"
        );
    }
}
