//! wasi:sockets 0.2 through the door (`mod.rs`): the name lookup is
//! replaced whole (its stream resource included); `start-bind` and
//! `start-connect` are decided before wasmtime-wasi's own run, leaving the
//! proof its address check takes; the streams of a connection, dialled or
//! accepted, are wrapped to charge what it reads and writes;
//! `create-tcp-socket` and the socket's drop count what the run holds.
//! UDP is `udp02.rs`.

use super::{Aim, Answer, Charged, ChargedOut, Proof, answer, fits, narrowed};
use crate::wasm::HostState;
use crate::wasm::held::on_drop;
use std::net::SocketAddr;
use wasmtime::component::{Linker, Resource};
use wasmtime_wasi::p2::bindings::sockets::network::{
    ErrorCode, IpAddress, IpAddressFamily, IpSocketAddress, Network,
};
use wasmtime_wasi::p2::bindings::sockets::tcp::HostTcpSocket as _;
use wasmtime_wasi::p2::bindings::sockets::tcp_create_socket::Host as _;
use wasmtime_wasi::p2::{DynInputStream, DynOutputStream, DynPollable, TcpSocket};
use wasmtime_wasi::sockets::WasiSocketsView;

/// The interfaces' versions as this wasmtime-wasi links them.
const IP_NAME_LOOKUP: &str = "wasi:sockets/ip-name-lookup@0.2.12";
const TCP: &str = "wasi:sockets/tcp@0.2.12";
const TCP_CREATE_SOCKET: &str = "wasi:sockets/tcp-create-socket@0.2.12";

/// Link the door: `ip-name-lookup` replaced whole; `tcp-socket`'s
/// `start-bind`, `start-connect`, `finish-connect` and `accept` wrapped;
/// UDP's calls (`udp02.rs`). Called after wasmtime-wasi's own sockets are
/// linked.
pub(crate) fn add_to_linker(linker: &mut Linker<HostState>) -> wasmtime::Result<()> {
    linker.allow_shadowing(true);
    let mut lookup = linker.instance(IP_NAME_LOOKUP)?;
    on_drop::<Answer>(&mut lookup, "resolve-address-stream", |_, _| {})?;
    lookup.func_wrap(
        "resolve-addresses",
        |mut store, (network, name): (Resource<Network>, String)| {
            let state = store.data_mut();
            state.table.get(&network)?;
            Ok((match state.resolve(name)? {
                Ok(answer) => Ok(state.table.push(answer)?),
                Err(code) => Err(code),
            },))
        },
    )?;
    lookup.func_wrap(
        "[method]resolve-address-stream.resolve-next-address",
        |mut store, (stream,): (Resource<Answer>,)| {
            let answer = store.data_mut().table.get_mut(&stream)?;
            let next: Option<IpAddress> = answer.0.next().map(Into::into);
            Ok((Ok::<_, ErrorCode>(next),))
        },
    )?;
    lookup.func_wrap(
        "[method]resolve-address-stream.subscribe",
        |mut store, (stream,): (Resource<Answer>,)| {
            let p: Resource<DynPollable> =
                wasmtime_wasi::p2::subscribe(&mut store.data_mut().table, stream)?;
            Ok((p,))
        },
    )?;
    let mut create = linker.instance(TCP_CREATE_SOCKET)?;
    create.func_wrap(
        "create-tcp-socket",
        |mut store, (family,): (IpAddressFamily,)| {
            let state = store.data_mut();
            if state.tcp.full() {
                return Ok((Err(ErrorCode::NewSocketLimit),));
            }
            let made = answer(state.sockets().create_tcp_socket(family))?;
            if let Ok(socket) = &made {
                state.tcp.hold(socket.rep());
            }
            Ok((made,))
        },
    )?;
    let mut tcp = linker.instance(TCP)?;
    // A socket's drop, as wasmtime-wasi's, and its place among the sockets
    // the run holds made free.
    on_drop::<TcpSocket>(&mut tcp, "tcp-socket", |state, rep| state.tcp.release(rep))?;
    tcp.func_wrap_async(
        "[method]tcp-socket.start-bind",
        |mut store,
         (socket, network, local): (Resource<TcpSocket>, Resource<Network>, IpSocketAddress)| {
            Box::new(async move {
                let state = store.data_mut();
                let addr = narrowed(SocketAddr::from(local));
                let local = IpSocketAddress::from(addr);
                let borrowed = Resource::<TcpSocket>::new_borrow(socket.rep());
                let v4 = matches!(
                    state.sockets().address_family(borrowed),
                    Ok(IpAddressFamily::Ipv4)
                );
                if !fits(v4, addr, Aim::BindTcp) {
                    return Ok((Err(ErrorCode::InvalidArgument),));
                }
                if let Err(code) = state.decide_bind(addr, false)? {
                    return Ok((Err(code),));
                }
                let borrowed = Resource::<TcpSocket>::new_borrow(socket.rep());
                let bound = answer(state.sockets().start_bind(socket, network, local).await)?;
                let now = match bound {
                    Ok(()) => state.sockets().local_address(borrowed).ok(),
                    Err(_) => None,
                };
                state
                    .tcp
                    .after_bind(addr, Proof::TcpBind, now.map(SocketAddr::from));
                Ok((bound,))
            })
        },
    )?;
    tcp.func_wrap(
        "[method]tcp-socket.start-connect",
        |mut store,
         (socket, network, remote): (Resource<TcpSocket>, Resource<Network>, IpSocketAddress)| {
            let state = store.data_mut();
            let addr = SocketAddr::from(remote);
            // A socket in the wrong state, or an address no socket may
            // dial, is answered as wasmtime-wasi answers it, before any op.
            if let Err(code) = ready_to_connect(state, &socket, addr) {
                return Ok((Err(code),));
            }
            if let Err(code) = state.decide_connect(addr)? {
                return Ok((Err(code),));
            }
            let started = answer(state.sockets().start_connect(socket, network, remote))?;
            if started.is_err() {
                // Refused by the socket itself (busy, wrong state): its
                // proof is not left behind.
                if let Some(shared) = state.tcp.shared() {
                    shared.take(addr, Proof::Connect);
                }
            }
            Ok((started,))
        },
    )?;
    tcp.func_wrap(
        "[method]tcp-socket.finish-connect",
        |mut store, (socket,): (Resource<TcpSocket>,)| {
            let state = store.data_mut();
            let parent = socket.rep();
            Ok((match answer(state.sockets().finish_connect(socket))? {
                Ok((input, output)) => Ok(charged(state, (input, output), parent)?),
                Err(code) => Err(code),
            },))
        },
    )?;
    // An accepted connection's bytes are charged as a dialled one's (the
    // address check counted it).
    tcp.func_wrap(
        "[method]tcp-socket.accept",
        |mut store, (socket,): (Resource<TcpSocket>,)| {
            let state = store.data_mut();
            Ok((match answer(state.sockets().accept(socket))? {
                Ok((client, input, output)) => {
                    let (input, output) = charged(state, (input, output), client.rep())?;
                    Ok((client, input, output))
                }
                Err(code) => Err(code),
            },))
        },
    )?;
    super::udp02::add_to_linker(linker)?;
    linker.allow_shadowing(false);
    Ok(())
}

/// `Err` with wasmtime-wasi's own answer when `socket` cannot start a
/// connection to `addr` at all (so a malformed call costs no op and leaves
/// no allowed record of a connection that could never be made): an
/// unknown socket, port 0, an unspecified, multicast or IPv4-mapped IPv6
/// address, or one of the other family than the socket's.
fn ready_to_connect(
    state: &mut HostState,
    socket: &Resource<TcpSocket>,
    addr: SocketAddr,
) -> Result<(), ErrorCode> {
    let borrowed = Resource::<TcpSocket>::new_borrow(socket.rep());
    let family = match state.sockets().address_family(borrowed) {
        Ok(f) => f,
        Err(_) => return Err(ErrorCode::InvalidArgument),
    };
    if !fits(matches!(family, IpAddressFamily::Ipv4), addr, Aim::Dial) {
        return Err(ErrorCode::InvalidArgument);
    }
    Ok(())
}

/// A connection's two streams, as `finish-connect` and `accept` return
/// them.
type Streams = (Resource<DynInputStream>, Resource<DynOutputStream>);

/// The two streams of the socket `parent`'s connection, wrapped to
/// charge what the guest reads to the run's output budget and what it
/// writes to its sent budget (as they are when sockets are granted, which
/// they are whenever a socket exists).
fn charged(
    state: &mut HostState,
    (input, output): Streams,
    parent: u32,
) -> wasmtime::Result<Streams> {
    let Some((received, sent)) = state.tcp.charges() else {
        return Ok((input, output));
    };
    let inner = state.table.delete(input)?;
    let input: DynInputStream = Box::new(Charged {
        inner,
        charge: received,
    });
    let inner = state.table.delete(output)?;
    let output: DynOutputStream = Box::new(ChargedOut {
        inner,
        charge: sent,
    });
    // Where wasmtime-wasi put them: children of the socket.
    let parent = Resource::<TcpSocket>::new_borrow(parent);
    Ok((
        state.table.push_child(input, &parent)?,
        state.table.push_child(output, &parent)?,
    ))
}
