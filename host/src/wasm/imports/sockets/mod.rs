//! The network capability's third door: `wasi:sockets@0.2` for standard
//! components (database and mail clients, anything written against
//! `std::net`). Off unless the grant holds a `tcp://host:port` rule: then
//! TCP is enabled in the guest's WASI context and every name lookup and
//! connection goes through the run's gate as one [`Op::Socket`] (rules,
//! the special-address check, audit, `max_ops`).
//!
//! - **Lookups** are this door's own (`ip-name-lookup` is replaced whole,
//!   its stream resource included): the gate allows a name some tcp rule
//!   covers and the broker's resolver answers it once. The door keeps
//!   which name each answered address came from.
//! - **Connections**: `start-connect` is decided here, on the address the
//!   guest dials and the name it came from; an allowed one leaves a proof
//!   for that address, which wasmtime-wasi's own address check (run when
//!   its socket connects) takes, once. No proof, no connection: the check
//!   refuses every address the gate did not allow just before.
//! - **Bytes**: what a connection receives is charged to
//!   `max_output_bytes` as the guest reads it (its input stream is
//!   wrapped in `finish-connect`); past the budget the run halts.
//! - **Held**: a run holds at most [`MAX_OPEN_SOCKETS`](crate::wasm::MAX_OPEN_SOCKETS)
//!   TCP sockets at once (`create-tcp-socket` is shadowed to count them,
//!   the socket's drop to free them): each is a descriptor of the host
//!   process. Past it, `new-socket-limit`.
//! - Not provided: binding a chosen address, listening, UDP. wasmtime-wasi
//!   asks the same address check, which allows only the ephemeral
//!   any-address bind a connect makes, so they fail with `access-denied`.

mod charged;
mod wasi03;

pub(crate) use wasi03::add_to_linker as add_03_to_linker;

use super::super::held::{Held, on_drop};
use super::super::{HardLimit, HostState};
use crate::budget::OutputMeter;
use crate::gate::Decided;
use crate::net::SocketOp;
use crate::op::{Failure, Op, Output};
use charged::Charged;
use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use wasmtime::component::{Linker, Resource};
use wasmtime_wasi::p2::bindings::sockets::network::{
    ErrorCode, IpAddress, IpAddressFamily, IpSocketAddress, Network,
};
use wasmtime_wasi::p2::bindings::sockets::tcp::HostTcpSocket as _;
use wasmtime_wasi::p2::bindings::sockets::tcp_create_socket::Host as _;
use wasmtime_wasi::p2::{DynInputStream, DynPollable, Pollable, TcpSocket};
use wasmtime_wasi::sockets::{SocketAddrUse, WasiSocketsView};

/// The interfaces' versions as this wasmtime-wasi links them.
const IP_NAME_LOOKUP: &str = "wasi:sockets/ip-name-lookup@0.2.12";
const TCP: &str = "wasi:sockets/tcp@0.2.12";
const TCP_CREATE_SOCKET: &str = "wasi:sockets/tcp-create-socket@0.2.12";

/// Looked-up addresses the door remembers for a run (each lookup is an op,
/// so `max_ops` bounds them too; past this, the oldest are forgotten and
/// connecting to one needs an IP rule).
const MAX_REMEMBERED: usize = 4096;

/// Addresses the gate allowed a connection to that no socket has dialled
/// yet, shared with the address check wasmtime-wasi runs when a socket
/// connects.
type Proofs = Arc<Mutex<Vec<SocketAddr>>>;

/// wasmtime-wasi's address check's answer.
type Verdict = std::pin::Pin<Box<dyn Future<Output = bool> + Send + Sync>>;

/// Allowed connections not yet dialled a run may have at once.
const MAX_PROOFS: usize = 256;

/// The socket state of one run.
pub(crate) struct SocketDoor {
    /// The TCP sockets the guest holds (`held.rs`).
    open: Held,
    /// The name each address a lookup answered came from.
    looked_up: HashMap<IpAddr, String>,
    /// In the order they were answered, to forget the oldest.
    order: std::collections::VecDeque<IpAddr>,
    /// `None` when the grant holds no tcp rule (no socket can exist; a run
    /// pays nothing for the door).
    granted: Option<Granted>,
}

impl Default for SocketDoor {
    fn default() -> Self {
        SocketDoor {
            open: Held::sockets(),
            looked_up: HashMap::new(),
            order: Default::default(),
            granted: None,
        }
    }
}

/// What a run whose grant allows sockets holds.
struct Granted {
    proofs: Proofs,
    /// What received bytes are charged to.
    meter: Arc<OutputMeter>,
}

impl SocketDoor {
    /// The door of a run whose grant allows sockets, charging received
    /// bytes to `meter`; and the address check for its WASI context.
    pub(crate) fn granted(
        meter: Arc<OutputMeter>,
    ) -> (
        Self,
        impl Fn(SocketAddr, SocketAddrUse) -> Verdict + Send + Sync + 'static,
    ) {
        let proofs = Proofs::default();
        let door = SocketDoor {
            granted: Some(Granted {
                proofs: proofs.clone(),
                meter,
            }),
            ..SocketDoor::default()
        };
        let check = move |addr: SocketAddr, used: SocketAddrUse| {
            let ok = match used {
                SocketAddrUse::TcpConnect => take(&proofs, addr),
                // What a connect of an unbound socket asks: the OS picks
                // the local address and port.
                SocketAddrUse::TcpBind => addr.ip().is_unspecified() && addr.port() == 0,
                _ => false,
            };
            Box::pin(async move { ok }) as Verdict
        };
        (door, check)
    }

    fn remember(&mut self, name: &str, addrs: &[IpAddr]) {
        for ip in addrs {
            if self.looked_up.insert(*ip, name.to_string()).is_none() {
                self.order.push_back(*ip);
            }
            while self.order.len() > MAX_REMEMBERED {
                if let Some(old) = self.order.pop_front() {
                    self.looked_up.remove(&old);
                }
            }
        }
    }
}

/// Leave a proof for `addr`. Past [`MAX_PROOFS`] (connections decided and
/// never dialled: a guest dropping sockets unpolled), the oldest goes.
fn leave(proofs: &Proofs, addr: SocketAddr) {
    let mut p = proofs.lock().unwrap_or_else(|e| e.into_inner());
    p.push(addr);
    if p.len() > MAX_PROOFS {
        p.remove(0);
    }
}

/// Take one proof for `addr`, if there is one.
fn take(proofs: &Proofs, addr: SocketAddr) -> bool {
    let mut p = proofs.lock().unwrap_or_else(|e| e.into_inner());
    match p.iter().position(|a| *a == addr) {
        Some(i) => {
            p.swap_remove(i);
            true
        }
        None => false,
    }
}

/// A lookup's answer, as the guest reads it address by address.
pub(crate) struct Answer(std::vec::IntoIter<IpAddr>);

#[wasmtime_wasi::async_trait]
impl Pollable for Answer {
    // Answered before the stream is handed out.
    async fn ready(&mut self) {}
}

/// The guest's answer to a soft refusal or failure, or the trap of a hard
/// limit.
fn refused(d: Decided) -> wasmtime::Result<Result<Output, ErrorCode>> {
    match d.outcome {
        Ok(out) => Ok(Ok(out)),
        Err(Failure::Denied(d)) if d.hard => Err(wasmtime::Error::new(HardLimit(d.violation))),
        Err(Failure::Denied(_)) => Ok(Err(ErrorCode::AccessDenied)),
        Err(Failure::Error(_)) => Ok(Err(ErrorCode::NameUnresolvable)),
    }
}

/// Whether `name` can be a host name or an IP literal at all (anything
/// else is `invalid-argument`, as wasmtime-wasi answers, and no op).
fn plausible(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 253
        && (name.parse::<IpAddr>().is_ok()
            || name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_')))
}

impl HostState {
    fn resolve(&mut self, name: String) -> wasmtime::Result<Result<Answer, ErrorCode>> {
        if !plausible(&name) {
            return Ok(Err(ErrorCode::InvalidArgument));
        }
        let decided = self.gate.decide(Op::Socket(SocketOp::lookup(name.clone())));
        Ok(match refused(decided)? {
            Ok(Output::Addresses { addresses }) => {
                self.tcp.remember(&name, &addresses);
                Ok(Answer(addresses.into_iter()))
            }
            Ok(_) => Err(ErrorCode::NameUnresolvable),
            Err(code) => Err(code),
        })
    }

    /// Decide a connection to `addr`; an allowed one leaves its proof.
    fn decide_connect(&mut self, addr: SocketAddr) -> wasmtime::Result<Result<(), ErrorCode>> {
        let ip = crate::net::canonical_ip(addr.ip());
        let name = self.tcp.looked_up.get(&ip).cloned();
        let op = SocketOp::connect(name.as_deref(), ip, addr.port());
        let decided = self.gate.decide(Op::Socket(op));
        Ok(match refused(decided)? {
            Ok(_) if self.gate.replaying() => Err(ErrorCode::AccessDenied),
            Ok(_) => {
                let Some(granted) = &self.tcp.granted else {
                    return Ok(Err(ErrorCode::AccessDenied));
                };
                // As the guest wrote it, which is what the check sees (an
                // IPv4-mapped spelling never gets here: refused as an
                // argument before the decision).
                leave(&granted.proofs, addr);
                Ok(())
            }
            Err(code) => Err(code),
        })
    }
}

/// Link the door: `ip-name-lookup` replaced whole, `tcp-socket`'s
/// `start-connect` and `finish-connect` wrapped. Called after
/// wasmtime-wasi's own sockets are linked.
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
            if state.tcp.open.full() {
                return Ok((Err(ErrorCode::NewSocketLimit),));
            }
            let made = answer(state.sockets().create_tcp_socket(family))?;
            if let Ok(socket) = &made {
                state.tcp.open.hold(socket.rep());
            }
            Ok((made,))
        },
    )?;
    let mut tcp = linker.instance(TCP)?;
    // A socket's drop, as wasmtime-wasi's, and its place among the sockets
    // the run holds made free.
    on_drop::<TcpSocket>(&mut tcp, "tcp-socket", |state, rep| {
        state.tcp.open.release(rep)
    })?;
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
                if let Some(granted) = &state.tcp.granted {
                    take(&granted.proofs, addr);
                }
            }
            Ok((started,))
        },
    )?;
    tcp.func_wrap(
        "[method]tcp-socket.finish-connect",
        |mut store, (socket,): (Resource<TcpSocket>,)| {
            let state = store.data_mut();
            let parent = Resource::<TcpSocket>::new_borrow(socket.rep());
            let (input, output) = match answer(state.sockets().finish_connect(socket))? {
                Ok(pair) => pair,
                Err(code) => return Ok((Err(code),)),
            };
            let input = match state.tcp.granted.as_ref().map(|g| g.meter.clone()) {
                Some(meter) => {
                    let inner = state.table.delete(input)?;
                    let charged: DynInputStream = Box::new(Charged { inner, meter });
                    // Where wasmtime-wasi put it: a child of the socket.
                    state.table.push_child(charged, &parent)?
                }
                None => input,
            };
            Ok((Ok((input, output)),))
        },
    )?;
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
    if !dialable(matches!(family, IpAddressFamily::Ipv4), addr) {
        return Err(ErrorCode::InvalidArgument);
    }
    Ok(())
}

/// Whether a socket of the IPv4 family (`v4`) or the IPv6 one may dial
/// `addr` at all: not port 0, an unspecified, multicast or IPv4-mapped
/// IPv6 address, or one of the other family (0.2's and 0.3's doors both
/// answer those `invalid-argument`, as wasmtime-wasi does, before any op).
fn dialable(v4: bool, addr: SocketAddr) -> bool {
    let ip = addr.ip();
    let mapped = matches!(ip, IpAddr::V6(v6) if v6.to_ipv4_mapped().is_some());
    let same_family = v4 == ip.is_ipv4();
    addr.port() != 0 && !ip.is_unspecified() && !ip.is_multicast() && !mapped && same_family
}

/// A wasmtime-wasi socket result as the guest's: its error code, or the
/// trap it carries.
fn answer<T>(
    r: Result<T, wasmtime_wasi::p2::SocketError>,
) -> wasmtime::Result<Result<T, ErrorCode>> {
    match r {
        Ok(v) => Ok(Ok(v)),
        Err(e) => Ok(Err(e.downcast()?)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_address_check_allows_only_what_a_decision_left_once() {
        let (door, check) = SocketDoor::granted(Arc::new(OutputMeter::new(1 << 20)));
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let ask = |a: &str, used| rt.block_on(check(a.parse().unwrap(), used));
        // Nothing decided: nothing connects.
        assert!(!ask("127.0.0.1:5432", SocketAddrUse::TcpConnect));
        let proofs = &door.granted.as_ref().unwrap().proofs;
        proofs
            .lock()
            .unwrap()
            .push("127.0.0.1:5432".parse().unwrap());
        assert!(!ask("127.0.0.1:5433", SocketAddrUse::TcpConnect));
        assert!(ask("127.0.0.1:5432", SocketAddrUse::TcpConnect));
        // Taken: a second connection needs a decision of its own.
        assert!(!ask("127.0.0.1:5432", SocketAddrUse::TcpConnect));
        // The ephemeral bind of a connect, and nothing else of binding,
        // listening or UDP.
        assert!(ask("0.0.0.0:0", SocketAddrUse::TcpBind));
        assert!(ask("[::]:0", SocketAddrUse::TcpBind));
        assert!(!ask("127.0.0.1:0", SocketAddrUse::TcpBind));
        assert!(!ask("0.0.0.0:8080", SocketAddrUse::TcpBind));
        assert!(!ask("0.0.0.0:0", SocketAddrUse::TcpListen));
        assert!(!ask("127.0.0.1:9", SocketAddrUse::TcpAccept));
        assert!(!ask("0.0.0.0:0", SocketAddrUse::UdpBind));
        assert!(!ask("127.0.0.1:53", SocketAddrUse::UdpSend));
        assert!(!ask("127.0.0.1:53", SocketAddrUse::UdpReceive));
    }

    #[test]
    fn proofs_left_undialled_are_bounded_oldest_first() {
        let proofs = Proofs::default();
        let addr = |i: usize| SocketAddr::from(([10, 0, (i >> 8) as u8, i as u8], 5432));
        for i in 0..MAX_PROOFS + 3 {
            leave(&proofs, addr(i));
        }
        assert_eq!(proofs.lock().unwrap().len(), MAX_PROOFS);
        // The three oldest are gone; the newest are still there, once each.
        for i in 0..3 {
            assert!(!take(&proofs, addr(i)), "{i}");
        }
        assert!(take(&proofs, addr(MAX_PROOFS + 2)));
        assert!(!take(&proofs, addr(MAX_PROOFS + 2)));
        assert!(take(&proofs, addr(3)));
    }

    #[test]
    fn only_an_address_of_the_sockets_family_and_a_real_port_is_dialled() {
        let a = |s: &str| s.parse::<SocketAddr>().unwrap();
        assert!(dialable(true, a("127.0.0.1:5432")));
        assert!(dialable(false, a("[::1]:5432")));
        assert!(!dialable(true, a("127.0.0.1:0")));
        assert!(!dialable(true, a("0.0.0.0:5432")));
        assert!(!dialable(true, a("224.0.0.1:5432")));
        assert!(!dialable(false, a("[::ffff:127.0.0.1]:5432")));
        assert!(!dialable(false, a("127.0.0.1:5432")));
        assert!(!dialable(true, a("[::1]:5432")));
    }

    #[test]
    fn lookups_are_remembered_within_a_bound() {
        let mut door = SocketDoor::default();
        for i in 0..(MAX_REMEMBERED as u32 + 10) {
            door.remember("n.test", &[IpAddr::from(i.to_be_bytes())]);
        }
        assert_eq!(door.looked_up.len(), MAX_REMEMBERED);
        assert!(!door.looked_up.contains_key(&IpAddr::from([0, 0, 0, 0])));
        assert!(plausible("db.test") && plausible("::1") && plausible("a_b-c.d"));
        assert!(!plausible("a@b") && !plausible("a b") && !plausible("") && !plausible("ü.test"));
    }
}
