//! A TCP client written against `std::net` alone (`guest-examples/agents/src/bin/tcp_client.rs`)
//! against real TCP servers on 127.0.0.1: a `tcp://` rule lets it reach
//! its service and nothing else, names are looked up through the broker
//! only when a rule covers them, a name that resolves to loopback needs an
//! IP rule, received bytes are charged to the output budget, and a grant
//! without a tcp rule gives no socket at all. Every denial has its allowed
//! neighbour, and the servers count connections.

use sbx_wasm::net::StaticResolver;
use sbx_wasm::wasm::{RunOptions, WasmHost, WasmRun};
use sbx_wasm::{Capabilities, CapabilitiesBuilder, OpKind, Services, Violation};
use sbx_wasm_tests::guest;
use std::io::{BufRead, BufReader, Write};
use std::net::{IpAddr, SocketAddr, TcpListener};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A line server on 127.0.0.1: answers `echo: LINE`, or 64 KiB then close
/// for `big`; counts connections, and the bytes of the lines it read.
///
/// A run may connect and end before the server's thread has accepted
/// (a connect completes in the kernel's queue), so the counts are read
/// behind a barrier: the test connects a probe of its own and waits until
/// the server has accepted it. Accepts are first come, first served, so by
/// then every connection the run made is counted. Probes count nowhere.
pub(crate) struct LineServer {
    pub(crate) port: u16,
    accepted: Arc<AtomicUsize>,
    /// Connections whose line was read (or found missing).
    read: Arc<AtomicUsize>,
    bytes: Arc<AtomicUsize>,
    /// The local addresses of probes sent, and how many were accepted.
    probes: Arc<Mutex<Vec<SocketAddr>>>,
    probes_seen: Arc<AtomicUsize>,
}

impl LineServer {
    pub(crate) fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let accepted = Arc::new(AtomicUsize::new(0));
        let (read, bytes) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let probes = Arc::new(Mutex::new(Vec::new()));
        let probes_seen = Arc::new(AtomicUsize::new(0));
        let (count, read_count, byte_count) = (accepted.clone(), read.clone(), bytes.clone());
        let (probe_list, seen) = (probes.clone(), probes_seen.clone());
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(mut conn) = conn else { continue };
                let peer = conn.peer_addr().ok();
                if peer.is_some_and(|p| probe_list.lock().unwrap().contains(&p)) {
                    seen.fetch_add(1, Ordering::SeqCst);
                    continue;
                }
                count.fetch_add(1, Ordering::SeqCst);
                let (read_count, byte_count) = (read_count.clone(), byte_count.clone());
                std::thread::spawn(move || {
                    let mut line = String::new();
                    let mut reader = BufReader::new(conn.try_clone().unwrap());
                    let got = reader.read_line(&mut line);
                    byte_count.fetch_add(line.len(), Ordering::SeqCst);
                    read_count.fetch_add(1, Ordering::SeqCst);
                    if got.is_err() {
                        return;
                    }
                    let _ = match line.trim_end() {
                        "big" => conn.write_all(&vec![b'x'; 64 * 1024]),
                        text => conn.write_all(format!("echo: {text}\n").as_bytes()),
                    };
                });
            }
        });
        LineServer {
            port,
            accepted,
            read,
            bytes,
            probes,
            probes_seen,
        }
    }

    /// Waits until the server has accepted every connection made so far.
    fn settle(&self) {
        // The probe's address is known only once it is bound, and must be
        // listed before the connect is made; so bind, list, then connect.
        let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)
            .expect("a probe socket");
        socket
            .bind(&SocketAddr::from(([127, 0, 0, 1], 0)).into())
            .expect("the probe binds");
        let local = socket.local_addr().unwrap().as_socket().unwrap();
        let mut list = self.probes.lock().unwrap();
        list.push(local);
        let sent = list.len();
        drop(list);
        socket
            .connect(&SocketAddr::from(([127, 0, 0, 1], self.port)).into())
            .expect("the probe connects");
        let until = Instant::now() + Duration::from_secs(10);
        while self.probes_seen.load(Ordering::SeqCst) < sent {
            assert!(
                Instant::now() < until,
                "the server never accepted its probe"
            );
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// The connections the server has accepted, every one made so far.
    pub(crate) fn connections(&self) -> usize {
        self.settle();
        self.accepted.load(Ordering::SeqCst)
    }

    /// The bytes of every line read, once each connection's read has
    /// ended (a run's connections are closed when it ends).
    pub(crate) fn bytes_read(&self) -> usize {
        let accepted = self.connections();
        let until = Instant::now() + Duration::from_secs(10);
        while self.read.load(Ordering::SeqCst) < accepted && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(10));
        }
        self.bytes.load(Ordering::SeqCst)
    }
}

pub(crate) fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

pub(crate) fn builder() -> CapabilitiesBuilder {
    Capabilities::builder().max_wall(std::time::Duration::from_secs(20))
}

fn run_steps(caps: Capabilities, resolver: StaticResolver, steps: &[String]) -> (WasmRun, String) {
    run_guest("tcp_client", caps, resolver, steps)
}

/// A run of guest `name` over `steps`, names answered by `resolver`.
pub(crate) fn run_guest(
    name: &str,
    caps: Capabilities,
    resolver: StaticResolver,
    steps: &[String],
) -> (WasmRun, String) {
    let host = WasmHost::new().unwrap();
    let agent = host.load(&guest(name)).unwrap();
    let opts = RunOptions::new(caps)
        .args(steps.iter().cloned())
        .services(Services::new().resolver(Arc::new(resolver)));
    let run = host.run(&agent, opts).unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout).into_owned();
    (run, stdout)
}

pub(crate) fn ops(run: &WasmRun) -> Vec<(String, String, Option<Violation>)> {
    run.audit
        .iter()
        .map(|e| (e.op.to_string(), e.target.clone(), e.violation))
        .collect()
}

#[test]
fn a_tcp_rule_reaches_its_service_and_nothing_else() {
    let (granted, other) = (LineServer::start(), LineServer::start());
    let (g, o) = (granted.port, other.port);
    let caps = builder()
        .allow_egress(format!("tcp://127.0.0.1:{g}"))
        .build()
        .unwrap();
    let steps = [
        format!("echo 127.0.0.1:{g} hello"),
        format!("echo 127.0.0.1:{o} leak"),
        format!("echo [::ffff:127.0.0.1]:{g} mapped"),
        format!("listen 127.0.0.1:{g}"),
        "udp 127.0.0.1:0".to_string(),
    ];
    let (run, out) = run_steps(caps, StaticResolver::new(), &steps);
    assert_eq!(run.report.exit_code, Some(0), "{out} {:?}", run.trap);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "0: got echo: hello", "{out}");
    assert_eq!(lines[1], "1: error PermissionDenied", "{out}");
    // The IPv4-mapped spelling is no way around the rule: WASI refuses it
    // as an argument, before any op.
    assert_eq!(lines[2], "2: error InvalidInput", "{out}");
    assert!(lines[3].starts_with("3: error"), "{out}");
    assert!(lines[4].starts_with("4: error"), "{out}");
    assert_eq!(granted.connections(), 1);
    assert_eq!(other.connections(), 0);
    let rule = format!("tcp://127.0.0.1:{g}");
    assert_eq!(
        ops(&run),
        vec![
            ("net_connect".into(), format!("127.0.0.1:{g}"), None),
            (
                "net_connect".into(),
                format!("127.0.0.1:{o}"),
                Some(Violation::EgressDenied)
            ),
            // A tcp rule lends no listener (`net.listen` does); a UDP
            // socket is refused at its making, no op.
            (
                "net_listen".into(),
                format!("tcp://127.0.0.1:{g}"),
                Some(Violation::EgressDenied)
            ),
        ]
    );
    assert_eq!(run.audit[0].rule.as_deref(), Some(rule.as_str()));
    assert_eq!(
        run.audit[0].address.as_deref(),
        Some(format!("127.0.0.1:{g}").as_str())
    );
    assert_ocsf_valid(&run, r#""4001": 3"#);
}

/// The run's records as OCSF events, checked by the registry's validator;
/// `classes` is a piece of its summary that must appear.
pub(crate) fn assert_ocsf_valid(run: &WasmRun, classes: &str) {
    let mut ctx = sbx_wasm::ocsf::Context::default();
    ctx.program = "tcp_client.wasm".into();
    ctx.run = "sockets".into();
    ctx.version = "test".into();
    let events = sbx_wasm::ocsf::run(&run.audit, Some(&run.report), &ctx);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ocsf.jsonl");
    let lines: Vec<String> = events.iter().map(|e| e.to_string()).collect();
    std::fs::write(&path, lines.join("\n")).unwrap();
    let (ok, said) = crate::audit::ocsf_valid(&path);
    assert!(ok && said.contains(classes), "{said}");
}

#[test]
fn names_are_looked_up_through_the_broker_and_loopback_needs_an_ip_rule() {
    let server = LineServer::start();
    let p = server.port;
    let resolver = || {
        StaticResolver::new()
            .with("db.test", [ip("127.0.0.1")])
            .with("exfil.attacker.test", [ip("127.0.0.1")])
    };
    let steps = [
        format!("echo db.test:{p} named"),
        "lookup exfil.attacker.test".to_string(),
        format!("echo exfil.attacker.test:{p} leak"),
    ];
    // A name rule alone: db.test resolves to loopback, which only an IP
    // rule may reach; the other name is never looked up.
    let name_only = builder()
        .allow_egress(format!("tcp://db.test:{p}"))
        .build()
        .unwrap();
    let (run, out) = run_steps(name_only, resolver(), &steps);
    assert_eq!(run.report.exit_code, Some(0), "{out} {:?}", run.trap);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "0: error PermissionDenied", "{out}");
    assert!(lines[1].starts_with("1: error"), "{out}");
    assert!(lines[2].starts_with("2: error"), "{out}");
    assert_eq!(server.connections(), 0);
    let seen = ops(&run);
    assert_eq!(seen[0], ("net_lookup".into(), "db.test".into(), None));
    assert_eq!(
        seen[1],
        (
            "net_connect".into(),
            format!("db.test:{p}"),
            Some(Violation::EgressDenied)
        )
    );
    assert!(
        run.audit[1]
            .detail
            .as_deref()
            .unwrap_or("")
            .contains("loopback"),
        "{:?}",
        run.audit[1]
    );
    assert!(
        seen[2..].iter().all(|(op, t, v)| op == "net_lookup"
            && t == "exfil.attacker.test"
            && *v == Some(Violation::EgressDenied)),
        "{seen:?}"
    );

    // The neighbour: with the IP rule beside it, the same name connects.
    let with_ip = builder()
        .allow_egress(format!("tcp://db.test:{p}"))
        .allow_egress(format!("tcp://127.0.0.1:{p}"))
        .build()
        .unwrap();
    let (run, out) = run_steps(with_ip, resolver(), &steps[..1]);
    assert_eq!(out.trim(), "0: got echo: named", "{out} {:?}", run.trap);
    assert_eq!(server.connections(), 1);
    assert_eq!(
        run.audit[1].rule.as_deref(),
        Some(format!("tcp://127.0.0.1:{p}").as_str())
    );
    assert_ocsf_valid(&run, r#""4001": 1, "4003": 1"#);

    // `policy learn` drafts the grant this run needed: the name's rule and
    // the loopback address's, and under it the run goes as before.
    let learned = sbx_wasm::policy::learn(&run.audit, Some(&run.report)).unwrap();
    let rules: Vec<&str> = learned
        .caps
        .egress()
        .rules()
        .iter()
        .map(|r| r.as_str())
        .collect();
    assert_eq!(
        rules,
        [format!("tcp://127.0.0.1:{p}"), format!("tcp://db.test:{p}")],
        "{}",
        learned.toml
    );
    let (run, out) = run_steps(learned.caps, resolver(), &steps[..1]);
    assert_eq!(out.trim(), "0: got echo: named", "{out} {:?}", run.trap);
}

#[test]
fn received_bytes_are_charged_to_the_output_budget() {
    let server = LineServer::start();
    let p = server.port;
    let caps = |max: u64| {
        builder()
            .allow_egress(format!("tcp://127.0.0.1:{p}"))
            .max_output_bytes(max)
            .build()
            .unwrap()
    };
    let steps = [format!("drain 127.0.0.1:{p}")];
    let (run, out) = run_steps(caps(1 << 20), StaticResolver::new(), &steps);
    assert_eq!(out.trim(), "0: read 65536 bytes", "{out} {:?}", run.trap);
    let (run, out) = run_steps(caps(32 * 1024), StaticResolver::new(), &steps);
    assert_eq!(
        run.report.violation,
        Some(Violation::MaxOutputBytes),
        "{out} {:?}",
        run.trap
    );
    assert!(!out.contains("read 65536"), "{out}");
}

#[test]
fn no_tcp_rule_no_socket() {
    let server = LineServer::start();
    let p = server.port;
    // An http rule for the very same address and port is not a tcp rule.
    let caps = builder()
        .allow_egress(format!("http://127.0.0.1:{p}"))
        .build()
        .unwrap();
    let steps = [
        format!("echo 127.0.0.1:{p} hi"),
        "lookup db.test".to_string(),
    ];
    let resolver = StaticResolver::new().with("db.test", [ip("127.0.0.1")]);
    let (run, out) = run_steps(caps, resolver, &steps);
    assert_eq!(run.report.exit_code, Some(0), "{out} {:?}", run.trap);
    assert!(out.lines().all(|l| l.contains("error")), "{out}");
    assert_eq!(server.connections(), 0);
    // The lookup is on record, refused; no socket existed to connect.
    assert_eq!(
        ops(&run),
        vec![(
            "net_lookup".into(),
            "db.test".into(),
            Some(Violation::EgressDenied)
        )]
    );
    assert!(!OpKind::NetConnect.plannable());
}

#[test]
fn a_run_holds_at_most_max_open_sockets_at_once() {
    let server = LineServer::start();
    let p = server.port;
    let max = sbx_wasm::wasm::MAX_OPEN_SOCKETS;
    let caps = builder()
        .allow_egress(format!("tcp://127.0.0.1:{p}"))
        .build()
        .unwrap();
    let steps = [format!("hold 127.0.0.1:{p} {}", max * 4)];
    let (run, out) = run_steps(caps, StaticResolver::new(), &steps);
    assert_eq!(run.report.exit_code, Some(0), "{out} {:?}", run.trap);
    // Past the bound a new socket fails softly (WASI's new-socket-limit),
    // and closing one makes room again (the neighbour).
    assert!(out.contains(&format!("0: held {max}, then Some(")), "{out}");
    assert!(out.contains("after closing one: Ok(())"), "{out}");
    // The refused socket was never made: it dialled nothing, and no
    // connection is on record for it.
    // (The server accepts on its own thread: give it a moment to count.)
    for _ in 0..200 {
        if server.connections() > max {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert_eq!(server.connections(), max + 1);
    let connects = ops(&run)
        .iter()
        .filter(|(op, _, v)| op == "net_connect" && v.is_none())
        .count();
    assert_eq!(connects, max + 1);
}

/// The same door for a WASI 0.3 client (`guest-examples/agents/src/bin/p3_socket.rs`,
/// the `wasip3` bindings): its service reached, every other port and an
/// unruled name refused on record and never dialled, its received bytes
/// charged to the output budget.
#[test]
fn a_wasi_0_3_client_meets_the_same_rules() {
    let (granted, other) = (LineServer::start(), LineServer::start());
    let (g, o) = (granted.port, other.port);
    let run = |caps: Capabilities, steps: &[String]| {
        let resolver = StaticResolver::new().with("db.test", [ip("127.0.0.1")]);
        run_guest("p3_socket", caps, resolver, steps)
    };
    let rules = |max: u64| {
        builder()
            .allow_egress(format!("tcp://127.0.0.1:{g}"))
            .allow_egress(format!("tcp://db.test:{g}"))
            .max_output_bytes(max)
            .build()
            .unwrap()
    };
    let steps = [
        format!("127.0.0.1:{g}=hello"),
        format!("127.0.0.1:{o}=leak"),
        format!("db.test:{g}=named"),
        format!("exfil.test:{g}=leak"),
    ];
    let (r, out) = run(rules(1 << 20), &steps);
    assert!(r.trap.is_none(), "{out} {:?}", r.trap);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[0],
        format!("{}: got echo: hello (12 bytes)", steps[0]),
        "{out}"
    );
    assert_eq!(
        lines[1],
        format!("{}: Err(ErrorCode::AccessDenied)", steps[1]),
        "{out}"
    );
    assert_eq!(
        lines[2],
        format!("{}: got echo: named (12 bytes)", steps[2]),
        "{out}"
    );
    assert_eq!(
        lines[3],
        format!("{}: Err(ErrorCode::AccessDenied)", steps[3]),
        "{out}"
    );
    assert_eq!(granted.connections(), 2);
    assert_eq!(other.connections(), 0);
    assert_eq!(
        ops(&r),
        vec![
            ("net_connect".into(), format!("127.0.0.1:{g}"), None),
            (
                "net_connect".into(),
                format!("127.0.0.1:{o}"),
                Some(Violation::EgressDenied)
            ),
            ("net_lookup".into(), "db.test".into(), None),
            ("net_connect".into(), format!("db.test:{g}"), None),
            (
                "net_lookup".into(),
                "exfil.test".into(),
                Some(Violation::EgressDenied)
            ),
        ]
    );
    // 64 KiB received: within a 1 MiB budget, and past a 32 KiB one the
    // run halts.
    let big = [format!("127.0.0.1:{g}=big")];
    let (r, out) = run(rules(1 << 20), &big);
    assert_eq!(
        out.trim(),
        format!("{}: got {} (65536 bytes)", big[0], "x".repeat(40))
    );
    assert!(r.trap.is_none(), "{:?}", r.trap);
    let (r, out) = run(rules(32 * 1024), &big);
    assert_eq!(
        r.report.violation,
        Some(Violation::MaxOutputBytes),
        "{out} {:?}",
        r.trap
    );
    assert!(!out.contains("65536"), "{out}");
}
