//! Response headers charged, every special-purpose address, cross-origin
//! hops, request bounds first, a halted fetch keeping its rule.

use super::*;
use sbx_wasm::Services;
use sbx_wasm::net::FetchRequest;
use std::sync::Arc;

#[test]
fn response_headers_count_against_max_output_bytes() {
    let w = World::new();
    let s = LoopbackServer::start();
    let fetch = |budget: u64| {
        let caps = w
            .caps_builder()
            .allow_egress(s.origin())
            .max_output_bytes(budget)
            .build()
            .unwrap();
        let mut sb = Sandbox::new(caps).unwrap();
        let r = sb.run(Op::fetch(format!("{}/headers", s.origin())));
        (r, sb.usage().output_bytes)
    };
    // 16 KiB of headers and a 2-byte body under a 1,000-byte budget: halted.
    let (r, _) = fetch(1_000);
    denied(&r, Violation::MaxOutputBytes);
    // The neighbour: with room, the charge is headers plus body.
    let (r, used) = fetch(100_000);
    assert!(r.ok, "{r:?}");
    assert_eq!(used, BIG_HEADER_BYTES as u64 + 2);
}

// --- 5. every special-purpose address ------------------------------------

#[test]
fn granted_names_answering_special_addresses_are_never_dialled() {
    let w = World::new();
    let s = LoopbackServer::start();
    let ip = |a: &str| a.parse::<IpAddr>().unwrap();
    let resolver = StaticResolver::new()
        .with("translated.test", [ip("::ffff:0:a9fe:a9fe")])
        .with("bench6.test", [ip("2001:2::1")])
        .with("doc6.test", [ip("3fff::1")])
        .with("local.test", [ip("127.0.0.1")]);
    let caps = w
        .caps_builder()
        .allow_egress("http://translated.test")
        .allow_egress("http://bench6.test")
        .allow_egress("http://doc6.test")
        .allow_egress(format!("http://local.test:{}", s.port))
        .allow_egress(s.origin())
        .build()
        .unwrap();
    let mut sb = Sandbox::builder(caps)
        .services(Services::new().resolver(Arc::new(resolver)))
        .build()
        .unwrap();
    for host in ["translated.test", "bench6.test", "doc6.test"] {
        let r = sb.run(Op::fetch(format!("http://{host}/")));
        denied(&r, Violation::EgressDenied);
    }
    assert_eq!(s.connections(), 0);
    // The neighbour: a name answering an address an IP rule names.
    let r = sb.run(Op::fetch(format!("http://local.test:{}/status", s.port)));
    assert!(r.ok, "{r:?}");
    assert_eq!(s.connections(), 1);
}

// --- 6. cross-origin hops, client-IP headers, control characters ----------

#[test]
fn a_cross_origin_hop_forwards_only_safelisted_headers() {
    let w = World::new();
    let a = LoopbackServer::start();
    let b = LoopbackServer::start();
    let caps = w
        .caps_builder()
        .allow_egress(a.origin())
        .allow_egress(b.origin())
        .max_redirects(2)
        .build()
        .unwrap();
    let mut sb = Sandbox::new(caps).unwrap();
    let fetch = |sb: &mut Sandbox, url: String| {
        sb.run(Op::Net(FetchRequest {
            method: "GET".into(),
            url,
            headers: vec![
                ("X-Api-Key".into(), "k-secret".into()),
                ("Authorization".into(), "Bearer t-secret".into()),
                ("Accept".into(), "application/json".into()),
            ],
            body: Vec::new(),
            redirects: Default::default(),
            timeouts: Default::default(),
        }))
    };
    let r = fetch(
        &mut sb,
        format!("{}/redirect-to/127.0.0.1:{}/status", a.origin(), b.port),
    );
    assert!(r.ok, "{r:?}");
    let seen = b.headers().join("\n").to_ascii_lowercase();
    assert!(seen.contains("accept: application/json"), "{seen}");
    assert!(
        !seen.contains("secret"),
        "a credential crossed origins: {seen}"
    );
    let ev = sb.audit().last().unwrap();
    let detail = ev.detail.as_deref().unwrap_or("");
    assert!(
        detail.contains("X-Api-Key") && detail.contains("Authorization"),
        "{detail}"
    );
    // The neighbour: a same-origin hop keeps them.
    let r = fetch(&mut sb, format!("{}/redirect-same", a.origin()));
    assert!(r.ok, "{r:?}");
    assert!(
        a.headers()
            .iter()
            .filter(|h| h.contains("k-secret"))
            .count()
            >= 2
    );
    // Client-IP headers and control characters never leave.
    let before = (a.connections(), b.connections());
    for (k, v) in [
        ("X-Real-IP", "10.0.0.1"),
        ("True-Client-IP", "10.0.0.1"),
        ("X-Ok", "a\u{b}b"),
        ("X-Ok", "a\u{7f}"),
    ] {
        let r = sb.run(Op::Net(FetchRequest {
            method: "GET".into(),
            url: format!("{}/status", a.origin()),
            headers: vec![(k.into(), v.into())],
            body: Vec::new(),
            redirects: Default::default(),
            timeouts: Default::default(),
        }));
        denied(&r, Violation::InvalidRequest);
    }
    assert_eq!((a.connections(), b.connections()), before);
}

#[test]
fn request_bounds_are_checked_before_the_rule_and_check_agrees_with_run() {
    let w = World::new();
    let caps = w.caps_builder().build().unwrap();
    let mut sb = Sandbox::new(caps).unwrap();
    // A denied host with a forbidden header: the bounds decide first.
    let op = Op::Net(FetchRequest {
        method: "GET".into(),
        url: "https://evil.example/".into(),
        headers: vec![("Host".into(), "x".into())],
        body: Vec::new(),
        redirects: Default::default(),
        timeouts: Default::default(),
    });
    assert_eq!(
        sb.check(&op).unwrap_err().violation,
        Violation::InvalidRequest
    );
    denied(&sb.run(op), Violation::InvalidRequest);
    // The neighbour: the same request without it meets the rule.
    let op = Op::fetch("https://evil.example/");
    assert_eq!(
        sb.check(&op).unwrap_err().violation,
        Violation::EgressDenied
    );
}

// --- 7. the audit tells the truth ---------------------------------------

#[test]
fn a_fetch_halted_after_it_connected_keeps_its_rule_and_wall_time_is_real() {
    let w = World::new();
    let s = LoopbackServer::start();
    let caps = w
        .caps_builder()
        .allow_egress(s.origin())
        .max_wall(Duration::from_millis(600))
        .build()
        .unwrap();
    let mut sb = Sandbox::new(caps).unwrap();
    let r = sb.run(Op::fetch(format!("{}/stall", s.origin())));
    denied(&r, Violation::MaxWall);
    let ev = sb.audit().last().unwrap();
    assert_eq!(ev.rule.as_deref(), Some(s.origin().as_str()), "{ev:?}");
    assert!(ev.address.is_some(), "{ev:?}");
    assert!(sb.report().usage.wall_ms >= 500, "{:?}", sb.report().usage);
    // The neighbour: an allowed fetch records its rule too.
    let caps = w.caps_builder().allow_egress(s.origin()).build().unwrap();
    let mut sb = Sandbox::new(caps).unwrap();
    assert!(sb.run(Op::fetch(format!("{}/status", s.origin()))).ok);
    assert_eq!(sb.audit()[0].rule.as_deref(), Some(s.origin().as_str()));
}
