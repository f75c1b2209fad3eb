//! wasi:sockets 0.2's UDP, through the door (`mod.rs`), as 0.3's is
//! (`udp03.rs`), when the grant holds a `udp://host:port` rule:
//!
//! - `start-bind` is decided on the local address asked for (a
//!   `net.listen` rule); the any-address ephemeral bind a client makes
//!   (`std::net::UdpSocket::bind("0.0.0.0:0")`) is no op.
//! - `stream` with a remote address, and each addressed datagram `send`
//!   is given, are decided on the peer (`net_datagram`, once a run for
//!   each address). A batch is sent up to its first refused datagram (a
//!   batch refused at its first is `access-denied`), as wasi:sockets sends
//!   a batch up to its first failure. What a batch sends is charged to
//!   `max_sent_bytes` before it is handed to the socket.
//! - `receive` hands the guest datagrams from allowed peers, or from an
//!   address an IP or CIDR udp rule names (wasmtime-wasi's address check
//!   drops the others unseen), each charged to `max_output_bytes` first.
//! - A UDP socket counts among the sockets a run holds.
//!
//! Without a udp rule wasmtime-wasi's `create-udp-socket` answers
//! `access-denied` (UDP is not allowed in the run's WASI context).

use super::{Aim, Proof, answer, fits, narrowed};
use crate::wasm::HostState;
use crate::wasm::held::on_drop;
use std::net::SocketAddr;
use wasmtime::component::{Linker, Resource};
use wasmtime_wasi::p2::UdpSocket;
use wasmtime_wasi::p2::bindings::sockets::network::{
    ErrorCode, IpAddressFamily, IpSocketAddress, Network,
};
use wasmtime_wasi::p2::bindings::sockets::udp::{
    HostIncomingDatagramStream, HostOutgoingDatagramStream, HostUdpSocket, IncomingDatagramStream,
    OutgoingDatagram, OutgoingDatagramStream,
};
use wasmtime_wasi::p2::bindings::sockets::udp_create_socket::Host as _;
use wasmtime_wasi::sockets::WasiSocketsView;

/// The interfaces' versions as this wasmtime-wasi links them.
const UDP: &str = "wasi:sockets/udp@0.2.12";
const UDP_CREATE_SOCKET: &str = "wasi:sockets/udp-create-socket@0.2.12";

/// Wrap 0.2's UDP calls (shadowing allowed; called after wasmtime-wasi's
/// own sockets are linked).
pub(super) fn add_to_linker(linker: &mut Linker<HostState>) -> wasmtime::Result<()> {
    linker.instance(UDP_CREATE_SOCKET)?.func_wrap_async(
        "create-udp-socket",
        |mut store, (family,): (IpAddressFamily,)| {
            Box::new(async move {
                let state = store.data_mut();
                if state.tcp.full() {
                    return Ok((Err(ErrorCode::NewSocketLimit),));
                }
                let made = answer(state.sockets().create_udp_socket(family).await)?;
                if let Ok(socket) = &made {
                    state.tcp.hold(socket.rep());
                }
                Ok((made,))
            })
        },
    )?;
    let mut udp = linker.instance(UDP)?;
    on_drop::<UdpSocket>(&mut udp, "udp-socket", |state, rep| state.tcp.release(rep))?;
    udp.func_wrap_async(
        "[method]udp-socket.start-bind",
        |mut store,
         (socket, network, local): (Resource<UdpSocket>, Resource<Network>, IpSocketAddress)| {
            Box::new(async move {
                let state = store.data_mut();
                let addr = narrowed(SocketAddr::from(local));
                if !fits(is_v4(state, socket.rep()), addr, Aim::BindUdp) {
                    return Ok((Err(ErrorCode::InvalidArgument),));
                }
                if let Err(code) = state.decide_bind(addr, true)? {
                    return Ok((Err(code),));
                }
                let mut sockets = state.sockets();
                let bound = HostUdpSocket::start_bind(&mut sockets, socket, network, addr.into());
                let bound = answer(bound.await)?;
                if bound.is_err() {
                    // Not bound: its proof is not left behind.
                    state.tcp.after_bind(addr, Proof::UdpBind, None);
                }
                Ok((bound,))
            })
        },
    )?;
    udp.func_wrap_async(
        "[method]udp-socket.stream",
        |mut store, (socket, remote): (Resource<UdpSocket>, Option<IpSocketAddress>)| {
            Box::new(async move {
                let state = store.data_mut();
                // A socket never bound, or an address no socket may dial,
                // is left to wasmtime-wasi to refuse (no op).
                let borrowed = Resource::<UdpSocket>::new_borrow(socket.rep());
                let bound = HostUdpSocket::local_address(&mut state.sockets(), borrowed).is_ok();
                if let Some(addr) = remote.map(SocketAddr::from)
                    && bound
                    && fits(is_v4(state, socket.rep()), addr, Aim::Dial)
                    && let Err(code) = state.decide_peer(addr)?
                {
                    return Ok((Err(code),));
                }
                let streams = HostUdpSocket::stream(&mut state.sockets(), socket, remote).await;
                Ok((answer(streams)?,))
            })
        },
    )?;
    udp.func_wrap(
        "[method]outgoing-datagram-stream.send",
        |mut store,
         (stream, mut datagrams): (Resource<OutgoingDatagramStream>, Vec<OutgoingDatagram>)| {
            let state = store.data_mut();
            let mut refused = None;
            for (i, d) in datagrams.iter().enumerate() {
                // A datagram without an address goes to the peer `stream`
                // decided. The stream does not say its socket's family: the
                // address's own is taken, and wasmtime-wasi refuses one of
                // the other family as an argument after the decision.
                let Some(addr) = d.remote_address.map(SocketAddr::from) else {
                    continue;
                };
                if !fits(addr.is_ipv4(), addr, Aim::Dial) {
                    continue;
                }
                if let Err(code) = state.decide_peer(addr)? {
                    refused = Some((i, code));
                    break;
                }
            }
            if let Some((i, code)) = refused {
                if i == 0 {
                    return Ok((Err(code),));
                }
                datagrams.truncate(i);
            }
            if let Some((_, sent)) = state.tcp.charges() {
                sent.take(datagrams.iter().map(|d| d.data.len()).sum())?;
            }
            let sent = HostOutgoingDatagramStream::send(&mut state.sockets(), stream, datagrams);
            Ok((answer(sent)?,))
        },
    )?;
    udp.func_wrap(
        "[method]incoming-datagram-stream.receive",
        |mut store, (stream, max): (Resource<IncomingDatagramStream>, u64)| {
            let state = store.data_mut();
            let got = answer(HostIncomingDatagramStream::receive(
                &mut state.sockets(),
                stream,
                max,
            ))?;
            if let (Ok(datagrams), Some((received, _))) = (&got, state.tcp.charges()) {
                received.take(datagrams.iter().map(|d| d.data.len()).sum())?;
            }
            Ok((got,))
        },
    )?;
    Ok(())
}

/// Whether the UDP socket `rep` is of the IPv4 family.
fn is_v4(state: &mut HostState, rep: u32) -> bool {
    let borrowed = Resource::<UdpSocket>::new_borrow(rep);
    matches!(
        HostUdpSocket::address_family(&mut state.sockets(), borrowed),
        Ok(IpAddressFamily::Ipv4)
    )
}
