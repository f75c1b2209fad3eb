//! The network capability's local side: the `net.listen` addresses a
//! component's sockets may bind (a TCP listener, a TCP client's chosen
//! local port, a UDP socket's receiving address). Loopback only: a rule
//! names an address of 127.0.0.0/8 or `[::1]` and a port, so what a guest
//! serves is reachable from this machine and no further; an address of
//! any other interface is refused when the grant is loaded, never at run
//! time.
//!
//! ```toml
//! [net]
//! listen = ["127.0.0.1:8080", "[::1]:*"]
//! ```
//!
//! Port `*` covers every port and an ephemeral bind (port 0, the OS
//! picking); `0` covers an ephemeral bind only; a number, that port.

use super::rules::canonical_ip;
use std::fmt;
use std::net::{IpAddr, SocketAddr};

/// The accepted form of a listen rule, quoted in errors.
pub const LISTEN_FORM: &str = "a loopback address and a port: 127.0.0.1:8080, [::1]:8080, \
127.0.0.1:* (any port) or 127.0.0.1:0 (an ephemeral port the OS picks)";

/// The ports a listen rule covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Ports {
    /// Every port, an ephemeral bind included.
    Any,
    /// This port; `0` for an ephemeral bind.
    Port(u16),
}

/// One parsed `net.listen` rule: a loopback address and its ports.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ListenRule {
    text: String,
    ip: IpAddr,
    ports: Ports,
}

impl ListenRule {
    /// Parse `ip:port` (`[v6]:port`), the address loopback.
    ///
    /// # Examples
    ///
    /// ```
    /// use sbx_wasm::net::ListenRule;
    ///
    /// let rule = ListenRule::parse("127.0.0.1:*").unwrap();
    /// assert!(rule.covers("127.0.0.1:8080".parse().unwrap()));
    /// assert!(!rule.covers("127.0.0.2:8080".parse().unwrap()));
    /// assert!(ListenRule::parse("0.0.0.0:8080").is_err());
    /// ```
    pub fn parse(text: &str) -> Result<Self, String> {
        let Some((host, port)) = text.rsplit_once(':') else {
            return Err("missing `:port`".into());
        };
        let bare = match host.strip_prefix('[') {
            Some(inner) => inner.strip_suffix(']').ok_or("unclosed `[` in IPv6 host")?,
            None if host.contains(':') => return Err("an IPv6 address is written [::1]".into()),
            None => host,
        };
        let ip = bare
            .parse::<IpAddr>()
            .map_err(|_| format!("{bare:?} is not an IP address"))?;
        let ip = canonical_ip(ip);
        if !ip.is_loopback() {
            return Err(format!(
                "{ip} is not a loopback address: a guest listens on this machine only"
            ));
        }
        let ports = match port {
            "*" => Ports::Any,
            p => Ports::Port(
                p.parse::<u16>()
                    .map_err(|_| format!("port {p:?} is not a number from 0 to 65535 or *"))?,
            ),
        };
        Ok(ListenRule {
            text: text.to_string(),
            ip,
            ports,
        })
    }

    /// The rule as written in the caps file.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The one port it covers (0: only an ephemeral one), or `None` for
    /// every port (`*`).
    pub fn port(&self) -> Option<u16> {
        match self.ports {
            Ports::Any => None,
            Ports::Port(p) => Some(p),
        }
    }

    /// Whether a bind of `addr` (port 0: an ephemeral one) is allowed by
    /// this rule.
    pub fn covers(&self, addr: SocketAddr) -> bool {
        let port_ok = match self.ports {
            Ports::Any => true,
            Ports::Port(p) => p == addr.port(),
        };
        port_ok && canonical_ip(addr.ip()) == self.ip
    }
}

impl fmt::Display for ListenRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a(s: &str) -> SocketAddr {
        s.parse().unwrap()
    }

    #[test]
    fn loopback_only_and_ports_as_written() {
        let any = ListenRule::parse("127.0.0.1:*").unwrap();
        assert!(any.covers(a("127.0.0.1:0")) && any.covers(a("127.0.0.1:8080")));
        assert!(!any.covers(a("[::1]:8080")));
        let eph = ListenRule::parse("[::1]:0").unwrap();
        assert!(eph.covers(a("[::1]:0")) && !eph.covers(a("[::1]:8080")));
        let one = ListenRule::parse("127.0.0.1:8080").unwrap();
        assert!(one.covers(a("127.0.0.1:8080")));
        assert!(!one.covers(a("127.0.0.1:0")) && !one.covers(a("127.0.0.1:8081")));
        // An IPv4-mapped spelling is the IPv4 address.
        assert!(one.covers(a("[::ffff:127.0.0.1]:8080")));
        for bad in [
            "0.0.0.0:80",
            "[::]:80",
            "10.0.0.1:80",
            "192.168.1.2:*",
            "localhost:80",
            "127.0.0.1",
            "::1:80",
            "[::1:80",
            "127.0.0.1:65536",
            "127.0.0.1:x",
            "127.0.0.1/8:80",
        ] {
            assert!(ListenRule::parse(bad).is_err(), "{bad}");
        }
    }
}
