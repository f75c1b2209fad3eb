//! The flow rules of a drafted grant: the labels a recorded run's ops
//! brought in (its audit's `labels`), put on the drafted grant's sources,
//! and each label allowed to reach what the run sent to while holding it.

use crate::capability::OpKind;
use crate::caps::CapabilitiesBuilder;
use crate::report::AuditEvent;
use std::collections::{BTreeMap, BTreeSet};

/// The drafted grant's mounts (guest paths) and how a fetch's URL names
/// its drafted egress rule.
pub(super) struct Drafted<'a> {
    pub(super) mounts: Vec<&'a str>,
    pub(super) origin: &'a dyn Fn(&str) -> Option<String>,
}

impl Drafted<'_> {
    /// The drafted mount a guest path lies in (the deepest).
    fn mount(&self, path: &str) -> Option<String> {
        self.mounts
            .iter()
            .filter(|m| {
                **m == "/"
                    || path == **m
                    || path.strip_prefix(**m).is_some_and(|r| r.starts_with('/'))
            })
            .max_by_key(|m| m.len())
            .map(|m| m.to_string())
    }

    /// What `e` reads from or sends to, as the drafted grant names it.
    fn place(&self, e: &AuditEvent, kind: OpKind) -> Option<String> {
        match kind.capability() {
            "fs" => self.mount(&e.target),
            "net" if kind == OpKind::NetConnect => Some(format!("tcp://{}", e.target)),
            "net" if kind == OpKind::NetDatagram => Some(format!("udp://{}", e.target)),
            "net" if kind == OpKind::NetFetch => (self.origin)(&e.target),
            "net" => None,
            "tools" => Some(format!("tool:{}", e.target)),
            _ => Some("kv".into()),
        }
    }
}

/// Label the drafted grant's sources as the run found them, and let each
/// label reach what `passed` ops sent to while the run held it (and
/// stdout: a run's output is not in its audit). Labels of secrets are left
/// out (a drafted grant holds no secrets).
pub(super) fn learn_flow(
    mut b: CapabilitiesBuilder,
    audit: &[AuditEvent],
    passed: impl Fn(&AuditEvent) -> bool,
    drafted: &Drafted<'_>,
) -> CapabilitiesBuilder {
    let mut held: BTreeSet<&str> = BTreeSet::new();
    let mut reach: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
    let mut sources: BTreeMap<String, &str> = BTreeMap::new();
    for e in audit.iter().filter(|e| passed(e)) {
        let Some(kind) = e.op.kind() else {
            continue;
        };
        let sends = kind.writes()
            || matches!(
                kind,
                OpKind::NetFetch | OpKind::NetConnect | OpKind::NetDatagram | OpKind::ToolCall
            );
        if sends && let Some(sink) = drafted.place(e, kind) {
            for l in &held {
                reach.entry(l).or_default().insert(sink.clone());
            }
        }
        for l in e.labels.iter().filter(|l| !l.starts_with("secret:")) {
            held.insert(l);
            reach.entry(l).or_default();
            if let Some(src) = drafted.place(e, kind) {
                sources.entry(src).or_insert(l);
            }
        }
    }
    let labelled: BTreeSet<&str> = sources.values().copied().collect();
    for (label, sinks) in reach {
        if !labelled.contains(label) {
            continue;
        }
        let mut sinks: Vec<String> = sinks.into_iter().collect();
        sinks.insert(0, "stdout".into());
        b = b.flow(label, sinks);
    }
    for (src, label) in sources {
        b = b.label(src, label);
    }
    b
}
