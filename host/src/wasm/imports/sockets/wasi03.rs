//! wasi:sockets 0.3's TCP client, through the same door as 0.2's
//! (`mod.rs`): a name lookup is the door's own (the gate allows a name
//! some tcp rule covers, the broker's resolver answers it); `connect` is
//! decided on the address dialled and the name it came from, leaving the
//! proof wasmtime-wasi's address check takes once; what a connection
//! receives is charged to `max_output_bytes` as the guest reads it; a run
//! holds at most [`MAX_OPEN_SOCKETS`](crate::wasm::MAX_OPEN_SOCKETS)
//! sockets. Binding a chosen address, listening and UDP meet the same
//! address check, which refuses them (`access-denied`).

use super::{Answer, take};
use crate::budget::OutputMeter;
use crate::violation::Violation;
use crate::wasm::{HardLimit, HostState, MAX_OPEN_SOCKETS};
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use wasmtime::component::{
    Access, Accessor, Destination, Linker, Resource, Source, StreamConsumer, StreamProducer,
    StreamReader, StreamResult,
};
use wasmtime::{AsContextMut, StoreContextMut};
use wasmtime_wasi::p3::bindings::sockets::ip_name_lookup::ErrorCode as LookupCode;
use wasmtime_wasi::p3::bindings::sockets::types::{
    ErrorCode, HostTcpSocket, HostTcpSocketWithStore, IpAddress, IpAddressFamily, IpSocketAddress,
};
use wasmtime_wasi::sockets::{TcpSocket, WasiSockets, WasiSocketsView};

/// The interfaces as this wasmtime-wasi links them.
const TYPES: &str = "wasi:sockets/types@0.3.0";
const IP_NAME_LOOKUP: &str = "wasi:sockets/ip-name-lookup@0.3.0";

/// Received bytes held between the socket and the guest at most.
const RELAY_BYTES: usize = 64 << 10;

/// Link 0.3's sockets: wasmtime-wasi's, with the lookup replaced and
/// `create`, the socket's drop, `connect` and `receive` wrapped.
pub(crate) fn add_to_linker(linker: &mut Linker<HostState>) -> wasmtime::Result<()> {
    wasmtime_wasi::p3::sockets::add_to_linker(linker)?;
    linker.allow_shadowing(true);
    linker.instance(IP_NAME_LOOKUP)?.func_wrap_concurrent(
        "resolve-addresses",
        |acc: &Accessor<HostState>, (name,): (String,)| {
            Box::pin(async move {
                let answer = acc.with(|mut a| a.get().resolve(name))?;
                Ok((match answer {
                    Ok(Answer(addrs)) => Ok(addrs.map(IpAddress::from).collect::<Vec<_>>()),
                    Err(code) => Err(lookup_code(code)),
                },))
            })
        },
    )?;
    let mut types = linker.instance(TYPES)?;
    super::on_drop::<TcpSocket>(&mut types, "tcp-socket", |state, rep| {
        state.tcp.open.release(rep)
    })?;
    types.func_wrap(
        "[static]tcp-socket.create",
        |mut store, (family,): (IpAddressFamily,)| {
            let state = store.data_mut();
            // 0.3 has no `new-socket-limit`: the same words in `other`.
            if state.tcp.open.full() {
                let limit = format!("new-socket-limit: {MAX_OPEN_SOCKETS} sockets held");
                return Ok((Err(ErrorCode::Other(Some(limit))),));
            }
            let made = match HostTcpSocket::create(&mut state.sockets(), family) {
                Ok(socket) => socket,
                Err(e) => return Ok((Err(e.downcast()?),)),
            };
            state.tcp.open.hold(made.rep());
            Ok((Ok(made),))
        },
    )?;
    types.func_wrap_concurrent(
        "[method]tcp-socket.connect",
        |acc: &Accessor<HostState>, (socket, remote): (Resource<TcpSocket>, IpSocketAddress)| {
            Box::pin(async move {
                let addr = SocketAddr::from(remote);
                let decided = acc.with(|mut a| -> wasmtime::Result<Result<(), ErrorCode>> {
                    let state = a.get();
                    if let Err(code) = ready_to_connect(state, &socket, addr)? {
                        return Ok(Err(code));
                    }
                    Ok(state.decide_connect(addr)?.map_err(socket_code))
                })?;
                if let Err(code) = decided {
                    return Ok((Err(code),));
                }
                let sockets = acc.with_getter::<WasiSockets>(HostState::sockets);
                let borrowed = Resource::<TcpSocket>::new_borrow(socket.rep());
                let connected = <WasiSockets as HostTcpSocketWithStore<HostState>>::connect(
                    &sockets, borrowed, remote,
                )
                .await;
                match connected {
                    Ok(()) => Ok((Ok(()),)),
                    Err(e) => {
                        // Refused by the socket itself (busy, wrong state,
                        // the peer): its proof is not left behind.
                        acc.with(|mut a| {
                            if let Some(granted) = &a.get().tcp.granted {
                                take(&granted.proofs, addr);
                            }
                        });
                        Ok((Err(e.downcast()?),))
                    }
                }
            })
        },
    )?;
    types.func_wrap(
        "[method]tcp-socket.receive",
        |mut store, (socket,): (Resource<TcpSocket>,)| {
            let meter = store.data().tcp.granted.as_ref().map(|g| g.meter.clone());
            let (inner, done) = {
                let access = Access::<HostState, WasiSockets>::new(
                    store.as_context_mut(),
                    HostState::sockets,
                );
                <WasiSockets as HostTcpSocketWithStore<HostState>>::receive(access, socket)?
            };
            let Some(meter) = meter else {
                return Ok(((inner, done),));
            };
            // The bytes the guest reads pass through a relay that charges
            // them first.
            let relay = Arc::new(Mutex::new(Relay::default()));
            inner.pipe(&mut store, RelayIn(relay.clone()))?;
            let relayed = StreamReader::new(&mut store, RelayOut { relay, meter })?;
            Ok(((relayed, done),))
        },
    )?;
    linker.allow_shadowing(false);
    Ok(())
}

/// `Err` with wasmtime-wasi's own answer when `socket` cannot start a
/// connection to `addr` at all, before any op (as 0.2's door does).
fn ready_to_connect(
    state: &mut HostState,
    socket: &Resource<TcpSocket>,
    addr: SocketAddr,
) -> wasmtime::Result<Result<(), ErrorCode>> {
    let borrowed = Resource::<TcpSocket>::new_borrow(socket.rep());
    let family = match HostTcpSocket::get_address_family(&mut state.sockets(), borrowed) {
        Ok(f) => f,
        Err(_) => return Ok(Err(ErrorCode::InvalidArgument)),
    };
    if !super::dialable(matches!(family, IpAddressFamily::Ipv4), addr) {
        return Ok(Err(ErrorCode::InvalidArgument));
    }
    Ok(Ok(()))
}

/// 0.2's code for a refused or failed socket call as 0.3's.
fn socket_code(code: wasmtime_wasi::p2::bindings::sockets::network::ErrorCode) -> ErrorCode {
    use wasmtime_wasi::p2::bindings::sockets::network::ErrorCode as C;
    match code {
        C::AccessDenied => ErrorCode::AccessDenied,
        C::InvalidArgument => ErrorCode::InvalidArgument,
        _ => ErrorCode::Other(Some(format!("{code:?}"))),
    }
}

/// 0.2's code for a refused or failed lookup as 0.3's lookup code.
fn lookup_code(code: wasmtime_wasi::p2::bindings::sockets::network::ErrorCode) -> LookupCode {
    use wasmtime_wasi::p2::bindings::sockets::network::ErrorCode as C;
    match code {
        C::AccessDenied => LookupCode::AccessDenied,
        C::InvalidArgument => LookupCode::InvalidArgument,
        C::NameUnresolvable => LookupCode::NameUnresolvable,
        C::TemporaryResolverFailure => LookupCode::TemporaryResolverFailure,
        C::PermanentResolverFailure => LookupCode::PermanentResolverFailure,
        other => LookupCode::Other(Some(format!("{other:?}"))),
    }
}

/// Received bytes on their way from the socket's stream to the guest's.
#[derive(Default)]
struct Relay {
    held: VecDeque<u8>,
    /// The socket's stream has ended (or was dropped).
    ended: bool,
    /// The guest dropped its end: nothing more is taken from the socket.
    abandoned: bool,
    /// Waiting for bytes, and for room.
    reader: Option<Waker>,
    writer: Option<Waker>,
}

fn lock(r: &Mutex<Relay>) -> std::sync::MutexGuard<'_, Relay> {
    r.lock().unwrap_or_else(|e| e.into_inner())
}

/// The relay's intake: what wasmtime-wasi's receive stream produces.
struct RelayIn(Arc<Mutex<Relay>>);

impl Drop for RelayIn {
    fn drop(&mut self) {
        let mut r = lock(&self.0);
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
        let mut r = lock(&self.0);
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
        let mut src = src.as_direct(store);
        r.held.extend(&src.remaining()[..n]);
        src.mark_read(n);
        if let Some(w) = r.reader.take() {
            w.wake();
        }
        Poll::Ready(Ok(StreamResult::Completed))
    }
}

/// The relay's outlet: the guest's receive stream, each byte charged to
/// the run's output budget before the guest has it (past the budget the
/// run halts).
struct RelayOut {
    relay: Arc<Mutex<Relay>>,
    meter: Arc<OutputMeter>,
}

impl Drop for RelayOut {
    fn drop(&mut self) {
        let mut r = lock(&self.relay);
        r.abandoned = true;
        r.held.clear();
        if let Some(w) = r.writer.take() {
            w.wake();
        }
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
        if !self.meter.try_charge(n as u64) {
            return Poll::Ready(Err(wasmtime::Error::new(HardLimit(
                Violation::MaxOutputBytes,
            ))));
        }
        for (to, from) in buf.iter_mut().zip(r.held.drain(..n)) {
            *to = from;
        }
        dst.mark_written(n);
        if let Some(w) = r.writer.take() {
            w.wake();
        }
        Poll::Ready(Ok(StreamResult::Completed))
    }
}
