//! A component's socket requests (a name lookup, a TCP connection or a
//! UDP peer at an address a name gave or as written, a bind of a local
//! address) through the gate's check against fixed rules, the tcp and udp
//! ones among http ones, and fixed listen rules. Oracles: no panic; only a
//! tcp rule allows a connection and only a udp rule a peer; an allowed
//! one's port is its rule's; a name allowed by a name rule is that name
//! (or below the wildcard's base); a special-purpose address a name gave
//! is allowed only by an IP or CIDR rule; a host carrying URL syntax is
//! never allowed; a bind is allowed only on a loopback address and port a
//! listen rule names.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;

#[path = "shared/pieces.rs"]
mod shared;
use sbx_wasm::net::{SocketOp, special_range};
use sbx_wasm::{Capabilities, Op, Sandbox};
use shared::Text;
use std::net::{IpAddr, SocketAddr};

const RULES: &[&str] = &[
    "tcp://db.test:5432",
    "tcp://*.svc.test:*",
    "tcp://10.0.0.0/8:6379",
    "tcp://127.0.0.1:25",
    "https://api.example.com",
    "http://127.0.0.1:8080",
    "udp://dns.test:53",
    "udp://127.0.0.1:*",
];

const LISTEN: &[&str] = &["127.0.0.1:8080", "[::1]:*"];

const PIECES: &[&str] = &[
    "db.test",
    "DB.TEST",
    ".",
    "svc.test",
    "a.svc.test",
    "a",
    "evil",
    "127.0.0.1",
    "10.1.2.3",
    "[::1]",
    "[::ffff:127.0.0.1]",
    "0x7f.1",
    "@",
    ":",
    "5432",
    "/",
    "\\",
    "?",
    "#",
    "%2e",
    " ",
    "-",
    "_",
    "api.example.com",
    "xn--bcher-kva",
    "ü",
];

#[derive(Arbitrary, Debug)]
enum Ask {
    Lookup(Text),
    /// A connection to `ip:port`, the address `name`'s lookup gave (or
    /// written as is).
    Connect {
        name: Option<Text>,
        ip: [u8; 16],
        v4: bool,
        port: u16,
        udp: bool,
    },
    /// A bind of `ip:port`, TCP or UDP.
    Bind {
        ip: [u8; 16],
        v4: bool,
        port: u16,
        udp: bool,
    },
}

fn gate() -> &'static Sandbox {
    static GATE: std::sync::OnceLock<Sandbox> = std::sync::OnceLock::new();
    GATE.get_or_init(|| {
        let b = RULES
            .iter()
            .fold(Capabilities::builder(), |b, r| b.allow_egress(*r));
        let caps = LISTEN.iter().fold(b, |b, l| b.allow_listen(*l)).build();
        Sandbox::new(caps.unwrap()).unwrap()
    })
}

fn address(ip: [u8; 16], v4: bool) -> IpAddr {
    if v4 {
        IpAddr::from([ip[0], ip[1], ip[2], ip[3]])
    } else {
        IpAddr::from(ip)
    }
}

fn norm(host: &str) -> String {
    host.trim_end_matches('.').to_ascii_lowercase()
}

fuzz_target!(|ask: Ask| {
    match ask {
        Ask::Lookup(name) => {
            let name = name.build(PIECES);
            let Ok(permit) = gate().check(&Op::Socket(SocketOp::lookup(name.clone()))) else {
                return;
            };
            let rule = permit.rule();
            assert!(
                rule.starts_with("tcp://") || rule.starts_with("udp://"),
                "{name:?} by {permit}"
            );
            assert!(
                !name.contains(['@', '/', '\\', '?', '#']),
                "{name:?} by {permit}"
            );
        }
        Ask::Bind { ip, v4, port, udp } => {
            let addr = SocketAddr::new(address(ip, v4), port);
            let op = SocketOp::bind(addr, udp);
            let Ok(permit) = gate().check(&Op::Socket(op.clone())) else {
                return;
            };
            let bound = op.address().expect("a bind names its address");
            match permit.rule() {
                "127.0.0.1:8080" => assert_eq!(bound, "127.0.0.1:8080".parse().unwrap()),
                "[::1]:*" => assert_eq!(bound.ip(), "::1".parse::<IpAddr>().unwrap()),
                other => panic!("bind allowed by an unexpected rule {other}: {op:?}"),
            }
            assert!(bound.ip().is_loopback(), "{op:?}");
        }
        Ask::Connect {
            name,
            ip,
            v4,
            port,
            udp,
        } => {
            let ip = address(ip, v4);
            let name = name.as_ref().map(|t| t.build(PIECES));
            let op = if udp {
                SocketOp::datagram(name.as_deref(), ip, port)
            } else {
                SocketOp::connect(name.as_deref(), ip, port)
            };
            let Ok(permit) = gate().check(&Op::Socket(op.clone())) else {
                return;
            };
            let rule = permit.rule();
            let scheme = if udp { "udp://" } else { "tcp://" };
            assert!(rule.starts_with(scheme), "{op:?} by {rule}");
            let addr = op.address().expect("a connection names its address");
            match rule {
                "tcp://db.test:5432" => {
                    assert_eq!(port, 5432, "{op:?}");
                    assert_eq!(norm(name.as_deref().unwrap_or("")), "db.test", "{op:?}");
                }
                "tcp://*.svc.test:*" => {
                    let n = norm(name.as_deref().unwrap_or(""));
                    assert!(n.ends_with(".svc.test") && n.len() > 9, "{op:?}");
                }
                "tcp://10.0.0.0/8:6379" => {
                    assert_eq!(port, 6379, "{op:?}");
                    assert!(
                        matches!(addr.ip(), IpAddr::V4(v) if v.octets()[0] == 10),
                        "{op:?}"
                    );
                }
                "tcp://127.0.0.1:25" => {
                    assert_eq!(
                        (addr.ip(), port),
                        ("127.0.0.1".parse().unwrap(), 25),
                        "{op:?}"
                    );
                }
                "udp://dns.test:53" => {
                    assert_eq!(port, 53, "{op:?}");
                    assert_eq!(norm(name.as_deref().unwrap_or("")), "dns.test", "{op:?}");
                }
                "udp://127.0.0.1:*" => {
                    assert_eq!(addr.ip(), "127.0.0.1".parse::<IpAddr>().unwrap(), "{op:?}");
                }
                other => panic!("allowed by an unexpected rule {other}: {op:?}"),
            }
            // A name's special-purpose address needs an IP or CIDR rule.
            if name.is_some() && special_range(addr.ip()).is_some() {
                assert!(
                    [
                        "tcp://10.0.0.0/8:6379",
                        "tcp://127.0.0.1:25",
                        "udp://127.0.0.1:*"
                    ]
                    .contains(&rule),
                    "{op:?} by {rule}"
                );
            }
            if let Some(n) = &name {
                assert!(
                    !n.contains(['@', '/', '\\', '?', '#', ' ']),
                    "{op:?} by {rule}"
                );
            }
        }
    }
});
