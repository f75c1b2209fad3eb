//! Secrets: fuzzer-built requests (headers, body, URL made of the
//! placeholder, the plan alias and arbitrary text) to a bound and an
//! unbound host, answered by an in-process network that echoes what it
//! received in fuzzer-chosen encodings (plain, base64 at any offset,
//! percent-encoded, JSON-escaped) into headers and body. Oracle: the value
//! is in nothing returned to the caller or recorded (results, report,
//! audit), in plain, base64 or percent-encoded form; and it is sent only in
//! the bound header to the bound host.
#![no_main]

use arbitrary::Arbitrary;
use base64::Engine as _;
use libfuzzer_sys::fuzz_target;
use sbx_wasm::Services;
use sbx_wasm::net::{FetchLimits, FetchRequest, FetchResponse, Net, NetError};
use sbx_wasm::{Capabilities, Op, Sandbox};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

const VALUE: &str = "sk_live/Se+cr3t_V4lue==";
const BOUND: &str = "http://127.0.0.1:8080";
const OTHER: &str = "http://127.0.0.1:9090";

#[derive(Arbitrary, Debug)]
enum Piece {
    Placeholder,
    Alias,
    Text(String),
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum Echo {
    Plain,
    Base64,
    Base64Url,
    Percent,
    Json,
}

#[derive(Arbitrary, Debug)]
struct Input {
    bound: bool,
    headers: Vec<(u8, Vec<Piece>)>,
    body: Vec<Piece>,
    query: Vec<Piece>,
    echoes: Vec<(Echo, u8)>,
    prefix: Vec<u8>,
}

const NAMES: &[&str] = &["Authorization", "X-Api-Key", "X-Other", "authorization"];

fn b64(b: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(b)
}

fn pct(b: &[u8]) -> String {
    b.iter()
        .map(|&c| {
            if c.is_ascii_alphanumeric() {
                (c as char).to_string()
            } else {
                format!("%{c:02X}")
            }
        })
        .collect()
}

/// Answers with what it received, encoded as told; records what it got.
struct EchoNet {
    echoes: Vec<(Echo, u8)>,
    prefix: Vec<u8>,
    seen: Arc<Mutex<Vec<(String, String)>>>,
}

impl Net for EchoNet {
    fn fetch(
        &self,
        req: &FetchRequest,
        _addr: SocketAddr,
        _limits: FetchLimits,
    ) -> Result<FetchResponse, NetError> {
        let mut got = format!("{} {}\n", req.method, req.url);
        for (k, v) in &req.headers {
            got += &format!("{k}: {v}\n");
            self.seen
                .lock()
                .unwrap()
                .push((req.url.clone(), format!("{k}: {v}")));
        }
        got += &String::from_utf8_lossy(&req.body);
        self.seen.lock().unwrap().push((
            req.url.clone(),
            format!("body: {}", String::from_utf8_lossy(&req.body)),
        ));
        let mut raw = self.prefix.clone();
        raw.extend_from_slice(got.as_bytes());
        let mut body = Vec::new();
        let mut headers = Vec::new();
        for (echo, where_) in &self.echoes {
            let text = match echo {
                Echo::Plain => String::from_utf8_lossy(&raw).into_owned(),
                Echo::Base64 => b64(&raw),
                Echo::Base64Url => base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(&raw),
                Echo::Percent => pct(&raw),
                Echo::Json => serde_json::to_string(&String::from_utf8_lossy(&raw))
                    .unwrap()
                    .replace('/', "\\/"),
            };
            if where_ % 2 == 0 {
                body.extend_from_slice(text.as_bytes());
            } else {
                headers.push(("x-echo".to_string(), text.replace(['\r', '\n'], " ")));
            }
        }
        Ok(FetchResponse {
            status: 200,
            headers,
            body,
        })
    }
}

fn caps() -> Capabilities {
    Capabilities::builder()
        .allow_egress(BOUND)
        .allow_egress(OTHER)
        .secret("TOKEN", VALUE, [BOUND], ["Authorization"])
        .max_ops(100)
        .build()
        .unwrap()
}

fn text(pieces: &[Piece], placeholder: &str) -> String {
    pieces
        .iter()
        .map(|p| match p {
            Piece::Placeholder => placeholder.to_string(),
            Piece::Alias => "{{secret:TOKEN}}".to_string(),
            Piece::Text(t) => t.clone(),
        })
        .collect()
}

fuzz_target!(|input: Input| {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let net = EchoNet {
        echoes: input.echoes.iter().take(6).copied().collect(),
        prefix: input.prefix.iter().take(3).copied().collect(),
        seen: seen.clone(),
    };
    let mut sandbox = Sandbox::builder(caps())
        .services(Services::new().net(Arc::new(net)))
        .build()
        .unwrap();
    let placeholder = sandbox.secret_placeholders()[0].1.clone();
    let origin = if input.bound { BOUND } else { OTHER };
    let query: String =
        url::form_urlencoded::byte_serialize(text(&input.query, &placeholder).as_bytes()).collect();
    let headers: Vec<(String, String)> = input
        .headers
        .iter()
        .take(8)
        .map(|(n, v)| {
            let value: String = text(v, &placeholder)
                .chars()
                .filter(|c| !c.is_control())
                .collect();
            (NAMES[*n as usize % NAMES.len()].to_string(), value)
        })
        .collect();
    let op = Op::Net(FetchRequest {
        method: "POST".into(),
        url: format!("{origin}/x?q={query}"),
        headers,
        body: text(&input.body, &placeholder).into_bytes(),
        redirects: Default::default(),
        timeouts: Default::default(),
    });
    let result = sandbox.run(op);
    let out = serde_json::to_string(&(&result, sandbox.report(), sandbox.audit())).unwrap();
    for form in [
        VALUE.to_string(),
        b64(VALUE.as_bytes()),
        pct(VALUE.as_bytes()),
    ] {
        assert!(
            !out.contains(&form),
            "the value reached the caller or a record: {out}"
        );
    }
    // Sent only in the bound header to the bound host.
    for (url, line) in seen.lock().unwrap().iter() {
        if line.contains(VALUE) {
            assert!(url.starts_with(BOUND), "sent to {url}: {line}");
            assert!(
                line.to_ascii_lowercase().starts_with("authorization:"),
                "{line}"
            );
        }
    }
});
