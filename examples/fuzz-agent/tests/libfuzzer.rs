//! The example fuzz target, run by libFuzzer as a user would: `sbx-wasm
//! fuzz-init` writes the project (recording, corpus, dictionary) for the
//! naive summariser, and this package's `agent-fuzz` (the same target)
//! finds a page that steers it into a denied fetch within a bounded number
//! of runs; the crash input reproduces the finding exactly; the fixed
//! summariser runs as long with no finding. Runs are counted, not timed
//! (seed 1: libFuzzer is deterministic given the seed).

use sbx_wasm::Violation;
use sbx_wasm::fuzz_agent::{AgentFuzzer, Property};
use sbx_wasm::replay::Recording;
use sbx_wasm_tests::{LoopbackServer, guest, record_summary, sbx_bin};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const RUNS: u32 = 10_000;

/// `fuzz-init` for guest `name` into `d/name`, then libFuzzer on it.
fn fuzz(d: &Path, name: &str, server: &LoopbackServer) -> (PathBuf, Output) {
    let rec = d.join(format!("{name}.sbxrec"));
    record_summary(name, server).write(&rec).unwrap();
    let project = d.join(name);
    let init = Command::new(sbx_bin())
        .args(["fuzz-init", "--never", "egress_denied", "--word", "more: "])
        .arg("--component")
        .arg(guest(name))
        .arg("--recording")
        .arg(&rec)
        .arg("--out")
        .arg(&project)
        .output()
        .unwrap();
    assert!(
        init.status.success(),
        "{}",
        String::from_utf8_lossy(&init.stderr)
    );
    let out = Command::new(env!("CARGO_BIN_EXE_agent-fuzz"))
        .env("SBX_FUZZ_COMPONENT", guest(name))
        .env("SBX_FUZZ_RECORDING", project.join("recording.sbxrec"))
        .arg(project.join("corpus"))
        .arg(format!("-dict={}", project.join("agent.dict").display()))
        .arg(format!("-runs={RUNS}"))
        .arg(format!("-artifact_prefix={}/", project.display()))
        .args(["-seed=1", "-print_final_stats=1"])
        .output()
        .unwrap();
    (project, out)
}

/// libFuzzer's count of executed inputs.
fn runs(stderr: &str) -> u64 {
    stderr
        .lines()
        .find_map(|l| l.strip_prefix("stat::number_of_executed_units:"))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no run count in:\n{stderr}"))
}

#[test]
fn libfuzzer_steers_the_naive_agent_and_not_the_fixed_one() {
    let server = LoopbackServer::start();
    let dir = tempfile::tempdir().unwrap();
    let seen = server.connections();

    let (project, out) = fuzz(dir.path(), "summarizer", &server);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "no finding:\n{stderr}");
    assert!(
        stderr.contains("property broken: never egress_denied"),
        "{stderr}"
    );
    let n = runs(&stderr);
    eprintln!("naive summarizer: libFuzzer found a steering page in {n} runs");
    assert!(n < u64::from(RUNS));
    // The crash input is the reproduction: the same refusal at the same seq.
    let crash = std::fs::read_dir(&project)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("crash-")
        })
        .expect("libFuzzer kept the input");
    let rec = Recording::read(project.join("recording.sbxrec")).unwrap();
    let fuzzer = AgentFuzzer::new(&guest("summarizer"), rec).unwrap();
    let properties = [
        Property::NeverDenied(Violation::EgressDenied),
        Property::NoTrap,
    ];
    let answers = fuzzer.answers(&std::fs::read(&crash).unwrap());
    let finding = fuzzer
        .run(&answers)
        .unwrap()
        .check(&properties)
        .unwrap_err();
    assert!(finding.what.contains("egress_denied"), "{finding}");
    assert!(
        stderr.contains(&finding.what),
        "{} not in:\n{stderr}",
        finding.what
    );
    for _ in 0..2 {
        let again = fuzzer
            .run(&answers)
            .unwrap()
            .check(&properties)
            .unwrap_err();
        assert_eq!((again.seq, &again.what), (finding.seq, &finding.what));
    }

    let (_, out) = fuzz(dir.path(), "summarizer_fixed", &server);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(runs(&stderr), u64::from(RUNS), "{stderr}");
    // Nothing was fetched for real while fuzzing (two recordings only).
    assert_eq!(server.connections(), seen + 2);
}
