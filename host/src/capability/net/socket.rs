//! The network capability's socket part: a component's `wasi:sockets`
//! name lookups, TCP connections and UDP peers, decided by the grant's
//! `tcp://host:port` and `udp://host:port` rules (no rule, no socket; an
//! http(s) rule never allows one), and its binds, decided by the
//! `net.listen` loopback addresses.
//!
//! A lookup is allowed for a name some socket rule covers (at any of its
//! ports), and is answered by the broker's resolver, once. A connection
//! (or a UDP peer) is decided on the address the guest dials: it must come
//! from an allowed lookup of a name whose rule covers the port (a
//! special-purpose address, loopback or private, only when an IP or CIDR
//! rule names it, as for fetches), or be an IP literal an IP or CIDR rule
//! covers. The guest dials exactly the address decided; no name is looked
//! up again between decision and connection, so DNS rebinding gets
//! nowhere. A bind names a local address; only a listen rule allows one.
use super::rules::canonical_ip;
use super::{Egress, Scheme, special_range};
use crate::capability::{Grant, Held, Lent, OpKind, Output, Permit, Request, Trace};
use crate::failure::{ErrorKind, Failure, OpError};
use crate::violation::{Denial, Violation};
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

/// Most addresses a lookup answers (the rest are dropped).
pub const MAX_LOOKUP_ADDRESSES: usize = 32;
/// The longest one lookup may take, whatever is left of the wall budget.
const LOOKUP_TIMEOUT: Duration = Duration::from_secs(10);

/// A socket request of a component: a name lookup, a TCP connection, a
/// UDP peer, or a bind of a local address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SocketOp {
    what: What,
    /// `name`; `host:port` (`[v6]:port`) for a connection or a peer;
    /// `tcp://ip:port` or `udp://ip:port` for a bind.
    target: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum What {
    Lookup,
    /// A TCP connection (`Scheme::Tcp`) or a UDP peer (`Scheme::Udp`).
    /// `host` is the looked-up name the address came from, or the address
    /// itself; `addr` the address to dial (none when only the rules are
    /// asked, as `check --explain` does).
    Connect {
        scheme: Scheme,
        host: String,
        port: u16,
        addr: Option<IpAddr>,
    },
    /// A bind of a local address, for TCP or UDP.
    Bind(SocketAddr),
}

impl SocketOp {
    /// Look up `name`'s addresses.
    pub fn lookup(name: impl Into<String>) -> Self {
        let name = name.into();
        SocketOp {
            what: What::Lookup,
            target: name,
        }
    }

    /// Connect to `addr` at `port`; `name` is the name whose lookup gave
    /// the address, if one did.
    pub fn connect(name: Option<&str>, addr: IpAddr, port: u16) -> Self {
        Self::peer(Scheme::Tcp, name, addr, port)
    }

    /// Exchange UDP datagrams with `addr` at `port`; `name` as for
    /// [`connect`](Self::connect).
    pub fn datagram(name: Option<&str>, addr: IpAddr, port: u16) -> Self {
        Self::peer(Scheme::Udp, name, addr, port)
    }

    /// Bind the local address `addr` (port 0: an ephemeral port) for a TCP
    /// socket (to listen, or to connect from) or a UDP one (`udp`).
    pub fn bind(addr: SocketAddr, udp: bool) -> Self {
        let addr = SocketAddr::new(canonical_ip(addr.ip()), addr.port());
        let scheme = if udp { Scheme::Udp } else { Scheme::Tcp };
        SocketOp {
            target: format!("{}://{addr}", scheme.as_str()),
            what: What::Bind(addr),
        }
    }

    fn peer(scheme: Scheme, name: Option<&str>, addr: IpAddr, port: u16) -> Self {
        let addr = canonical_ip(addr);
        let host = name.map_or_else(|| bracketed(addr), str::to_string);
        SocketOp {
            target: format!("{host}:{port}"),
            what: What::Connect {
                scheme,
                host,
                port,
                addr: Some(addr),
            },
        }
    }

    /// A connection to `host:port` (`[v6]:port`) as rules alone decide it,
    /// no address dialled; `None` when `target` is not of that form.
    pub fn connect_to(target: &str) -> Option<Self> {
        Self::peer_to(Scheme::Tcp, target)
    }

    /// A connection (`Scheme::Tcp`) or UDP peer (`Scheme::Udp`) at
    /// `host:port` as rules alone decide it.
    pub(crate) fn peer_to(scheme: Scheme, target: &str) -> Option<Self> {
        let (host, port) = target.rsplit_once(':')?;
        let port = port.parse::<u16>().ok().filter(|p| *p > 0)?;
        if host.is_empty() {
            return None;
        }
        Some(SocketOp {
            target: target.to_string(),
            what: What::Connect {
                scheme,
                host: host.to_string(),
                port,
                addr: None,
            },
        })
    }

    /// A bind of `tcp://ip:port`, `udp://ip:port` or `ip:port` (TCP), as
    /// written in an audit record; `None` when `target` is not of that form.
    pub(crate) fn bind_to(target: &str) -> Option<Self> {
        let (udp, addr) = match target.split_once("://") {
            Some(("tcp", a)) => (false, a),
            Some(("udp", a)) => (true, a),
            Some(_) => return None,
            None => (false, target),
        };
        Some(Self::bind(addr.parse().ok()?, udp))
    }

    /// The address a connection dials or a bind binds, if it names one.
    pub fn address(&self) -> Option<SocketAddr> {
        match &self.what {
            What::Connect {
                port,
                addr: Some(ip),
                ..
            } => Some(SocketAddr::new(*ip, *port)),
            What::Bind(addr) => Some(*addr),
            _ => None,
        }
    }

    /// Whether it reaches another host: a TCP connection or a UDP peer
    /// (else a lookup or a bind), so the flow rules see it as a sink and
    /// a source.
    pub fn reaches_peer(&self) -> bool {
        matches!(self.what, What::Connect { .. })
    }
}

/// An address as a URL host writes it.
fn bracketed(ip: IpAddr) -> String {
    match ip {
        IpAddr::V4(v4) => v4.to_string(),
        IpAddr::V6(v6) => format!("[{v6}]"),
    }
}

impl Egress {
    /// The tcp rule that allows a connection to `host` (a name or an IP
    /// literal) at `port`, if one does.
    pub fn connect_rule(&self, host: &str, port: u16) -> Option<&str> {
        self.peer_rule(Scheme::Tcp, host, port)
    }

    /// The rule of the socket scheme `scheme` that allows `host` at
    /// `port`, if one does.
    pub fn peer_rule(&self, scheme: Scheme, host: &str, port: u16) -> Option<&str> {
        self.rules
            .iter()
            .find(|r| r.allows_peer(scheme, host, port))
            .map(|r| r.as_str())
    }

    /// The tcp or udp rule that covers `name` at any port, if one does.
    fn lookup_rule(&self, name: &str) -> Option<&str> {
        self.rules
            .iter()
            .find(|r| {
                let port = match r.port() {
                    super::PortPattern::Port(p) => p,
                    super::PortPattern::Any => 1,
                };
                r.allows_peer(r.scheme(), name, port)
            })
            .map(|r| r.as_str())
    }

    /// The listen rule that allows binding `addr`, if one does.
    pub fn listen_rule(&self, addr: SocketAddr) -> Option<&str> {
        self.listen
            .iter()
            .find(|r| r.covers(addr))
            .map(|r| r.as_str())
    }

    /// Whether any tcp rule or listen address is granted (else a
    /// component gets no TCP socket).
    pub fn grants_sockets(&self) -> bool {
        !self.listen.is_empty() || self.rules.iter().any(|r| r.scheme() == Scheme::Tcp)
    }

    /// Whether any udp rule is granted (else a component gets no UDP
    /// socket).
    pub fn grants_udp(&self) -> bool {
        self.rules.iter().any(|r| r.scheme() == Scheme::Udp)
    }
}

fn denied(message: String) -> Denial {
    Denial::new(Violation::EgressDenied, message)
}

/// The check of a connection or a UDP peer: the rule of its scheme for
/// host and port, then, for an address a name gave, the special-purpose
/// address check.
fn check_connect(
    egress: &Egress,
    scheme: Scheme,
    host: &str,
    port: u16,
    addr: Option<IpAddr>,
) -> Result<Permit, Denial> {
    let Some(rule) = egress.peer_rule(scheme, host, port) else {
        return Err(denied(format!(
            "{}:{port} is not covered by any {} rule",
            crate::bound::clip(host),
            scheme.as_str()
        )));
    };
    let Some(ip) = addr else {
        return Ok(Permit::new(rule.to_string(), Grant::Nothing));
    };
    // A host the URL parser reads as an address (`127.0.0.1`, `0x7f.1`)
    // is that address, not a name: the address dialled must be it.
    let written = host_ip(host);
    if written.is_some_and(|w| w != canonical_ip(ip)) {
        return Err(Denial::new(
            Violation::InvalidRequest,
            format!("{} is not the address {ip}", crate::bound::clip(host)),
        ));
    }
    let named = written.is_none();
    if named && let Some(range) = special_range(ip) {
        let Some(ip_rule) = egress.peer_rule(scheme, &bracketed(ip), port) else {
            return Err(denied(format!(
                "{} resolves to {range} address {ip}",
                crate::bound::clip(host)
            )));
        };
        return Ok(Permit::new(
            ip_rule.to_string(),
            Grant::Socket(SocketAddr::new(ip, port)),
        ));
    }
    Ok(Permit::new(
        rule.to_string(),
        Grant::Socket(SocketAddr::new(ip, port)),
    ))
}

impl Request for SocketOp {
    fn kind(&self) -> OpKind {
        match self.what {
            What::Lookup => OpKind::NetLookup,
            What::Connect {
                scheme: Scheme::Udp,
                ..
            } => OpKind::NetDatagram,
            What::Connect { .. } => OpKind::NetConnect,
            What::Bind(_) => OpKind::NetListen,
        }
    }

    fn target(&self) -> &str {
        &self.target
    }

    fn check(&self, held: &Held<'_>) -> Result<Permit, Denial> {
        match &self.what {
            What::Lookup => match held.egress.lookup_rule(&self.target) {
                Some(rule) => Ok(Permit::new(
                    rule.to_string(),
                    Grant::Lookup(self.target.clone()),
                )),
                None => Err(denied(format!(
                    "{} is not covered by any tcp or udp rule",
                    crate::bound::clip(&self.target)
                ))),
            },
            What::Connect {
                scheme,
                host,
                port,
                addr,
            } => check_connect(held.egress, *scheme, host, *port, *addr),
            What::Bind(addr) => match held.egress.listen_rule(*addr) {
                Some(rule) => Ok(Permit::new(rule.to_string(), Grant::Socket(*addr))),
                None => Err(denied(format!(
                    "{addr} is not a loopback address a listen rule covers"
                ))),
            },
        }
    }

    fn perform(
        &self,
        permit: Permit,
        held: &Held<'_>,
        lent: &Lent<'_>,
    ) -> (Result<Output, Failure>, Trace) {
        match permit.grant {
            // The connection itself is made by the guest's socket, which
            // may dial the decided address and no other.
            Grant::Socket(addr) => {
                let trace = Trace {
                    address: Some(addr),
                    ..Trace::default()
                };
                (Ok(Output::Admitted), trace)
            }
            Grant::Lookup(name) => (lookup(held, &name, lent.wall_left), Trace::default()),
            _ => (
                Err(Failure::Denied(Denial::new(
                    Violation::InvalidRequest,
                    "a socket op needs a socket permit",
                ))),
                Trace::default(),
            ),
        }
    }

    fn slow(&self) -> bool {
        matches!(self.what, What::Lookup)
    }
}

/// The address `host` is written as, if the URL parser reads it as one
/// (every IPv4 spelling included).
fn host_ip(host: &str) -> Option<IpAddr> {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    if let Ok(ip) = bare.parse::<IpAddr>() {
        return Some(canonical_ip(ip));
    }
    match url::Url::parse(&format!("http://{host}/")).ok()?.host()? {
        url::Host::Ipv4(v4) => Some(IpAddr::V4(v4)),
        url::Host::Ipv6(v6) => Some(canonical_ip(IpAddr::V6(v6))),
        url::Host::Domain(_) => None,
    }
}

/// Answer a lookup the rules allowed: an address, however written, is
/// itself; a name goes to the broker's resolver once, within the wall
/// budget left.
fn lookup(held: &Held<'_>, name: &str, wall_left: Duration) -> Result<Output, Failure> {
    if let Some(ip) = host_ip(name) {
        return Ok(Output::Addresses {
            addresses: vec![ip],
        });
    }
    let timeout = wall_left.min(LOOKUP_TIMEOUT);
    match held.resolver.lookup(name, timeout) {
        Ok(mut ips) => {
            ips.truncate(MAX_LOOKUP_ADDRESSES);
            Ok(Output::Addresses {
                addresses: ips.into_iter().map(canonical_ip).collect(),
            })
        }
        Err(e) if e.kind() == std::io::ErrorKind::TimedOut && timeout == wall_left => {
            Err(Failure::Denied(Denial::new(
                Violation::MaxWall,
                format!(
                    "name lookup ran past the {} ms left of the wall budget",
                    wall_left.as_millis()
                ),
            )))
        }
        Err(e) => Err(Failure::Error(OpError::new(
            ErrorKind::Network,
            format!("cannot resolve {}: {e}", crate::bound::clip(name)),
        ))),
    }
}

#[cfg(test)]
#[path = "socket_tests.rs"]
mod tests;
