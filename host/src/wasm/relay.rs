//! The relay between a 0.3 stream the host makes and the guest's, either
//! way: it holds at most [`RELAY_BYTES`], and what passes may be charged
//! to one budget ([`Charge`]) and fingerprinted for the flow rules'
//! evidence ([`Print`]). Sockets: received bytes are charged to
//! `max_output_bytes` as the guest takes them; sent ones to
//! `max_sent_bytes` as they leave the guest's stream, before the socket
//! has them; past the budget the run halts. Files (0.3's read streams
//! from a labelled mount, when the grant asks for evidence): fingerprinted
//! as the guest takes them. When the reading end is dropped, nothing more
//! is taken from the writing one.
//!
//! A socket receive's `done` future passes through it too: the guest's
//! resolves with wasmtime-wasi's result once the bytes held are read, or
//! with `Ok` as soon as the guest drops its end of the stream, as
//! wasmtime-wasi's own does. (wasmtime-wasi's task, which a dropped relay
//! reaches only when the socket next offers bytes, cannot tell the guest
//! that alone: a guest awaiting `done` after dropping a quiet socket's
//! stream would wait for ever.) A file's read stream ends as soon as its
//! reader is gone, so its `done` needs no relay.

use crate::budget::OutputMeter;
use crate::flow::FlowState;
use crate::violation::Violation;
use crate::wasm::{HardLimit, HostState};
use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use wasmtime::component::{
    Destination, FutureConsumer, Source, StreamConsumer, StreamProducer, StreamReader, StreamResult,
};
use wasmtime::{AsContextMut, StoreContextMut};
use wasmtime_wasi::p3::bindings::sockets::types::ErrorCode;

/// One byte budget's meter, and the limit its breach is.
#[derive(Clone)]
pub(crate) struct Charge {
    meter: Arc<OutputMeter>,
    over: Violation,
}

impl Charge {
    /// Received bytes, charged to `max_output_bytes`.
    pub(crate) fn received(meter: Arc<OutputMeter>) -> Self {
        Charge {
            meter,
            over: Violation::MaxOutputBytes,
        }
    }

    /// Sent bytes, charged to `max_sent_bytes`.
    pub(crate) fn sent(meter: Arc<OutputMeter>) -> Self {
        Charge {
            meter,
            over: Violation::MaxSentBytes,
        }
    }

    /// Charge `n` bytes, or the trap that halts the run (nothing charged).
    pub(crate) fn take(&self, n: usize) -> wasmtime::Result<()> {
        if self.meter.try_charge(n as u64) {
            return Ok(());
        }
        self.meter.mark_breached();
        Err(wasmtime::Error::new(HardLimit(self.over)))
    }
}

/// What a relay's bytes are fingerprinted under, for the flow rules'
/// evidence.
pub(crate) struct Print {
    pub(crate) flow: Arc<FlowState>,
    pub(crate) label: String,
}

/// What a relay does to what passes it: charge it as it is taken from the
/// writing end (`intake`), or as the reading end takes it (`outlet`), and
/// fingerprint it as the reading end takes it (`print`).
#[derive(Default)]
pub(crate) struct Through {
    pub(crate) intake: Option<Charge>,
    pub(crate) outlet: Option<Charge>,
    pub(crate) print: Option<Print>,
}

/// `inner` passed through a new relay doing `through`: the stream its
/// reading end takes, and the relay (for a `done` of its own).
pub(crate) fn relay(
    mut store: impl AsContextMut<Data = HostState>,
    inner: StreamReader<u8>,
    through: Through,
) -> wasmtime::Result<(StreamReader<u8>, Arc<Mutex<Relay>>)> {
    let relay = Arc::new(Mutex::new(Relay::default()));
    let intake = RelayIn {
        relay: relay.clone(),
        charge: through.intake,
    };
    inner.pipe(&mut store, intake)?;
    let outlet = RelayOut {
        relay: relay.clone(),
        charge: through.outlet,
        print: through.print,
    };
    Ok((StreamReader::new(&mut store, outlet)?, relay))
}

/// Bytes held between the two ends at most.
pub(crate) const RELAY_BYTES: usize = 64 << 10;

/// Bytes on their way from one stream to the other.
#[derive(Default)]
pub(crate) struct Relay {
    held: VecDeque<u8>,
    /// The writing stream has ended (or was dropped).
    ended: bool,
    /// The reading end was dropped: nothing more is taken.
    abandoned: bool,
    /// Waiting for bytes, and for room.
    reader: Option<Waker>,
    writer: Option<Waker>,
    /// wasmtime-wasi's `done` result, once it has one.
    done: Option<Result<(), ErrorCode>>,
    /// The guest's `done`, waiting.
    waiting: Option<Waker>,
}

impl Relay {
    fn wake_done(&mut self) {
        if let Some(w) = self.waiting.take() {
            w.wake();
        }
    }
}

fn lock(r: &Mutex<Relay>) -> std::sync::MutexGuard<'_, Relay> {
    r.lock().unwrap_or_else(|e| e.into_inner())
}

/// The relay's intake: what wasmtime-wasi's receive stream produces, or
/// what the guest writes to send, charged as it is taken when `charge` is
/// set (a send).
struct RelayIn {
    relay: Arc<Mutex<Relay>>,
    charge: Option<Charge>,
}

impl Drop for RelayIn {
    fn drop(&mut self) {
        let mut r = lock(&self.relay);
        r.ended = true;
        if let Some(w) = r.reader.take() {
            w.wake();
        }
    }
}

impl StreamConsumer<HostState> for RelayIn {
    type Item = u8;

    fn poll_consume(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        mut store: StoreContextMut<HostState>,
        src: Source<u8>,
        finish: bool,
    ) -> Poll<wasmtime::Result<StreamResult>> {
        let offered = src.remaining(&mut store);
        let mut r = lock(&self.relay);
        if r.abandoned {
            return Poll::Ready(Ok(StreamResult::Dropped));
        }
        let room = RELAY_BYTES - r.held.len();
        if room == 0 || offered == 0 {
            return if room > 0 {
                Poll::Ready(Ok(StreamResult::Completed))
            } else if finish {
                Poll::Ready(Ok(StreamResult::Cancelled))
            } else {
                r.writer = Some(cx.waker().clone());
                Poll::Pending
            };
        }
        let n = offered.min(room);
        if let Some(charge) = &self.charge {
            charge.take(n)?;
        }
        let mut src = src.as_direct(store);
        r.held.extend(&src.remaining()[..n]);
        src.mark_read(n);
        if let Some(w) = r.reader.take() {
            w.wake();
        }
        Poll::Ready(Ok(StreamResult::Completed))
    }
}

/// The relay's outlet: the guest's read stream, each byte charged (when
/// `charge` is set) and fingerprinted (when `print` is) before the guest
/// has it; or what a socket's send takes.
struct RelayOut {
    relay: Arc<Mutex<Relay>>,
    charge: Option<Charge>,
    print: Option<Print>,
}

impl Drop for RelayOut {
    fn drop(&mut self) {
        let mut r = lock(&self.relay);
        r.abandoned = true;
        r.held.clear();
        if let Some(w) = r.writer.take() {
            w.wake();
        }
        r.wake_done();
    }
}

impl StreamProducer<HostState> for RelayOut {
    type Item = u8;
    type Buffer = bytes::BytesMut;

    fn poll_produce<'a>(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        mut store: StoreContextMut<'a, HostState>,
        dst: Destination<'a, u8, bytes::BytesMut>,
        finish: bool,
    ) -> Poll<wasmtime::Result<StreamResult>> {
        let mut r = lock(&self.relay);
        if r.held.is_empty() {
            if r.ended {
                return Poll::Ready(Ok(StreamResult::Dropped));
            }
            if finish {
                return Poll::Ready(Ok(StreamResult::Cancelled));
            }
            r.reader = Some(cx.waker().clone());
            return Poll::Pending;
        }
        // A zero-length read asks whether bytes are ready: they are.
        if dst.remaining(&mut store) == Some(0) {
            return Poll::Ready(Ok(StreamResult::Completed));
        }
        let mut dst = dst.as_direct(store, RELAY_BYTES);
        let buf = dst.remaining();
        let n = buf.len().min(r.held.len());
        if let Some(charge) = &self.charge {
            charge.take(n)?;
        }
        for (to, from) in buf.iter_mut().zip(r.held.drain(..n)) {
            *to = from;
        }
        if let Some(p) = &self.print {
            p.flow.fingerprint(&p.label, &buf[..n]);
        }
        dst.mark_written(n);
        if r.held.is_empty() {
            r.wake_done();
        }
        if let Some(w) = r.writer.take() {
            w.wake();
        }
        Poll::Ready(Ok(StreamResult::Completed))
    }
}

/// wasmtime-wasi's `done` future's result, taken into the relay.
pub(crate) struct DoneIn(pub(crate) Arc<Mutex<Relay>>);

impl FutureConsumer<HostState> for DoneIn {
    type Item = Result<(), ErrorCode>;

    fn poll_consume(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
        mut store: StoreContextMut<HostState>,
        mut src: Source<'_, Self::Item>,
        _: bool,
    ) -> Poll<wasmtime::Result<()>> {
        let mut got = None;
        src.read(&mut store, &mut got)?;
        let mut r = lock(&self.0);
        r.done = Some(got.unwrap_or(Ok(())));
        r.wake_done();
        Poll::Ready(Ok(()))
    }
}

/// The guest's `done`: wasmtime-wasi's result once the bytes held are
/// read, or `Ok` once the guest dropped its end of the stream.
pub(crate) async fn done_out(relay: Arc<Mutex<Relay>>) -> wasmtime::Result<Result<(), ErrorCode>> {
    std::future::poll_fn(move |cx| {
        let mut r = lock(&relay);
        if r.abandoned {
            return Poll::Ready(Ok(Ok(())));
        }
        if r.held.is_empty()
            && let Some(done) = r.done.take()
        {
            return Poll::Ready(Ok(done));
        }
        r.waiting = Some(cx.waker().clone());
        Poll::Pending
    })
    .await
}
