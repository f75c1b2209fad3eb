//! Where data may flow: labels on what a run reads, rules on where it may
//! send.
//!
//! A grant may put a *label* on a source (a mount, an egress rule's
//! responses, a tool's results, a secret's responses) and say, per label,
//! which *sinks* may receive data carrying it (`[flow.allow]`): write
//! mounts, egress rules, tools, the key-value store, and the run's own
//! output (`stdout`). The gate keeps a run-level high-water mark, the set
//! of labels the run has read so far ([`Mark`]); an op that would send to a
//! sink some label of the mark does not accept is refused `flow_denied`
//! before anything leaves.
//!
//! The lattice: a label stands for the set of sinks that may read data
//! carrying it ([`Readers`]); unlabelled data is public (every sink may read
//! it); the join of two labels is the intersection of their readers. A mark
//! only grows, so what a run may send only shrinks. The tracking is per
//! run, not per byte: once a labelled file is read, everything the run
//! sends afterwards is treated as carrying the label, whatever it is.
//!
//! This module holds the lattice and the policy (pure); `config.rs` reads
//! `[flow]`; `state.rs` is a run's mark, shared with the streams the gate
//! does not see call by call (stdout, file output streams).

pub(crate) mod config;
pub(crate) mod evidence;
pub(crate) mod state;

pub(crate) use state::FlowState;

use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

/// Somewhere data leaves a run through.
///
/// In a caps file: `"stdout"`, `"kv"`, a write mount's guest path
/// (`"/work/out"`), `"tool:NAME"`, or an egress rule as written in
/// `[net] allow` (`"https://crm.internal"`).
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Sink {
    /// The run's output to its caller: a guest's stdout and stderr, a
    /// plan's op results.
    Stdout,
    /// The run's key-value store (`kv_put`, `kv_delete`).
    Kv,
    /// The write mount at this guest path.
    Mount(String),
    /// Requests allowed by this egress rule (its text as written).
    Egress(String),
    /// Calls of this tool.
    Tool(String),
}

impl Sink {
    /// The sink a caps-file entry names, by its form alone (whether the
    /// grant holds it is the caps check's question).
    pub fn parse(text: &str) -> Sink {
        match text {
            "stdout" => Sink::Stdout,
            "kv" => Sink::Kv,
            t if t.starts_with('/') => Sink::Mount(t.to_string()),
            t => match t.strip_prefix("tool:") {
                Some(name) => Sink::Tool(name.to_string()),
                None => Sink::Egress(t.to_string()),
            },
        }
    }
}

impl fmt::Display for Sink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Sink::Stdout => f.write_str("stdout"),
            Sink::Kv => f.write_str("kv"),
            Sink::Mount(p) | Sink::Egress(p) => f.write_str(p),
            Sink::Tool(t) => write!(f, "tool:{t}"),
        }
    }
}

/// The sinks that may read some data: every sink (public data), or only
/// these.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Readers {
    /// Public: any sink.
    All,
    /// Only these sinks.
    Only(BTreeSet<Sink>),
}

impl Readers {
    /// The readers of data carrying both: the sinks both admit.
    pub fn join(&self, other: &Readers) -> Readers {
        match (self, other) {
            (Readers::All, r) | (r, Readers::All) => r.clone(),
            (Readers::Only(a), Readers::Only(b)) => {
                Readers::Only(a.intersection(b).cloned().collect())
            }
        }
    }

    /// Whether `sink` may read the data.
    pub fn admits(&self, sink: &Sink) -> bool {
        match self {
            Readers::All => true,
            Readers::Only(s) => s.contains(sink),
        }
    }
}

/// A source a label may be put on.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Source {
    /// Everything read through the mount at this guest path.
    Mount(String),
    /// Responses of requests allowed by this egress rule.
    Egress(String),
    /// Results of this tool.
    Tool(String),
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Mount(p) | Source::Egress(p) => f.write_str(p),
            Source::Tool(t) => write!(f, "tool:{t}"),
        }
    }
}

/// The label a secret's responses carry when `[flow.allow]` names it.
pub(crate) fn secret_label(name: &str) -> String {
    format!("secret:{name}")
}

/// One label a run holds, and the op that brought it in.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HeldLabel {
    /// The label.
    pub label: String,
    /// What brought it in: `fs_read /data/customers.csv at op 3`, or
    /// `a previous call` for a mark carried over.
    pub from: String,
}

/// A run's high-water mark: every label it has read so far, in the order
/// they came in. It only grows.
///
/// # Examples
///
/// ```
/// use sbx_wasm::flow::Mark;
///
/// let mut mark = Mark::default();
/// assert!(mark.join("customer", "fs_read /data/c.csv at op 1"));
/// assert!(!mark.join("customer", "fs_read /data/d.csv at op 2"));
/// assert_eq!(mark.labels().next(), Some("customer"));
/// assert_eq!(mark.held()[0].from, "fs_read /data/c.csv at op 1");
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Mark(Vec<HeldLabel>);

impl Mark {
    /// Add `label`, brought in by `from`; `false` when the mark held it
    /// already (the first op that brought it in stays named).
    pub fn join(&mut self, label: &str, from: impl Into<String>) -> bool {
        if self.0.iter().any(|h| h.label == label) {
            return false;
        }
        self.0.push(HeldLabel {
            label: label.to_string(),
            from: from.into(),
        });
        true
    }

    /// Every label of `other` this mark lacks, with where it came from.
    pub fn join_mark(&mut self, other: &Mark) {
        for h in &other.0 {
            self.join(&h.label, h.from.clone());
        }
    }

    /// The labels held, in the order they came in.
    pub fn labels(&self) -> impl Iterator<Item = &str> {
        self.0.iter().map(|h| h.label.as_str())
    }

    /// The labels held with what brought each in.
    pub fn held(&self) -> &[HeldLabel] {
        &self.0
    }

    /// Whether the run has read nothing labelled.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// The grant's flow rules: the label on each source, and the sinks each
/// label may reach. Empty (the default) means nothing is labelled and
/// nothing is tracked.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FlowPolicy {
    allow: BTreeMap<String, BTreeSet<Sink>>,
    sources: BTreeMap<Source, String>,
    /// Fingerprint labelled bytes and note them in what the run sends.
    evidence: bool,
}

impl FlowPolicy {
    /// Whether the grant labels nothing (no op is ever `flow_denied`).
    pub fn is_empty(&self) -> bool {
        self.allow.is_empty()
    }

    /// Whether labelled bytes are fingerprinted and looked for in what a
    /// run sends (`[flow] evidence = true`): noted in the audit, never a
    /// decision.
    pub fn evidence(&self) -> bool {
        self.evidence
    }

    /// The labels with rules, and the sinks each may reach.
    pub fn allowed(&self) -> &BTreeMap<String, BTreeSet<Sink>> {
        &self.allow
    }

    /// The sinks data carrying `label` may reach: those its rule lists; a
    /// label without a rule reaches none.
    pub fn readers(&self, label: &str) -> Readers {
        Readers::Only(self.allow.get(label).cloned().unwrap_or_default())
    }

    /// The readers of a run holding `mark`: the join of its labels'.
    pub fn readers_of(&self, mark: &Mark) -> Readers {
        mark.labels()
            .fold(Readers::All, |r, l| r.join(&self.readers(l)))
    }

    /// The first label of `mark` that may not reach `sink`, if any.
    pub fn refusing<'m>(&self, mark: &'m Mark, sink: &Sink) -> Option<&'m HeldLabel> {
        mark.held().iter().find(|h| !self.may_reach(&h.label, sink))
    }

    /// Whether data carrying `label` may reach `sink` ([`FlowPolicy::readers`]
    /// without building the set: the gate asks this per op).
    pub(crate) fn may_reach(&self, label: &str, sink: &Sink) -> bool {
        self.allow.get(label).is_some_and(|s| s.contains(sink))
    }

    /// Whether `label` names a rule of this policy.
    pub fn knows(&self, label: &str) -> bool {
        self.allow.contains_key(label)
    }

    /// The label on `source`, if any.
    pub(crate) fn label_of(&self, source: &Source) -> Option<&str> {
        self.sources.get(source).map(String::as_str)
    }

    /// Each labelled source and its label.
    pub(crate) fn sources(&self) -> &BTreeMap<Source, String> {
        &self.sources
    }

    /// The label a response carries when its request carried secret
    /// `name`: `secret:NAME`, if the rules name it.
    pub(crate) fn secret(&self, name: &str) -> Option<String> {
        let label = secret_label(name);
        self.knows(&label).then_some(label)
    }
}

/// The refusal of a send to `sink` by `held`, the label that may not go
/// there. Says where the label came from and where it may go; the guest
/// sees only guest paths, rules and tool names.
pub(crate) fn refusal(policy: &FlowPolicy, held: &HeldLabel, sink: &Sink) -> crate::Denial {
    let may: Vec<String> = policy
        .allow
        .get(&held.label)
        .map(|s| s.iter().map(ToString::to_string).collect())
        .unwrap_or_default();
    let may = if may.is_empty() {
        "nowhere".to_string()
    } else {
        may.join(", ")
    };
    crate::Denial::new(
        crate::Violation::FlowDenied,
        format!(
            "the run holds label {}, from {}; it may reach {may}, not {sink}",
            held.label, held.from
        ),
    )
}

#[cfg(test)]
mod tests;
