//! Binding, listening and UDP for a WASI 0.3 guest (`guest-examples/agents/src/bin/p3_listen.rs`)
//! under `net.listen` loopback addresses and `udp://` rules: a guest serves
//! on a granted loopback port and nowhere else, exchanges datagrams with
//! granted peers only, and what it receives is charged to the output
//! budget. Each denial beside its allowed neighbour; real servers on
//! 127.0.0.1 count what reached them.

use super::sockets::{assert_ocsf_valid, builder, ops, run_guest};
use sbx_wasm::net::StaticResolver;
use sbx_wasm::wasm::WasmRun;
use sbx_wasm::{Capabilities, Violation};
use std::io::Write;
use std::net::{TcpListener, TcpStream, UdpSocket};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

pub(crate) fn run(caps: Capabilities, steps: &[String]) -> (WasmRun, String) {
    run_guest("p3_listen", caps, StaticResolver::new(), steps)
}

/// Loopback for a guest of its own: listen on 127.0.0.1, any port, and
/// reach it over `scheme` (`tcp` or `udp`).
fn loopback(scheme: &str) -> Capabilities {
    builder()
        .allow_listen("127.0.0.1:*")
        .allow_egress(format!("{scheme}://127.0.0.1:*"))
        .build()
        .unwrap()
}

/// A loopback port free a moment ago.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A UDP server on 127.0.0.1 answering `echo: TEXT`, or 4000 bytes for
/// `big`; counts datagrams.
pub(crate) struct UdpEcho {
    pub(crate) port: u16,
    got: Arc<AtomicUsize>,
}

impl UdpEcho {
    pub(crate) fn start() -> Self {
        let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
        let port = socket.local_addr().unwrap().port();
        let got = Arc::new(AtomicUsize::new(0));
        let count = got.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 2048];
            while let Ok((n, from)) = socket.recv_from(&mut buf) {
                count.fetch_add(1, Ordering::SeqCst);
                let answer = match &buf[..n] {
                    b"big" => vec![b'x'; 4000],
                    text => [b"echo: ", text].concat(),
                };
                let _ = socket.send_to(&answer, from);
            }
        });
        UdpEcho { port, got }
    }

    pub(crate) fn datagrams(&self) -> usize {
        self.got.load(Ordering::SeqCst)
    }
}

#[test]
fn a_listen_rule_lets_a_guest_serve_on_loopback_and_nowhere_else() {
    let port = free_port();
    let steps = [
        "tcp-self".to_string(),
        "tcp-listen-unbound".to_string(),
        format!("tcp-bind=0.0.0.0:{port}"),
        "tcp-bind=192.0.2.1:0".to_string(),
        "tcp-bind=127.0.0.2:0".to_string(),
    ];
    let granted = loopback("tcp");
    let (r, out) = run(granted, &steps);
    assert!(r.trap.is_none(), "{out} {:?}", r.trap);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "tcp-self: got ping", "{out}");
    // Unbound, and bound to every interface: both narrowed to loopback,
    // the one interface the grant names.
    assert!(
        lines[1].starts_with("tcp-listen-unbound: listening 127.0.0.1:"),
        "{out}"
    );
    assert_eq!(lines[2], format!("{}: bound 127.0.0.1:{port}", steps[2]));
    assert_eq!(
        lines[3],
        format!("{}: Err(ErrorCode::AccessDenied)", steps[3])
    );
    assert_eq!(
        lines[4],
        format!("{}: Err(ErrorCode::AccessDenied)", steps[4])
    );
    let seen = ops(&r);
    let listen = |target: &str, v| ("net_listen".to_string(), target.to_string(), v);
    assert_eq!(seen.len(), 6, "{seen:?}");
    assert_eq!(seen[0], listen("tcp://127.0.0.1:0", None));
    assert_eq!(seen[1].0, "net_connect");
    assert!(
        seen[1].1.starts_with("127.0.0.1:") && seen[1].2.is_none(),
        "{seen:?}"
    );
    assert_eq!(seen[2], listen("tcp://127.0.0.1:0", None));
    assert_eq!(seen[3], listen(&format!("tcp://127.0.0.1:{port}"), None));
    let denied = Some(Violation::EgressDenied);
    assert_eq!(seen[4], listen("tcp://192.0.2.1:0", denied));
    assert_eq!(seen[5], listen("tcp://127.0.0.2:0", denied));
    // Binds as Listen, the connection as Open: all Network Activity.
    assert_ocsf_valid(&r, r#""4001": 6"#);
    // A tcp rule alone lends no listener, bound or not.
    let connect_only = builder().allow_egress("tcp://127.0.0.1:*").build().unwrap();
    let (r, out) = run(connect_only, &steps[..2]);
    assert_eq!(
        out,
        "tcp-self: Err(ErrorCode::AccessDenied)\ntcp-listen-unbound: Err(ErrorCode::AccessDenied)\n"
    );
    assert_eq!(
        ops(&r),
        vec![
            listen("tcp://127.0.0.1:0", denied),
            listen("tcp://127.0.0.1:0", denied)
        ]
    );
}

/// A run of `tcp-accept=PORT` under `caps` while this process dials
/// 127.0.0.1:PORT over and over and, once connected, sends `hello`:
/// the guest's output, and how many dials connected.
fn accept_from_outside(caps: Capabilities, port: u16) -> (String, usize) {
    let done = Arc::new(AtomicBool::new(false));
    let stop = done.clone();
    let dialler = std::thread::spawn(move || {
        let mut connected = 0;
        while !stop.load(Ordering::SeqCst) {
            if let Ok(mut c) = TcpStream::connect(("127.0.0.1", port)) {
                connected += 1;
                let _ = c.write_all(b"hello");
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        connected
    });
    let (r, out) = run(caps, &[format!("tcp-accept={port}")]);
    // Dial on a little after the run, to catch a listener left behind.
    std::thread::sleep(Duration::from_millis(200));
    done.store(true, Ordering::SeqCst);
    let connected = dialler.join().unwrap();
    assert!(r.trap.is_none(), "{out} {:?}", r.trap);
    (out, connected)
}

#[test]
fn a_guest_accepts_on_its_granted_port_only() {
    let port = free_port();
    let granted = builder()
        .allow_listen(format!("127.0.0.1:{port}"))
        .max_wall(Duration::from_secs(20))
        .build()
        .unwrap();
    let (out, connected) = accept_from_outside(granted, port);
    assert_eq!(out.trim(), format!("tcp-accept={port}: accepted hello"));
    assert_eq!(connected, 1);
    // The next port granted instead: the guest's bind is refused and
    // nothing ever listened on this one.
    let other = builder()
        .allow_listen(format!("127.0.0.1:{}", port.wrapping_add(1).max(1)))
        .build()
        .unwrap();
    let (out, connected) = accept_from_outside(other, port);
    assert_eq!(
        out.trim(),
        format!("tcp-accept={port}: Err(ErrorCode::AccessDenied)")
    );
    assert_eq!(connected, 0);
}

#[test]
fn udp_reaches_granted_peers_only_and_what_arrives_is_charged() {
    let (echo, other) = (UdpEcho::start(), UdpEcho::start());
    let (e, o) = (echo.port, other.port);
    let caps = |max: u64| {
        builder()
            .allow_egress(format!("udp://127.0.0.1:{e}"))
            .max_output_bytes(max)
            .build()
            .unwrap()
    };
    let steps = [
        format!("udp-send=127.0.0.1:{e}=hi"),
        format!("udp-send=127.0.0.1:{o}=leak"),
    ];
    let (r, out) = run(caps(1 << 20), &steps);
    assert!(r.trap.is_none(), "{out} {:?}", r.trap);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], format!("{}: got echo: hi (8 bytes)", steps[0]));
    assert_eq!(
        lines[1],
        format!("{}: Err(ErrorCode::AccessDenied)", steps[1])
    );
    assert_eq!((echo.datagrams(), other.datagrams()), (1, 0));
    assert_eq!(
        ops(&r),
        vec![
            ("net_datagram".into(), format!("127.0.0.1:{e}"), None),
            (
                "net_datagram".into(),
                format!("127.0.0.1:{o}"),
                Some(Violation::EgressDenied)
            ),
        ]
    );
    assert_ocsf_valid(&r, r#""4001": 2"#);
    // 4000 bytes in one datagram: within a 1 MiB budget, and past a
    // 2000-byte one the run halts before the guest has them.
    let big = [format!("udp-send=127.0.0.1:{e}=big")];
    let (r, out) = run(caps(1 << 20), &big);
    assert_eq!(
        out.trim(),
        format!("{}: got {} (4000 bytes)", big[0], "x".repeat(40))
    );
    assert!(r.trap.is_none());
    let (r, out) = run(caps(2000), &big);
    assert_eq!(r.report.violation, Some(Violation::MaxOutputBytes), "{out}");
    assert!(!out.contains("4000 bytes"), "{out}");
    // Without a udp rule, no UDP socket at all.
    let none = builder().allow_egress("tcp://127.0.0.1:*").build().unwrap();
    let (r, out) = run(none, &steps[..1]);
    assert_eq!(
        out.trim(),
        format!("{}: Err(ErrorCode::AccessDenied)", steps[0])
    );
    assert!(ops(&r).is_empty());
    assert_eq!(echo.datagrams(), 3);
}

#[test]
fn a_guest_receives_its_own_datagram_on_a_granted_address() {
    let steps = ["udp-self".to_string()];
    let granted = loopback("udp");
    let (r, out) = run(granted, &steps);
    assert_eq!(out.trim(), "udp-self: got ping", "{:?}", r.trap);
    let seen = ops(&r);
    assert_eq!(
        seen[0],
        ("net_listen".into(), "udp://127.0.0.1:0".into(), None)
    );
    assert_eq!(seen[1].0, "net_datagram");
    // A udp rule alone binds nothing the guest chose.
    let peers_only = builder().allow_egress("udp://127.0.0.1:*").build().unwrap();
    let (r, out) = run(peers_only, &steps);
    assert_eq!(out.trim(), "udp-self: Err(ErrorCode::AccessDenied)");
    assert_eq!(
        ops(&r),
        vec![(
            "net_listen".into(),
            "udp://127.0.0.1:0".into(),
            Some(Violation::EgressDenied)
        )]
    );
}

/// The same rows for a 0.2 client written against `std::net`
/// (`tcp_client.rs`'s `udp-send`: `UdpSocket::bind("0.0.0.0:0")`, then
/// `send_to`): its granted peer answers, another gets nothing, a bind the
/// guest chose needs a listen rule, and without a udp rule there is no
/// UDP socket at all.
#[test]
fn a_0_2_client_meets_the_same_udp_rules() {
    let (echo, other) = (UdpEcho::start(), UdpEcho::start());
    let (e, o) = (echo.port, other.port);
    let steps = [
        format!("udp-send 127.0.0.1:{e} hi"),
        format!("udp-send 127.0.0.1:{o} leak"),
        "udp 127.0.0.1:0".to_string(),
    ];
    let run = |caps| run_guest("tcp_client", caps, StaticResolver::new(), &steps);
    let caps = builder()
        .allow_egress(format!("udp://127.0.0.1:{e}"))
        .build()
        .unwrap();
    let (r, out) = run(caps);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "0: got echo: hi (8 bytes)", "{out} {:?}", r.trap);
    assert_eq!(lines[1], "1: error PermissionDenied", "{out}");
    assert_eq!(lines[2], "2: error PermissionDenied", "{out}");
    assert_eq!((echo.datagrams(), other.datagrams()), (1, 0));
    assert_eq!(
        ops(&r),
        vec![
            ("net_datagram".into(), format!("127.0.0.1:{e}"), None),
            (
                "net_datagram".into(),
                format!("127.0.0.1:{o}"),
                Some(Violation::EgressDenied)
            ),
            (
                "net_listen".into(),
                "udp://127.0.0.1:0".into(),
                Some(Violation::EgressDenied)
            ),
        ]
    );
    let none = builder()
        .allow_egress(format!("tcp://127.0.0.1:{e}"))
        .build()
        .unwrap();
    let (r, out) = run(none);
    assert!(out.starts_with("0: error PermissionDenied"), "{out}");
    assert!(ops(&r).is_empty());
    assert_eq!(echo.datagrams(), 1);
}

/// 0.2's door, for a guest written against `std::net`
/// (`guest-examples/agents/src/bin/tcp_client.rs`): a listener on a
/// granted loopback address, and none without the grant.
#[test]
fn a_wasi_0_2_listener_takes_the_same_rule() {
    let port = free_port();
    let steps = [
        "self 127.0.0.1:0".to_string(),
        format!("self 0.0.0.0:{port}"),
    ];
    let run = |caps, steps: &[String]| run_guest("tcp_client", caps, StaticResolver::new(), steps);
    let granted = loopback("tcp");
    let (r, out) = run(granted, &steps);
    // Every interface asked for, loopback bound.
    assert_eq!(out, "0: got ping\n1: got ping\n", "{:?}", r.trap);
    let seen = ops(&r);
    assert_eq!(
        seen[0],
        ("net_listen".into(), "tcp://127.0.0.1:0".into(), None)
    );
    assert_eq!((seen[1].0.as_str(), seen[1].2), ("net_connect", None));
    let narrowed = format!("tcp://127.0.0.1:{port}");
    assert_eq!(seen[2], ("net_listen".into(), narrowed, None));
    assert_eq!(seen[3].1, format!("127.0.0.1:{port}"));
    let connect_only = builder().allow_egress("tcp://127.0.0.1:*").build().unwrap();
    let (r, out) = run(connect_only, &steps[..1]);
    assert_eq!(out.trim(), "0: error PermissionDenied");
    assert_eq!(
        ops(&r),
        vec![(
            "net_listen".into(),
            "tcp://127.0.0.1:0".into(),
            Some(Violation::EgressDenied)
        )]
    );
}

/// Under `sbx-wasm run`, with the kernel wall up: the port a listen rule
/// names is bound (the wall lets that bind through, and only that one),
/// the next port is refused by the gate first.
#[test]
fn under_the_kernel_wall_a_guest_binds_its_granted_port() {
    let (named, other) = (free_port(), free_port());
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("caps.toml"),
        format!("[net]\nlisten = [\"127.0.0.1:{named}\"]\n"),
    )
    .unwrap();
    let steps = [
        format!("tcp-bind=127.0.0.1:{named}"),
        format!("tcp-bind=127.0.0.1:{other}"),
    ];
    let out = std::process::Command::new(sbx_wasm_tests::sbx_bin())
        .current_dir(dir.path())
        .args([
            "run",
            "--summary",
            "--caps",
            "caps.toml",
            "--report",
            "r.json",
        ])
        .arg(sbx_wasm_tests::guest("p3_listen"))
        .arg("--")
        .args(&steps)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stdout} {stderr}");
    assert_eq!(
        stdout,
        format!(
            "{}: bound 127.0.0.1:{named}\n{}: Err(ErrorCode::AccessDenied)\n",
            steps[0], steps[1]
        )
    );
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("r.json")).unwrap()).unwrap();
    assert_eq!(report["kernel_wall"]["up"], true, "{report}");
    assert_eq!(
        report["kernel_wall"]["network"],
        format!("none; bind ports {named}")
    );
}

/// TCP and UDP sockets of a 0.3 guest count together against
/// `MAX_OPEN_SOCKETS`; past it, `other("new-socket-limit: ...")` (0.3 has
/// no code of its own), and dropping one makes room.
#[test]
fn a_0_3_guest_holds_at_most_max_open_sockets_tcp_and_udp_together() {
    let max = sbx_wasm::wasm::MAX_OPEN_SOCKETS;
    let step = format!("hold={}", max + 6);
    let (r, out) = run(loopback("udp"), std::slice::from_ref(&step));
    assert!(r.trap.is_none(), "{out} {:?}", r.trap);
    assert_eq!(
        out.trim(),
        format!(
            "{step}: made {max}, then ErrorCode::Other(Some(\"new-socket-limit: {max} sockets held\")); \
             one more after a drop: ok"
        )
    );
    // Making sockets is no op: nothing on record.
    assert!(ops(&r).is_empty());
}
