//! `sbx-wasm serve`: an HTTP app (`guest-examples/http-service`, a
//! component exporting wasi:http/incoming-handler and no wasi:cli/run) served on loopback,
//! driven over real TCP connections. Each request runs under the grant
//! with budgets of its own; what it reads, fetches and answers is decided
//! as for any run, and is on record in a verifiable audit stream.

use sbx_wasm_tests::served::{request, serve, text};
use sbx_wasm_tests::{LoopbackServer, guest, sbx_in, snapshot};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::time::Duration;

#[test]
fn an_app_is_served_each_request_under_the_grant() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    std::fs::write(data.join("note.txt"), "granted note").unwrap();
    let (upstream, other) = (LoopbackServer::start(), LoopbackServer::start());
    std::fs::write(
        dir.path().join("caps.toml"),
        format!(
            "[fs]\nread = [{{ host = \"data\", guest = \"/data\" }}]\n\
             [net]\nallow = [\"{}\"]\n\
             [budget]\nmax_wall_ms = 3000\nmax_output_bytes = 100000\n",
            upstream.origin()
        ),
    )
    .unwrap();
    let before = snapshot(&data);
    // The audit stream's seals signed with a key of the operator's.
    let keygen = sbx_in(dir.path(), &["audit", "keygen", "--out", "seal.key"]);
    assert!(
        keygen.status.success(),
        "{}",
        String::from_utf8_lossy(&keygen.stderr)
    );
    let public = String::from_utf8_lossy(&keygen.stdout).trim().to_string();
    let server = serve(
        dir.path(),
        &guest("http_service"),
        &["--audit-key", "seal.key"],
    );
    let a = server.addr.as_str();

    let hello = request(a, "GET", "/hello", b"");
    assert_eq!(
        text(&hello),
        "200 hello from the sandbox: Method::Get with 0 bytes"
    );
    let posted = request(a, "POST", "/hello", b"abcdef");
    assert_eq!(
        text(&posted),
        "200 hello from the sandbox: Method::Post with 6 bytes"
    );
    // The read mount, and its neighbour outside every mount.
    assert_eq!(
        text(&request(a, "GET", "/read?/data/note.txt", b"")),
        "200 granted note"
    );
    let refused = request(a, "GET", "/read?/etc/passwd", b"");
    assert_eq!(refused.0, 403, "{}", text(&refused));
    // The granted origin, and one the grant does not name.
    let up = format!("/fetch?{}/status", upstream.origin());
    assert_eq!(text(&request(a, "GET", &up, b"")), "200 upstream said 200");
    let away = format!("/fetch?{}/status", other.origin());
    assert_eq!(
        text(&request(a, "GET", &away, b"")),
        "502 upstream: ErrorCode::HttpRequestDenied"
    );
    assert_eq!(upstream.connections(), 1);
    assert_eq!(other.connections(), 0);
    // An answer within the output budget, one over it, one that never
    // comes: each request's own budget, the server goes on.
    let big = request(a, "GET", "/big?50000", b"");
    assert_eq!((big.0, big.1.len()), (200, 50000));
    assert_eq!(request(a, "GET", "/big?200000", b"").0, 500);
    assert_eq!(request(a, "GET", "/spin", b"").0, 500);
    assert_eq!(
        text(&request(a, "GET", "/hello", b"")).get(..3),
        Some("200")
    );
    drop(server);

    assert_eq!(snapshot(&data), before);
    // One stream for the server: each request's decisions and its end,
    // chained and sealed.
    let verified = sbx_in(
        dir.path(),
        &["audit", "verify", "audit.jsonl", "--key", &public],
    );
    assert!(
        verified.status.success(),
        "{}{}",
        String::from_utf8_lossy(&verified.stdout),
        String::from_utf8_lossy(&verified.stderr)
    );
    let audit = std::fs::read_to_string(dir.path().join("audit.jsonl")).unwrap();
    let ends: Vec<serde_json::Value> = audit
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v.get("end").is_some())
        .collect();
    assert_eq!(ends.len(), 10);
    let violations: Vec<&str> = ends
        .iter()
        .filter_map(|e| e["end"]["violation"].as_str())
        .collect();
    assert_eq!(violations, ["max_output_bytes", "max_wall"]);
    assert!(
        audit.contains("\"violation\":\"fs_read_denied\""),
        "{audit}"
    );
    assert!(audit.contains("\"violation\":\"egress_denied\""), "{audit}");
    assert!(audit.contains("\"tool\":\"GET /read\""), "{audit}");
}

#[test]
fn an_address_off_loopback_and_a_component_that_serves_nothing_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("caps.toml"), "").unwrap();
    let service = guest("http_service");
    let wide = sbx_in(
        dir.path(),
        &[
            "serve",
            "--caps",
            "caps.toml",
            "--addr",
            "0.0.0.0:0",
            service.to_str().unwrap(),
        ],
    );
    assert!(!wide.status.success());
    assert!(
        String::from_utf8_lossy(&wide.stderr).contains("only loopback addresses"),
        "{}",
        String::from_utf8_lossy(&wide.stderr)
    );
    // The app itself is no command: `run` refuses it before it starts.
    let run = sbx_in(
        dir.path(),
        &["run", "--caps", "caps.toml", service.to_str().unwrap()],
    );
    assert_eq!(run.status.code(), Some(125));
    assert!(
        String::from_utf8_lossy(&run.stderr).contains("not a WASI command"),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let command = guest("noop");
    let out = sbx_in(
        dir.path(),
        &[
            "serve",
            "--caps",
            "caps.toml",
            "--addr",
            "127.0.0.1:0",
            command.to_str().unwrap(),
        ],
    );
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("not a wasi:http service"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_slow_client_holds_no_place_and_a_request_past_the_limit_waits_its_turn() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("caps.toml"),
        "[budget]\nmax_wall_ms = 1500\n",
    )
    .unwrap();
    let server = serve(
        dir.path(),
        &guest("http_service"),
        &["--max-concurrent", "1"],
    );
    let a = server.addr.clone();
    // A client that opens a connection and sends half a head, then waits.
    let mut slow = TcpStream::connect(&a).unwrap();
    slow.write_all(b"GET /hello HTTP/1.1\r\n").unwrap();
    // The one place is free: a whole request is served at once.
    assert_eq!(request(&a, "GET", "/hello", b"").0, 200);
    // Holding the place until its 1.5 s wall budget ends it, /spin makes
    // /hello, sent 0.3 s after it, wait: /hello cannot be answered before
    // /spin's budget is spent (a bound from below; a loaded machine only
    // makes it later).
    let a1 = a.clone();
    let spin = std::thread::spawn(move || request(&a1, "GET", "/spin", b"").0);
    std::thread::sleep(Duration::from_millis(300));
    let sent = std::time::Instant::now();
    assert_eq!(request(&a, "GET", "/hello", b"").0, 200);
    let waited = sent.elapsed();
    assert_eq!(spin.join().unwrap(), 500);
    assert!(waited >= Duration::from_millis(1100), "{waited:?}");
    drop(slow);
}

#[test]
fn connections_past_the_bound_are_closed_at_once_and_the_server_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("caps.toml"), "").unwrap();
    let server = serve(
        dir.path(),
        &guest("http_service"),
        &["--max-connections", "8"],
    );
    let a = server.addr.clone();
    // 20 idle connections: 8 are kept (each waits for its request's head),
    // the other 12 are closed by the server as soon as they are accepted.
    let idle: Vec<TcpStream> = (0..20).map(|_| TcpStream::connect(&a).unwrap()).collect();
    let (mut kept, mut closed) = (0, 0);
    for mut s in &idle {
        s.set_read_timeout(Some(Duration::from_millis(500)))
            .unwrap();
        let mut b = [0u8; 1];
        match s.read(&mut b) {
            Ok(0) => closed += 1,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                kept += 1
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!((kept, closed), (8, 12));
    // Their places come back when they go: a request is served.
    drop(idle);
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let mut s = TcpStream::connect(&a).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        write!(
            s,
            "GET /hello HTTP/1.1\r\nhost: {a}\r\nconnection: close\r\n\r\n"
        )
        .unwrap();
        let mut got = Vec::new();
        let _ = s.read_to_end(&mut got);
        if got.starts_with(b"HTTP/1.1 200") {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "never served again");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// An app built from `tests/components/js_fetch/app.js` by componentize-js
/// as the npm registry ships it (pinned by the JS runner's lock), with its
/// default features: StarlingMonkey's own `fetch` over wasi:http. Built once
/// per version of its inputs into the user's cache folder.
fn js_fetch_component() -> std::path::PathBuf {
    let root = sbx_wasm_tests::repo_root();
    let tools = Command::new("bash")
        .arg(root.join("host/runners/js/build.sh"))
        .arg("--tools")
        .output()
        .unwrap();
    assert!(
        tools.status.success(),
        "{}",
        String::from_utf8_lossy(&tools.stderr)
    );
    let tools = String::from_utf8_lossy(&tools.stdout).trim().to_string();
    let inputs = [
        "tests/components/js_fetch/app.js",
        "tests/components/js_fetch/build.sh",
        "host/runners/js/package-lock.json",
        "Cargo.toml",
    ];
    let dir = sbx_wasm_tests::cached_build("js-fetch-component", &inputs, |tmp| {
        std::fs::create_dir_all(tmp).unwrap();
        let built = Command::new("bash")
            .arg(root.join("tests/components/js_fetch/build.sh"))
            .arg(&tools)
            .arg(tmp.join("app.wasm"))
            .output()
            .unwrap();
        assert!(
            built.status.success(),
            "{}",
            String::from_utf8_lossy(&built.stderr)
        );
    });
    dir.join("app.wasm")
}

#[test]
fn an_unmodified_componentize_js_app_fetches_through_the_broker() {
    let (upstream, other) = (LoopbackServer::start(), LoopbackServer::start());
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("caps.toml"),
        format!("[net]\nallow = [\"{}\"]\n", upstream.origin()),
    )
    .unwrap();
    let server = serve(dir.path(), &js_fetch_component(), &[]);
    let a = server.addr.as_str();
    let up = format!("/?to={}/status", upstream.origin());
    assert_eq!(text(&request(a, "GET", &up, b"")), "200 upstream 200: ok");
    // The neighbour the grant does not name: the app's `fetch` rejects, and
    // the other server never hears of it.
    let away = format!("/?to={}/status", other.origin());
    let refused = request(a, "GET", &away, b"");
    assert_eq!(refused.0, 502, "{}", text(&refused));
    assert!(
        text(&refused).contains("refused: TypeError"),
        "{}",
        text(&refused)
    );
    assert_eq!((upstream.connections(), other.connections()), (1, 0));
    drop(server);
    let audit = std::fs::read_to_string(dir.path().join("audit.jsonl")).unwrap();
    let fetches: Vec<serde_json::Value> = sbx_wasm_tests::audit_records(&audit)
        .into_iter()
        .filter(|r| r["op"] == "net_fetch")
        .collect();
    assert_eq!(fetches.len(), 2, "{audit}");
    assert_eq!(fetches[0]["decision"], "allowed");
    assert_eq!(fetches[1]["violation"], "egress_denied");
}
