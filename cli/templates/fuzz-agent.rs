//! A libFuzzer target that fuzzes an agent with the host's answers (the
//! template `sbx-wasm fuzz-init` writes). Each input is the host's
//! answers to the agent (pages, tool outputs, file contents, stdin:
//! sectioned text like the corpus's first entry, JSON, or any bytes); the
//! agent runs on the recording's grant, args and files with nothing real
//! touched, and a run that breaks a property below is a crash whose
//! message is the reproduction.
//!
//! It is built without coverage instrumentation on purpose: libFuzzer is
//! steered by what the guest did (`FuzzRun::features`, fed to it as extra
//! counters), not by the host's code, whose coverage every odd URL changes
//! without the agent doing anything new. So the stable toolchain builds
//! it, and it runs as a plain binary:
//!
//! ```text
//! cargo run --release -- corpus -dict=agent.dict
//! ```
#![no_main]

use libfuzzer_sys::fuzz_target;
use sbx_wasm::Violation;
use sbx_wasm::fuzz_agent::{AgentFuzzer, Property};
use sbx_wasm::replay::Recording;
use std::path::PathBuf;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU8, Ordering};

/// The agent, and a recording of one of its runs; a relative path is from
/// this project's folder. `SBX_FUZZ_COMPONENT` and `SBX_FUZZ_RECORDING`
/// name others (a rebuilt agent, say) without touching this file.
const COMPONENT: &str = "agent.wasm";
const RECORDING: &str = "recording.sbxrec";

/// What every run must hold to; a run that breaks one is a finding.
fn properties() -> Vec<Property> {
    vec![
        // --never:
        Property::NeverDenied(Violation::EgressDenied),
        // always:
        Property::NoTrap,
    ]
}

fn path(var: &str, default: &str) -> PathBuf {
    std::env::var_os(var)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(default))
}

fn fuzzer() -> &'static AgentFuzzer {
    static FUZZER: OnceLock<AgentFuzzer> = OnceLock::new();
    FUZZER.get_or_init(|| {
        let recording = path("SBX_FUZZ_RECORDING", RECORDING);
        let recording =
            Recording::read(&recording).unwrap_or_else(|e| panic!("{}: {e}", recording.display()));
        let component = path("SBX_FUZZ_COMPONENT", COMPONENT);
        AgentFuzzer::new(&component, recording)
            .unwrap_or_else(|e| panic!("{}: {e}", component.display()))
    })
}

/// libFuzzer's extra counters: it clears them before each run and counts
/// a new value (bucketed: 1, 2, 3, 4-7, ...) of any one as new coverage.
const COUNTERS: usize = 4096;

#[repr(C, align(64))]
struct Counters([AtomicU8; COUNTERS]);

#[used]
#[cfg_attr(
    target_os = "linux",
    unsafe(link_section = "__libfuzzer_extra_counters")
)]
static EXTRA_COUNTERS: Counters = Counters([const { AtomicU8::new(0) }; COUNTERS]);

fuzz_target!(|data: &[u8]| {
    let run = fuzzer().run(&fuzzer().answers(data)).expect("a run");
    for key in run.features() {
        let counter = &EXTRA_COUNTERS.0[(key % COUNTERS as u64) as usize];
        let _ = counter.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_add(1));
    }
    if let Err(finding) = run.check(&properties()) {
        panic!("{finding}");
    }
});
