//! What the socket door shares with wasmtime-wasi's address check, and the
//! check itself. wasmtime-wasi asks the check before each syscall a socket
//! makes (bind, connect, listen, accept, each datagram sent or received);
//! the check cannot reach the run's gate, so the door decides first, in
//! the guest's call, and leaves here what the decision allowed:
//!
//! - a **proof** for a connection or an explicit bind, taken once;
//! - the **listening** addresses: where an allowed bind left a socket
//!   (its real port, when the OS picked one), which `listen` may use;
//! - the **peers**: the UDP addresses a decision allowed this run.
//!
//! What no decision stands behind is refused (`access-denied`), but for
//! the ephemeral any-address bind the OS makes for a connect or a first
//! datagram (no op: it binds nothing the guest chose), an accepted
//! connection while the run holds fewer than
//! [`MAX_OPEN_SOCKETS`](crate::wasm::MAX_OPEN_SOCKETS) of them (a
//! listener is on loopback, so its peers are this machine's), and a
//! datagram received from an address a udp IP or CIDR rule names.

use crate::net::{Egress, Scheme};
use crate::wasm::MAX_OPEN_SOCKETS;
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use wasmtime_wasi::sockets::SocketAddrUse;

/// Allowed connections and binds not yet made a run may have at once.
pub(super) const MAX_PROOFS: usize = 256;
/// Listening addresses, and UDP peers, a run keeps (past it the oldest
/// are forgotten: a later send to one is decided again).
pub(super) const MAX_KEPT: usize = 256;

/// What a proof allows, once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Proof {
    Connect,
    TcpBind,
    UdpBind,
}

/// wasmtime-wasi's address check's answer.
pub(super) type Verdict = std::pin::Pin<Box<dyn Future<Output = bool> + Send + Sync>>;

/// The door's side of the check.
#[derive(Default)]
pub(super) struct Shared {
    proofs: Mutex<VecDeque<(SocketAddr, Proof)>>,
    listening: Mutex<VecDeque<SocketAddr>>,
    peers: Mutex<VecDeque<SocketAddr>>,
    /// Accepted connections the guest holds.
    accepted: AtomicUsize,
    /// The grant's rules, for the sources of datagrams.
    egress: Egress,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Push `item`, forgetting the oldest past `max`.
fn keep<T>(q: &Mutex<VecDeque<T>>, item: T, max: usize) {
    let mut q = lock(q);
    q.push_back(item);
    while q.len() > max {
        q.pop_front();
    }
}

/// The ephemeral any-address bind the OS makes for a connect or a send.
pub(super) fn ephemeral(addr: SocketAddr) -> bool {
    addr.ip().is_unspecified() && addr.port() == 0
}

impl Shared {
    pub(super) fn new(egress: Egress) -> Self {
        Shared {
            egress,
            ..Shared::default()
        }
    }

    /// Leave a proof for `addr`. Past [`MAX_PROOFS`] (decided and never
    /// made: a guest dropping sockets unpolled), the oldest goes.
    pub(super) fn leave(&self, addr: SocketAddr, what: Proof) {
        keep(&self.proofs, (addr, what), MAX_PROOFS);
    }

    /// Take one proof for `addr`, if there is one.
    pub(super) fn take(&self, addr: SocketAddr, what: Proof) -> bool {
        let mut p = lock(&self.proofs);
        match p.iter().position(|x| *x == (addr, what)) {
            Some(i) => {
                p.remove(i);
                true
            }
            None => false,
        }
    }

    /// A socket was bound where a decision allowed: `listen` may use it.
    pub(super) fn bound(&self, local: SocketAddr) {
        keep(&self.listening, local, MAX_KEPT);
    }

    /// Whether a decision allowed UDP datagrams with `addr` this run.
    pub(super) fn is_peer(&self, addr: SocketAddr) -> bool {
        lock(&self.peers).contains(&addr)
    }

    /// A decision allowed UDP datagrams with `addr`.
    pub(super) fn add_peer(&self, addr: SocketAddr) {
        if !self.is_peer(addr) {
            keep(&self.peers, addr, MAX_KEPT);
        }
    }

    /// An accepted connection is gone.
    pub(super) fn unaccept(&self) {
        let _ = self
            .accepted
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1));
    }

    /// Whether a datagram from `addr` may reach the guest.
    fn may_receive(&self, addr: SocketAddr) -> bool {
        if self.is_peer(addr) {
            return true;
        }
        let ip = crate::net::canonical_ip(addr.ip());
        let host = match ip {
            std::net::IpAddr::V4(v4) => v4.to_string(),
            std::net::IpAddr::V6(v6) => format!("[{v6}]"),
        };
        // An address literal matches IP and CIDR rules only.
        self.egress
            .peer_rule(Scheme::Udp, &host, addr.port())
            .is_some()
    }

    /// wasmtime-wasi's address check: what the door left, and nothing
    /// else.
    pub(super) fn check(&self, addr: SocketAddr, used: SocketAddrUse) -> bool {
        match used {
            SocketAddrUse::TcpConnect => self.take(addr, Proof::Connect),
            SocketAddrUse::TcpBind => ephemeral(addr) || self.take(addr, Proof::TcpBind),
            SocketAddrUse::UdpBind => ephemeral(addr) || self.take(addr, Proof::UdpBind),
            SocketAddrUse::TcpListen => lock(&self.listening).contains(&addr),
            SocketAddrUse::TcpAccept => self
                .accepted
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                    (n < MAX_OPEN_SOCKETS).then_some(n + 1)
                })
                .is_ok(),
            SocketAddrUse::UdpSend => self.is_peer(addr),
            SocketAddrUse::UdpReceive => self.may_receive(addr),
        }
    }
}

/// The check as wasmtime-wasi takes it.
pub(super) fn checker(
    shared: std::sync::Arc<Shared>,
) -> impl Fn(SocketAddr, SocketAddrUse) -> Verdict + Send + Sync + 'static {
    move |addr, used| {
        let ok = shared.check(addr, used);
        Box::pin(async move { ok }) as Verdict
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::EgressRule;

    fn a(s: &str) -> SocketAddr {
        s.parse().unwrap()
    }

    fn shared(rules: &[&str]) -> Shared {
        let egress = Egress {
            rules: rules
                .iter()
                .map(|r| EgressRule::parse(r).unwrap())
                .collect(),
            ..Egress::default()
        };
        Shared::new(egress)
    }

    #[test]
    fn connections_and_binds_need_a_proof_each_taken_once() {
        let s = shared(&[]);
        assert!(!s.check(a("127.0.0.1:5432"), SocketAddrUse::TcpConnect));
        s.leave(a("127.0.0.1:5432"), Proof::Connect);
        assert!(!s.check(a("127.0.0.1:5433"), SocketAddrUse::TcpConnect));
        // A proof of one kind is no proof of another.
        assert!(!s.check(a("127.0.0.1:5432"), SocketAddrUse::TcpBind));
        assert!(s.check(a("127.0.0.1:5432"), SocketAddrUse::TcpConnect));
        assert!(!s.check(a("127.0.0.1:5432"), SocketAddrUse::TcpConnect));
        s.leave(a("127.0.0.1:0"), Proof::UdpBind);
        assert!(!s.check(a("127.0.0.1:0"), SocketAddrUse::TcpBind));
        assert!(s.check(a("127.0.0.1:0"), SocketAddrUse::UdpBind));
        assert!(!s.check(a("127.0.0.1:0"), SocketAddrUse::UdpBind));
        // The ephemeral any-address bind of a connect or a first datagram.
        for used in [SocketAddrUse::TcpBind, SocketAddrUse::UdpBind] {
            assert!(s.check(a("0.0.0.0:0"), used));
            assert!(s.check(a("[::]:0"), used));
            assert!(!s.check(a("0.0.0.0:8080"), used));
        }
    }

    #[test]
    fn proofs_left_unused_are_bounded_oldest_first() {
        let s = shared(&[]);
        let addr = |i: usize| SocketAddr::from(([10, 0, (i >> 8) as u8, i as u8], 5432));
        for i in 0..MAX_PROOFS + 3 {
            s.leave(addr(i), Proof::Connect);
        }
        assert_eq!(lock(&s.proofs).len(), MAX_PROOFS);
        // The three oldest are gone; the newest are still there, once each.
        for i in 0..3 {
            assert!(!s.take(addr(i), Proof::Connect), "{i}");
        }
        assert!(s.take(addr(MAX_PROOFS + 2), Proof::Connect));
        assert!(!s.take(addr(MAX_PROOFS + 2), Proof::Connect));
        assert!(s.take(addr(3), Proof::Connect));
    }

    #[test]
    fn listen_only_where_an_allowed_bind_left_a_socket() {
        let s = shared(&[]);
        assert!(!s.check(a("0.0.0.0:0"), SocketAddrUse::TcpListen));
        assert!(!s.check(a("127.0.0.1:40000"), SocketAddrUse::TcpListen));
        s.bound(a("127.0.0.1:40000"));
        assert!(s.check(a("127.0.0.1:40000"), SocketAddrUse::TcpListen));
        assert!(!s.check(a("127.0.0.1:40001"), SocketAddrUse::TcpListen));
        for i in 0..MAX_KEPT as u16 {
            s.bound(a(&format!("127.0.0.1:{}", 1000 + i)));
        }
        assert!(!s.check(a("127.0.0.1:40000"), SocketAddrUse::TcpListen));
    }

    #[test]
    fn accepted_connections_are_bounded_and_freed() {
        let s = shared(&[]);
        for _ in 0..MAX_OPEN_SOCKETS {
            assert!(s.check(a("127.0.0.1:9"), SocketAddrUse::TcpAccept));
        }
        assert!(!s.check(a("127.0.0.1:9"), SocketAddrUse::TcpAccept));
        s.unaccept();
        assert!(s.check(a("127.0.0.1:9"), SocketAddrUse::TcpAccept));
        let fresh = shared(&[]);
        fresh.unaccept();
        assert_eq!(fresh.accepted.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn datagrams_go_to_decided_peers_and_come_from_them_or_ip_rules() {
        let s = shared(&[
            "udp://127.0.0.1:*",
            "udp://dns.test:53",
            "tcp://10.0.0.1:53",
        ]);
        let peer = a("93.184.216.34:53");
        assert!(!s.check(peer, SocketAddrUse::UdpSend));
        assert!(!s.check(peer, SocketAddrUse::UdpReceive));
        s.add_peer(peer);
        assert!(s.check(peer, SocketAddrUse::UdpSend));
        assert!(s.check(peer, SocketAddrUse::UdpReceive));
        // Received from an address an IP rule names, never sent to.
        assert!(s.check(a("127.0.0.1:40000"), SocketAddrUse::UdpReceive));
        assert!(!s.check(a("127.0.0.1:40000"), SocketAddrUse::UdpSend));
        // Neither a tcp rule nor a name rule lets a stranger's datagram in.
        assert!(!s.check(a("10.0.0.1:53"), SocketAddrUse::UdpReceive));
        assert!(!s.check(a("[::1]:53"), SocketAddrUse::UdpReceive));
    }
}
