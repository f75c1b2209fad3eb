//! Fuzzing your own agent: the naive summariser (it follows any `more: URL`
//! line of a page) is recorded fetching a real loopback page, then driven
//! by `sbx_wasm::fuzz_agent` with pages chosen by the search: it is found
//! attempting a fetch its grant forbids, within a bounded number of runs;
//! the finding replays exactly; the fixed summariser (same-origin links
//! only) survives the same search.

use sbx_wasm::Capabilities;
use sbx_wasm::Violation;
use sbx_wasm::fuzz_agent::{AgentFuzzer, Property, Search};
use sbx_wasm::wasm::{RunOptions, WasmHost};
use sbx_wasm_tests::{LoopbackServer, guest};
use std::time::Instant;

/// A recording of `name` summarising the loopback server's `/status`.
fn recorded(name: &str, server: &LoopbackServer) -> sbx_wasm::replay::Recording {
    let caps = Capabilities::builder()
        .allow_egress(server.origin())
        .build()
        .unwrap();
    let host = WasmHost::new().unwrap();
    let agent = host.load(&guest(name)).unwrap();
    let opts = RunOptions::new(caps)
        .args([format!("{}/status", server.origin())])
        .record(1 << 20);
    let run = host.run(&agent, opts).unwrap();
    assert_eq!(run.report.exit_code, Some(0), "{:?}", run.trap);
    assert_eq!(String::from_utf8_lossy(&run.stdout), "summary: ok\n");
    run.recording.unwrap()
}

const NEVER_EGRESS: fn() -> Vec<Property> = || {
    vec![
        Property::NeverDenied(Violation::EgressDenied),
        Property::NoTrap,
    ]
};

#[test]
fn the_search_steers_the_naive_agent_and_not_the_fixed_one() {
    let server = LoopbackServer::start();
    let naive = AgentFuzzer::new(&guest("summarizer"), recorded("summarizer", &server)).unwrap();
    let seen = server.connections();
    let started = Instant::now();
    let outcome = Search::new(&naive, NEVER_EGRESS())
        .words(["more: "])
        .max_runs(1_500)
        .run()
        .unwrap();
    let took = started.elapsed();
    let finding = outcome.finding.expect("the naive agent is steered");
    eprintln!(
        "naive summarizer: found in {} runs, {took:.1?}, {} inputs kept:\n{finding}",
        outcome.runs, outcome.kept
    );
    let text = finding.to_string();
    assert!(
        text.contains("property broken: never egress_denied"),
        "{text}"
    );
    assert!(text.contains("net_fetch http"), "{text}");
    assert!(text.contains("fetch 1 answered"), "{text}");
    // Nothing real was fetched while searching.
    assert_eq!(server.connections(), seen);

    // The finding replays exactly: the same denial at the same seq.
    let again = naive.run(&finding.answers).unwrap();
    let again = again.check(&NEVER_EGRESS()).unwrap_err();
    assert_eq!(
        (again.seq, again.what.clone()),
        (finding.seq, finding.what.clone())
    );

    let fixed = AgentFuzzer::new(
        &guest("summarizer_fixed"),
        recorded("summarizer_fixed", &server),
    )
    .unwrap();
    let outcome = Search::new(&fixed, NEVER_EGRESS())
        .words(["more: "])
        .max_runs(outcome.runs.max(300))
        .run()
        .unwrap();
    assert!(outcome.finding.is_none(), "{}", outcome.finding.unwrap());
    // Its seed answers break nothing either, and it did follow a link
    // somewhere in the search (so the fix was exercised).
    assert!(outcome.kept > 1, "the search found no new behaviour");
}
