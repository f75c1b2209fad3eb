//! The network capability's TCP part: a component's `wasi:sockets` name
//! lookups and connections, decided by the grant's `tcp://host:port` rules
//! (no rule, no socket; an http(s) rule never allows one).
//!
//! A lookup is allowed for a name some tcp rule covers (at any of its
//! ports), and is answered by the broker's resolver, once. A connection is
//! decided on the address the guest dials: it must come from an allowed
//! lookup of a name whose rule covers the port (a special-purpose address,
//! loopback or private, only when an IP or CIDR tcp rule names it, as for
//! fetches), or be an IP literal an IP or CIDR tcp rule covers. The guest
//! dials exactly the address decided; no name is looked up again between
//! decision and connection, so DNS rebinding gets nowhere.

use super::rules::canonical_ip;
use super::{Egress, special_range};
use crate::capability::{Grant, Held, Lent, OpKind, Output, Permit, Request, Trace};
use crate::failure::{ErrorKind, Failure, OpError};
use crate::violation::{Denial, Violation};
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

/// Most addresses a lookup answers (the rest are dropped).
pub const MAX_LOOKUP_ADDRESSES: usize = 32;
/// The longest one lookup may take, whatever is left of the wall budget.
const LOOKUP_TIMEOUT: Duration = Duration::from_secs(10);

/// A socket request of a component: a name lookup or a TCP connection.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SocketOp {
    what: What,
    /// `name`, or `host:port` (`[v6]:port`).
    target: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum What {
    Lookup,
    /// `host` is the looked-up name the address came from, or the address
    /// itself; `addr` the address to dial (none when only the rules are
    /// asked, as `check --explain` does).
    Connect {
        host: String,
        port: u16,
        addr: Option<IpAddr>,
    },
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
        let addr = canonical_ip(addr);
        let host = name.map_or_else(|| bracketed(addr), str::to_string);
        SocketOp {
            target: format!("{host}:{port}"),
            what: What::Connect {
                host,
                port,
                addr: Some(addr),
            },
        }
    }

    /// A connection to `host:port` (`[v6]:port`) as rules alone decide it,
    /// no address dialled; `None` when `target` is not of that form.
    pub fn connect_to(target: &str) -> Option<Self> {
        let (host, port) = target.rsplit_once(':')?;
        let port = port.parse::<u16>().ok().filter(|p| *p > 0)?;
        if host.is_empty() {
            return None;
        }
        Some(SocketOp {
            target: target.to_string(),
            what: What::Connect {
                host: host.to_string(),
                port,
                addr: None,
            },
        })
    }

    /// The address a connection dials, if it names one.
    pub fn address(&self) -> Option<SocketAddr> {
        match &self.what {
            What::Connect {
                port,
                addr: Some(ip),
                ..
            } => Some(SocketAddr::new(*ip, *port)),
            _ => None,
        }
    }

    /// Whether it is a connection (else a lookup).
    pub fn is_connect(&self) -> bool {
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
        self.rules
            .iter()
            .find(|r| r.allows_connect(host, port))
            .map(|r| r.as_str())
    }

    /// The tcp rule that covers `name` at any port, if one does.
    fn lookup_rule(&self, name: &str) -> Option<&str> {
        self.rules
            .iter()
            .find(|r| {
                let port = match r.port() {
                    super::PortPattern::Port(p) => p,
                    super::PortPattern::Any => 1,
                };
                r.allows_connect(name, port)
            })
            .map(|r| r.as_str())
    }

    /// Whether any tcp rule is granted (else a component gets no socket).
    pub fn grants_sockets(&self) -> bool {
        self.rules.iter().any(|r| r.scheme() == super::Scheme::Tcp)
    }
}

fn denied(message: String) -> Denial {
    Denial::new(Violation::EgressDenied, message)
}

/// The check of a connection: the rule for host and port, then, for an
/// address a name gave, the special-purpose address check.
fn check_connect(
    egress: &Egress,
    host: &str,
    port: u16,
    addr: Option<IpAddr>,
) -> Result<Permit, Denial> {
    let Some(rule) = egress.connect_rule(host, port) else {
        return Err(denied(format!(
            "{}:{port} is not covered by any tcp rule",
            crate::bound::clip(host)
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
        let Some(ip_rule) = egress.connect_rule(&bracketed(ip), port) else {
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
            What::Connect { .. } => OpKind::NetConnect,
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
                    "{} is not covered by any tcp rule",
                    crate::bound::clip(&self.target)
                ))),
            },
            What::Connect { host, port, addr } => check_connect(held.egress, host, *port, *addr),
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
mod tests {
    use super::*;
    use crate::net::EgressRule;

    fn egress(rules: &[&str]) -> Egress {
        Egress {
            rules: rules
                .iter()
                .map(|r| EgressRule::parse(r).unwrap())
                .collect(),
            ..Egress::default()
        }
    }

    #[test]
    fn tcp_rules_allow_connections_and_http_rules_never_do() {
        let e = egress(&["tcp://db.example.com:5432", "https://db.example.com"]);
        assert_eq!(
            e.connect_rule("db.example.com", 5432),
            Some("tcp://db.example.com:5432")
        );
        assert!(e.connect_rule("DB.Example.com.", 5432).is_some());
        assert!(e.connect_rule("db.example.com", 5433).is_none());
        assert!(e.connect_rule("db.example.com", 443).is_none());
        assert!(e.connect_rule("evil.com", 5432).is_none());
        // And a tcp rule never allows a fetch.
        let tcp_only = egress(&["tcp://api.example.com:443"]);
        assert!(tcp_only.check("https://api.example.com/").is_err());
        assert!(!egress(&["https://x.example"]).grants_sockets());
        assert!(tcp_only.grants_sockets());
    }

    #[test]
    fn a_name_that_resolves_to_a_special_address_needs_an_ip_rule() {
        let lo: IpAddr = "127.0.0.1".parse().unwrap();
        let public: IpAddr = "93.184.216.34".parse().unwrap();
        let e = egress(&["tcp://db.test:5432"]);
        assert!(check_connect(&e, "db.test", 5432, Some(public)).is_ok());
        let d = check_connect(&e, "db.test", 5432, Some(lo)).unwrap_err();
        assert!(d.message.contains("loopback"), "{}", d.message);
        let e = egress(&["tcp://db.test:5432", "tcp://127.0.0.1:5432"]);
        let p = check_connect(&e, "db.test", 5432, Some(lo)).unwrap();
        assert_eq!(p.rule(), "tcp://127.0.0.1:5432");
        // The IP rule covers its port only.
        let e = egress(&["tcp://db.test:*", "tcp://127.0.0.1:5432"]);
        assert!(check_connect(&e, "db.test", 6379, Some(lo)).is_err());
        // An address dialled without a lookup needs an IP or CIDR rule.
        let e = egress(&["tcp://db.test:5432"]);
        assert!(check_connect(&e, "127.0.0.1", 5432, Some(lo)).is_err());
        let e = egress(&["tcp://10.0.0.0/8:5432"]);
        let ten: IpAddr = "10.1.2.3".parse().unwrap();
        assert!(check_connect(&e, "10.1.2.3", 5432, Some(ten)).is_ok());
        assert!(check_connect(&e, "[::1]", 5432, Some("::1".parse().unwrap())).is_err());
        // A host written as an address is that address: another one is
        // refused, whatever the rule.
        let e = egress(&["tcp://127.0.0.1:25"]);
        assert!(check_connect(&e, "0x7f.1", 25, Some(lo)).is_ok());
        assert!(check_connect(&e, "0x7f.1", 25, Some(public)).is_err());
        assert!(check_connect(&e, "127.0.0.1", 25, Some(public)).is_err());
    }

    #[test]
    fn hosts_with_url_syntax_are_never_read_as_another_host() {
        let e = egress(&["tcp://db.test:5432", "tcp://*.svc.test:*"]);
        for bad in [
            "evil@db.test",
            "db.test/x",
            "db.test:5432",
            "db.test#",
            "db.test?",
            "db\\.test",
            "db.test ",
            "d%62.test",
            "a.svc.test@evil",
            "db.teſt",
            "",
        ] {
            assert!(e.connect_rule(bad, 5432).is_none(), "{bad:?}");
            assert!(e.lookup_rule(bad).is_none(), "{bad:?}");
        }
        assert!(e.connect_rule("DB.test.", 5432).is_some());
    }

    #[test]
    fn lookups_need_a_rule_covering_the_name() {
        let e = egress(&["tcp://*.db.test:*", "tcp://cache.test:6379"]);
        assert!(e.lookup_rule("a.db.test").is_some());
        assert!(e.lookup_rule("cache.test").is_some());
        assert!(e.lookup_rule("db.test").is_none());
        assert!(e.lookup_rule("exfil.attacker.example").is_none());
    }

    #[test]
    fn tcp_rules_name_their_port() {
        assert!(EgressRule::parse("tcp://db.test").is_err());
        assert!(EgressRule::parse("tcp://db.test:5432").is_ok());
        assert!(EgressRule::parse("tcp://[::1]:25").is_ok());
        assert!(EgressRule::parse("udp://db.test:53").is_err());
    }

    #[test]
    fn targets_read_back() {
        let op = SocketOp::connect(Some("db.test"), "::ffff:10.0.0.1".parse().unwrap(), 5432);
        assert_eq!(op.target, "db.test:5432");
        assert_eq!(op.address().unwrap().to_string(), "10.0.0.1:5432");
        let op = SocketOp::connect(None, "::1".parse().unwrap(), 25);
        assert_eq!(op.target, "[::1]:25");
        assert!(SocketOp::connect_to("db.test:5432").is_some());
        assert!(SocketOp::connect_to("db.test").is_none());
        assert!(SocketOp::connect_to(":5432").is_none());
    }
}
