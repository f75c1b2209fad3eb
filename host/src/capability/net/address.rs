//! Which addresses a fetch may never reach unless a rule names them: the SSRF
//! defense applied *after* name resolution, so a granted name that resolves
//! to the metadata endpoint or a private network is still refused.

use ipnet::{IpNet, Ipv4Net, Ipv6Net};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::OnceLock;

/// The special-purpose range `ip` falls in, or `None` for a public address.
/// Every entry of the IANA special-purpose registries counts (see the
/// tables below); IPv6 forms that embed an IPv4 address (mapped,
/// compatible, NAT64, 6to4) are judged by the address they carry, and
/// Teredo and IPv4-translated addresses are refused outright.
///
/// # Examples
///
/// ```
/// use sbx_wasm::net::special_range;
///
/// assert_eq!(special_range("169.254.169.254".parse().unwrap()), Some("link-local"));
/// assert_eq!(special_range("::ffff:10.0.0.5".parse().unwrap()), Some("private"));
/// assert_eq!(special_range("93.184.216.34".parse().unwrap()), None);
/// ```
pub fn special_range(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => special_v4(v4),
        IpAddr::V6(v6) => special_v6(v6),
    }
}

/// What an entry of the table means for an address inside it.
#[derive(Clone, Copy)]
enum Kind {
    /// Global unicast: dialled unless a more specific entry says otherwise.
    Public,
    /// Never dialled unless a rule names the address.
    Refused,
    /// The address carries an IPv4 address (in its last 32 bits, or for
    /// 6to4 in bits 16..48), which decides.
    Carries(fn(Ipv6Addr) -> Ipv4Addr),
}

fn low32(ip: Ipv6Addr) -> Ipv4Addr {
    let s = ip.segments();
    Ipv4Addr::from((u32::from(s[6]) << 16) | u32::from(s[7]))
}

fn sixtofour(ip: Ipv6Addr) -> Ipv4Addr {
    let s = ip.segments();
    Ipv4Addr::from((u32::from(s[1]) << 16) | u32::from(s[2]))
}

/// The IANA IPv4 Special-Purpose Address Registry, every entry, plus
/// multicast (its own registry). Entries the registry calls globally
/// reachable (anycast services such as AS112 or AMT) are refused too: no
/// agent needs them, and failing closed costs nothing.
const V4: &[(&str, &str)] = &[
    ("0.0.0.0/8", "this network"),
    ("0.0.0.0/32", "unspecified"),
    ("10.0.0.0/8", "private"),
    ("100.64.0.0/10", "carrier-grade NAT"),
    ("127.0.0.0/8", "loopback"),
    ("169.254.0.0/16", "link-local"),
    ("172.16.0.0/12", "private"),
    ("192.0.0.0/24", "IETF protocol assignment"),
    ("192.0.2.0/24", "documentation"),
    ("192.31.196.0/24", "AS112"),
    ("192.52.193.0/24", "AMT relay"),
    ("192.88.99.0/24", "6to4 relay anycast"),
    ("192.168.0.0/16", "private"),
    ("192.175.48.0/24", "AS112"),
    ("198.18.0.0/15", "benchmarking"),
    ("198.51.100.0/24", "documentation"),
    ("203.0.113.0/24", "documentation"),
    ("224.0.0.0/4", "multicast"),
    ("240.0.0.0/4", "reserved"),
    ("255.255.255.255/32", "broadcast"),
];

/// The IANA IPv6 Special-Purpose Address Registry, every entry, plus the
/// deprecated and reserved blocks a resolver can still answer with.
const V6: &[(&str, &str, Kind)] = &[
    // Outside 2000::/3 (global unicast) nothing is routed on the internet;
    // the more specific entries below name what is.
    ("::/0", "reserved (not global unicast)", Kind::Refused),
    ("2000::/3", "", Kind::Public),
    ("::/128", "unspecified", Kind::Refused),
    ("::1/128", "loopback", Kind::Refused),
    ("::/96", "IPv4-compatible", Kind::Carries(low32)),
    ("::ffff:0:0/96", "IPv4-mapped", Kind::Carries(low32)),
    ("::ffff:0:0:0/96", "IPv4-translated", Kind::Refused),
    ("64:ff9b::/96", "NAT64", Kind::Carries(low32)),
    ("64:ff9b:1::/48", "local NAT64", Kind::Refused),
    ("100::/64", "discard-only", Kind::Refused),
    ("100:0:0:1::/64", "dummy prefix", Kind::Refused),
    ("2001::/23", "IETF protocol assignment", Kind::Refused),
    ("2001::/32", "Teredo", Kind::Refused),
    ("2001:2::/48", "benchmarking", Kind::Refused),
    ("2001:db8::/32", "documentation", Kind::Refused),
    ("2002::/16", "6to4", Kind::Carries(sixtofour)),
    ("2620:4f:8000::/48", "AS112", Kind::Refused),
    ("3fff::/20", "documentation", Kind::Refused),
    ("5f00::/16", "segment routing", Kind::Refused),
    ("fc00::/7", "unique local (private)", Kind::Refused),
    ("fe80::/10", "link-local", Kind::Refused),
    ("fec0::/10", "site-local", Kind::Refused),
    ("ff00::/8", "multicast", Kind::Refused),
];

/// The most specific entry of `table` holding `ip`.
fn longest<T: Copy, N: Into<IpNet> + Copy>(ip: IpAddr, table: &'static [(N, T)]) -> Option<T> {
    table
        .iter()
        .filter(|(net, _)| (*net).into().contains(&ip))
        .max_by_key(|(net, _)| (*net).into().prefix_len())
        .map(|(_, v)| *v)
}

/// The tables, parsed once.
type V4Table = Vec<(Ipv4Net, &'static str)>;
type V6Table = Vec<(Ipv6Net, (&'static str, Kind))>;

fn v4_table() -> &'static V4Table {
    static TABLE: OnceLock<V4Table> = OnceLock::new();
    TABLE.get_or_init(|| {
        V4.iter()
            .map(|(net, name)| (net.parse().expect("table entry"), *name))
            .collect()
    })
}

fn v6_table() -> &'static V6Table {
    static TABLE: OnceLock<V6Table> = OnceLock::new();
    TABLE.get_or_init(|| {
        V6.iter()
            .map(|(net, name, kind)| (net.parse().expect("table entry"), (*name, *kind)))
            .collect()
    })
}

fn special_v4(ip: Ipv4Addr) -> Option<&'static str> {
    longest(IpAddr::V4(ip), v4_table())
}

fn special_v6(ip: Ipv6Addr) -> Option<&'static str> {
    match longest(IpAddr::V6(ip), v6_table())? {
        (_, Kind::Public) => None,
        (_, Kind::Carries(v4)) => special_v4(v4(ip)),
        (name, Kind::Refused) => Some(name),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn range(s: &str) -> Option<&'static str> {
        special_range(s.parse().unwrap())
    }

    /// One row per registry entry: an address inside it, the name the gate
    /// gives it, and an allowed neighbour just outside it.
    const V4_ROWS: &[(&str, &str, &str, &str)] = &[
        ("0.0.0.0/8", "0.1.2.3", "this network", "1.0.0.1"),
        ("0.0.0.0/32", "0.0.0.0", "unspecified", "1.0.0.1"),
        ("10.0.0.0/8", "10.255.255.255", "private", "11.0.0.1"),
        (
            "100.64.0.0/10",
            "100.127.255.254",
            "carrier-grade NAT",
            "100.128.0.1",
        ),
        (
            "100.64.0.0/10",
            "100.64.0.1",
            "carrier-grade NAT",
            "100.63.255.254",
        ),
        ("127.0.0.0/8", "127.255.0.9", "loopback", "128.0.0.1"),
        (
            "169.254.0.0/16",
            "169.254.169.254",
            "link-local",
            "169.255.0.1",
        ),
        ("172.16.0.0/12", "172.31.255.255", "private", "172.32.0.1"),
        ("172.16.0.0/12", "172.16.0.1", "private", "172.15.255.255"),
        (
            "192.0.0.0/24",
            "192.0.0.170",
            "IETF protocol assignment",
            "192.0.1.1",
        ),
        (
            "192.0.0.0/24 (PCP anycast)",
            "192.0.0.9",
            "IETF protocol assignment",
            "192.0.1.1",
        ),
        ("192.0.2.0/24", "192.0.2.1", "documentation", "192.0.3.1"),
        ("192.31.196.0/24", "192.31.196.1", "AS112", "192.31.197.1"),
        (
            "192.52.193.0/24",
            "192.52.193.1",
            "AMT relay",
            "192.52.194.1",
        ),
        (
            "192.88.99.0/24",
            "192.88.99.2",
            "6to4 relay anycast",
            "192.88.100.1",
        ),
        ("192.168.0.0/16", "192.168.1.1", "private", "192.169.0.1"),
        ("192.175.48.0/24", "192.175.48.6", "AS112", "192.175.49.1"),
        (
            "198.18.0.0/15",
            "198.19.255.1",
            "benchmarking",
            "198.20.0.1",
        ),
        (
            "198.51.100.0/24",
            "198.51.100.7",
            "documentation",
            "198.51.101.1",
        ),
        (
            "203.0.113.0/24",
            "203.0.113.9",
            "documentation",
            "203.0.114.1",
        ),
        (
            "224.0.0.0/4",
            "239.255.255.250",
            "multicast",
            "223.255.255.254",
        ),
        ("240.0.0.0/4", "240.0.0.1", "reserved", "223.1.1.1"),
        (
            "255.255.255.255/32",
            "255.255.255.255",
            "broadcast",
            "93.184.216.34",
        ),
    ];

    const V6_ROWS: &[(&str, &str, &str, &str)] = &[
        ("::/128", "::", "unspecified", "2606:4700::1111"),
        ("::1/128", "::1", "loopback", "2606:4700::1111"),
        ("::/96 compatible", "::10.0.0.1", "private", "::8.8.8.8"),
        (
            "::ffff:0:0/96 mapped",
            "::ffff:169.254.169.254",
            "link-local",
            "::ffff:8.8.8.8",
        ),
        (
            "::ffff:0:0/96 mapped",
            "::ffff:127.0.0.1",
            "loopback",
            "::ffff:8.8.4.4",
        ),
        (
            "::ffff:0:0:0/96 translated",
            "::ffff:0:a9fe:a9fe",
            "IPv4-translated",
            "::ffff:8.8.8.8",
        ),
        (
            "::ffff:0:0:0/96 translated",
            "::ffff:0:808:808",
            "IPv4-translated",
            "::ffff:8.8.8.8",
        ),
        (
            "64:ff9b::/96",
            "64:ff9b::a9fe:a9fe",
            "link-local",
            "64:ff9b::808:808",
        ),
        (
            "64:ff9b::/96",
            "64:ff9b::7f00:1",
            "loopback",
            "64:ff9b::808:808",
        ),
        (
            "64:ff9b:1::/48",
            "64:ff9b:1::1",
            "local NAT64",
            "64:ff9b::808:808",
        ),
        ("100::/64", "100::1", "discard-only", "2606:4700::1111"),
        (
            "100:0:0:1::/64",
            "100:0:0:1::1",
            "dummy prefix",
            "2606:4700::1111",
        ),
        (
            "2001::/23",
            "2001:1::1",
            "IETF protocol assignment",
            "2001:200::1",
        ),
        (
            "2001::/23",
            "2001:1ff::1",
            "IETF protocol assignment",
            "2001:200::1",
        ),
        ("2001::/32", "2001:0:4136:e378::1", "Teredo", "2001:200::1"),
        ("2001:2::/48", "2001:2::1", "benchmarking", "2001:200::1"),
        (
            "2001:db8::/32",
            "2001:db8::1",
            "documentation",
            "2001:dba::1",
        ),
        (
            "2002::/16",
            "2002:a9fe:a9fe::1",
            "link-local",
            "2002:808:808::1",
        ),
        ("2002::/16", "2002:a00:1::1", "private", "2002:808:808::1"),
        (
            "2620:4f:8000::/48",
            "2620:4f:8000::1",
            "AS112",
            "2620:4f:8001::1",
        ),
        ("3fff::/20", "3fff:fff::1", "documentation", "3fff:1000::1"),
        ("5f00::/16", "5f00::1", "segment routing", "2606:4700::1111"),
        (
            "fc00::/7",
            "fd00:ec2::254",
            "unique local (private)",
            "2606:4700::1111",
        ),
        (
            "fc00::/7",
            "fc00::1",
            "unique local (private)",
            "2606:4700::1111",
        ),
        ("fe80::/10", "fe80::1", "link-local", "2606:4700::1111"),
        ("fec0::/10", "fec0::1", "site-local", "2606:4700::1111"),
        ("ff00::/8", "ff02::1", "multicast", "2606:4700::1111"),
        (
            "outside 2000::/3",
            "::1:2:3:4:5",
            "reserved (not global unicast)",
            "2606:4700::1111",
        ),
        (
            "outside 2000::/3",
            "4000::1",
            "reserved (not global unicast)",
            "3fff:1000::1",
        ),
        (
            "outside 2000::/3",
            "fe00::1",
            "reserved (not global unicast)",
            "2606:4700::1111",
        ),
    ];

    #[test]
    fn every_registry_entry_is_refused_with_its_allowed_neighbour() {
        for (entry, inside, name, neighbour) in V4_ROWS.iter().chain(V6_ROWS) {
            assert_eq!(range(inside), Some(*name), "{entry}: {inside}");
            assert_eq!(range(neighbour), None, "{entry}: neighbour {neighbour}");
        }
    }

    #[test]
    fn every_table_entry_has_a_test_row() {
        for (net, _) in V4 {
            assert!(
                V4_ROWS.iter().any(|(e, ..)| e.starts_with(net)),
                "no row for {net}"
            );
        }
        for (net, _, _) in V6 {
            let named = V6_ROWS.iter().any(|(e, ..)| e.starts_with(net));
            assert!(
                named || ["::/0", "2000::/3"].contains(net),
                "no row for {net}"
            );
        }
    }
}
