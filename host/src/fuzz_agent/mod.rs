//! Fuzz your own agent: run a guest with host answers a fuzzer chose (file
//! contents, fetched pages, tool outputs, stdin) and check what it then
//! tried. A prompt-injected page is a hostile host answer; with the sandbox
//! in the loop, every attempt it steers the agent into is refused and on
//! record, so a property such as "never attempts a denied fetch" can be
//! checked on each input.
//!
//! Nothing real is touched: the mounts are private copies made from a
//! recording (`sbx-wasm run --record`) with the fuzzer's contents in place
//! of the recorded ones, and fetches and tool calls are answered from the
//! input, in order. The run is deterministic (the recording's seed), so a
//! finding replays exactly.
//!
//! # Examples
//!
//! ```no_run
//! use sbx_wasm::fuzz_agent::{AgentFuzzer, HostAnswers, Property};
//! use sbx_wasm::replay::Recording;
//! use sbx_wasm::Violation;
//!
//! let fuzzer = AgentFuzzer::new(
//!     std::path::Path::new("agent.wasm"),
//!     Recording::read("agent.sbxrec")?,
//! )?;
//! // In a `fuzz_target!(|answers: HostAnswers| { ... })`:
//! let answers = fuzzer.seed_answers();
//! let run = fuzzer.run(&answers)?;
//! if let Err(finding) = run.check(&[Property::NeverDenied(Violation::EgressDenied)]) {
//!     panic!("{finding}");
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod features;
mod property;
mod search;

pub use property::{Finding, Property};
pub use search::{Search, SearchOutcome};

use crate::Services;
use crate::error::Error;
use crate::replay::{AnswerResult, Recording, Replay, Script, TapeSpec};
use crate::report::{AuditEvent, RunReport};
use crate::tools::ToolRegistry;
use crate::wasm::{PreparedAgent, RunOptions, WasmHost};
use crate::{Output, capability::Content};
use serde::{Deserialize, Serialize};

/// What the host answers the guest in one fuzzed run. In JSON, bytes are
/// `{"text": ...}` when they are UTF-8 and `{"base64": ...}` otherwise.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, arbitrary::Arbitrary)]
pub struct HostAnswers {
    /// The guest's stdin.
    #[serde(with = "bytes")]
    pub stdin: Vec<u8>,
    /// Contents for the recording's files, in the order the guest first met
    /// them (a file past the end keeps its recorded content).
    #[serde(with = "bytes_list")]
    pub files: Vec<Vec<u8>>,
    /// The answer to each fetch, in order (past the end: an empty 404).
    pub pages: Vec<Page>,
    /// The output of each tool call, in order (past the end: empty).
    pub tools: Vec<String>,
}

impl HostAnswers {
    /// What `rec`'s guest was answered: its stdin, the contents of the
    /// files it met, its pages and tool outputs.
    pub fn from_recording(rec: &Recording) -> HostAnswers {
        let mut a = HostAnswers {
            stdin: rec.stdin.0.clone(),
            ..HostAnswers::default()
        };
        for f in rec.files.iter().filter(|f| f.kind == "file") {
            let content = f.blob.as_ref().and_then(|b| rec.blobs.get(b));
            a.files
                .push(content.map(|c| c.0.clone()).unwrap_or_default());
        }
        for ans in &rec.answers {
            match &ans.result {
                AnswerResult::Ok(Output::Response { status, body, .. }) => a.pages.push(Page {
                    status: *status,
                    body: body.0.clone(),
                }),
                AnswerResult::Ok(Output::ToolOutput { output }) => a.tools.push(output.clone()),
                _ => {}
            }
        }
        a
    }

    /// A fuzzer's input as host answers: the sectioned text of
    /// [`HostAnswers::to_text`] when it starts with `== ` (as `sbx-wasm
    /// fuzz-init` seeds the corpus: byte mutations then mostly land inside
    /// a page or an output, where they matter), JSON when it parses (as a
    /// finding prints them), else the bytes read by `arbitrary`. Any bytes
    /// make an input.
    pub fn from_fuzz_input(data: &[u8]) -> HostAnswers {
        if data.starts_with(b"== ") {
            return Self::from_text(data);
        }
        if let Ok(a) = serde_json::from_slice(data) {
            return a;
        }
        let mut u = arbitrary::Unstructured::new(data);
        <HostAnswers as arbitrary::Arbitrary>::arbitrary(&mut u).unwrap_or_default()
    }

    /// The answers as sectioned text: a line `== stdin`, `== file`,
    /// `== page STATUS` or `== tool` before each answer's bytes, in order.
    pub fn to_text(&self) -> Vec<u8> {
        let mut out = Vec::new();
        let mut section = |head: String, body: &[u8]| {
            if !out.is_empty() {
                out.push(b'\n');
            }
            out.extend_from_slice(head.as_bytes());
            out.push(b'\n');
            out.extend_from_slice(body);
        };
        section("== stdin".into(), &self.stdin);
        for f in &self.files {
            section("== file".into(), f);
        }
        for p in &self.pages {
            section(format!("== page {}", p.status), &p.body);
        }
        for t in &self.tools {
            section("== tool".into(), t.as_bytes());
        }
        out
    }

    /// Read [`HostAnswers::to_text`]'s form back; an unknown section is
    /// skipped, a page without a readable status is a 200.
    pub fn from_text(data: &[u8]) -> HostAnswers {
        let mut a = HostAnswers::default();
        let mut rest = data.strip_prefix(b"== ").unwrap_or(data);
        loop {
            let (section, next) = match memchr::memmem::find(rest, b"\n== ") {
                Some(i) => (&rest[..i], Some(&rest[i + 4..])),
                None => (rest, None),
            };
            let (head, body) = match section.iter().position(|&b| b == b'\n') {
                Some(i) => (&section[..i], section[i + 1..].to_vec()),
                None => (section, Vec::new()),
            };
            let head = String::from_utf8_lossy(head);
            let mut words = head.split_whitespace();
            match words.next() {
                Some("stdin") => a.stdin = body,
                Some("file") => a.files.push(body),
                Some("page") => a.pages.push(Page {
                    status: words.next().and_then(|s| s.parse().ok()).unwrap_or(200),
                    body,
                }),
                Some("tool") => a.tools.push(String::from_utf8_lossy(&body).into_owned()),
                _ => {}
            }
            match next {
                Some(n) => rest = n,
                None => return a,
            }
        }
    }
}

/// One fetch's answer.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, arbitrary::Arbitrary)]
pub struct Page {
    /// The HTTP status.
    pub status: u16,
    /// The body.
    #[serde(with = "bytes")]
    pub body: Vec<u8>,
}

/// Bytes as [`Content`] in JSON: text when they are UTF-8.
mod bytes {
    use crate::capability::Content;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub(super) fn serialize<S: Serializer>(v: &[u8], s: S) -> Result<S::Ok, S::Error> {
        Content(v.to_vec()).serialize(s)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        Content::deserialize(d).map(|c| c.0)
    }
}

/// A list of byte strings, each as [`Content`].
mod bytes_list {
    use crate::capability::Content;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub(super) fn serialize<S: Serializer>(v: &[Vec<u8>], s: S) -> Result<S::Ok, S::Error> {
        let list: Vec<Content> = v.iter().map(|b| Content(b.clone())).collect();
        list.serialize(s)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Vec<u8>>, D::Error> {
        Vec::<Content>::deserialize(d).map(|l| l.into_iter().map(|c| c.0).collect())
    }
}

/// A component, its grant and its inputs (from a recording), ready to be
/// run again and again with other host answers.
pub struct AgentFuzzer {
    host: WasmHost,
    agent: PreparedAgent,
    base: Recording,
}

/// One fuzzed run: what the guest was given and what it did.
#[derive(Clone, Debug)]
pub struct FuzzRun {
    /// The host answers it ran with.
    pub answers: HostAnswers,
    /// The run report.
    pub report: RunReport,
    /// Every decision, in order.
    pub audit: Vec<AuditEvent>,
    /// What the guest wrote to stdout.
    pub stdout: Vec<u8>,
    /// What the guest wrote to stderr.
    pub stderr: Vec<u8>,
    /// The trap message, when it trapped.
    pub trap: Option<String>,
}

impl AgentFuzzer {
    /// Compile `component` once, to run it under `recording`'s grant,
    /// arguments and seed, on the engine `run` would pick (no fuel
    /// instrumentation for a wall-only grant).
    pub fn new(component: &std::path::Path, recording: Recording) -> Result<Self, Error> {
        let metered = Replay::new(recording.clone())?.caps().budget().meter_fuel;
        let host = if metered {
            WasmHost::new()
        } else {
            WasmHost::new_unmetered()
        }
        .map_err(|e| Error::Setup(e.to_string()))?;
        Self::with_host(host, component, recording)
    }

    /// [`AgentFuzzer::new`] on a host of the caller's (one with an
    /// artifact cache, say: the Python runner compiles once).
    pub fn with_host(
        host: WasmHost,
        component: &std::path::Path,
        recording: Recording,
    ) -> Result<Self, Error> {
        let loaded = host
            .load(component)
            .map_err(|e| Error::Setup(e.to_string()))?;
        let agent = host
            .prepare(&loaded)
            .map_err(|e| Error::Setup(e.to_string()))?;
        Ok(AgentFuzzer {
            host,
            agent,
            base: recording,
        })
    }

    /// The recording's own answers: the natural first corpus entry.
    pub fn seed_answers(&self) -> HostAnswers {
        HostAnswers::from_recording(&self.base)
    }

    /// A fuzzer's input as host answers for this agent: sectioned text or
    /// JSON as [`HostAnswers::from_fuzz_input`] reads them; any other bytes
    /// are the recording's first answer (its first page, else its first
    /// tool output, else its first file, else stdin), the rest as
    /// recorded. So when a fuzzer shrinks an input to a few bytes, its
    /// mutations still land in the text the agent reads.
    pub fn answers(&self, data: &[u8]) -> HostAnswers {
        if data.starts_with(b"== ") || serde_json::from_slice::<HostAnswers>(data).is_ok() {
            return HostAnswers::from_fuzz_input(data);
        }
        let mut a = self.seed_answers();
        if let Some(p) = a.pages.first_mut() {
            p.body = data.to_vec();
        } else if let Some(t) = a.tools.first_mut() {
            *t = String::from_utf8_lossy(data).into_owned();
        } else if let Some(f) = a.files.first_mut() {
            *f = data.to_vec();
        } else {
            a.stdin = data.to_vec();
        }
        a
    }

    /// Run the guest once with `answers`. Nothing real is touched.
    pub fn run(&self, answers: &HostAnswers) -> Result<FuzzRun, Error> {
        let mut rec = self.base.clone();
        rec.stdin = Content(answers.stdin.clone());
        let mut next = answers.files.iter();
        for f in rec.files.iter_mut().filter(|f| f.kind == "file") {
            let Some(content) = next.next() else { break };
            let key = crate::replay::sha256_hex(content);
            rec.blobs.insert(key.clone(), Content(content.clone()));
            f.size = content.len() as u64;
            f.blob = Some(key);
        }
        let replay = Replay::new(rec)?;
        let r = replay.recording();
        let caps = replay.caps().clone();
        let script = Script {
            pages: answers
                .pages
                .iter()
                .map(|p| (p.status, p.body.clone()))
                .collect(),
            tools: answers.tools.iter().cloned().collect(),
        };
        let opts = RunOptions::new(caps.clone())
            .program_name(r.program_name.clone())
            .args(r.args.clone())
            .stdin(answers.stdin.clone())
            .deterministic(r.seed)
            .services(Services::new().tools(ToolRegistry::stand_ins(
                caps.tools(),
                "not run while fuzzing",
            )))
            .tape(TapeSpec::Script(script));
        let run = self
            .host
            .run_prepared(&self.agent, opts)
            .map_err(|e| Error::Setup(e.to_string()))?;
        Ok(FuzzRun {
            answers: answers.clone(),
            report: run.report,
            audit: run.audit,
            stdout: run.stdout,
            stderr: run.stderr,
            trap: run.trap,
        })
    }
}
