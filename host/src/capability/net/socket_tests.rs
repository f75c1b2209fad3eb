use super::*;
use crate::net::EgressRule;

fn egress(rules: &[&str]) -> Egress {
    Egress {
        rules: rules
            .iter()
            .map(|r| EgressRule::parse(r).unwrap())
            .collect(),
        ..Egress::default()
    }
}

#[test]
fn tcp_rules_allow_connections_and_http_rules_never_do() {
    let e = egress(&["tcp://db.example.com:5432", "https://db.example.com"]);
    assert_eq!(
        e.connect_rule("db.example.com", 5432),
        Some("tcp://db.example.com:5432")
    );
    assert!(e.connect_rule("DB.Example.com.", 5432).is_some());
    assert!(e.connect_rule("db.example.com", 5433).is_none());
    assert!(e.connect_rule("db.example.com", 443).is_none());
    assert!(e.connect_rule("evil.com", 5432).is_none());
    // And a tcp rule never allows a fetch.
    let tcp_only = egress(&["tcp://api.example.com:443"]);
    assert!(tcp_only.check("https://api.example.com/").is_err());
    assert!(!egress(&["https://x.example"]).grants_sockets());
    assert!(tcp_only.grants_sockets());
}

#[test]
fn a_name_that_resolves_to_a_special_address_needs_an_ip_rule() {
    let lo: IpAddr = "127.0.0.1".parse().unwrap();
    let public: IpAddr = "93.184.216.34".parse().unwrap();
    let e = egress(&["tcp://db.test:5432"]);
    assert!(check_connect(&e, Scheme::Tcp, "db.test", 5432, Some(public)).is_ok());
    let d = check_connect(&e, Scheme::Tcp, "db.test", 5432, Some(lo)).unwrap_err();
    assert!(d.message.contains("loopback"), "{}", d.message);
    let e = egress(&["tcp://db.test:5432", "tcp://127.0.0.1:5432"]);
    let p = check_connect(&e, Scheme::Tcp, "db.test", 5432, Some(lo)).unwrap();
    assert_eq!(p.rule(), "tcp://127.0.0.1:5432");
    // The IP rule covers its port only.
    let e = egress(&["tcp://db.test:*", "tcp://127.0.0.1:5432"]);
    assert!(check_connect(&e, Scheme::Tcp, "db.test", 6379, Some(lo)).is_err());
    // An address dialled without a lookup needs an IP or CIDR rule.
    let e = egress(&["tcp://db.test:5432"]);
    assert!(check_connect(&e, Scheme::Tcp, "127.0.0.1", 5432, Some(lo)).is_err());
    let e = egress(&["tcp://10.0.0.0/8:5432"]);
    let ten: IpAddr = "10.1.2.3".parse().unwrap();
    assert!(check_connect(&e, Scheme::Tcp, "10.1.2.3", 5432, Some(ten)).is_ok());
    assert!(check_connect(&e, Scheme::Tcp, "[::1]", 5432, Some("::1".parse().unwrap())).is_err());
    // A host written as an address is that address: another one is
    // refused, whatever the rule.
    let e = egress(&["tcp://127.0.0.1:25"]);
    assert!(check_connect(&e, Scheme::Tcp, "0x7f.1", 25, Some(lo)).is_ok());
    assert!(check_connect(&e, Scheme::Tcp, "0x7f.1", 25, Some(public)).is_err());
    assert!(check_connect(&e, Scheme::Tcp, "127.0.0.1", 25, Some(public)).is_err());
}

#[test]
fn hosts_with_url_syntax_are_never_read_as_another_host() {
    let e = egress(&["tcp://db.test:5432", "tcp://*.svc.test:*"]);
    for bad in [
        "evil@db.test",
        "db.test/x",
        "db.test:5432",
        "db.test#",
        "db.test?",
        "db\\.test",
        "db.test ",
        "d%62.test",
        "a.svc.test@evil",
        "db.teſt",
        "",
    ] {
        assert!(e.connect_rule(bad, 5432).is_none(), "{bad:?}");
        assert!(e.lookup_rule(bad).is_none(), "{bad:?}");
    }
    assert!(e.connect_rule("DB.test.", 5432).is_some());
}

#[test]
fn lookups_need_a_rule_covering_the_name() {
    let e = egress(&["tcp://*.db.test:*", "tcp://cache.test:6379"]);
    assert!(e.lookup_rule("a.db.test").is_some());
    assert!(e.lookup_rule("cache.test").is_some());
    assert!(e.lookup_rule("db.test").is_none());
    assert!(e.lookup_rule("exfil.attacker.example").is_none());
}

#[test]
fn udp_rules_allow_peers_and_listen_rules_binds_each_alone() {
    let lo: IpAddr = "127.0.0.1".parse().unwrap();
    let e = egress(&[
        "udp://dns.test:53",
        "udp://127.0.0.1:*",
        "tcp://db.test:5432",
    ]);
    assert!(
        check_connect(
            &e,
            Scheme::Udp,
            "dns.test",
            53,
            Some("9.9.9.9".parse().unwrap())
        )
        .is_ok()
    );
    // A udp rule allows no TCP connection, a tcp rule no datagram.
    assert!(check_connect(&e, Scheme::Tcp, "dns.test", 53, None).is_err());
    assert!(check_connect(&e, Scheme::Udp, "db.test", 5432, None).is_err());
    // A name giving loopback needs the IP rule, as for TCP.
    let d = check_connect(&e, Scheme::Udp, "dns.test", 53, Some(lo));
    assert_eq!(d.unwrap().rule(), "udp://127.0.0.1:*");
    let e2 = egress(&["udp://dns.test:53"]);
    assert!(check_connect(&e2, Scheme::Udp, "dns.test", 53, Some(lo)).is_err());
    // A name covered only by a udp rule may be looked up.
    assert!(e.lookup_rule("dns.test").is_some());
    // Binds: only what a listen rule names.
    let mut e = e;
    e.listen = vec![crate::net::ListenRule::parse("127.0.0.1:*").unwrap()];
    let held_ok = |op: SocketOp| e.listen_rule(op.address().unwrap()).is_some();
    assert!(held_ok(SocketOp::bind(
        "127.0.0.1:0".parse().unwrap(),
        false
    )));
    assert!(held_ok(SocketOp::bind(
        "127.0.0.1:9000".parse().unwrap(),
        true
    )));
    assert!(!held_ok(SocketOp::bind(
        "[::1]:9000".parse().unwrap(),
        false
    )));
    assert!(!held_ok(SocketOp::bind(
        "0.0.0.0:9000".parse().unwrap(),
        true
    )));
    // What the audit names.
    let op = SocketOp::bind("[::ffff:127.0.0.1]:0".parse().unwrap(), true);
    assert_eq!(
        (op.kind(), op.target()),
        (OpKind::NetListen, "udp://127.0.0.1:0")
    );
    let op = SocketOp::datagram(Some("dns.test"), "9.9.9.9".parse().unwrap(), 53);
    assert_eq!(
        (op.kind(), op.target()),
        (OpKind::NetDatagram, "dns.test:53")
    );
    assert!(op.reaches_peer() && !SocketOp::lookup("dns.test").reaches_peer());
}

#[test]
fn tcp_rules_name_their_port() {
    assert!(EgressRule::parse("tcp://db.test").is_err());
    assert!(EgressRule::parse("tcp://db.test:5432").is_ok());
    assert!(EgressRule::parse("tcp://[::1]:25").is_ok());
    assert!(EgressRule::parse("udp://db.test").is_err());
    assert!(EgressRule::parse("udp://db.test:53").is_ok());
}

#[test]
fn targets_read_back() {
    let op = SocketOp::connect(Some("db.test"), "::ffff:10.0.0.1".parse().unwrap(), 5432);
    assert_eq!(op.target, "db.test:5432");
    assert_eq!(op.address().unwrap().to_string(), "10.0.0.1:5432");
    let op = SocketOp::connect(None, "::1".parse().unwrap(), 25);
    assert_eq!(op.target, "[::1]:25");
    assert!(SocketOp::connect_to("db.test:5432").is_some());
    let bind = SocketOp::bind_to("udp://[::1]:53").unwrap();
    assert_eq!(
        (bind.kind(), bind.target()),
        (OpKind::NetListen, "udp://[::1]:53")
    );
    assert_eq!(
        SocketOp::bind_to("127.0.0.1:80").unwrap().target(),
        "tcp://127.0.0.1:80"
    );
    assert!(SocketOp::bind_to("sctp://127.0.0.1:80").is_none());
    assert!(SocketOp::bind_to("localhost:80").is_none());
    let peer = SocketOp::peer_to(Scheme::Udp, "dns.test:53").unwrap();
    assert_eq!(peer.kind(), OpKind::NetDatagram);
    assert!(SocketOp::connect_to("db.test").is_none());
    assert!(SocketOp::connect_to(":5432").is_none());
}
