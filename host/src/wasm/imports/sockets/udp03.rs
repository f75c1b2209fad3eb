//! wasi:sockets 0.3's UDP, through the door (`mod.rs`), when the grant
//! holds a `udp://host:port` rule:
//!
//! - `bind` is decided on the local address asked for (a `net.listen`
//!   rule), as TCP's is; the any-address ephemeral bind a first datagram
//!   makes is no op.
//! - `connect` and `send` are decided on the peer, once a run for each
//!   address (`net_datagram`): a name's address only when a lookup gave it
//!   and its rule covers the port, a special-purpose one only by an IP or
//!   CIDR rule. wasmtime-wasi's address check then passes each datagram to
//!   an allowed peer and no other. Each datagram sent is charged to
//!   `max_sent_bytes` first.
//! - `receive` hands the guest datagrams from allowed peers, or from an
//!   address an IP or CIDR udp rule names (others are dropped unseen), each
//!   charged to `max_output_bytes` first: past the budget the run halts.
//! - A UDP socket counts among the sockets a run holds.

use super::{Aim, Proof, answer, fits, narrowed, socket_code};
use crate::wasm::{HostState, MAX_OPEN_SOCKETS};
use std::net::SocketAddr;
use wasmtime::component::{Accessor, LinkerInstance, Resource};
use wasmtime_wasi::p3::bindings::sockets::types::{
    ErrorCode, HostUdpSocket, HostUdpSocketWithStore, IpAddressFamily, IpSocketAddress,
};
use wasmtime_wasi::sockets::{UdpSocket, WasiSockets, WasiSocketsView};

/// Wrap UDP's calls in `types`, wasmtime-wasi's `wasi:sockets/types@0.3.0`
/// (shadowing allowed).
pub(super) fn add_to_linker(types: &mut LinkerInstance<'_, HostState>) -> wasmtime::Result<()> {
    super::on_drop::<UdpSocket>(types, "udp-socket", |state, rep| state.tcp.release(rep))?;
    types.func_wrap_async(
        "[static]udp-socket.create",
        |mut store, (family,): (IpAddressFamily,)| {
            Box::new(async move {
                let state = store.data_mut();
                if state.tcp.full() {
                    let limit = format!("new-socket-limit: {MAX_OPEN_SOCKETS} sockets held");
                    return Ok((Err(ErrorCode::Other(Some(limit))),));
                }
                let made = answer(HostUdpSocket::create(&mut state.sockets(), family).await)?;
                if let Ok(socket) = &made {
                    state.tcp.hold(socket.rep());
                }
                Ok((made,))
            })
        },
    )?;
    types.func_wrap_async(
        "[method]udp-socket.bind",
        |mut store, (socket, local): (Resource<UdpSocket>, IpSocketAddress)| {
            Box::new(async move {
                let state = store.data_mut();
                let addr = narrowed(SocketAddr::from(local));
                let local = IpSocketAddress::from(addr);
                if !fits(is_v4(state, &socket), addr, Aim::BindUdp) {
                    return Ok((Err(ErrorCode::InvalidArgument),));
                }
                if let Err(code) = state.decide_bind(addr, true)? {
                    return Ok((Err(socket_code(code)),));
                }
                let bound = HostUdpSocket::bind(&mut state.sockets(), socket, local).await;
                if bound.is_err() {
                    // Not bound: its proof is not left behind.
                    state.tcp.after_bind(addr, Proof::UdpBind, None);
                }
                Ok((answer(bound)?,))
            })
        },
    )?;
    types.func_wrap_async(
        "[method]udp-socket.connect",
        |mut store, (socket, remote): (Resource<UdpSocket>, IpSocketAddress)| {
            Box::new(async move {
                let state = store.data_mut();
                let addr = SocketAddr::from(remote);
                if !fits(is_v4(state, &socket), addr, Aim::Dial) {
                    return Ok((Err(ErrorCode::InvalidArgument),));
                }
                if let Err(code) = state.decide_peer(addr)? {
                    return Ok((Err(socket_code(code)),));
                }
                let connected = HostUdpSocket::connect(&mut state.sockets(), socket, remote).await;
                Ok((answer(connected)?,))
            })
        },
    )?;
    types.func_wrap_concurrent(
        "[method]udp-socket.send",
        |acc: &Accessor<HostState>,
         (socket, data, remote): (Resource<UdpSocket>, Vec<u8>, Option<IpSocketAddress>)| {
            Box::pin(async move {
                let decided = acc.with(|mut a| -> wasmtime::Result<Result<(), ErrorCode>> {
                    let state = a.get();
                    // A datagram without an address goes to the connected
                    // peer, decided at `connect` (and again here if the
                    // run has forgotten it since).
                    let to = match remote {
                        Some(r) => Some(SocketAddr::from(r)),
                        None => {
                            let borrowed = Resource::<UdpSocket>::new_borrow(socket.rep());
                            HostUdpSocket::get_remote_address(&mut state.sockets(), borrowed)
                                .ok()
                                .map(SocketAddr::from)
                        }
                    };
                    // Anything wasmtime-wasi refuses as an argument is left
                    // to it (no op).
                    let Some(addr) = to.filter(|a| fits(is_v4(state, &socket), *a, Aim::Dial))
                    else {
                        return Ok(Ok(()));
                    };
                    if let Err(code) = state.decide_peer(addr)? {
                        return Ok(Err(socket_code(code)));
                    }
                    // An allowed datagram is charged before it is sent.
                    if let Some((_, sent)) = state.tcp.charges() {
                        sent.take(data.len())?;
                    }
                    Ok(Ok(()))
                })?;
                if let Err(code) = decided {
                    return Ok((Err(code),));
                }
                let sockets = acc.with_getter::<WasiSockets>(HostState::sockets);
                let sent = <WasiSockets as HostUdpSocketWithStore<HostState>>::send(
                    &sockets, socket, data, remote,
                )
                .await;
                Ok((answer(sent)?,))
            })
        },
    )?;
    types.func_wrap_concurrent(
        "[method]udp-socket.receive",
        |acc: &Accessor<HostState>, (socket,): (Resource<UdpSocket>,)| {
            Box::pin(async move {
                let sockets = acc.with_getter::<WasiSockets>(HostState::sockets);
                let got =
                    <WasiSockets as HostUdpSocketWithStore<HostState>>::receive(&sockets, socket)
                        .await;
                let (data, from) = match answer(got)? {
                    Ok(pair) => pair,
                    Err(code) => return Ok((Err(code),)),
                };
                if let Some((received, _)) = acc.with(|mut a| a.get().tcp.charges()) {
                    received.take(data.len())?;
                }
                Ok((Ok((data, from)),))
            })
        },
    )?;
    Ok(())
}

/// Whether `socket` is of the IPv4 family.
fn is_v4(state: &mut HostState, socket: &Resource<UdpSocket>) -> bool {
    let borrowed = Resource::<UdpSocket>::new_borrow(socket.rep());
    matches!(
        HostUdpSocket::get_address_family(&mut state.sockets(), borrowed),
        Ok(IpAddressFamily::Ipv4)
    )
}
