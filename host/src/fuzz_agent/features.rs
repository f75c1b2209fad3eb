//! What a guest did in a fuzzed run, as feature keys a coverage-guided
//! fuzzer can be steered by. The host's own code coverage says little
//! about an agent (every odd URL takes a new path through the URL parser
//! and none makes the agent do anything new); these keys change only when
//! the guest does: a new kind of op, an op at a new place in the run, a
//! new count of one kind, a new ending.

use super::FuzzRun;

/// Positions past this one share a key: a guest looping over a long page
/// must not turn every extra iteration into a new feature.
const MAX_POSITION: u64 = 64;

impl FuzzRun {
    /// The run's features, for a fuzzer's extra counters (each key bumps
    /// one counter, so a key that repeats is a count the fuzzer buckets):
    /// for each decision, one key for its kind (op, decision, violation, the
    /// class of the status it was answered)
    /// and one for that kind at its position in the run; then one key for
    /// the ending (status, exit code, halting violation). Op targets are
    /// left out on purpose: they carry the fuzzer's own bytes, and a new
    /// URL is not a new behaviour.
    ///
    /// The keys are stable across runs and builds (FNV-1a), so a corpus
    /// keeps its meaning.
    pub fn features(&self) -> Vec<u64> {
        let mut out = Vec::with_capacity(2 * self.audit.len() + 1);
        for (i, e) in self.audit.iter().enumerate() {
            let violation = e.violation.map(|v| v.as_str()).unwrap_or("");
            // The class of the status it was answered (2xx, 4xx...) is
            // part of what it met, the exact status is noise.
            let class = e.status.map(|s| [b'0' + (s / 100 % 10) as u8]);
            let kind = fnv1a(&[
                e.op.as_str().as_bytes(),
                e.decision.as_str().as_bytes(),
                violation.as_bytes(),
                class.as_ref().map_or(&[][..], |c| &c[..]),
            ]);
            out.push(kind);
            let at = (i as u64).min(MAX_POSITION);
            out.push(fnv1a(&[&kind.to_le_bytes(), &at.to_le_bytes()]));
        }
        let status = format!("{:?}", self.report.status);
        let exit = format!("{:?}", self.report.exit_code);
        let violation = self.report.violation.map(|v| v.as_str()).unwrap_or("");
        out.push(fnv1a(&[
            b"end",
            status.as_bytes(),
            exit.as_bytes(),
            violation.as_bytes(),
        ]));
        out
    }
}

/// 64-bit FNV-1a over the parts, each followed by a separator byte so
/// that ("ab", "c") and ("a", "bc") differ.
fn fnv1a(parts: &[&[u8]]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for &b in part.iter().chain(&[0xff]) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    h
}
