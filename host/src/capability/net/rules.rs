//! Egress allow rules: `scheme://host[:port]` where host is a name, a `*.`
//! subdomain wildcard, an IP literal or a CIDR range; and the match of a
//! parsed URL against them. A `tcp://host:port` rule allows a component's
//! TCP connection (`wasi:sockets`) and a `udp://host:port` rule its
//! datagrams to and from that peer, never an HTTP request; an http(s) rule
//! never allows a socket: the scheme is part of every match.
//!
//! URLs are parsed with the `url` crate (WHATWG), so `http://ok@evil.com`,
//! backslashes, `#`/`?` tricks, IDN and exotic IPv4 spellings all reduce to
//! the host a client would really contact before anything is compared.

use ipnet::IpNet;
use std::fmt;
use std::net::IpAddr;
use url::{Host, Url};

/// The accepted form of a rule, quoted in errors.
pub const RULE_FORM: &str = "scheme://host[:port] with scheme http, https, tcp or udp; host a \
name (api.example.com), a subdomain wildcard (*.example.com), an IP (127.0.0.1, [::1]) or a \
CIDR range (10.0.0.0/8, [fd00::/8]); port a number or * (default: the scheme's port; a tcp \
or udp rule must name its port)";

/// URL schemes a rule may name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Scheme {
    /// `http`, default port 80.
    Http,
    /// `https`, default port 443.
    Https,
    /// `tcp`: a TCP connection from a component's sockets (no default
    /// port: a rule names one, or `*`).
    Tcp,
    /// `udp`: datagrams to and from a peer of a component's sockets (no
    /// default port either).
    Udp,
}

impl Scheme {
    fn parse(s: &str) -> Option<Self> {
        match s {
            "http" => Some(Scheme::Http),
            "https" => Some(Scheme::Https),
            "tcp" => Some(Scheme::Tcp),
            "udp" => Some(Scheme::Udp),
            _ => None,
        }
    }

    /// The scheme's name.
    pub fn as_str(self) -> &'static str {
        match self {
            Scheme::Http => "http",
            Scheme::Https => "https",
            Scheme::Tcp => "tcp",
            Scheme::Udp => "udp",
        }
    }

    /// 80 or 443; 0 for `tcp` and `udp`, which have none (their rules name
    /// a port).
    pub fn default_port(self) -> u16 {
        match self {
            Scheme::Http => 80,
            Scheme::Https => 443,
            Scheme::Tcp | Scheme::Udp => 0,
        }
    }

    /// Whether it is a socket's scheme (`tcp`, `udp`), not a fetch's.
    pub fn is_socket(self) -> bool {
        matches!(self, Scheme::Tcp | Scheme::Udp)
    }

    /// The scheme a host is read under: socket hosts as `http` hosts (IDN,
    /// lowercase, IPv4 spellings), since the URL parser leaves the hosts of
    /// schemes it does not know as written.
    fn host_scheme(self) -> &'static str {
        match self {
            Scheme::Tcp | Scheme::Udp => "http",
            s => s.as_str(),
        }
    }
}

/// What hosts a rule covers.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum HostPattern {
    /// Exactly this name (lowercase, punycode, no trailing dot).
    Name(String),
    /// Any name strictly below this one: `*.example.com` covers
    /// `a.example.com` but not `example.com` or `evilexample.com`.
    Subdomains(String),
    /// Exactly this address.
    Ip(IpAddr),
    /// Any address in this range.
    Cidr(IpNet),
}

/// Which ports a rule covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PortPattern {
    /// This port only.
    Port(u16),
    /// Any port (`:*`).
    Any,
}

/// One parsed egress allow rule.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct EgressRule {
    text: String,
    scheme: Scheme,
    host: HostPattern,
    port: PortPattern,
}

/// A rule that could not be parsed; its message says what was wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuleError(String);

impl std::error::Error for RuleError {}

impl fmt::Display for RuleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

fn err<T>(msg: impl Into<String>) -> Result<T, RuleError> {
    Err(RuleError(msg.into()))
}

/// Normalize a DNS name the way the URL parser does (IDNA, lowercase), and
/// drop one trailing dot so `example.com.` and `example.com` are one host.
fn normalize_name(scheme: Scheme, name: &str) -> Result<String, RuleError> {
    let url = Url::parse(&format!("{}://{name}/", scheme.host_scheme()))
        .map_err(|e| RuleError(format!("host {name:?} is not a valid host name: {e}")))?;
    match url.host() {
        Some(Host::Domain(d)) => Ok(d.strip_suffix('.').unwrap_or(d).to_string()),
        _ => err(format!("host {name:?} is not a valid host name")),
    }
}

/// Treat `::ffff:a.b.c.d` as the IPv4 address it carries, so a rule for
/// `127.0.0.1` and a URL naming the mapped form agree.
pub(crate) fn canonical_ip(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6
            .to_ipv4_mapped()
            .map(IpAddr::V4)
            .unwrap_or(IpAddr::V6(v6)),
        v4 => v4,
    }
}

impl EgressRule {
    /// Parse a rule; the error says what was wrong (see [`RULE_FORM`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use sbx_wasm::net::EgressRule;
    ///
    /// let rule = EgressRule::parse("https://*.example.com").unwrap();
    /// let url = url::Url::parse("https://api.example.com/v1").unwrap();
    /// assert!(rule.matches(&url));
    /// assert!(EgressRule::parse("ftp://example.com").is_err());
    /// ```
    pub fn parse(text: &str) -> Result<Self, RuleError> {
        let Some((scheme, rest)) = text.split_once("://") else {
            return err("missing `scheme://`");
        };
        let Some(scheme) = Scheme::parse(&scheme.to_ascii_lowercase()) else {
            return err(format!("scheme {scheme:?} is not http, https, tcp or udp"));
        };
        let rest = rest.strip_suffix('/').unwrap_or(rest);
        if rest.is_empty() {
            return err("missing host");
        }
        if rest.contains(['@', '?', '#', '\\']) {
            return err(
                "a rule names scheme, host and port only (no user, path, query or fragment)",
            );
        }
        let (host, port) = if let Some(inner) = rest.strip_prefix('[') {
            let Some((h, after)) = inner.split_once(']') else {
                return err("unclosed `[` in IPv6 host");
            };
            let port = match after {
                "" => None,
                p => match p.strip_prefix(':') {
                    Some(p) => Some(p),
                    None => return err(format!("unexpected {after:?} after `]`")),
                },
            };
            (h, port)
        } else {
            match rest.rsplit_once(':') {
                Some((h, p)) => (h, Some(p)),
                None => (rest, None),
            }
        };
        let port = match port {
            None if scheme.is_socket() => {
                return err(format!(
                    "a {0} rule names its port (`{0}://db.example.com:5432`, or `:*`)",
                    scheme.as_str()
                ));
            }
            None => PortPattern::Port(scheme.default_port()),
            Some("*") => PortPattern::Any,
            Some(p) => match p.parse::<u16>() {
                Ok(n) if n > 0 => PortPattern::Port(n),
                _ => return err(format!("port {p:?} is not a number from 1 to 65535 or *")),
            },
        };
        let host = if host.contains('/') {
            match host.parse::<IpNet>() {
                Ok(net) => HostPattern::Cidr(net.trunc()),
                Err(_) => return err(format!("{host:?} is not a CIDR range (or has a path)")),
            }
        } else if let Ok(ip) = host.parse::<IpAddr>() {
            HostPattern::Ip(canonical_ip(ip))
        } else if let Some(base) = host.strip_prefix("*.") {
            if base.contains('*') {
                return err("`*` may appear only as the first label (`*.example.com`)");
            }
            HostPattern::Subdomains(normalize_name(scheme, base)?)
        } else if host.contains('*') {
            return err("`*` may appear only as the first label (`*.example.com`)");
        } else {
            let name = normalize_name(scheme, host)?;
            // Reject names the URL parser would read as an IPv4 address
            // (`0x7f.1`): a rule must say what it means.
            if let Ok(url) = Url::parse(&format!("{}://{host}/", scheme.host_scheme()))
                && matches!(url.host(), Some(Host::Ipv4(_)))
            {
                return err(format!(
                    "{host:?} is an IPv4 address in disguise; write it plainly"
                ));
            }
            HostPattern::Name(name)
        };
        Ok(EgressRule {
            text: text.to_string(),
            scheme,
            host,
            port,
        })
    }

    /// The rule as written in the caps file.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The rule's scheme.
    pub fn scheme(&self) -> Scheme {
        self.scheme
    }

    /// The hosts it covers.
    pub fn host(&self) -> &HostPattern {
        &self.host
    }

    /// The ports it covers.
    pub fn port(&self) -> PortPattern {
        self.port
    }

    /// Whether this rule allows `url` (scheme, host and port must all match).
    pub fn matches(&self, url: &Url) -> bool {
        url.scheme() == self.scheme.as_str() && self.covers(url)
    }

    /// Whether this rule, of the socket scheme `scheme` (`tcp` or `udp`),
    /// allows a connection or datagrams to `host` (a name or an IP literal,
    /// `[...]` for IPv6) at `port`. Always false for an http(s) rule.
    pub fn allows_peer(&self, scheme: Scheme, host: &str, port: u16) -> bool {
        self.scheme == scheme
            && scheme.is_socket()
            && plain_host(host)
            && Url::parse(&format!("http://{host}:{port}/")).is_ok_and(|probe| {
                // The probe's port is the one asked for (the URL drops an
                // explicit 80, which `port_or_known_default` gives back).
                self.covers(&probe)
            })
    }

    /// Host and port of `url` against the rule's, the scheme aside.
    fn covers(&self, url: &Url) -> bool {
        let Some(port) = url.port_or_known_default() else {
            return false;
        };
        if let PortPattern::Port(p) = self.port
            && p != port
        {
            return false;
        }
        match (url.host(), &self.host) {
            (Some(Host::Domain(d)), HostPattern::Name(n)) => d.strip_suffix('.').unwrap_or(d) == n,
            (Some(Host::Domain(d)), HostPattern::Subdomains(base)) => {
                let d = d.strip_suffix('.').unwrap_or(d);
                d.strip_suffix(base.as_str())
                    .is_some_and(|head| head.len() > 1 && head.ends_with('.'))
            }
            (Some(Host::Ipv4(ip)), pat) => ip_matches(IpAddr::V4(ip), pat),
            (Some(Host::Ipv6(ip)), pat) => ip_matches(canonical_ip(IpAddr::V6(ip)), pat),
            _ => false,
        }
    }
}

/// Whether `host` is a host and nothing more: a name, an IPv4 literal or a
/// bracketed IPv6 one, in ASCII. Anything that would make the probe URL read another
/// host (`@`, `/`, `:`, `?`, `#`, `\`, `%`, white space) is refused, not
/// interpreted.
fn plain_host(host: &str) -> bool {
    if let Some(inner) = host.strip_prefix('[') {
        return inner
            .strip_suffix(']')
            .is_some_and(|v6| v6.parse::<std::net::Ipv6Addr>().is_ok());
    }
    // ASCII only: an IDN name is written in punycode, so the name looked
    // up is the name the rules judged.
    !host.is_empty()
        && host.is_ascii()
        && !host
            .chars()
            .any(|c| c.is_whitespace() || c.is_control() || "@/\\:?#%[]".contains(c))
}

fn ip_matches(ip: IpAddr, pat: &HostPattern) -> bool {
    match pat {
        HostPattern::Ip(allowed) => *allowed == ip,
        HostPattern::Cidr(net) => net.contains(&ip),
        _ => false,
    }
}

impl fmt::Display for EgressRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn allows(rule: &str, url: &str) -> bool {
        EgressRule::parse(rule)
            .unwrap()
            .matches(&Url::parse(url).unwrap())
    }

    #[test]
    fn exact_name_with_default_and_explicit_ports() {
        assert!(allows(
            "https://api.example.com",
            "https://api.example.com/x?y#z"
        ));
        assert!(allows(
            "https://api.example.com",
            "https://API.Example.COM./x"
        ));
        assert!(allows(
            "https://api.example.com",
            "https://api.example.com:443/"
        ));
        assert!(!allows(
            "https://api.example.com",
            "https://api.example.com:8443/"
        ));
        assert!(!allows(
            "https://api.example.com",
            "http://api.example.com/"
        ));
        assert!(allows(
            "http://api.example.com:8080",
            "http://api.example.com:8080/"
        ));
        assert!(!allows(
            "http://api.example.com:8080",
            "http://api.example.com/"
        ));
        assert!(allows(
            "http://api.example.com:*",
            "http://api.example.com:9/"
        ));
    }

    #[test]
    fn url_tricks_reduce_to_the_real_host() {
        let r = "https://api.example.com";
        assert!(!allows(r, "https://api.example.com@evil.com/"));
        assert!(!allows(r, "https://api.example.com.evil.com/"));
        assert!(!allows(r, "https://evil.com#@api.example.com"));
        assert!(!allows(r, "https://evil.com?@api.example.com"));
        assert!(!allows(r, "https://evil.com\\@api.example.com"));
        assert!(allows(r, "https://user:pw@api.example.com/"));
    }

    #[test]
    fn wildcard_covers_subdomains_only() {
        let r = "https://*.example.com";
        assert!(allows(r, "https://a.example.com/"));
        assert!(allows(r, "https://a.b.example.com/"));
        assert!(!allows(r, "https://example.com/"));
        assert!(!allows(r, "https://evilexample.com/"));
        assert!(!allows(r, "https://example.com.evil.com/"));
        assert!(!allows(r, "https://.example.com/"));
    }

    #[test]
    fn ip_literals_cidr_and_encodings() {
        assert!(allows("http://127.0.0.1:8080", "http://127.0.0.1:8080/"));
        assert!(allows("http://127.0.0.1:8080", "http://0x7f.1:8080/"));
        assert!(allows("http://127.0.0.1:8080", "http://2130706433:8080/"));
        assert!(allows(
            "http://127.0.0.1:8080",
            "http://[::ffff:127.0.0.1]:8080/"
        ));
        assert!(!allows("http://127.0.0.1:8080", "http://127.0.0.2:8080/"));
        assert!(allows("http://10.0.0.0/8", "http://10.1.2.3/"));
        assert!(!allows("http://10.0.0.0/8", "http://11.0.0.1/"));
        assert!(allows("http://[fd00::/8]:*", "http://[fd12::1]:81/"));
        assert!(allows("http://[::1]", "http://[::1]/"));
        // A name is not an address: no resolution happens in matching.
        assert!(!allows("http://127.0.0.1", "http://localhost/"));
    }

    #[test]
    fn idn_rules_and_urls_meet_in_punycode() {
        assert!(allows(
            "https://bücher.example",
            "https://xn--bcher-kva.example/"
        ));
        assert!(allows(
            "https://xn--bcher-kva.example",
            "https://BÜCHER.example/"
        ));
    }

    #[test]
    fn malformed_rules_say_why() {
        for bad in [
            "example.com",
            "ftp://example.com",
            "https://",
            "https://example.com/path",
            "https://u@example.com",
            "https://example.com:0",
            "https://example.com:99999",
            "https://a.*.com",
            "https://[::1",
            "https://0x7f.1",
            "https://10.0.0.0/33",
        ] {
            assert!(EgressRule::parse(bad).is_err(), "{bad}");
        }
    }
}
