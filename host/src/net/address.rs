//! Which addresses a fetch may never reach unless a rule names them: the SSRF
//! defense applied *after* name resolution, so a granted name that resolves
//! to the metadata endpoint or a private network is still refused.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// The special-purpose range `ip` falls in, or `None` for a public address.
/// IPv6 forms that embed an IPv4 address (mapped, compatible, NAT64, 6to4)
/// are judged by the address they carry; Teredo is refused outright.
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

fn special_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, c, _] = ip.octets();
    Some(match (a, b, c) {
        (0, _, _) => "unspecified",
        (10, _, _) | (172, 16..=31, _) | (192, 168, _) => "private",
        (127, _, _) => "loopback",
        (169, 254, _) => "link-local",
        (100, 64..=127, _) => "carrier-grade NAT",
        (192, 0, 0) => "IETF protocol assignment",
        (192, 0, 2) | (198, 51, 100) | (203, 0, 113) => "documentation",
        (198, 18..=19, _) => "benchmarking",
        (224..=239, _, _) => "multicast",
        (240..=255, _, _) => "reserved",
        _ => return None,
    })
}

fn special_v6(ip: Ipv6Addr) -> Option<&'static str> {
    let s = ip.segments();
    if ip.is_unspecified() {
        return Some("unspecified");
    }
    if ip.is_loopback() {
        return Some("loopback");
    }
    if let Some(v4) = ip.to_ipv4_mapped() {
        return special_v4(v4);
    }
    let embedded = |hi: u16, lo: u16| Ipv4Addr::from((u32::from(hi) << 16) | u32::from(lo));
    match s[0] {
        // ::a.b.c.d (deprecated IPv4-compatible)
        0 if s[1..6] == [0; 5] => return special_v4(embedded(s[6], s[7])),
        // 64:ff9b::/96 NAT64 and 64:ff9b:1::/48 local-use NAT64
        0x64 if s[1] == 0xff9b => {
            return if s[2] == 1 {
                Some("local NAT64")
            } else {
                special_v4(embedded(s[6], s[7]))
            };
        }
        // 2002::/16 6to4 carries the IPv4 address in bits 16..48
        0x2002 => return special_v4(embedded(s[1], s[2])),
        0x2001 if s[1] == 0 => return Some("Teredo"),
        0x2001 if s[1] == 0xdb8 => return Some("documentation"),
        _ => {}
    }
    Some(match s[0] {
        0xfc00..=0xfdff => "unique local (private)",
        0xfe80..=0xfebf => "link-local",
        0xfec0..=0xfeff => "site-local",
        0xff00..=0xffff => "multicast",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn range(s: &str) -> Option<&'static str> {
        special_range(s.parse().unwrap())
    }

    #[test]
    fn private_and_special_v4() {
        for (ip, want) in [
            ("10.0.0.5", "private"),
            ("172.16.0.1", "private"),
            ("172.31.255.255", "private"),
            ("192.168.1.1", "private"),
            ("127.0.0.1", "loopback"),
            ("127.255.0.9", "loopback"),
            ("169.254.169.254", "link-local"),
            ("100.64.0.1", "carrier-grade NAT"),
            ("100.100.100.200", "carrier-grade NAT"),
            ("0.0.0.0", "unspecified"),
            ("224.0.0.1", "multicast"),
            ("255.255.255.255", "reserved"),
            ("198.18.0.1", "benchmarking"),
        ] {
            assert_eq!(range(ip), Some(want), "{ip}");
        }
        for ip in [
            "8.8.8.8",
            "172.32.0.1",
            "172.15.255.255",
            "100.128.0.1",
            "169.255.0.1",
            "93.184.216.34",
        ] {
            assert_eq!(range(ip), None, "{ip}");
        }
    }

    #[test]
    fn special_v6_and_embedded_v4() {
        for (ip, want) in [
            ("::1", "loopback"),
            ("::", "unspecified"),
            ("fe80::1", "link-local"),
            ("fc00::1", "unique local (private)"),
            ("fd00:ec2::254", "unique local (private)"),
            ("ff02::1", "multicast"),
            ("::ffff:127.0.0.1", "loopback"),
            ("::ffff:169.254.169.254", "link-local"),
            ("::10.0.0.1", "private"),
            ("64:ff9b::a00:1", "private"),
            ("64:ff9b::7f00:1", "loopback"),
            ("64:ff9b:1::1", "local NAT64"),
            ("2002:a00:1::1", "private"),
            ("2002:a9fe:a9fe::1", "link-local"),
            ("2001:0:4136:e378::1", "Teredo"),
            ("2001:db8::1", "documentation"),
        ] {
            assert_eq!(range(ip), Some(want), "{ip}");
        }
        for ip in [
            "2606:4700::1111",
            "::ffff:8.8.8.8",
            "64:ff9b::808:808",
            "2002:808:808::1",
        ] {
            assert_eq!(range(ip), None, "{ip}");
        }
    }
}
