//! wasi:sockets 0.3's TCP, through the same door as 0.2's (`mod.rs`): a
//! name lookup is the door's own (the gate allows a name some tcp or udp
//! rule covers, the broker's resolver answers it); `bind` and `connect`
//! are decided on the address asked for (and the name it came from),
//! leaving the proof wasmtime-wasi's address check takes once; `listen`
//! is allowed where an allowed bind left the socket; what a connection
//! receives, dialled or accepted, passes a relay (`wasm/relay.rs`) that charges
//! it to `max_output_bytes`, and what it sends one that charges it to
//! `max_sent_bytes`; a run holds at most
//! [`MAX_OPEN_SOCKETS`](crate::wasm::MAX_OPEN_SOCKETS) sockets it made,
//! and as many accepted. UDP is `udp03.rs`.

use super::{Aim, Answer, Proof, answer, fits, narrowed, socket_code};
use crate::wasm::relay::{DoneIn, Through, done_out, relay};
use crate::wasm::{HostState, MAX_OPEN_SOCKETS};
use std::net::SocketAddr;
use wasmtime::AsContextMut;
use wasmtime::component::{Access, Accessor, FutureReader, Linker, Resource, StreamReader};
use wasmtime_wasi::p3::bindings::sockets::ip_name_lookup::ErrorCode as LookupCode;
use wasmtime_wasi::p3::bindings::sockets::types::{
    ErrorCode, HostTcpSocket, HostTcpSocketWithStore, IpAddress, IpAddressFamily, IpSocketAddress,
};
use wasmtime_wasi::sockets::{TcpSocket, WasiSockets, WasiSocketsView};

/// The interfaces as this wasmtime-wasi links them.
const TYPES: &str = "wasi:sockets/types@0.3.0";
const IP_NAME_LOOKUP: &str = "wasi:sockets/ip-name-lookup@0.3.0";

/// Link 0.3's sockets: wasmtime-wasi's, with the lookup replaced and the
/// TCP socket's `create`, drop, `bind`, `connect`, `send` and `receive` wrapped,
/// and UDP's (`udp03.rs`).
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
        state.tcp.release(rep)
    })?;
    types.func_wrap_async(
        "[method]tcp-socket.bind",
        |mut store, (socket, local): (Resource<TcpSocket>, IpSocketAddress)| {
            Box::new(async move {
                let state = store.data_mut();
                let addr = narrowed(SocketAddr::from(local));
                if !fits(is_v4(state, socket.rep()), addr, Aim::BindTcp) {
                    return Ok((Err(ErrorCode::InvalidArgument),));
                }
                Ok((bind_decided(state, socket.rep(), addr).await?,))
            })
        },
    )?;
    types.func_wrap(
        "[static]tcp-socket.create",
        |mut store, (family,): (IpAddressFamily,)| {
            let state = store.data_mut();
            // 0.3 has no `new-socket-limit`: the same words in `other`.
            if state.tcp.full() {
                let limit = format!("new-socket-limit: {MAX_OPEN_SOCKETS} sockets held");
                return Ok((Err(ErrorCode::Other(Some(limit))),));
            }
            let made = answer(HostTcpSocket::create(&mut state.sockets(), family))?;
            if let Ok(socket) = &made {
                state.tcp.hold(socket.rep());
            }
            Ok((made,))
        },
    )?;
    // A listen on a socket never bound would bind every interface: it is
    // bound first to the loopback address of its family, at a port the OS
    // picks, as a bind there is decided.
    types.func_wrap_async(
        "[method]tcp-socket.listen",
        |mut store, (socket,): (Resource<TcpSocket>,)| {
            Box::new(async move {
                let state = store.data_mut();
                let borrowed = Resource::<TcpSocket>::new_borrow(socket.rep());
                if HostTcpSocket::get_local_address(&mut state.sockets(), borrowed).is_err() {
                    let lo = if is_v4(state, socket.rep()) {
                        SocketAddr::from((std::net::Ipv4Addr::LOCALHOST, 0))
                    } else {
                        SocketAddr::from((std::net::Ipv6Addr::LOCALHOST, 0))
                    };
                    if let Err(code) = bind_decided(state, socket.rep(), lo).await? {
                        return Ok((Err(code),));
                    }
                }
                let access = Access::<HostState, WasiSockets>::new(
                    store.as_context_mut(),
                    HostState::sockets,
                );
                let listening =
                    <WasiSockets as HostTcpSocketWithStore<HostState>>::listen(access, socket)
                        .await;
                Ok((answer(listening)?,))
            })
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
                let connected = answer(connected)?;
                if connected.is_err() {
                    // Refused by the socket itself (busy, wrong state, the
                    // peer): its proof is not left behind.
                    acc.with(|mut a| {
                        if let Some(shared) = a.get().tcp.shared() {
                            shared.take(addr, Proof::Connect);
                        }
                    });
                }
                Ok((connected,))
            })
        },
    )?;
    types.func_wrap(
        "[method]tcp-socket.receive",
        |mut store, (socket,): (Resource<TcpSocket>,)| {
            // Every receive stream passes the relay, which charges what
            // it carries. Its `done` is the relay's (resolving when the
            // guest drops the stream) only for a connected socket's first
            // receive; any other gets wasmtime-wasi's own, which says
            // `invalid-state` at once.
            let rep = socket.rep();
            let state = store.data_mut();
            let borrowed = Resource::<TcpSocket>::new_borrow(rep);
            let connected =
                HostTcpSocket::get_remote_address(&mut state.sockets(), borrowed).is_ok();
            let first = connected && state.tcp.first_receive(rep);
            let charges = state.tcp.charges();
            let (inner, done) = {
                let access = Access::<HostState, WasiSockets>::new(
                    store.as_context_mut(),
                    HostState::sockets,
                );
                <WasiSockets as HostTcpSocketWithStore<HostState>>::receive(access, socket)?
            };
            // No grant, no socket: nothing reaches here without a meter.
            let Some((received, _)) = charges else {
                return Ok(((inner, done),));
            };
            let through = Through {
                outlet: Some(received),
                ..Through::default()
            };
            let (relayed, via) = relay(&mut store, inner, through)?;
            let guest_done = if first {
                done.pipe(&mut store, DoneIn(via.clone()))?;
                FutureReader::new(&mut store, done_out(via))?
            } else {
                done
            };
            Ok(((relayed, guest_done),))
        },
    )?;
    // What the guest sends passes a relay that charges it as it leaves the
    // guest's stream; the socket's send reads the relay.
    types.func_wrap(
        "[method]tcp-socket.send",
        |mut store, (socket, data): (Resource<TcpSocket>, StreamReader<u8>)| {
            let data = match store.data_mut().tcp.charges() {
                Some((_, sent)) => {
                    let through = Through {
                        intake: Some(sent),
                        ..Through::default()
                    };
                    relay(&mut store, data, through)?.0
                }
                // No grant, no socket: nothing reaches here uncharged.
                None => data,
            };
            let access =
                Access::<HostState, WasiSockets>::new(store.as_context_mut(), HostState::sockets);
            let done =
                <WasiSockets as HostTcpSocketWithStore<HostState>>::send(access, socket, data)?;
            Ok((done,))
        },
    )?;
    super::udp03::add_to_linker(&mut types)?;
    linker.allow_shadowing(false);
    Ok(())
}

/// Whether the TCP socket `rep` is of the IPv4 family.
fn is_v4(state: &mut HostState, rep: u32) -> bool {
    let borrowed = Resource::<TcpSocket>::new_borrow(rep);
    matches!(
        HostTcpSocket::get_address_family(&mut state.sockets(), borrowed),
        Ok(IpAddressFamily::Ipv4)
    )
}

/// Bind the TCP socket `rep` at `addr` as a decision allows: the decision
/// (refused: `access-denied`), wasmtime-wasi's bind, and where it left the
/// socket for `listen`.
async fn bind_decided(
    state: &mut HostState,
    rep: u32,
    addr: SocketAddr,
) -> wasmtime::Result<Result<(), ErrorCode>> {
    if let Err(code) = state.decide_bind(addr, false)? {
        return Ok(Err(socket_code(code)));
    }
    let borrowed = Resource::<TcpSocket>::new_borrow(rep);
    let bound = answer(HostTcpSocket::bind(&mut state.sockets(), borrowed, addr.into()).await)?;
    let now = match bound {
        Ok(()) => {
            let borrowed = Resource::<TcpSocket>::new_borrow(rep);
            HostTcpSocket::get_local_address(&mut state.sockets(), borrowed).ok()
        }
        Err(_) => None,
    };
    state
        .tcp
        .after_bind(addr, Proof::TcpBind, now.map(SocketAddr::from));
    Ok(bound)
}

/// `Err` with wasmtime-wasi's own answer when `socket` cannot start a
/// connection to `addr` at all, before any op (as 0.2's door does).
fn ready_to_connect(
    state: &mut HostState,
    socket: &Resource<TcpSocket>,
    addr: SocketAddr,
) -> wasmtime::Result<Result<(), ErrorCode>> {
    if !fits(is_v4(state, socket.rep()), addr, Aim::Dial) {
        return Ok(Err(ErrorCode::InvalidArgument));
    }
    Ok(Ok(()))
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
