//! Arbitrary URLs against a fixed rule set. Oracle: the gate's rule decision
//! agrees with a deliberately simple reference matcher written here over the
//! URL the `url` crate parses (the same parse a client would do).
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use sbx_wasm::Capabilities;
use std::net::IpAddr;
use std::sync::OnceLock;

const RULES: &[&str] = &[
    "https://api.example.com",
    "http://127.0.0.1:8080",
    "https://*.github.io",
    "http://10.0.0.0/8:*",
    "http://[::1]:9000",
    "https://bücher.example",
];

/// Pieces tricky URLs are made of.
const PIECES: &[&str] = &[
    "http://",
    "https://",
    "ftp://",
    "HTTP://",
    "api.example.com",
    "API.EXAMPLE.COM",
    "example.com",
    "evil.com",
    "github.io",
    "a.github.io",
    "evilgithub.io",
    ".",
    "@",
    "#",
    "?",
    "\\",
    "/",
    ":",
    ":8080",
    ":443",
    ":80",
    ":9000",
    "127.0.0.1",
    "0x7f.1",
    "2130706433",
    "0177.0.0.1",
    "127.1",
    "10.1.2.3",
    "[::1]",
    "[::ffff:127.0.0.1]",
    "[::ffff:10.0.0.1]",
    "xn--bcher-kva.example",
    "bücher.example",
    "%2e",
    "%40",
    "user:pw",
    " ",
    "\t",
    "\u{3002}",
    "..",
];

#[derive(Arbitrary, Debug)]
enum Url {
    Pieces(Vec<u8>),
    Raw(String),
}

fn rules() -> &'static Capabilities {
    static CAPS: OnceLock<Capabilities> = OnceLock::new();
    CAPS.get_or_init(|| {
        RULES
            .iter()
            .fold(Capabilities::builder(), |b, r| b.allow_egress(*r))
            .build()
            .unwrap()
    })
}

fn in_v4_net(ip: IpAddr, net: [u8; 4], prefix: u32) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let mask = if prefix == 0 {
                0
            } else {
                u32::MAX << (32 - prefix)
            };
            u32::from(v4) & mask == u32::from_be_bytes(net) & mask
        }
        IpAddr::V6(_) => false,
    }
}

/// The reference: written from the README's rule description, not from the
/// gate's code.
fn reference(raw: &str) -> bool {
    let Ok(u) = url::Url::parse(raw) else {
        return false;
    };
    let scheme = u.scheme();
    let Some(port) = u.port_or_known_default() else {
        return false;
    };
    let ip = match u.host() {
        Some(url::Host::Ipv4(v4)) => Some(IpAddr::V4(v4)),
        Some(url::Host::Ipv6(v6)) => Some(
            v6.to_ipv4_mapped()
                .map(IpAddr::V4)
                .unwrap_or(IpAddr::V6(v6)),
        ),
        _ => None,
    };
    // One trailing dot names the same host (the README's rule); more do not.
    let name = match u.host() {
        Some(url::Host::Domain(d)) => Some(d.strip_suffix('.').unwrap_or(d).to_string()),
        _ => None,
    };
    let name = name.as_deref();
    let is = |n: &str| name == Some(n);
    let below = |base: &str| {
        name.is_some_and(|n| n.len() > base.len() + 1 && n.ends_with(&format!(".{base}")))
    };
    (scheme == "https" && port == 443 && is("api.example.com"))
        || (scheme == "http" && port == 8080 && ip == Some("127.0.0.1".parse().unwrap()))
        || (scheme == "https" && port == 443 && below("github.io"))
        || (scheme == "http" && ip.is_some_and(|ip| in_v4_net(ip, [10, 0, 0, 0], 8)))
        || (scheme == "http" && port == 9000 && ip == Some("::1".parse().unwrap()))
        || (scheme == "https" && port == 443 && is("xn--bcher-kva.example"))
}

fuzz_target!(|input: Url| {
    let raw = match input {
        Url::Pieces(idx) => idx
            .iter()
            .map(|i| PIECES[*i as usize % PIECES.len()])
            .collect::<String>(),
        Url::Raw(s) => s,
    };
    let gate = rules().egress().check(&raw).is_ok();
    assert_eq!(
        gate,
        reference(&raw),
        "gate and reference disagree on {raw:?}"
    );
});
