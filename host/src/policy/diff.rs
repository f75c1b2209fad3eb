//! What one grant allows that another does not.

use crate::caps::Capabilities;
use serde::Serialize;
use std::collections::BTreeSet;

/// A budget that differs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct BudgetChange {
    /// The caps-file key (`max_ops`, ...).
    pub key: &'static str,
    /// Its value in the first grant.
    pub a: String,
    /// Its value in the second.
    pub b: String,
}

/// The outcome of [`diff`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct GrantDiff {
    /// What `a` allows and `b` does not, in words.
    pub only_a: Vec<String>,
    /// What `b` allows and `a` does not.
    pub only_b: Vec<String>,
    /// Budgets that differ.
    pub budgets: Vec<BudgetChange>,
}

impl GrantDiff {
    /// Whether the two grants are the same.
    pub fn is_empty(&self) -> bool {
        self.only_a.is_empty() && self.only_b.is_empty() && self.budgets.is_empty()
    }
}

/// Every grant item of `caps`, in words (mounts, egress, tools, env,
/// secrets by name).
fn items(caps: &Capabilities) -> BTreeSet<String> {
    let mut s = BTreeSet::new();
    for m in caps.mounts() {
        s.insert(m.rule());
        // Either kind lets the guest read there: a read mount in one and a
        // write mount in the other differ only in writing.
        s.insert(format!(
            "read access at {} (host {})",
            m.guest,
            m.host.display()
        ));
    }
    let e = caps.egress();
    if e.allows_all() {
        s.insert("egress to any http(s) URL (dangerous_allow_all)".into());
    }
    for r in e.rules() {
        s.insert(format!("egress rule {}", r.as_str()));
    }
    if e.max_redirects() > 0 {
        s.insert(format!("following up to {} redirects", e.max_redirects()));
    }
    for t in caps.tools() {
        s.insert(format!("tool {t}"));
    }
    // What may be approved at run time widens what a run may reach.
    let ask = caps.ask();
    for r in ask.net() {
        s.insert(format!(
            "egress rule {} if approved at run time ([ask])",
            r.as_str()
        ));
    }
    for t in ask.tools() {
        s.insert(format!("tool {t} if approved at run time ([ask])"));
    }
    for (t, c) in caps.tool_commands() {
        s.insert(format!("tool {t} runs {:?}", c.argv));
    }
    if let Some(kv) = caps.kv() {
        s.insert(format!(
            "a key-value store of {} keys and {} bytes",
            kv.max_keys, kv.max_bytes
        ));
    }
    for (k, v) in caps.env() {
        s.insert(format!("env {k}={v}"));
    }
    for (label, sinks) in caps.flow().allowed() {
        for sink in sinks {
            s.insert(format!("data labelled {label} may reach {sink}"));
        }
    }
    for sec in caps.secrets() {
        let hosts: Vec<&str> = sec.hosts().iter().map(|h| h.as_str()).collect();
        s.insert(format!(
            "secret {} to {} in {}",
            sec.name(),
            hosts.join(", "),
            sec.headers().join(", ")
        ));
    }
    s
}

/// A source `other` labels and `caps` does not (or labels otherwise):
/// `caps` lets what is read from it go where `other` does not.
fn unlabelled(caps: &Capabilities, other: &Capabilities, into: &mut BTreeSet<String>) {
    let mine = caps.flow().sources();
    for (source, label) in other.flow().sources() {
        match mine.get(source) {
            None => into.insert(format!("data read from {source} unlabelled (not {label})")),
            Some(l) if l != label => {
                into.insert(format!("data read from {source} labelled {l}, not {label}"))
            }
            Some(_) => false,
        };
    }
}

/// What `a` allows that `b` does not and back, and the budgets that
/// differ.
pub fn diff(a: &Capabilities, b: &Capabilities) -> GrantDiff {
    let (mut ia, mut ib) = (items(a), items(b));
    unlabelled(a, b, &mut ia);
    unlabelled(b, a, &mut ib);
    let (ba, bb) = (a.budget(), b.budget());
    let fuel = |x: &crate::Budget| {
        if x.meter_fuel {
            x.max_fuel.to_string()
        } else {
            "off".to_string()
        }
    };
    let pairs: [(&'static str, String, String); 8] = [
        ("max_ops", ba.max_ops.to_string(), bb.max_ops.to_string()),
        (
            "max_output_bytes",
            ba.max_output_bytes.to_string(),
            bb.max_output_bytes.to_string(),
        ),
        (
            "max_wall_ms",
            ba.max_wall.as_millis().to_string(),
            bb.max_wall.as_millis().to_string(),
        ),
        ("max_fuel", fuel(ba), fuel(bb)),
        (
            "max_memory_bytes",
            ba.max_memory_bytes.to_string(),
            bb.max_memory_bytes.to_string(),
        ),
        (
            "max_write_bytes",
            ba.max_write_bytes.to_string(),
            bb.max_write_bytes.to_string(),
        ),
        (
            "max_files",
            ba.max_files.to_string(),
            bb.max_files.to_string(),
        ),
        (
            "max_sent_bytes",
            ba.max_sent_bytes.to_string(),
            bb.max_sent_bytes.to_string(),
        ),
    ];
    GrantDiff {
        only_a: ia.difference(&ib).cloned().collect(),
        only_b: ib.difference(&ia).cloned().collect(),
        budgets: pairs
            .into_iter()
            .filter(|(_, x, y)| x != y)
            .map(|(key, a, b)| BudgetChange { key, a, b })
            .collect(),
    }
}
