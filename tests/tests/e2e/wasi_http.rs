//! A standard wasi:http 0.2 client component (`guest-examples/agents/src/bin/wasi_http.rs`,
//! written against the interface alone) against real servers on
//! 127.0.0.1: its requests reach the granted origin through the egress
//! broker in every order wasi:http allows (body after `handle`, before
//! it, waited for with `poll` or `block`); the ungranted server gets no
//! connection; refusals are on record with their violation; redirects
//! come back to the guest unfollowed; bodies are bounded both ways.

use sbx_wasm::wasm::{RunOptions, WasmHost, WasmRun};
use sbx_wasm::{Capabilities, Violation};
use sbx_wasm_tests::{LoopbackServer, guest};

fn run_steps(caps: Capabilities, steps: &[String]) -> (WasmRun, String) {
    let host = WasmHost::new().unwrap();
    let agent = host.load(&guest("wasi_http")).unwrap();
    let run = host
        .run(&agent, RunOptions::new(caps).args(steps.iter().cloned()))
        .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout).into_owned();
    (run, stdout)
}

fn caps(server: &LoopbackServer) -> Capabilities {
    Capabilities::builder()
        .allow_egress(server.origin())
        .max_wall(std::time::Duration::from_secs(20))
        .build()
        .unwrap()
}

fn violations(run: &WasmRun) -> Vec<Option<Violation>> {
    run.audit.iter().map(|e| e.violation).collect()
}

#[test]
fn a_standard_component_reaches_the_granted_origin_and_nothing_else() {
    let (granted, other) = (LoopbackServer::start(), LoopbackServer::start());
    let (g, o) = (granted.origin(), other.origin());
    let steps = [
        format!("first GET {g}/status"),
        format!("first POST {g}/echo 20000"),
        format!("body-first PUT {g}/echo 9000"),
        format!("poll POST {g}/echo 5000"),
        // Each refused before anything is sent:
        format!("first GET {o}/status"),
        format!("forbidden GET {g}/status"),
        "authority GET example.com:".to_string(),
        format!("authority GET 127.0.0.1:{}abc", granted.port),
    ];
    let (run, out) = run_steps(caps(&granted), &steps);
    assert_eq!(run.report.exit_code, Some(0), "{out} {:?}", run.trap);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "0: HTTP 200, 2 bytes: ok", "{out}");
    assert_eq!(lines[1], "1: HTTP 200, 4 bytes: echo", "{out}");
    assert_eq!(lines[2], "2: HTTP 200, 4 bytes: echo", "{out}");
    assert_eq!(lines[3], "3: HTTP 200, 4 bytes: echo", "{out}");
    assert_eq!(lines[4], "4: error ErrorCode::HttpRequestDenied", "{out}");
    assert_eq!(
        lines[5], "5: error header refused: HeaderError::Forbidden",
        "{out}"
    );
    // An authority whose port is empty or not a number is refused by
    // wasi:http's own `set-authority` (wasmtime-wasi-http 50 checks it), so
    // no request exists; the translation's own check, which refuses them
    // as `invalid_request` on record, stays for every other way in (the
    // `wasi_http` fuzz target holds it).
    assert_eq!(
        lines[6], "6: error authority \"example.com:\" refused by the guest's own types",
        "{out}"
    );
    assert!(
        lines[7].ends_with("abc\" refused by the guest's own types"),
        "{out}"
    );

    // The granted server got the four requests whole, on four connections
    // of the broker's; the other server got nothing.
    assert_eq!(granted.connections(), 4);
    assert_eq!(other.connections(), 0);
    let heard = granted.headers().join("\n");
    for n in ["20000", "9000", "5000"] {
        assert!(heard.contains(&format!("content-length: {n}")), "{heard}");
    }
    assert!(heard.contains("user-agent: sbx-wasi-http-test"), "{heard}");

    // Every request is one op on record: four allowed, the ungranted
    // origin `egress_denied` (the forbidden header and the bad authorities
    // never became requests).
    assert_eq!(
        violations(&run),
        [None, None, None, None, Some(Violation::EgressDenied)]
    );
    assert_eq!(run.audit[0].rule.as_deref(), Some(g.as_str()));
    assert_eq!(run.audit[3].target, format!("{g}/echo"));
}

#[test]
fn a_redirect_comes_back_to_the_guest_unfollowed() {
    let s = LoopbackServer::start();
    let g = s.origin();
    // The grant would let the broker follow it (`sbx.fetch` does); on
    // this path the guest's client decides, each hop a request of its own.
    let caps = caps(&s)
        .to_builder()
        .unwrap()
        .max_redirects(3)
        .build()
        .unwrap();
    let (run, out) = run_steps(caps, &[format!("first GET {g}/redirect-same")]);
    assert!(out.starts_with("0: HTTP 302, "), "{out}");
    assert_eq!(s.requests(), ["GET /redirect-same HTTP/1.1"]);
    assert_eq!(run.audit.len(), 1);
}

#[test]
fn bodies_are_bounded_both_ways_with_their_neighbours_allowed() {
    let s = LoopbackServer::start();
    let g = s.origin();
    // A request body over the broker's 10 MiB is refused on record and
    // never sent; the guest's writes past the bound fail.
    let over = sbx_wasm::net::MAX_REQUEST_BODY_BYTES + 64 * 1024;
    let (run, out) = run_steps(
        caps(&s),
        &[
            format!("first POST {g}/echo {over}"),
            format!("first POST {g}/echo 1000"),
        ],
    );
    let lines: Vec<&str> = out.lines().collect();
    assert!(
        lines[0].starts_with("0: error ErrorCode::HttpRequestDenied (body: write failed"),
        "{out}"
    );
    assert_eq!(lines[1], "1: HTTP 200, 4 bytes: echo", "{out}");
    assert_eq!(
        violations(&run),
        [Some(Violation::InvalidRequest), None],
        "{:?}",
        run.audit
    );
    assert_eq!(s.connections(), 1);

    // A response is charged to `max_output_bytes` like any output: 64 KiB
    // over a 32 KiB budget halts the run; under a 1 MiB one it arrives.
    let small = caps(&s)
        .to_builder()
        .unwrap()
        .max_output_bytes(32 * 1024)
        .build()
        .unwrap();
    let (run, out) = run_steps(small, &[format!("first GET {g}/big")]);
    assert_eq!(
        run.report.violation,
        Some(Violation::MaxOutputBytes),
        "{out}"
    );
    assert!(!out.contains("HTTP 200"), "{out}");
    let roomy = caps(&s)
        .to_builder()
        .unwrap()
        .max_output_bytes(1024 * 1024)
        .build()
        .unwrap();
    let (_, out) = run_steps(roomy, &[format!("first GET {g}/big")]);
    assert!(out.starts_with("0: HTTP 200, 65536 bytes: xxx"), "{out}");
}

#[test]
fn a_guest_piling_up_bodies_gets_a_bounded_number_and_then_one_more() {
    let s = LoopbackServer::start();
    let g = s.origin();
    let n = 1000;
    let (run, out) = run_steps(caps(&s), &[format!("bodies GET {g}/status {n}")]);
    let max = sbx_wasm::wasm::MAX_HTTP_BODIES;
    assert!(
        out.starts_with(&format!(
            "bodies: {max} given, {} refused\n0: HTTP 200",
            n - max
        )),
        "{out}"
    );
    // Only the request handed on was sent, and it is the only op.
    assert_eq!(s.connections(), 1);
    assert_eq!(run.audit.len(), 1);
}

#[test]
fn a_secret_reaches_its_bound_header_slot_and_its_echo_comes_back_masked() {
    const VALUE: &str = "tok_wasi_http_S3cret";
    let s = LoopbackServer::start();
    let g = s.origin();
    let caps = caps(&s)
        .to_builder()
        .unwrap()
        .secret("API_TOKEN", VALUE, [g.clone()], ["Authorization"])
        .build()
        .unwrap();
    let (run, out) = run_steps(caps, &[format!("secret GET {g}/reflect API_TOKEN")]);
    assert!(out.starts_with("0: HTTP 200"), "{out}");
    // The server got the value in the bound header; the guest saw only
    // the placeholder, even in what the server reflected.
    assert!(
        s.headers()
            .iter()
            .any(|h| h == &format!("authorization: Bearer {VALUE}")),
        "{:?}",
        s.headers()
    );
    assert!(!out.contains(VALUE), "{out}");
    assert!(
        out.contains("x-reflect=Bearer SBX_SECRET_API_TOKEN_"),
        "{out}"
    );
    assert_eq!(run.report.secret_uses.len(), 1);
}

#[test]
fn a_request_whose_future_was_dropped_is_never_sent_nor_answered_elsewhere() {
    let s = LoopbackServer::start();
    let g = s.origin();
    let (run, out) = run_steps(caps(&s), &[format!("dropped POST {g}/echo 5000")]);
    assert_eq!(out.trim_end(), "0: HTTP 200, 4 bytes: echo", "{out}");
    // Only B left: one request, with B's 7-byte body; one op on record.
    assert_eq!(s.requests(), ["POST /echo HTTP/1.1"]);
    let heard = s.headers().join("\n");
    assert!(heard.contains("content-length: 7"), "{heard}");
    assert!(!heard.contains("content-length: 5000"), "{heard}");
    assert_eq!(run.audit.len(), 1);
}

#[test]
fn a_flood_of_requests_ends_at_max_ops_and_no_request_past_it_is_sent() {
    let s = LoopbackServer::start();
    let g = s.origin();
    let caps = caps(&s).to_builder().unwrap().max_ops(20).build().unwrap();
    let (run, out) = run_steps(caps, &[format!("flood GET {g}/status 10000")]);
    assert_eq!(run.report.violation, Some(Violation::MaxOps), "{out}");
    assert!(!out.contains("flood:"), "{out}");
    // Twenty answered; the 21st was refused before anything was sent.
    assert_eq!(s.connections(), 20);
    // Its neighbour under the budget completes.
    let (run, out) = run_steps(caps_of(&s, 20), &[format!("flood GET {g}/status 19")]);
    assert_eq!(run.report.exit_code, Some(0), "{out}");
    assert!(out.starts_with("flood: 19 answered"), "{out}");
}

fn caps_of(s: &LoopbackServer, ops: u64) -> Capabilities {
    caps(s).to_builder().unwrap().max_ops(ops).build().unwrap()
}

#[test]
fn a_name_resolving_to_loopback_needs_an_ip_rule_and_a_redirect_to_metadata_is_refused_at_its_hop()
{
    let s = LoopbackServer::start();
    let named = format!("http://localhost:{}", s.port);
    // The name alone is granted: it resolves to 127.0.0.1, which no IP
    // rule names.
    let by_name = Capabilities::builder()
        .allow_egress(&named)
        .build()
        .unwrap();
    let (run, out) = run_steps(by_name, &[format!("first GET {named}/status")]);
    assert_eq!(
        out.trim_end(),
        "0: error ErrorCode::HttpRequestDenied",
        "{out}"
    );
    assert_eq!(violations(&run), [Some(Violation::EgressDenied)]);
    assert!(
        run.audit[0]
            .detail
            .as_deref()
            .unwrap_or("")
            .contains("127.0.0.1"),
        "{:?}",
        run.audit[0]
    );
    assert_eq!(s.connections(), 0);
    // Its neighbour: with the IP rule beside it, the same request goes.
    let with_ip = Capabilities::builder()
        .allow_egress(&named)
        .allow_egress(s.origin())
        .build()
        .unwrap();
    let (_, out) = run_steps(with_ip, &[format!("first GET {named}/status")]);
    assert!(out.starts_with("0: HTTP 200"), "{out}");
    assert_eq!(s.connections(), 1);

    // A redirect to the metadata address: the guest's client follows it,
    // and that hop, a request of its own, is refused before any dial.
    let g = s.origin();
    let (run, out) = run_steps(
        caps(&s),
        &[format!(
            "follow GET {g}/redirect-to/169.254.169.254:80/latest/meta-data"
        )],
    );
    assert!(
        out.contains("redirected to http://169.254.169.254:80/latest/meta-data"),
        "{out}"
    );
    assert!(
        out.contains("0: error ErrorCode::HttpRequestDenied"),
        "{out}"
    );
    assert_eq!(violations(&run), [None, Some(Violation::EgressDenied)]);
    assert_eq!(s.connections(), 2);
}

#[test]
fn a_guest_timeout_of_600_s_still_ends_at_the_wall_budget() {
    let s = LoopbackServer::start();
    let g = s.origin();
    let caps = caps(&s)
        .to_builder()
        .unwrap()
        .max_wall(std::time::Duration::from_millis(1500))
        .build()
        .unwrap();
    let started = std::time::Instant::now();
    let (run, out) = run_steps(caps, &[format!("timeout GET {g}/stall")]);
    assert_eq!(run.report.violation, Some(Violation::MaxWall), "{out}");
    // Bounded from above by the budget and the backstop, not by 600 s.
    assert!(started.elapsed() < std::time::Duration::from_secs(60));
}

#[test]
fn a_guest_timeout_shorter_than_the_budget_is_the_guests_error_and_the_run_goes_on() {
    let s = LoopbackServer::start();
    let g = s.origin();
    let started = std::time::Instant::now();
    let steps = [
        format!("timeout GET {g}/stall 400"),
        format!("timeout GET {g}/status 400"),
    ];
    let (run, out) = run_steps(caps(&s), &steps);
    assert_eq!(run.report.exit_code, Some(0), "{out} {:?}", run.trap);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[0], "0: error ErrorCode::ConnectionReadTimeout",
        "{out}"
    );
    // The neighbour under the same timeout: answered at once.
    assert_eq!(lines[1], "1: HTTP 200, 2 bytes: ok", "{out}");
    assert_eq!(run.report.violation, None);
    let e = &run.audit[0];
    let error = e.detail.as_deref().unwrap_or_default();
    assert!(error.contains("first-byte timeout"), "{:?}", run.audit);
    // Well inside the 20 s wall budget.
    assert!(started.elapsed() < std::time::Duration::from_secs(15));
}

#[test]
fn each_run_makes_its_own_connections_and_a_recording_replays_without_the_network() {
    let s = LoopbackServer::start();
    let g = s.origin();
    let host = WasmHost::new().unwrap();
    let agent = host.load(&guest("wasi_http")).unwrap();
    let step = [
        format!("first POST {g}/echo 3000"),
        format!("first GET {g}/status"),
    ];
    let first = host
        .run(
            &agent,
            RunOptions::new(caps(&s)).args(step.clone()).record(1 << 20),
        )
        .unwrap();
    let second = host
        .run(&agent, RunOptions::new(caps(&s)).args(step.clone()))
        .unwrap();
    assert_eq!(first.stdout, second.stdout);
    // Two requests a run, each on a connection of its own: none is kept
    // for a later run.
    assert_eq!(s.connections(), 4);

    let replay = sbx_wasm::replay::Replay::new(*first.recording.clone().unwrap()).unwrap();
    let mut again = host.run(&agent, RunOptions::replaying(&replay)).unwrap();
    let verdict = replay.settle(&again.report, &mut again.audit);
    assert!(verdict.same_outcome, "{verdict:?}");
    assert_eq!(again.stdout, first.stdout);
    assert_eq!(again.audit, first.audit);
    assert_eq!(s.connections(), 4);
}

/// The same walls for an unmodified ecosystem client: `wstd`'s, built from
/// the crates.io registry (`guest-examples/agents/src/bin/wstd_fetch.rs`).
#[test]
fn an_unmodified_wstd_client_meets_the_same_walls() {
    let (s, other) = (LoopbackServer::start(), LoopbackServer::start());
    let g = s.origin();
    let host = WasmHost::new().unwrap();
    let agent = host.load(&guest("wstd_fetch")).unwrap();
    let fetch = |rules: &[&str], urls: &[String]| {
        let mut caps = Capabilities::builder().max_wall(std::time::Duration::from_secs(20));
        for r in rules {
            caps = caps.allow_egress(*r);
        }
        let opts = RunOptions::new(caps.build().unwrap()).args(urls.iter().cloned());
        let run = host.run(&agent, opts).unwrap();
        let out = String::from_utf8_lossy(&run.stdout).into_owned();
        assert_eq!(run.report.exit_code, Some(0), "{out} {:?}", run.trap);
        (violations(&run), out)
    };
    let denied = "error ErrorCode::HttpRequestDenied";
    // The granted origin answers (the neighbour); the other server is
    // refused before any dial; a redirect's second hop, to the metadata
    // address, is a request of its own, refused.
    let urls = [
        format!("{g}/status"),
        format!("{}/status", other.origin()),
        format!("{g}/redirect-to/169.254.169.254:80/latest/meta-data"),
    ];
    let (seen, out) = fetch(&[&g], &urls);
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines[0].starts_with("0: 200 "), "{out}");
    assert_eq!(
        lines[1..],
        [format!("1: {denied}"), format!("2: {denied}")],
        "{out}"
    );
    let egress = Some(Violation::EgressDenied);
    assert_eq!(seen, [None, egress, None, egress]);
    assert_eq!(other.connections(), 0);
    // The status fetch and the redirect's first hop, nothing else.
    assert_eq!(s.connections(), 2);
    // A name granted alone that resolves to loopback: refused, no dial.
    let named = format!("http://localhost:{}", s.port);
    let (seen, out) = fetch(&[&named], &[format!("{named}/status")]);
    assert_eq!(out.trim_end(), format!("0: {denied}"), "{out}");
    assert_eq!(seen, [egress]);
    assert_eq!(s.connections(), 2);
}
