//! The network capability's third door: `wasi:sockets` for standard
//! components (database and mail clients, DNS, a server a guest runs for
//! itself on loopback). Off unless the grant holds a `tcp://` or `udp://`
//! rule or a `net.listen` address: then every name lookup, connection,
//! UDP peer and bind goes through the run's gate as one [`Op::Socket`]
//! (rules, the special-address check, audit, `max_ops`), before
//! wasmtime-wasi makes any syscall.
//!
//! - **Lookups** are this door's own: the gate allows a name some socket
//!   rule covers and the broker's resolver answers it once. The door keeps
//!   which name each answered address came from.
//! - **Connections, peers, binds** are decided in the guest's call, on the
//!   address it asks for and the name it came from; what an allowed
//!   decision leaves (`shared.rs`) is what wasmtime-wasi's own address
//!   check, run before its syscall, lets through. No decision, no socket.
//! - **Bytes**: what a socket receives is charged to `max_output_bytes`
//!   before the guest reads it, what it sends (and each datagram) to
//!   `max_sent_bytes` before it leaves; past either budget the run halts.
//! - **Held**: a run holds at most [`MAX_OPEN_SOCKETS`](crate::wasm::MAX_OPEN_SOCKETS)
//!   sockets it made (`create` is shadowed to count them, the socket's
//!   drop to free them), and as many connections accepted: each is a
//!   descriptor of the host process. Past it, `new-socket-limit`.
//!
//! `wasi02.rs` and `wasi03.rs` link the two versions' TCP, `udp02.rs` and
//! `udp03.rs` their UDP, `charged.rs` and `wasm/relay.rs` the charging.

mod charged;
mod shared;
mod udp02;
mod udp03;
mod wasi02;
mod wasi03;

pub(crate) use wasi02::add_to_linker;
pub(crate) use wasi03::add_to_linker as add_03_to_linker;

use super::super::held::{Held, on_drop};
use super::super::{HardLimit, HostState};
use crate::budget::OutputMeter;
use crate::gate::Decided;
use crate::net::{Egress, SocketOp};
use crate::op::{Failure, Op, Output};
use crate::wasm::relay::Charge;
use charged::{Charged, ChargedOut};
use shared::{Proof, Shared, Verdict};
use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use wasmtime_wasi::p2::Pollable;
use wasmtime_wasi::p2::bindings::sockets::network::ErrorCode;
use wasmtime_wasi::sockets::SocketAddrUse;

/// Looked-up addresses the door remembers for a run (each lookup is an op,
/// so `max_ops` bounds them too; past this, the oldest are forgotten and
/// connecting to one needs an IP rule).
const MAX_REMEMBERED: usize = 4096;

/// The socket state of one run, made on its first socket: most runs make
/// none, and an idle sandbox then holds one pointer instead of the state's
/// 200-odd bytes (row P7).
#[derive(Default)]
pub(crate) struct SocketDoor(Option<Box<Door>>);

/// What a run that made a socket, or whose grant allows sockets, holds.
struct Door {
    /// The TCP sockets the guest holds (`held.rs`).
    open: Held,
    /// The name each address a lookup answered came from.
    looked_up: HashMap<IpAddr, String>,
    /// In the order they were answered, to forget the oldest.
    order: std::collections::VecDeque<IpAddr>,
    /// The 0.3 TCP sockets whose one `receive` was taken (by rep).
    receiving: std::collections::HashSet<u32>,
    /// `None` when the grant holds no tcp rule (no socket can exist; a run
    /// pays nothing for the door).
    granted: Option<Granted>,
}

impl Default for Door {
    fn default() -> Self {
        Door {
            open: Held::sockets(),
            looked_up: HashMap::new(),
            order: Default::default(),
            receiving: Default::default(),
            granted: None,
        }
    }
}

/// What a run whose grant allows sockets holds.
struct Granted {
    /// What the door shares with wasmtime-wasi's address check.
    shared: Arc<Shared>,
    /// What received bytes are charged to (`max_output_bytes`).
    received: Charge,
    /// What sent bytes are charged to (`max_sent_bytes`).
    sent: Charge,
}

impl SocketDoor {
    /// The door of a run whose grant (`egress`) allows sockets, charging
    /// received bytes to `received` and sent ones to `sent`; and the
    /// address check for its WASI context.
    pub(crate) fn granted(
        [received, sent]: [Arc<OutputMeter>; 2],
        egress: &Egress,
    ) -> (
        Self,
        impl Fn(SocketAddr, SocketAddrUse) -> Verdict + Send + Sync + 'static,
    ) {
        let shared = Arc::new(Shared::new(egress.clone()));
        let door = Door {
            granted: Some(Granted {
                shared: shared.clone(),
                received: Charge::received(received),
                sent: Charge::sent(sent),
            }),
            ..Door::default()
        };
        (SocketDoor(Some(Box::new(door))), shared::checker(shared))
    }

    /// The state, made on first use.
    fn door(&mut self) -> &mut Door {
        self.0.get_or_insert_with(Default::default)
    }

    /// Whether the run holds as many sockets as it may.
    fn full(&self) -> bool {
        self.0.as_ref().is_some_and(|d| d.open.full())
    }

    /// The socket `rep` was made: it counts against the bound.
    fn hold(&mut self, rep: u32) {
        self.door().open.hold(rep);
    }

    /// Whether this is the first `receive` taken of the 0.3 socket `rep`.
    fn first_receive(&mut self, rep: u32) -> bool {
        self.door().receiving.insert(rep)
    }

    /// The name the address `ip` was looked up by, if a lookup answered it.
    fn name_of(&self, ip: &IpAddr) -> Option<String> {
        self.0.as_ref()?.looked_up.get(ip).cloned()
    }

    /// A socket is gone: its place among those the run holds (made, or
    /// accepted) is free. (With no state, the run holds none.)
    fn release(&mut self, rep: u32) {
        let Some(door) = &mut self.0 else {
            return;
        };
        door.receiving.remove(&rep);
        if !door.open.release(rep)
            && let Some(g) = &door.granted
        {
            g.shared.unaccept();
        }
    }

    /// What the address check shares, when sockets are granted.
    fn shared(&self) -> Option<&Shared> {
        self.0.as_ref()?.granted.as_ref().map(|g| &*g.shared)
    }

    /// What received and sent bytes are charged to, when sockets are
    /// granted.
    fn charges(&self) -> Option<(Charge, Charge)> {
        self.0
            .as_ref()?
            .granted
            .as_ref()
            .map(|g| (g.received.clone(), g.sent.clone()))
    }

    /// A bind of `asked` was tried: bound at `now`, `listen` may use it
    /// (when a decision chose it: an any-address bind is never listened
    /// on); not bound, its proof is not left behind.
    fn after_bind(&self, asked: SocketAddr, proof: Proof, now: Option<SocketAddr>) {
        let Some(shared) = self.shared() else {
            return;
        };
        match now {
            Some(local) if !asked.ip().is_unspecified() && local.ip().is_loopback() => {
                shared.bound(local)
            }
            Some(_) => {}
            None => {
                shared.take(asked, proof);
            }
        }
    }

    fn remember(&mut self, name: &str, addrs: &[IpAddr]) {
        let door = self.door();
        for ip in addrs {
            if door.looked_up.insert(*ip, name.to_string()).is_none() {
                door.order.push_back(*ip);
            }
            while door.order.len() > MAX_REMEMBERED {
                if let Some(old) = door.order.pop_front() {
                    door.looked_up.remove(&old);
                }
            }
        }
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
        let name = self.tcp.name_of(&ip);
        let op = SocketOp::connect(name.as_deref(), ip, addr.port());
        // As the guest wrote it, which is what the check sees (an
        // IPv4-mapped spelling never gets here: refused as an argument
        // before the decision).
        self.decide_socket(op, |s| s.leave(addr, Proof::Connect))
    }

    /// Decide datagrams with `addr` (once a run: a peer already allowed
    /// is not asked again); an allowed peer is kept for the check.
    fn decide_peer(&mut self, addr: SocketAddr) -> wasmtime::Result<Result<(), ErrorCode>> {
        if self.tcp.shared().is_some_and(|s| s.is_peer(addr)) {
            return Ok(Ok(()));
        }
        let ip = crate::net::canonical_ip(addr.ip());
        let name = self.tcp.name_of(&ip);
        let op = SocketOp::datagram(name.as_deref(), ip, addr.port());
        self.decide_socket(op, |s| s.add_peer(addr))
    }

    /// Decide a bind of the local address `addr` (TCP, or UDP when `udp`);
    /// an allowed one leaves its proof. The ephemeral any-address bind is
    /// no op: it is what a connect or a first datagram binds anyway.
    fn decide_bind(
        &mut self,
        addr: SocketAddr,
        udp: bool,
    ) -> wasmtime::Result<Result<(), ErrorCode>> {
        if shared::ephemeral(addr) {
            return Ok(Ok(()));
        }
        let proof = if udp { Proof::UdpBind } else { Proof::TcpBind };
        self.decide_socket(SocketOp::bind(addr, udp), |s| s.leave(addr, proof))
    }

    /// Decide `op`; `allowed` leaves what it allows for the check. A
    /// replayed run makes no socket.
    fn decide_socket(
        &mut self,
        op: SocketOp,
        allowed: impl FnOnce(&Shared),
    ) -> wasmtime::Result<Result<(), ErrorCode>> {
        let decided = self.gate.decide(Op::Socket(op));
        Ok(match refused(decided)? {
            Ok(_) if self.gate.replaying() => Err(ErrorCode::AccessDenied),
            Ok(_) => match self.tcp.shared() {
                Some(shared) => {
                    allowed(shared);
                    Ok(())
                }
                None => Err(ErrorCode::AccessDenied),
            },
            Err(code) => Err(code),
        })
    }
}

/// A wasmtime-wasi socket result, 0.2's or 0.3's, as the guest's: its
/// error code, or the trap it carries.
fn answer<T, C>(r: Result<T, wasmtime_wasi::TrappableError<C>>) -> wasmtime::Result<Result<T, C>>
where
    C: std::error::Error + Send + Sync + 'static,
{
    match r {
        Ok(v) => Ok(Ok(v)),
        Err(e) => Ok(Err(e.downcast()?)),
    }
}

/// 0.2's code for a refused or failed socket call as 0.3's.
fn socket_code(
    code: wasmtime_wasi::p2::bindings::sockets::network::ErrorCode,
) -> wasmtime_wasi::p3::bindings::sockets::types::ErrorCode {
    use wasmtime_wasi::p2::bindings::sockets::network::ErrorCode as C;
    use wasmtime_wasi::p3::bindings::sockets::types::ErrorCode;
    match code {
        C::AccessDenied => ErrorCode::AccessDenied,
        C::InvalidArgument => ErrorCode::InvalidArgument,
        _ => ErrorCode::Other(Some(format!("{code:?}"))),
    }
}

/// The address a bind asks for, as a grant can allow it: the any-address
/// at a chosen port (every interface) narrowed to the loopback address of
/// its family, the only interface a listen rule names, so a server written
/// to bind `0.0.0.0:8080` serves on `127.0.0.1:8080`. The any-address at
/// port 0 is left as it is: that is a client's bind, whose source address
/// the OS picks by route.
fn narrowed(addr: SocketAddr) -> SocketAddr {
    if !addr.ip().is_unspecified() || addr.port() == 0 {
        return addr;
    }
    let lo = match addr.ip() {
        IpAddr::V4(_) => IpAddr::V4(std::net::Ipv4Addr::LOCALHOST),
        IpAddr::V6(_) => IpAddr::V6(std::net::Ipv6Addr::LOCALHOST),
    };
    SocketAddr::new(lo, addr.port())
}

/// What a socket is about to do with an address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Aim {
    /// Connect to it, or send it datagrams.
    Dial,
    /// Bind a TCP socket there.
    BindTcp,
    /// Bind a UDP socket there.
    BindUdp,
}

/// Whether a socket of the IPv4 family (`v4`) or the IPv6 one may use
/// `addr` for `aim` at all: of the socket's family (an IPv6 one neither
/// IPv4-mapped nor the deprecated IPv4-compatible form); a TCP socket's
/// address no multicast or broadcast one; a dialled one neither
/// unspecified nor at port 0. 0.2's and 0.3's doors both answer the rest
/// `invalid-argument`, as wasmtime-wasi does, before any op.
fn fits(v4: bool, addr: SocketAddr, aim: Aim) -> bool {
    let ip = addr.ip();
    let family = match ip {
        IpAddr::V4(_) => v4,
        IpAddr::V6(v6) => {
            let compatible = matches!(v6.segments(), [0, 0, 0, 0, 0, 0, _, _])
                && !v6.is_unspecified()
                && !v6.is_loopback();
            !v4 && v6.to_ipv4_mapped().is_none() && !compatible
        }
    };
    let unicast = match ip {
        IpAddr::V4(v4) => !v4.is_multicast() && !v4.is_broadcast(),
        IpAddr::V6(v6) => !v6.is_multicast(),
    };
    let remote = addr.port() != 0 && !ip.is_unspecified();
    family
        && match aim {
            Aim::Dial => remote && unicast,
            Aim::BindTcp => unicast,
            Aim::BindUdp => true,
        }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_address_of_the_sockets_family_and_a_real_port_is_dialled() {
        let a = |s: &str| s.parse::<SocketAddr>().unwrap();
        let dialable = |v4, s| fits(v4, a(s), Aim::Dial);
        assert!(dialable(true, "127.0.0.1:5432"));
        assert!(dialable(false, "[::1]:5432"));
        assert!(!dialable(true, "127.0.0.1:0"));
        assert!(!dialable(true, "0.0.0.0:5432"));
        assert!(!dialable(true, "224.0.0.1:5432"));
        assert!(!dialable(false, "[::ffff:127.0.0.1]:5432"));
        assert!(!dialable(false, "[::7f00:1]:5432"));
        assert!(!dialable(false, "127.0.0.1:5432"));
        assert!(!dialable(true, "[::1]:5432"));
        // A bind may name port 0 and the any-address; a TCP one no
        // multicast or broadcast address, a UDP one may.
        assert!(fits(true, a("127.0.0.1:0"), Aim::BindTcp));
        assert!(fits(false, a("[::]:0"), Aim::BindTcp));
        assert!(!fits(true, a("224.0.0.1:0"), Aim::BindTcp));
        assert!(!fits(true, a("255.255.255.255:0"), Aim::BindTcp));
        assert!(fits(true, a("224.0.0.1:0"), Aim::BindUdp));
        assert!(!fits(false, a("127.0.0.1:0"), Aim::BindUdp));
        assert!(!fits(false, a("[::ffff:127.0.0.1]:0"), Aim::BindUdp));
        // Every interface narrows to loopback; a client's bind stays.
        assert_eq!(narrowed(a("0.0.0.0:8080")), a("127.0.0.1:8080"));
        assert_eq!(narrowed(a("[::]:8080")), a("[::1]:8080"));
        assert_eq!(narrowed(a("0.0.0.0:0")), a("0.0.0.0:0"));
        assert_eq!(narrowed(a("10.0.0.1:8080")), a("10.0.0.1:8080"));
    }

    #[test]
    fn lookups_are_remembered_within_a_bound() {
        let mut door = SocketDoor::default();
        for i in 0..(MAX_REMEMBERED as u32 + 10) {
            door.remember("n.test", &[IpAddr::from(i.to_be_bytes())]);
        }
        let held = door.0.as_ref().unwrap();
        assert_eq!(held.looked_up.len(), MAX_REMEMBERED);
        assert!(!held.looked_up.contains_key(&IpAddr::from([0, 0, 0, 0])));
        assert_eq!(door.name_of(&IpAddr::from([0, 0, 0, 9])), None);
        assert_eq!(
            door.name_of(&IpAddr::from([0, 0, 0, 10])).as_deref(),
            Some("n.test")
        );
        assert!(plausible("db.test") && plausible("::1") && plausible("a_b-c.d"));
        assert!(!plausible("a@b") && !plausible("a b") && !plausible("") && !plausible("ü.test"));
    }
}
