//! wasi:http request parts (method, scheme, authority, path with query,
//! headers), built from tricky pieces or raw, through the wasi:http door's
//! translation (`sbx_wasm::net::wasi_http_request`) and the gate's check
//! against fixed rules. Oracles: no panic; the translated request never
//! carries `content-length`; when the gate allows it, the URL it judged
//! goes to the scheme, host and port the authority alone names (the path
//! can never change where a request goes); an authority whose port is
//! written empty is never allowed.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;

#[path = "shared/pieces.rs"]
mod shared;
use sbx_wasm::{Op, Sandbox};
use shared::Text;

const RULES: &[&str] = &[
    "http://127.0.0.1:8080",
    "https://api.example.com",
    "http://*.test",
];

const PIECES: &[&str] = &[
    "127.0.0.1",
    "0x7f.1",
    "2130706433",
    "[::1]",
    "[::ffff:127.0.0.1]",
    "api.example.com",
    "API.example.COM",
    "a.test",
    "evil.com",
    "evil",
    ":",
    ":8080",
    ":443",
    ":80",
    ":abc",
    "@",
    "user",
    "#",
    "?",
    "/",
    "\\",
    ".",
    "%2e",
    "%40",
    " ",
    "\t",
];

const METHODS: &[&str] = &["GET", "POST", "PUT", "OPTIONS", "CONNECT", "G E T", ""];
const SCHEMES: &[&str] = &["http", "https", "ftp", "HTTP", "", "http:"];
const NAMES: &[&str] = &[
    "accept",
    "content-length",
    "Content-Length",
    "host",
    "x-forwarded-for",
    "authorization",
    "bad name",
];

#[derive(Arbitrary, Debug)]
struct Parts {
    method: u8,
    scheme: Option<u8>,
    authority: Option<Text>,
    path: Option<Text>,
    headers: Vec<(u8, Vec<u8>)>,
}

fn gate() -> &'static Sandbox {
    static GATE: std::sync::OnceLock<Sandbox> = std::sync::OnceLock::new();
    shared::gate(&GATE, RULES)
}

fuzz_target!(|p: Parts| {
    let method = METHODS[p.method as usize % METHODS.len()];
    let scheme = p.scheme.map(|s| SCHEMES[s as usize % SCHEMES.len()]);
    let authority = p.authority.as_ref().map(|t| t.build(PIECES));
    let path = p.path.as_ref().map(|t| t.build(PIECES));
    let headers: Vec<(&str, &[u8])> = p
        .headers
        .iter()
        .map(|(n, v)| (NAMES[*n as usize % NAMES.len()], v.as_slice()))
        .collect();
    let Ok(req) = sbx_wasm::net::wasi_http_request(
        method,
        scheme,
        authority.as_deref(),
        path.as_deref(),
        headers,
    ) else {
        return;
    };
    assert!(
        !req.headers
            .iter()
            .any(|(k, _)| k.eq_ignore_ascii_case("content-length")),
        "{req:?}"
    );
    let allowed = gate().check(&Op::Net(req.clone())).is_ok();
    if !allowed {
        return;
    }
    // Allowed: the place the gate judged is the authority's own.
    let judged = url::Url::parse(&req.url).expect("an allowed URL parses");
    let alone = format!(
        "{}://{}/",
        scheme.unwrap_or("https"),
        authority.as_deref().unwrap_or_default()
    );
    let alone = url::Url::parse(&alone).unwrap_or_else(|e| {
        panic!(
            "allowed {:?}, but its authority alone does not parse: {e}",
            req.url
        )
    });
    assert_eq!(
        (
            judged.scheme(),
            judged.host_str(),
            judged.port_or_known_default()
        ),
        (
            alone.scheme(),
            alone.host_str(),
            alone.port_or_known_default()
        ),
        "the path moved {:?} away from its authority",
        req.url
    );
    // An empty written port is never allowed.
    let auth = authority.as_deref().unwrap_or_default();
    let host = auth
        .split(['/', '\\', '?', '#'])
        .next()
        .unwrap_or("")
        .rsplit_once('@')
        .map_or(
            auth.split(['/', '\\', '?', '#']).next().unwrap_or(""),
            |(_, h)| h,
        );
    assert!(!host.ends_with(':'), "allowed an empty port: {:?}", req.url);
});
