//! `max_sent_bytes` at each door to the network, against real servers on
//! 127.0.0.1: a wasi:http request, a 0.2 and a 0.3 socket write and a
//! datagram within the budget reach their server, and the report says
//! what was sent; the one that would pass the budget halts the run
//! (`max_sent_bytes`) before any of it leaves, and its server reads
//! nothing.

use super::listen::UdpEcho;
use super::sockets::{LineServer, builder, ops, run_guest};
use sbx_wasm::net::StaticResolver;
use sbx_wasm::wasm::{RunOptions, WasmHost, WasmRun};
use sbx_wasm::{Capabilities, Status, Violation};
use sbx_wasm_tests::{LoopbackServer, guest};

/// The run halted on `max_sent_bytes`.
fn halted_on_sent(r: &WasmRun, out: &str) {
    assert_eq!(r.report.status, Status::HardLimit, "{out} {:?}", r.trap);
    assert_eq!(r.report.violation, Some(Violation::MaxSentBytes), "{out}");
}

#[test]
fn a_wasi_http_request_is_charged_as_sent_and_one_past_the_budget_never_leaves() {
    let server = LoopbackServer::start();
    let caps = |max: u64| {
        builder()
            .allow_egress(server.origin())
            .max_sent_bytes(max)
            .build()
            .unwrap()
    };
    let step = [format!("first POST {}/echo 20000", server.origin())];
    let host = WasmHost::new().unwrap();
    let agent = host.load(&guest("wasi_http")).unwrap();
    let run = |caps: Capabilities| {
        let r = host
            .run(&agent, RunOptions::new(caps).args(step.iter().cloned()))
            .unwrap();
        let out = String::from_utf8_lossy(&r.stdout).into_owned();
        (r, out)
    };
    let (r, out) = run(caps(1 << 20));
    assert_eq!(out.trim(), "0: HTTP 200, 4 bytes: echo", "{:?}", r.trap);
    // The body, the URL and the headers, as sent.
    let sent = r.report.usage.sent_bytes;
    assert!((20_000..21_000).contains(&sent), "{sent}");
    assert_eq!(r.report.limits.sent_bytes, 1 << 20);
    assert_eq!(server.connections(), 1);
    let (r, out) = run(caps(16 * 1024));
    halted_on_sent(&r, &out);
    assert_eq!(r.report.usage.sent_bytes, 0);
    assert_eq!(
        server.connections(),
        1,
        "a connection for the refused request"
    );
    let last = r.audit.last().unwrap();
    assert_eq!(last.op.to_string(), "net_fetch");
    assert_eq!(last.violation, Some(Violation::MaxSentBytes));
}

/// A socket client's line of `len` bytes to `server`, under a budget of
/// `max` sent bytes: the run and what the guest printed.
fn send_line(guest: &str, server: &LineServer, len: usize, max: u64) -> (WasmRun, String) {
    let port = server.port;
    let caps = builder()
        .allow_egress(format!("tcp://127.0.0.1:{port}"))
        .max_sent_bytes(max)
        .build()
        .unwrap();
    let text = "s".repeat(len);
    let step = match guest {
        "tcp_client" => format!("echo 127.0.0.1:{port} {text}"),
        _ => format!("127.0.0.1:{port}={text}"),
    };
    run_guest(guest, caps, StaticResolver::new(), &[step])
}

#[test]
fn what_a_socket_sends_is_charged_before_it_leaves_in_0_2_and_0_3() {
    for guest in ["tcp_client", "p3_socket"] {
        let server = LineServer::start();
        let (r, out) = send_line(guest, &server, 3000, 1 << 20);
        assert!(r.trap.is_none(), "{guest}: {out} {:?}", r.trap);
        assert!(out.contains("got echo: sss"), "{guest}: {out}");
        // The line and its newline.
        assert_eq!(r.report.usage.sent_bytes, 3001, "{guest}");
        assert_eq!(server.bytes_read(), 3001, "{guest}");
        // Past the budget: the connection is made (a connect sends
        // nothing the guest chose), the write halts the run, and the
        // server reads nothing.
        let server = LineServer::start();
        let (r, out) = send_line(guest, &server, 3000, 2000);
        halted_on_sent(&r, &out);
        assert!(!out.contains("got"), "{guest}: {out}");
        assert_eq!(server.connections(), 1, "{guest}");
        assert_eq!(server.bytes_read(), 0, "{guest}");
        assert_eq!(r.report.usage.sent_bytes, 0, "{guest}");
        let connects: Vec<_> = ops(&r).into_iter().map(|(op, _, v)| (op, v)).collect();
        assert_eq!(connects, [("net_connect".to_string(), None)], "{guest}");
    }
}

#[test]
fn a_datagram_past_the_budget_is_never_sent_in_0_2_and_0_3() {
    for guest in ["tcp_client", "p3_listen"] {
        let echo = UdpEcho::start();
        let e = echo.port;
        let caps = |max: u64| {
            builder()
                .allow_egress(format!("udp://127.0.0.1:{e}"))
                .max_sent_bytes(max)
                .build()
                .unwrap()
        };
        let text = "d".repeat(300);
        let step = match guest {
            "tcp_client" => format!("udp-send 127.0.0.1:{e} {text}"),
            _ => format!("udp-send=127.0.0.1:{e}={text}"),
        };
        let run = |max| {
            run_guest(
                guest,
                caps(max),
                StaticResolver::new(),
                std::slice::from_ref(&step),
            )
        };
        let (r, out) = run(1 << 20);
        assert!(out.contains("got echo: ddd"), "{guest}: {out} {:?}", r.trap);
        assert_eq!(r.report.usage.sent_bytes, 300, "{guest}");
        assert_eq!(echo.datagrams(), 1, "{guest}");
        let (r, out) = run(299);
        halted_on_sent(&r, &out);
        // A datagram sent would have arrived by now on loopback.
        std::thread::sleep(std::time::Duration::from_millis(200));
        assert_eq!(echo.datagrams(), 1, "{guest}");
    }
}
