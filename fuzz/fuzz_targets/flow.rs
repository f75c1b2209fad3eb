//! The flow rules' lattice and sink decision. Input: each of four labels'
//! sinks (a subset of seven), and a run's reads (a sequence of labels).
//! Oracle: the lattice laws (join is commutative, associative and
//! idempotent; public is its unit), a sink never accepts more after a join
//! than before, and the gate's refusal agrees with the join of the mark's
//! readers.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use sbx_wasm::Capabilities;
use sbx_wasm::flow::{Mark, Readers, Sink};

const SINKS: [&str; 7] = [
    "stdout",
    "kv",
    "tool:a",
    "tool:b",
    "https://a.example",
    "https://b.example",
    "http://127.0.0.1:8080",
];
const LABELS: [&str; 4] = ["l0", "l1", "l2", "secret:TOKEN"];

#[derive(Arbitrary, Debug)]
struct Input {
    /// Per label, which sinks it may reach (bit i: SINKS[i]).
    masks: [u8; 4],
    /// Labels read, in order (index mod 5; 4 is a label without a rule).
    reads: Vec<u8>,
}

fn sinks(mask: u8) -> Vec<&'static str> {
    (0..SINKS.len())
        .filter(|i| mask & (1 << i) != 0)
        .map(|i| SINKS[i])
        .collect()
}

fuzz_target!(|input: Input| {
    let mut b = Capabilities::builder()
        .allow_egress("https://a.example")
        .allow_egress("https://b.example")
        .allow_egress("http://127.0.0.1:8080")
        .allow_tool("a")
        .allow_tool("b")
        .kv(Default::default())
        .secret("TOKEN", "v", ["https://a.example"], ["authorization"]);
    for (label, mask) in LABELS.iter().zip(input.masks) {
        b = b.flow(*label, sinks(mask));
    }
    let caps = b.build().expect("every sink is granted");
    let policy = caps.flow();
    let all: Vec<Sink> = SINKS.iter().map(|s| Sink::parse(s)).collect();
    let readers: Vec<Readers> = LABELS
        .iter()
        .map(|l| policy.readers(l))
        .chain([Readers::All, policy.readers("unknown")])
        .collect();
    for a in &readers {
        assert_eq!(a.join(a), *a, "idempotent");
        assert_eq!(a.join(&Readers::All), *a, "public is the unit");
        for b in &readers {
            assert_eq!(a.join(b), b.join(a), "commutative");
            for c in &readers {
                assert_eq!(a.join(&b.join(c)), a.join(b).join(c), "associative");
            }
            for s in &all {
                assert!(!a.join(b).admits(s) || a.admits(s), "never wider");
            }
        }
    }
    let mut mark = Mark::default();
    let mut before = Readers::All;
    for (n, r) in input.reads.iter().take(64).enumerate() {
        let label = match usize::from(*r % 5) {
            4 => "unknown",
            i => LABELS[i],
        };
        mark.join(label, format!("read {n}"));
        let now = policy.readers_of(&mark);
        for s in &all {
            assert!(!now.admits(s) || before.admits(s), "a mark only narrows");
            assert_eq!(
                policy.refusing(&mark, s).is_none(),
                now.admits(s),
                "the refusal is the join's"
            );
        }
        before = now;
    }
});
