//! A run's high-water mark, shared by the gate and by the streams that write
//! without passing the gate call by call (a guest's stdout and stderr, its
//! file output streams). The gate raises it and checks ops against it; a
//! stream checks each write and leaves its refusal here, once per sink, for
//! the gate to record.

use super::evidence::Prints;
use super::{FlowPolicy, HeldLabel, Mark, Sink, Source, refusal};
use crate::violation::Denial;
use std::collections::BTreeSet;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

/// A write a stream refused, not yet in the audit.
pub(crate) struct StreamRefusal {
    /// The audit's op name: `stdout`, `stderr`, `fs_write`.
    pub(crate) kind: &'static str,
    pub(crate) target: String,
    pub(crate) denial: Denial,
}

/// The mark of one run (or one MCP session's runs) under one policy.
#[derive(Default)]
pub(crate) struct FlowState {
    policy: FlowPolicy,
    mark: Mutex<Mark>,
    /// Whether the mark holds anything: the streams' fast path reads only
    /// this while the run has read nothing labelled.
    marked: AtomicBool,
    pending: Mutex<Vec<StreamRefusal>>,
    /// Streams (by op name) and sinks whose refusal is already recorded:
    /// one record for each, so a guest printing in a loop is refused every
    /// time and recorded once.
    told: Mutex<BTreeSet<(&'static str, Sink)>>,
    /// Fingerprints of labelled bytes, when the policy asks for evidence.
    prints: Mutex<Prints>,
}

impl FlowState {
    /// The mark `start` (empty for a fresh run) under `policy`.
    pub(crate) fn new(policy: FlowPolicy, start: Mark) -> Self {
        let marked = AtomicBool::new(!start.is_empty());
        FlowState {
            policy,
            mark: Mutex::new(start),
            marked,
            ..FlowState::default()
        }
    }

    /// Whether the grant labels anything.
    pub(crate) fn tracks(&self) -> bool {
        !self.policy.is_empty()
    }

    pub(crate) fn policy(&self) -> &FlowPolicy {
        &self.policy
    }

    /// The mark so far.
    pub(crate) fn mark(&self) -> Mark {
        self.mark.lock().map(|m| m.clone()).unwrap_or_default()
    }

    /// Whether `incoming` (labels an op is about to bring in, with what
    /// brings them) and, `with_mark`, the data the run holds may reach
    /// `sink`.
    pub(crate) fn check(
        &self,
        sink: &Sink,
        incoming: &[(String, String)],
        with_mark: bool,
    ) -> Result<(), Denial> {
        if with_mark && self.marked.load(Ordering::Acquire) {
            let Ok(mark) = self.mark.lock() else {
                return Err(Denial::new(
                    crate::Violation::FlowDenied,
                    "the run's label mark is unreadable; nothing is sent",
                ));
            };
            if let Some(h) = self.policy.refusing(&mark, sink) {
                return Err(refusal(&self.policy, h, sink));
            }
        }
        for (label, from) in incoming {
            if !self.policy.may_reach(label, sink) {
                let h = HeldLabel {
                    label: label.clone(),
                    from: from.clone(),
                };
                return Err(refusal(&self.policy, &h, sink));
            }
        }
        Ok(())
    }

    /// The check of a redirect hop allowed by egress rule `rule`: a sink
    /// of its own, and, when the response goes back to the caller (a
    /// plan), a source whose label must be able to reach `stdout`.
    pub(crate) fn hop(&self, rule: &str, results_to_caller: bool) -> Result<(), Denial> {
        if !self.tracks() {
            return Ok(());
        }
        self.check(&Sink::Egress(rule.to_string()), &[], true)?;
        if results_to_caller
            && let Some(l) = self.policy.label_of(&Source::Egress(rule.to_string()))
        {
            let from = format!("a redirect to a URL of {rule}");
            self.check(&Sink::Stdout, &[(l.to_string(), from)], false)?;
        }
        Ok(())
    }

    /// Add `label`, brought in by `from`, to the mark.
    pub(crate) fn raise(&self, label: &str, from: String) {
        if let Ok(mut m) = self.mark.lock() {
            m.join(label, from);
            self.marked.store(true, Ordering::Release);
        }
    }

    /// A stream's write to `sink`: `Err` when the mark refuses it, the
    /// refusal left for the gate to record (the first time for this sink).
    #[cfg_attr(not(feature = "wasm"), allow(dead_code))]
    pub(crate) fn stream_write(
        &self,
        sink: &Sink,
        kind: &'static str,
        target: &str,
    ) -> Result<(), Denial> {
        let Err(denial) = self.check(sink, &[], true) else {
            return Ok(());
        };
        let first = self
            .told
            .lock()
            .map(|mut t| t.insert((kind, sink.clone())))
            .unwrap_or(false);
        if first && let Ok(mut p) = self.pending.lock() {
            p.push(StreamRefusal {
                kind,
                target: target.to_string(),
                denial: denial.clone(),
            });
        }
        Err(denial)
    }

    /// Fingerprint `bytes`, read with `label` (when the policy asks for
    /// evidence).
    pub(crate) fn fingerprint(&self, label: &str, bytes: &[u8]) {
        if self.policy.evidence()
            && let Ok(mut p) = self.prints.lock()
        {
            p.add(label, bytes);
        }
    }

    /// The evidence that `parts` (what an op sends) carry labelled bytes:
    /// `customer (base64)`, and whether the fingerprints cover only part
    /// of what was read.
    pub(crate) fn evidence_in(&self, parts: &[&[u8]]) -> Option<String> {
        if !self.policy.evidence() || !self.marked.load(Ordering::Acquire) {
            return None;
        }
        let p = self.prints.lock().ok()?;
        let (label, form) = parts.iter().find_map(|b| p.find(b))?;
        Some(format!("{label} ({form})"))
    }

    /// The stream refusals not yet recorded.
    pub(crate) fn take_pending(&self) -> Vec<StreamRefusal> {
        self.pending
            .lock()
            .map(|mut p| std::mem::take(&mut *p))
            .unwrap_or_default()
    }
}
