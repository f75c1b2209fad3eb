//! Fuzzing your own agent: the naive summariser (it follows any `more: URL`
//! line of a page) is recorded fetching a real loopback page, then driven
//! by `sbx_wasm::fuzz_agent` with pages chosen by the search: it is found
//! attempting a fetch its grant forbids, within a bounded number of runs;
//! the finding replays exactly; the fixed summariser (same-origin links
//! only) survives the same search. The same for a Python agent.

use sbx_wasm::Violation;
use sbx_wasm::fuzz_agent::{AgentFuzzer, Property, Search};
use sbx_wasm::wasm::{ArtifactCache, WasmHost};
use sbx_wasm_tests::{LoopbackServer, guest, python_runner, record_summary, repo_root, sbx_bin};
use std::time::Instant;

const NEVER_EGRESS: fn() -> Vec<Property> = || {
    vec![
        Property::NeverDenied(Violation::EgressDenied),
        Property::NoTrap,
    ]
};

#[test]
fn the_search_steers_the_naive_agent_and_not_the_fixed_one() {
    let server = LoopbackServer::start();
    let naive =
        AgentFuzzer::new(&guest("summarizer"), record_summary("summarizer", &server)).unwrap();
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
    assert!(text.contains("net_fetch "), "{text}");
    assert!(text.contains("(egress_denied)"), "{text}");
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
        record_summary("summarizer_fixed", &server),
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

#[test]
fn the_search_steers_a_python_agent_run_in_the_runner() {
    let server = LoopbackServer::start();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("caps.toml"),
        format!("[net]\nallow = [\"{}\"]\n", server.origin()),
    )
    .unwrap();
    let script = repo_root().join("examples/fuzz-agent/summarize.py");
    let cache = super::python::warm_cache();
    let out = std::process::Command::new(sbx_bin())
        .env("SBX_WASM_CACHE_DIR", cache)
        .current_dir(d)
        .args([
            "run",
            "--caps",
            "caps.toml",
            "--no-stdin",
            "--record",
            "py.sbxrec",
        ])
        .arg("--python-runner")
        .arg(python_runner())
        .arg(&script)
        .arg("--")
        .arg(format!("{}/status", server.origin()))
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "summary: ok\n");
    let rec = sbx_wasm::replay::Recording::read(d.join("py.sbxrec")).unwrap();
    let host = WasmHost::new()
        .unwrap()
        .with_cache(ArtifactCache::open(cache).unwrap());
    let fuzzer = AgentFuzzer::with_host(host, &python_runner(), rec).unwrap();
    let started = Instant::now();
    let outcome = Search::new(&fuzzer, NEVER_EGRESS())
        .words(["more: "])
        .max_runs(1_500)
        .run()
        .unwrap();
    let finding = outcome.finding.expect("the Python agent is steered");
    eprintln!(
        "summarize.py: found in {} runs, {:.1?}:\n{finding}",
        outcome.runs,
        started.elapsed()
    );
    assert!(finding.what.contains("net_fetch"), "{finding}");
}

#[test]
fn fuzz_init_writes_a_project_seeded_from_the_recording() {
    // The template keeps one fuzzer in a static.
    fn shared<T: Send + Sync + 'static>() {}
    shared::<AgentFuzzer>();
    let server = LoopbackServer::start();
    let rec = record_summary("summarizer", &server);
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    rec.write(d.join("run.sbxrec")).unwrap();
    let component = guest("summarizer");
    let init = |out: &str, never: &str| {
        std::process::Command::new(sbx_bin())
            .current_dir(d)
            .args([
                "fuzz-init",
                "--recording",
                "run.sbxrec",
                "--out",
                out,
                "--never",
                never,
            ])
            .args(["--word", "more: ", "--word", "a\nb"])
            .arg("--component")
            .arg(&component)
            .output()
            .unwrap()
    };
    let o = init("gen", "egress_denied");
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // The target is the example project's (examples/fuzz-agent, run by
    // its own test), the component named in place of its default by its
    // real path (the build folder may be a link, as CI's is).
    let target = std::fs::read_to_string(d.join("gen/src/main.rs")).unwrap();
    let example = std::fs::read_to_string(repo_root().join("cli/templates/fuzz-agent.rs")).unwrap();
    assert_eq!(
        target,
        example.replace(
            "const COMPONENT: &str = \"agent.wasm\";",
            &format!(
                "const COMPONENT: &str = {:?};",
                std::fs::canonicalize(&component)
                    .unwrap()
                    .display()
                    .to_string()
            )
        )
    );
    let o = init("tools", "tool_denied");
    assert_eq!(o.status.code(), Some(0));
    let target = std::fs::read_to_string(d.join("tools/src/main.rs")).unwrap();
    assert!(
        target.contains("        // --never:\n        Property::NeverDenied(Violation::ToolDenied),\n        // always:\n        Property::NoTrap,"),
        "{target}"
    );
    let manifest = std::fs::read_to_string(d.join("gen/Cargo.toml")).unwrap();
    assert!(manifest.contains("features = [\"fuzzing\"]"), "{manifest}");
    // The corpus entry is the recording's answers, as sectioned text.
    let seed = std::fs::read(d.join("gen/corpus/recorded")).unwrap();
    assert_eq!(
        String::from_utf8_lossy(&seed),
        "== stdin\n\n== page 200\nok"
    );
    let dict = std::fs::read_to_string(d.join("gen/agent.dict")).unwrap();
    assert!(dict.ends_with("\"more: \"\n\"a\\x0ab\"\n"), "{dict}");
    let answers = sbx_wasm::fuzz_agent::HostAnswers::from_fuzz_input(&seed);
    assert_eq!(
        answers,
        sbx_wasm::fuzz_agent::HostAnswers::from_recording(&rec)
    );
    assert_eq!(answers.pages[0].body, b"ok");
    // Plain bytes (what libFuzzer shrinks an input to) are the first page,
    // the rest as recorded.
    let fuzzer = AgentFuzzer::new(&component, rec.clone()).unwrap();
    assert_eq!(fuzzer.answers(&seed), answers);
    let plain = fuzzer.answers(b"more: x");
    assert_eq!(
        (plain.pages[0].status, plain.pages[0].body.as_slice()),
        (200, &b"more: x"[..])
    );
    assert_eq!((plain.stdin.len(), plain.pages.len()), (0, 1));
    assert!(d.join("gen/recording.sbxrec").is_file() && d.join("gen/agent.dict").is_file());
    // Not over a project, not with a name that is no violation.
    let o = init("gen", "egress_denied");
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("is not empty"));
    let o = init("other", "exfiltration");
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("--never exfiltration: not a violation name")
    );
}

#[test]
fn host_answers_read_back_from_text_json_and_any_bytes() {
    use sbx_wasm::fuzz_agent::{HostAnswers, Page};
    let a = HostAnswers {
        stdin: b"in".to_vec(),
        files: vec![b"a,b\n1,2\n".to_vec(), Vec::new()],
        pages: vec![
            Page {
                status: 200,
                body: b"first\nmore: x".to_vec(),
            },
            Page {
                status: 404,
                body: Vec::new(),
            },
        ],
        tools: vec!["3".into()],
    };
    assert_eq!(HostAnswers::from_fuzz_input(&a.to_text()), a);
    assert_eq!(
        HostAnswers::from_fuzz_input(&serde_json::to_vec(&a).unwrap()),
        a
    );
    // A mangled head or any other bytes still make an input.
    let b = HostAnswers::from_fuzz_input(b"== page x\nbody\n== nonsense\n== tool");
    assert_eq!(
        (b.pages[0].status, b.pages[0].body.as_slice()),
        (200, &b"body"[..])
    );
    assert_eq!(b.tools, [""]);
    let _ = HostAnswers::from_fuzz_input(&[0xff; 64]);
}
