//! Record and replay: keep everything the host handed one run's guest, then
//! run the same component again against that alone, with no file, network
//! or tool touched.
//!
//! A recorded run ([`RunOptions::record`](crate::wasm::RunOptions::record))
//! runs on the virtual clocks and seeded randomness of a deterministic run
//! (a fresh seed unless one was set), so every clock reading and random byte
//! the guest gets follows from the seed the recording keeps. Besides the
//! seed it keeps the grant, `argv`, stdin, each path below a mount the
//! first time the guest met it (before the effect: content, kind, link
//! target), each folder the first time it was listed, the answer of each
//! fetch and tool call, and every op the gate decided ([`Recording`]).
//!
//! A [`Replay`] makes a private copy of each mount from the recording,
//! points the recorded grant at those copies, and answers fetches and tool
//! calls from the recording. Each op the guest asks for is compared with
//! the recorded op of the same sequence number: the first that differs
//! halts the run as `replay_diverged`, and [`Replay::verdict`] names it.

// Without the wasm door nothing records (the plan door has no replay yet).
#![cfg_attr(not(feature = "wasm"), allow(dead_code))]

mod format;
mod recorder;
mod tree;

pub use format::{
    Answer, AnswerResult, FORMAT, FileRecord, Hashed, ListedEntry, Listing, OpRecord, Outcome,
    Recording, SecretRecord, VERSION, sha256_hex,
};
pub(crate) use recorder::Recorder;

use crate::bound::record_target;
use crate::capability::Trace;
use crate::caps::Capabilities;
use crate::error::Error;
use crate::failure::Failure;
use crate::op::{Op, Output};
use crate::report::{AuditEvent, RunReport};
use crate::violation::{Denial, Violation};
use std::fmt;
use std::sync::Arc;

/// The default bound on what one recording keeps of file contents and
/// listings: 256 MiB.
pub const DEFAULT_RECORD_LIMIT: u64 = 256 << 20;

/// What a run does with a recording.
#[derive(Clone, Debug)]
pub(crate) enum TapeSpec {
    /// Record, keeping at most `limit` bytes of files and listings.
    Record { limit: u64 },
    /// Replay this recording.
    Replay(Arc<Recording>),
    /// Answer fetches and tool calls from this script, in order (the
    /// agent fuzzer's; built with the `fuzzing` feature only).
    #[cfg_attr(not(feature = "fuzzing"), allow(dead_code))]
    Script(Script),
}

/// The gate's side of a recording.
pub(crate) enum Tape {
    Record(Box<Recorder>),
    Replay(Arc<Recording>),
    /// Boxed: the fuzzer's script is the largest variant, and every run's
    /// gate holds a `Tape`'s room whether it has one or not.
    Script(Box<Script>),
}

impl Tape {
    pub(crate) fn from_spec(spec: TapeSpec) -> Self {
        match spec {
            TapeSpec::Record { limit } => Tape::Record(Box::new(Recorder::new(limit))),
            TapeSpec::Replay(r) => Tape::Replay(r),
            TapeSpec::Script(s) => Tape::Script(Box::new(s)),
        }
    }
}

/// Answers chosen by someone else (a fuzzer): each fetch gets the next
/// page, each tool call the next output; past the end, a fetch gets an
/// empty 404 and a tool call an empty output. Nothing is performed.
#[derive(Clone, Debug, Default)]
pub(crate) struct Script {
    pub(crate) pages: std::collections::VecDeque<(u16, Vec<u8>)>,
    pub(crate) tools: std::collections::VecDeque<String>,
}

impl Script {
    /// The scripted answer to `op`, or `None` for an op this script does
    /// not answer (a plan's file op).
    pub(crate) fn next(&mut self, op: &Op) -> Option<(Result<Output, Failure>, Trace)> {
        match op {
            Op::Net(_) => {
                let (status, body) = self.pages.pop_front().unwrap_or((404, Vec::new()));
                let trace = Trace {
                    status: Some(status),
                    ..Trace::default()
                };
                let out = Output::Response {
                    status,
                    headers: Vec::new(),
                    body: crate::capability::Content(body),
                };
                Some((Ok(out), trace))
            }
            Op::Tool(_) => {
                let output = self.tools.pop_front().unwrap_or_default();
                Some((Ok(Output::ToolOutput { output }), Trace::default()))
            }
            _ => None,
        }
    }
}

/// The recorded op at `seq`, if the recording goes that far.
fn recorded(rec: &Recording, seq: u64) -> Option<&OpRecord> {
    rec.ops
        .binary_search_by_key(&seq, |o| o.seq)
        .ok()
        .map(|i| &rec.ops[i])
}

/// Whether `op`, asked for at `seq`, departs from the recording: the
/// refusal that halts the replay, naming both.
pub(crate) fn diverges(rec: &Recording, seq: u64, op: &Op) -> Option<Denial> {
    let target = record_target(op.target());
    let message = match recorded(rec, seq) {
        Some(r) if r.op == op.kind() && r.target == target => return None,
        Some(r) => format!(
            "seq {seq}: the guest asked for {} {}; the recording holds {} {}",
            op.kind(),
            crate::bound::clip(&target),
            r.op,
            crate::bound::clip(&r.target)
        ),
        None => format!(
            "seq {seq}: the guest asked for {} {}; the recording ends at seq {}",
            op.kind(),
            crate::bound::clip(&target),
            rec.ops.last().map_or(0, |o| o.seq)
        ),
    };
    Some(Denial::new(Violation::ReplayDiverged, message))
}

/// What the recorded run's op `seq` answered.
pub(crate) fn answer(rec: &Recording, seq: u64) -> (Result<Output, Failure>, Trace) {
    match rec.answers.binary_search_by_key(&seq, |a| a.seq) {
        Ok(i) => {
            let a = &rec.answers[i];
            (a.result.clone().into(), a.trace.clone())
        }
        Err(_) => (
            Err(Failure::Denied(Denial::new(
                Violation::ReplayDiverged,
                format!("seq {seq}: the recording holds no answer for this op"),
            ))),
            Trace::default(),
        ),
    }
}

/// What a recorded run starts with, besides what the gate collects.
pub(crate) struct Header {
    caps: String,
    secrets: Vec<SecretRecord>,
    program_name: String,
    args: Vec<String>,
    stdin: Vec<u8>,
    seed: u64,
}

impl Header {
    pub(crate) fn new(
        caps: &Capabilities,
        program_name: &str,
        args: &[String],
        stdin: &[u8],
        seed: u64,
    ) -> Self {
        Header {
            caps: caps.to_toml(),
            secrets: caps
                .secrets()
                .iter()
                .map(|s| SecretRecord {
                    name: s.name().to_string(),
                    hosts: s.hosts().iter().map(|h| h.as_str().to_string()).collect(),
                    headers: s.headers().to_vec(),
                })
                .collect(),
            program_name: program_name.to_string(),
            args: args.to_vec(),
            stdin: stdin.to_vec(),
            seed,
        }
    }

    /// The recording of a run that ended with `report` and `audit`.
    pub(crate) fn assemble(
        self,
        rec: Recorder,
        report: &RunReport,
        audit: &[AuditEvent],
    ) -> Recording {
        let mut ops: Vec<OpRecord> = audit
            .iter()
            .map(|e| OpRecord {
                seq: e.seq,
                op: e.op.to_string(),
                target: e.target.clone(),
            })
            .collect();
        ops.sort_by_key(|o| o.seq);
        ops.dedup_by_key(|o| o.seq);
        let mut answers = rec.answers;
        answers.sort_by_key(|a| a.seq);
        Recording {
            format: FORMAT.into(),
            version: VERSION,
            component: None,
            caps_file: None,
            caps: self.caps,
            secrets: self.secrets,
            program_name: self.program_name,
            args: self.args,
            stdin: crate::capability::Content(self.stdin),
            seed: self.seed,
            files: rec.files,
            listings: rec.listings,
            answers,
            ops,
            blobs: rec.blobs,
            outcome: Outcome {
                status: report.status,
                exit_code: report.exit_code,
                violation: report.violation,
            },
            notes: rec.notes,
        }
    }
}

/// A recording made ready to run again: private copies of its mounts, and
/// its grant pointed at them.
///
/// # Examples
///
/// ```no_run
/// use sbx_wasm::replay::{Recording, Replay};
/// use sbx_wasm::wasm::{RunOptions, WasmHost};
///
/// let replay = Replay::new(Recording::read("run.sbxrec")?)?;
/// let host = WasmHost::new()?;
/// let agent = host.load(std::path::Path::new("agent.wasm"))?;
/// let mut run = host.run(&agent, RunOptions::replaying(&replay))?;
/// match replay.settle(&run.report, &mut run.audit).divergence {
///     Some(d) => println!("diverged: {d}"),
///     None => println!("same ops as recorded"),
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Replay {
    recording: Arc<Recording>,
    trees: tree::Trees,
}

impl Replay {
    /// Make the private copies of the recording's mounts and load its
    /// grant over them (secrets get stand-in values: the recorded answers
    /// already hold what the guest got).
    pub fn new(recording: Recording) -> Result<Self, Error> {
        let trees = tree::build(&recording)?;
        Ok(Replay {
            recording: Arc::new(recording),
            trees,
        })
    }

    /// The recording.
    pub fn recording(&self) -> &Recording {
        &self.recording
    }

    /// The grant the replay runs under: the recorded one over the copies.
    pub fn caps(&self) -> &Capabilities {
        &self.trees.caps
    }

    /// Where the copies of the mounts are (removed when the replay is
    /// dropped).
    pub fn folder(&self) -> &std::path::Path {
        self.trees.root.path()
    }

    /// What the replay could not make as recorded (content not kept).
    pub fn notes(&self) -> Vec<String> {
        self.recording
            .notes
            .iter()
            .chain(&self.trees.notes)
            .cloned()
            .collect()
    }

    /// The recording, shared with the run that replays it.
    #[cfg_attr(not(feature = "wasm"), allow(dead_code))]
    pub(crate) fn shared(&self) -> Arc<Recording> {
        self.recording.clone()
    }

    /// Make a replayed run's audit name the recorded host folders where
    /// its mount rules name the copies (`read mount /work (host ...)`), so
    /// it reads as the recorded run's; then its [`verdict`](Replay::verdict).
    /// (Decisions streamed to an event sink during the replay name the
    /// copies.)
    pub fn settle(&self, report: &RunReport, audit: &mut [AuditEvent]) -> Verdict {
        for e in audit.iter_mut() {
            let Some(rule) = &mut e.rule else { continue };
            for (copy, recorded) in &self.trees.hosts {
                let (from, to) = (format!("(host {copy})"), format!("(host {recorded})"));
                if rule.ends_with(&from) {
                    *rule = format!("{}{to}", &rule[..rule.len() - from.len()]);
                }
            }
        }
        self.verdict(report, audit)
    }

    /// Whether a replayed run (its `report` and `audit`) asked for the
    /// recorded ops, and ended as the recorded one did.
    pub fn verdict(&self, report: &RunReport, audit: &[AuditEvent]) -> Verdict {
        let rec = &self.recording;
        let at = |seq| recorded(rec, seq).cloned();
        let divergence = match audit
            .iter()
            .find(|e| e.violation == Some(Violation::ReplayDiverged))
        {
            Some(e) => Some(Divergence {
                seq: e.seq,
                asked: Some(OpRecord {
                    seq: e.seq,
                    op: e.op.to_string(),
                    target: e.target.clone(),
                }),
                recorded: at(e.seq),
            }),
            None => {
                let last = audit.iter().map(|e| e.seq).max().unwrap_or(0);
                at(last + 1).map(|r| Divergence {
                    seq: last + 1,
                    asked: None,
                    recorded: Some(r),
                })
            }
        };
        let o = &rec.outcome;
        Verdict {
            same_outcome: divergence.is_none()
                && report.status == o.status
                && report.exit_code == o.exit_code
                && report.violation == o.violation,
            divergence,
        }
    }
}

/// How a replay went.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Verdict {
    /// The first point where the replay departed from the recording.
    pub divergence: Option<Divergence>,
    /// No divergence, and the same status, exit code and violation.
    pub same_outcome: bool,
}

/// The first op where a replay departed from its recording.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Divergence {
    /// Its sequence number.
    pub seq: u64,
    /// What the replayed guest asked for (`None`: it ended there).
    pub asked: Option<OpRecord>,
    /// What the recording holds at that point (`None`: it had ended).
    pub recorded: Option<OpRecord>,
}

impl fmt::Display for Divergence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let op = |o: &Option<OpRecord>, none: &str| match o {
            Some(o) => format!("{} {}", o.op, crate::bound::clip(&o.target)),
            None => none.to_string(),
        };
        write!(
            f,
            "seq {}: the replay asked for {}; the recording holds {}",
            self.seq,
            op(&self.asked, "nothing more (it ended)"),
            op(&self.recorded, "nothing more (it had ended)")
        )
    }
}

#[cfg(test)]
mod tests;
