//! The egress decision end to end, against a real HTTP server on 127.0.0.1
//! that counts the connections it accepts. Private-range cases use a
//! resolver fed with fixed answers (the decision code is the real one); the
//! connect-to-the-checked-address path is exercised for real on loopback.

use sbx_wasm::Services;
use sbx_wasm::net::FetchRequest;
use sbx_wasm::net::{Resolve, StaticResolver};
use sbx_wasm::{Capabilities, Op, Sandbox, SandboxResult, Violation};
use sbx_wasm::{ErrorKind, Output};
use sbx_wasm_tests::{LoopbackServer, World};
use std::io;
use std::net::IpAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

fn sandbox(caps: Capabilities, resolver: impl Resolve + 'static) -> Sandbox {
    Sandbox::builder(caps)
        .services(Services::new().resolver(Arc::new(resolver)))
        .build()
        .unwrap()
}

fn denied(r: &SandboxResult) -> String {
    assert_eq!(r.violation(), Some(Violation::EgressDenied), "{r:?}");
    assert!(!r.hard());
    r.denial.as_ref().unwrap().message.clone()
}

fn body(r: &SandboxResult) -> String {
    match &r.output {
        Some(Output::Response { body, .. }) => String::from_utf8(body.0.clone()).unwrap(),
        other => panic!("no response: {other:?} / {r:?}"),
    }
}

/// A granted name pinned to the loopback server: the name does not exist in
/// DNS, so a response proves the connection went to the checked address.
#[test]
fn connection_goes_to_the_checked_address() {
    let w = World::new();
    let s = LoopbackServer::start();
    let caps = w
        .caps_builder()
        .allow_egress(format!("http://api.test:{}", s.port))
        .allow_egress(format!("http://127.0.0.1:{}", s.port))
        .build()
        .unwrap();
    let mut sb = sandbox(
        caps,
        StaticResolver::new().with("api.test", [ip("127.0.0.1")]),
    );
    let r = sb.run(Op::fetch(format!("http://api.test:{}/status", s.port)));
    assert_eq!(body(&r), "ok");
    assert_eq!(s.connections(), 1);
    let ev = sb.audit().last().unwrap();
    assert_eq!(
        ev.address.as_deref(),
        Some(format!("127.0.0.1:{}", s.port).as_str())
    );
    assert_eq!(ev.status, Some(200));
    assert_eq!(
        ev.rule.as_deref(),
        Some(format!("http://api.test:{}", s.port).as_str())
    );
    // The body and the header names and values, all returned to the guest.
    assert_eq!(ev.bytes, 2 + "content-length2connectionclose".len() as u64);
}

#[test]
fn a_granted_name_resolving_to_loopback_is_refused_without_an_ip_rule() {
    let w = World::new();
    let s = LoopbackServer::start();
    let caps = w
        .caps_builder()
        .allow_egress(format!("http://api.test:{}", s.port))
        .build()
        .unwrap();
    let mut sb = sandbox(
        caps,
        StaticResolver::new().with("api.test", [ip("127.0.0.1")]),
    );
    let msg = denied(&sb.run(Op::fetch(format!("http://api.test:{}/status", s.port))));
    assert!(msg.contains("loopback address 127.0.0.1"), "{msg}");
    assert_eq!(s.connections(), 0);
    assert!(
        sb.audit()
            .last()
            .unwrap()
            .detail
            .as_deref()
            .unwrap()
            .contains("resolves to loopback")
    );
}

#[test]
fn private_and_metadata_answers_are_refused_and_public_ones_allowed() {
    let w = World::new();
    let caps = w
        .caps_builder()
        .allow_egress("http://api.test")
        .build()
        .unwrap();
    for (answer, range) in [
        ("10.0.0.5", "private address 10.0.0.5"),
        ("172.20.1.1", "private"),
        ("192.168.0.10", "private"),
        ("169.254.169.254", "link-local address 169.254.169.254"),
        ("100.100.100.200", "carrier-grade NAT"),
        ("0.0.0.0", "unspecified"),
        ("224.0.0.251", "multicast"),
        ("::1", "loopback"),
        ("fe80::1", "link-local"),
        ("fd00:ec2::254", "unique local"),
        ("::ffff:169.254.169.254", "link-local"),
        ("64:ff9b::a9fe:a9fe", "link-local"),
        ("2002:c0a8:1::1", "private"),
    ] {
        let mut sb = sandbox(
            caps.clone(),
            StaticResolver::new().with("api.test", [ip(answer)]),
        );
        let msg = denied(&sb.run(Op::fetch("http://api.test/latest/meta-data/")));
        assert!(msg.contains(range), "{answer}: {msg}");
    }
    // Any bad address among the answers refuses the fetch.
    let mut sb = sandbox(
        caps.clone(),
        StaticResolver::new().with("api.test", [ip("93.184.216.34"), ip("10.0.0.5")]),
    );
    assert!(denied(&sb.run(Op::fetch("http://api.test/"))).contains("10.0.0.5"));
    // Neighbour: a public answer passes the decision (the dial itself fails
    // on this offline machine, as a network error, not a denial).
    let caps = Capabilities::builder()
        .allow_egress("http://api.test")
        .build()
        .unwrap();
    let d = caps
        .egress()
        .decide(
            "http://api.test/",
            &StaticResolver::new().with("api.test", [ip("93.184.216.34")]),
            Duration::from_secs(1),
        )
        .unwrap();
    assert_eq!(d.addrs, vec!["93.184.216.34:80".parse().unwrap()]);
}

#[test]
fn ip_and_cidr_rules_name_special_addresses_explicitly() {
    let caps = Capabilities::builder()
        .allow_egress("http://169.254.169.254")
        .allow_egress("http://10.0.0.0/8:8080")
        .allow_egress("http://[::1]:9000")
        .allow_egress("http://internal.test:8080")
        .build()
        .unwrap();
    let e = caps.egress();
    let r = StaticResolver::new().with("internal.test", [ip("10.1.2.3")]);
    let t = Duration::from_secs(1);
    assert!(e.decide("http://169.254.169.254/latest/", &r, t).is_ok());
    assert!(e.decide("http://[::1]:9000/", &r, t).is_ok());
    // The name rule allows the host; the CIDR rule (same scheme and port)
    // names the private address it resolves to.
    assert!(e.decide("http://internal.test:8080/", &r, t).is_ok());
    // Same address, other port: the CIDR rule does not cover it.
    assert!(e.decide("http://10.1.2.3:8081/", &r, t).is_err());
    assert!(e.decide("http://[::1]:9001/", &r, t).is_err());
}

/// Resolves once per call and counts calls: the second answer would be a
/// rebinding to a private address.
struct Rebinding {
    calls: Arc<AtomicUsize>,
}

impl Resolve for Rebinding {
    fn lookup(&self, _host: &str, _t: Duration) -> io::Result<Vec<IpAddr>> {
        let n = self.calls.fetch_add(1, Ordering::SeqCst);
        Ok(vec![if n.is_multiple_of(2) {
            ip("127.0.0.1")
        } else {
            ip("10.0.0.5")
        }])
    }
}

#[test]
fn dns_rebinding_gets_nowhere_because_the_name_is_resolved_once() {
    let w = World::new();
    let s = LoopbackServer::start();
    let caps = w
        .caps_builder()
        .allow_egress(format!("http://rebind.test:{}", s.port))
        .allow_egress(format!("http://127.0.0.1:{}", s.port))
        .build()
        .unwrap();
    let calls = Arc::new(AtomicUsize::new(0));
    let mut sb = sandbox(
        caps,
        Rebinding {
            calls: calls.clone(),
        },
    );
    let r = sb.run(Op::fetch(format!("http://rebind.test:{}/status", s.port)));
    assert_eq!(body(&r), "ok");
    assert_eq!(
        calls.load(Ordering::SeqCst),
        1,
        "the client looked the name up again"
    );
    // The next fetch gets the rebound answer and is refused before dialling.
    assert!(
        denied(&sb.run(Op::fetch(format!("http://rebind.test:{}/status", s.port))))
            .contains("10.0.0.5")
    );
    assert_eq!(s.connections(), 1);
}

#[test]
fn url_tricks_are_judged_on_the_real_host() {
    let w = World::new();
    let s = LoopbackServer::start();
    let p = s.port;
    let caps = w
        .caps_builder()
        .allow_egress(format!("http://127.0.0.1:{p}"))
        .allow_egress("https://*.example.com")
        .build()
        .unwrap();
    let mut sb = sandbox(caps, StaticResolver::new());
    for url in [
        format!("http://127.0.0.1:{p}@evil.com/"),
        format!("http://evil.com\\@127.0.0.1:{p}/"),
        format!("http://evil.com#@127.0.0.1:{p}/"),
        format!("http://evil.com?@127.0.0.1:{p}/"),
        format!("http://localhost:{p}/"),
        format!("http://127.0.0.2:{p}/"),
        format!("http://[::1]:{p}/"),
        format!("http://127.0.0.1:{}/", p.wrapping_add(1).max(1)),
        format!("https://127.0.0.1:{p}/"),
        format!("ftp://127.0.0.1:{p}/"),
        "https://example.com/".into(),
        "https://evilexample.com/".into(),
        "https://example.com.evil.com/".into(),
        "https://a.example.com:8443/".into(),
        "http://a.example.com/".into(),
    ] {
        let r = sb.run(Op::fetch(url.clone()));
        assert_eq!(r.violation(), Some(Violation::EgressDenied), "{url}: {r:?}");
    }
    assert_eq!(s.connections(), 0, "a denied URL reached the server");
    // Spellings of the granted address itself are the granted address.
    for url in [
        format!("http://127.0.0.1:{p}/status"),
        format!("http://2130706433:{p}/status"),
        format!("http://0x7f.0.0.1:{p}/status"),
        format!("http://0177.0.0.1:{p}/status"),
        format!("http://127.1:{p}/status"),
        format!("http://[::ffff:127.0.0.1]:{p}/status"),
        format!("HTTP://127.0.0.1:{p}/status#frag"),
        format!("http://127.0.0.1:{p}/status?q=1"),
    ] {
        let r = sb.run(Op::fetch(url.clone()));
        assert!(r.ok, "{url}: {r:?}");
    }
    assert_eq!(s.connections(), 8);
}

#[test]
fn idn_and_trailing_dot_and_case_reduce_to_one_name() {
    let caps = Capabilities::builder()
        .allow_egress("https://bücher.example")
        .allow_egress("https://api.example.com")
        .build()
        .unwrap();
    let e = caps.egress();
    let r = StaticResolver::new()
        .with("xn--bcher-kva.example", [ip("93.184.216.34")])
        .with("api.example.com", [ip("93.184.216.34")]);
    let t = Duration::from_secs(1);
    for ok in [
        "https://BÜCHER.example/",
        "https://xn--bcher-kva.example/",
        "https://API.Example.com./",
        "https://api.example.com:443/",
    ] {
        assert!(e.decide(ok, &r, t).is_ok(), "{ok}");
    }
    for bad in [
        "https://bucher.example/",
        "https://api.example.co/",
        "https://api.example.com:80/",
    ] {
        assert!(e.decide(bad, &r, t).is_err(), "{bad}");
    }
}

#[test]
fn redirects_are_returned_or_followed_with_every_hop_decided() {
    let w = World::new();
    let s = LoopbackServer::start();
    let origin = s.origin();
    // Not followed by default.
    let caps = w.caps_builder().allow_egress(&origin).build().unwrap();
    let mut sb = sandbox(caps, StaticResolver::new());
    let r = sb.run(Op::fetch(format!("{origin}/redirect-same")));
    assert!(
        matches!(r.output, Some(Output::Response { status: 302, .. })),
        "{r:?}"
    );
    assert_eq!(s.connections(), 1);

    let caps = w
        .caps_builder()
        .allow_egress(&origin)
        .max_redirects(3)
        .build()
        .unwrap();
    let mut sb = sandbox(
        caps,
        StaticResolver::new().with("evil.example", [ip("127.0.0.1")]),
    );
    // A redirect inside the grant is followed.
    let r = sb.run(Op::fetch(format!("{origin}/redirect-same")));
    assert_eq!(body(&r), "ok");
    assert_eq!(sb.audit().last().unwrap().redirects, Some(1));
    assert_eq!(s.connections(), 3);
    // A redirect to a host outside the grant is refused before dialling,
    // even though evil.example would resolve to the very server.
    let msg = denied(&sb.run(Op::fetch(format!("{origin}/redirect"))));
    assert!(
        msg.contains("redirect 1 to http://evil.example/steal"),
        "{msg}"
    );
    assert_eq!(s.connections(), 4);
    // A loop stops at the limit and returns the last redirect.
    let r = sb.run(Op::fetch(format!("{origin}/redirect-loop")));
    assert!(
        matches!(r.output, Some(Output::Response { status: 302, .. })),
        "{r:?}"
    );
    assert_eq!(s.connections(), 8);
}

#[test]
fn forbidden_headers_and_oversized_requests_never_leave() {
    let w = World::new();
    let s = LoopbackServer::start();
    let caps = w.caps_builder().allow_egress(s.origin()).build().unwrap();
    let mut sb = sandbox(caps, StaticResolver::new());
    let fetch = |headers: Vec<(&str, &str)>, body: Vec<u8>| {
        Op::Net(FetchRequest {
            method: "POST".into(),
            url: format!("{}/echo", s.origin()),
            headers: headers
                .into_iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            body,
            redirects: Default::default(),
            timeouts: Default::default(),
        })
    };
    for h in [
        ("Host", "evil.com"),
        ("Proxy-Authorization", "x"),
        ("X-Forwarded-For", "10.0.0.1"),
        ("Transfer-Encoding", "chunked"),
        ("X-Ok", "a\r\nHost: evil"),
    ] {
        let r = sb.run(fetch(vec![h], vec![]));
        assert_eq!(
            r.violation(),
            Some(Violation::InvalidRequest),
            "{h:?}: {r:?}"
        );
    }
    let r = sb.run(fetch(
        vec![],
        vec![0; sbx_wasm::net::MAX_REQUEST_BODY_BYTES + 1],
    ));
    assert_eq!(r.violation(), Some(Violation::InvalidRequest));
    assert_eq!(s.connections(), 0);
    let r = sb.run(fetch(
        vec![
            ("Authorization", "Bearer t"),
            ("Content-Type", "application/json"),
        ],
        b"{}".to_vec(),
    ));
    assert_eq!(body(&r), "echo");
    assert_eq!(s.requests(), vec!["POST /echo HTTP/1.1".to_string()]);
}

#[test]
fn a_drip_feeding_server_ends_as_max_wall_within_the_budget() {
    let w = World::new();
    let s = LoopbackServer::start();
    let caps = w
        .caps_builder()
        .allow_egress(s.origin())
        .max_wall(Duration::from_millis(500))
        .build()
        .unwrap();
    let mut sb = sandbox(caps, StaticResolver::new());
    let t = Instant::now();
    let r = sb.run(Op::fetch(format!("{}/drip", s.origin())));
    assert_eq!(r.violation(), Some(Violation::MaxWall), "{r:?}");
    assert!(r.hard());
    assert!(
        t.elapsed() < Duration::from_secs(3),
        "took {:?}",
        t.elapsed()
    );
}

#[test]
fn unresolvable_and_unreachable_hosts_are_errors_not_denials() {
    let w = World::new();
    let caps = w
        .caps_builder()
        .allow_egress("http://gone.test")
        .allow_egress("http://127.0.0.1:9")
        .build()
        .unwrap();
    let mut sb = sandbox(caps, StaticResolver::new());
    for url in ["http://gone.test/", "http://127.0.0.1:9/"] {
        let r = sb.run(Op::fetch(url));
        assert!(r.denial.is_none(), "{r:?}");
        assert_eq!(r.error.as_ref().unwrap().kind, ErrorKind::Network, "{r:?}");
    }
}
