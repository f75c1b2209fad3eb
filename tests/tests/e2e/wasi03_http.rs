//! wasi:http 0.3 (`guest-examples/agents/src/bin/p3_http.rs`, built with
//! the `wasip3` bindings): its client's requests go through the egress
//! broker as 0.2's do (the granted origin reached, another refused on
//! record and never dialled, redirects back to the guest unfollowed), and
//! as a `wasi:http/handler@0.3.0` service it is served by `sbx-wasm serve`
//! with each request under the grant and its own budgets.

use sbx_wasm::wasm::{RunOptions, WasmHost, WasmRun};
use sbx_wasm::{Capabilities, Violation};
use sbx_wasm_tests::served::{request, serve, text};
use sbx_wasm_tests::{LoopbackServer, audit_records, guest};
use std::time::Duration;

/// A run of the guest's command over `urls`, which must not trap.
fn fetch(caps: Capabilities, urls: &[String]) -> WasmRun {
    let run = fetch_trapping(caps, urls);
    assert!(run.trap.is_none(), "{:?}", run.trap);
    run
}

#[test]
fn a_0_3_client_reaches_the_granted_origin_and_nothing_else() {
    let (granted, other) = (LoopbackServer::start(), LoopbackServer::start());
    let (g, o) = (granted.origin(), other.origin());
    let caps = || {
        Capabilities::builder()
            .allow_egress(g.clone())
            .max_wall(Duration::from_secs(20))
            .build()
            .unwrap()
    };
    let urls = [
        format!("{g}/status"),
        format!("{o}/status"),
        format!("{g}/redirect"),
    ];
    let run = fetch(caps(), &urls);
    let out = String::from_utf8_lossy(&run.stdout).into_owned();
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], format!("{g}/status: 200 ok"), "{out}");
    assert_eq!(
        lines[1],
        format!("{o}/status: Err(ErrorCode::HttpRequestDenied)")
    );
    // The redirect comes back to the guest: its target is not asked for.
    assert!(
        lines[2].starts_with(&format!("{g}/redirect: 302 ")),
        "{out}"
    );
    assert_eq!(lines.len(), 3, "{out}");
    let v: Vec<Option<Violation>> = run.audit.iter().map(|e| e.violation).collect();
    assert_eq!(v, [None, Some(Violation::EgressDenied), None]);
    assert_eq!(run.audit[1].target, format!("{o}/status"));
    assert_eq!(granted.requests().len(), 2);
    assert_eq!(other.connections(), 0);
    assert_eq!(run.report.violation, None);

    // A response over the output budget halts the run, as for 0.2.
    let small = Capabilities::builder()
        .allow_egress(g.clone())
        .max_output_bytes(1000)
        .build()
        .unwrap();
    let big = fetch_trapping(small, &[format!("{g}/big")]);
    assert_eq!(big.report.violation, Some(Violation::MaxOutputBytes));
}

/// A run of the guest's command over `urls`, however it ends.
fn fetch_trapping(caps: Capabilities, urls: &[String]) -> WasmRun {
    let host = WasmHost::new().unwrap();
    let agent = host.load(&guest("p3_http")).unwrap();
    host.run(&agent, RunOptions::new(caps).args(urls.iter().cloned()))
        .unwrap()
}

#[test]
fn a_0_3_service_is_served_each_request_under_the_grant() {
    let dir = tempfile::tempdir().unwrap();
    let (upstream, other) = (LoopbackServer::start(), LoopbackServer::start());
    std::fs::write(
        dir.path().join("caps.toml"),
        format!(
            "[net]\nallow = [\"{}\"]\n\
             [budget]\nmax_wall_ms = 5000\nmax_output_bytes = 100000\n",
            upstream.origin()
        ),
    )
    .unwrap();
    let server = serve(dir.path(), &guest("p3_http"), &[]);
    let a = server.addr.as_str();
    assert_eq!(
        text(&request(a, "GET", "/hello", b"")),
        "200 hello from 0.3: /hello"
    );
    // The granted origin, and one the grant does not name.
    let up = format!("/fetch?{}/status", upstream.origin());
    assert_eq!(text(&request(a, "GET", &up, b"")), "200 ok");
    let away = format!("/fetch?{}/status", other.origin());
    assert_eq!(
        text(&request(a, "GET", &away, b"")),
        "502 Err(ErrorCode::HttpRequestDenied)"
    );
    assert_eq!(upstream.connections(), 1);
    assert_eq!(other.connections(), 0);
    // A body written after the answer, within the output budget and over
    // it: each request's own budget, and the server goes on.
    let big = request(a, "GET", "/big?50000", b"");
    assert_eq!((big.0, big.1.len()), (200, 50000));
    assert_eq!(request(a, "GET", "/big?200000", b"").0, 500);
    assert_eq!(text(&request(a, "GET", "/", b"")), "200 hello from 0.3: /");
    drop(server);

    let audit = std::fs::read_to_string(dir.path().join("audit.jsonl")).unwrap();
    let records = audit_records(&audit);
    let ends: Vec<&serde_json::Value> = records.iter().filter(|r| r.get("end").is_some()).collect();
    assert_eq!(ends.len(), 6);
    let violations: Vec<&str> = ends
        .iter()
        .filter_map(|e| e["end"]["violation"].as_str())
        .collect();
    assert_eq!(violations, ["max_output_bytes"]);
    assert!(audit.contains("\"violation\":\"egress_denied\""), "{audit}");
}

/// A 0.3 handler that waits an hour to answer is ended by its request's wall
/// budget (500, `max_wall` on record), and the server serves the next.
#[test]
fn a_0_3_handler_that_never_answers_meets_its_wall() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("caps.toml"),
        "[budget]\nmax_wall_ms = 800\n",
    )
    .unwrap();
    let server = serve(dir.path(), &guest("p3_http"), &[]);
    let a = server.addr.as_str();
    assert_eq!(request(a, "GET", "/hang", b"").0, 500);
    assert_eq!(
        text(&request(a, "GET", "/after", b"")),
        "200 hello from 0.3: /after"
    );
    drop(server);
    let audit = std::fs::read_to_string(dir.path().join("audit.jsonl")).unwrap();
    let violations: Vec<String> = audit_records(&audit)
        .iter()
        .filter_map(|r| r.get("end")?["violation"].as_str().map(str::to_string))
        .collect();
    assert_eq!(violations, ["max_wall"]);
}

#[test]
fn a_recorded_0_3_client_run_replays_without_the_network() {
    let s = LoopbackServer::start();
    let g = s.origin();
    let caps = Capabilities::builder()
        .allow_egress(g.clone())
        .max_wall(Duration::from_secs(20))
        .build()
        .unwrap();
    let host = WasmHost::new().unwrap();
    let agent = host.load(&guest("p3_http")).unwrap();
    let urls = [format!("{g}/status"), format!("{g}/big")];
    let first = host
        .run(&agent, RunOptions::new(caps).args(urls).record(1 << 20))
        .unwrap();
    assert!(first.trap.is_none(), "{:?}", first.trap);
    assert_eq!(s.connections(), 2);

    let replay = sbx_wasm::replay::Replay::new(*first.recording.clone().unwrap()).unwrap();
    let mut again = host.run(&agent, RunOptions::replaying(&replay)).unwrap();
    let verdict = replay.settle(&again.report, &mut again.audit);
    assert!(verdict.same_outcome, "{verdict:?}");
    assert_eq!(again.stdout, first.stdout);
    assert_eq!(again.audit, first.audit);
    // Offline: the server heard nothing more.
    assert_eq!(s.connections(), 2);
}

#[test]
fn a_0_3_guests_timeouts_are_its_own_and_never_outlast_the_wall() {
    let s = LoopbackServer::start();
    let g = s.origin();
    let caps = |wall| {
        Capabilities::builder()
            .allow_egress(g.clone())
            .max_wall(wall)
            .build()
            .unwrap()
    };
    // Shorter than the budget: the guest's own error, and the run goes
    // on to the neighbour under the same timeout.
    let run = fetch(
        caps(Duration::from_secs(20)),
        &[format!("400@{g}/stall"), format!("400@{g}/status")],
    );
    let out = String::from_utf8_lossy(&run.stdout).into_owned();
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[0],
        format!("{g}/stall: Err(ErrorCode::ConnectionReadTimeout)"),
        "{out}"
    );
    assert_eq!(lines[1], format!("{g}/status: 200 ok"), "{out}");
    assert_eq!(run.report.violation, None);
    // 600 s asked for, a 2 s wall granted: the wall ends it.
    let started = std::time::Instant::now();
    let long = fetch_trapping(caps(Duration::from_secs(2)), &[format!("600000@{g}/stall")]);
    assert_eq!(long.report.violation, Some(Violation::MaxWall));
    assert!(started.elapsed() < Duration::from_secs(60));
}

/// A 0.3 guest piling requests up, each body held open, is held to
/// `MAX_BODIES` requests collected at once: the one past them is refused
/// at once, and the others are answered once their bodies end.
#[test]
fn a_0_3_guest_holds_at_most_max_bodies_requests_at_once() {
    use sbx_wasm::wasm::MAX_HTTP_BODIES as MAX_BODIES;
    let server = LoopbackServer::start();
    let caps = Capabilities::builder()
        .allow_egress(server.origin())
        .max_wall(Duration::from_secs(20))
        .build()
        .unwrap();
    let step = |n: usize| format!("pile:{n}@{}/echo", server.origin());
    let run = fetch(caps.clone(), &[step(MAX_BODIES)]);
    let out = String::from_utf8_lossy(&run.stdout).into_owned();
    assert_eq!(
        out.trim(),
        format!(
            "{}: 0 refused at once (); then {MAX_BODIES} answered",
            step(MAX_BODIES)
        )
    );
    let run = fetch(caps, &[step(MAX_BODIES + 1)]);
    let out = String::from_utf8_lossy(&run.stdout).into_owned();
    assert_eq!(
        out.trim(),
        format!(
            "{}: 1 refused at once (ErrorCode::InternalError(Some(\"more than {MAX_BODIES} \
             requests at once\"))); then {MAX_BODIES} answered",
            step(MAX_BODIES + 1)
        )
    );
    assert_eq!(server.connections(), 2 * MAX_BODIES);
}
