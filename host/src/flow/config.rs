//! The `[flow]` section of a caps file, the flow rules as requested, and
//! their validation against the rest of the grant.
//!
//! ```toml
//! [fs]
//! read = [{ host = "data", guest = "/data", label = "customer" }]
//!
//! [flow.allow]           # where data carrying each label may go
//! customer = ["stdout", "/work/out", "https://crm.internal"]
//!
//! [flow.label]           # labels on sources other than mounts
//! "https://crm.internal" = "crm"   # responses through this egress rule
//! "tool:lookup" = "customer"       # this tool's results
//! ```

use super::{FlowPolicy, Sink, Source};
use crate::error::CapsError;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// `[flow]`: rules on sinks, labels on sources.
#[derive(Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub(crate) struct FlowSection {
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    allow: BTreeMap<String, Vec<String>>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    label: BTreeMap<String, String>,
    /// Fingerprint labelled bytes; note matches in what a run sends.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    evidence: bool,
}

impl FlowSection {
    pub(crate) fn is_empty(&self) -> bool {
        self.allow.is_empty() && self.label.is_empty() && !self.evidence
    }

    /// Request this section's rules.
    pub(crate) fn apply(self, to: &mut RequestedFlow) {
        for (label, sinks) in self.allow {
            to.allow(label, sinks);
        }
        for (source, label) in self.label {
            let key = format!("flow.label.{source:?}");
            to.label(source, label, &key);
        }
        to.evidence |= self.evidence;
    }

    /// The section that holds `policy`.
    pub(crate) fn render(policy: &FlowPolicy) -> FlowSection {
        FlowSection {
            allow: policy
                .allow
                .iter()
                .map(|(l, s)| (l.clone(), s.iter().map(ToString::to_string).collect()))
                .collect(),
            label: policy
                .sources
                .iter()
                .map(|(s, l)| (s.to_string(), l.clone()))
                .collect(),
            evidence: policy.evidence,
        }
    }
}

/// The flow rules as the builder was given them, before validation.
#[derive(Clone, Debug, Default)]
pub(crate) struct RequestedFlow {
    allow: Vec<(String, Vec<String>)>,
    /// Source, label, and the caps-file key that gave it (for errors).
    labels: Vec<(String, String, String)>,
    pub(crate) evidence: bool,
}

/// What the rest of the grant holds, which the flow rules must name (in
/// plain terms: the capabilities' types stay theirs).
pub(crate) struct Named<'a> {
    pub(crate) mounts: Vec<NamedMount<'a>>,
    /// Egress rules as written, and those a run may be approved for
    /// (`[ask] net`).
    pub(crate) rules: Vec<&'a str>,
    /// Tools allowed, or that a run may ask for.
    pub(crate) tools: BTreeSet<&'a str>,
    pub(crate) secrets: Vec<&'a str>,
    pub(crate) kv: bool,
}

/// A mount as the flow rules see it.
pub(crate) struct NamedMount<'a> {
    pub(crate) guest: &'a str,
    pub(crate) writable: bool,
    /// Private to the run: never a sink.
    pub(crate) private: bool,
}

const LABEL_FORM: &str = "1 to 64 characters from a-z 0-9 _ - . (or secret:NAME in flow.allow)";
const SINK_FORM: &str = "\"stdout\", \"kv\", a write mount's guest path, \"tool:NAME\" of an allowed tool, or an egress rule as written in [net] allow";
const SOURCE_FORM: &str =
    "a mount's guest path, an egress rule as written in [net] allow, or \"tool:NAME\"";

fn valid_label(l: &str) -> bool {
    (1..=64).contains(&l.len())
        && l.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"_-.".contains(&b))
}

impl RequestedFlow {
    /// Data carrying `label` may reach `sinks`.
    pub(crate) fn allow(&mut self, label: String, sinks: Vec<String>) {
        self.allow.push((label, sinks));
    }

    /// Put `label` on `source`; `key` names where it was given.
    pub(crate) fn label(&mut self, source: String, label: String, key: &str) {
        self.labels.push((source, label, key.to_string()));
    }

    /// Validate the rules against what the grant holds. A label on a
    /// source needs a rule (a typo would otherwise leave data unlabelled,
    /// or labelled and stuck); every sink and source must name something
    /// the grant holds.
    pub(crate) fn build(
        &self,
        named: &Named<'_>,
        warnings: &mut Vec<String>,
    ) -> Result<FlowPolicy, CapsError> {
        let mut policy = FlowPolicy {
            evidence: self.evidence,
            ..FlowPolicy::default()
        };
        for (label, sinks) in &self.allow {
            let key = format!("flow.allow.{label}");
            let secret = label.strip_prefix("secret:");
            match secret {
                Some(name) if !named.secrets.contains(&name) => {
                    return Err(CapsError::invalid(
                        key,
                        format!("no secret is named {name:?}"),
                        "secret:NAME of a secret the grant declares",
                    ));
                }
                Some(_) => {}
                None if !valid_label(label) => {
                    return Err(CapsError::invalid(key, format!("{label:?}"), LABEL_FORM));
                }
                None => {}
            }
            let mut set = BTreeSet::new();
            for (i, text) in sinks.iter().enumerate() {
                set.insert(sink(named, text, &format!("{key}[{i}]"))?);
            }
            policy.allow.entry(label.clone()).or_default().extend(set);
        }
        for (source, label, key) in &self.labels {
            let key = key.clone();
            if !valid_label(label) {
                return Err(CapsError::invalid(key, format!("{label:?}"), LABEL_FORM));
            }
            if !policy.allow.contains_key(label) {
                return Err(CapsError::invalid(
                    key,
                    format!("label {label:?} has no rule in [flow.allow]"),
                    format!(
                        "a [flow.allow] entry: {label} = [where its data may go] ([] for nowhere)"
                    ),
                ));
            }
            let src = self::source(named, source, &key)?;
            if let Source::Mount(guest) = &src {
                // Data may go back where it came from.
                if let Some(set) = policy.allow.get_mut(label)
                    && named
                        .mounts
                        .iter()
                        .any(|m| m.guest == guest && m.writable && !m.private)
                {
                    set.insert(Sink::Mount(guest.clone()));
                }
            }
            if let Some(other) = policy.sources.insert(src, label.clone())
                && other != *label
            {
                return Err(CapsError::invalid(
                    key,
                    format!("{source} is labelled both {other:?} and {label:?}"),
                    "one label per source",
                ));
            }
        }
        let used: BTreeSet<&String> = policy.sources.values().collect();
        for label in policy.allow.keys() {
            if !label.starts_with("secret:") && !used.contains(label) {
                warnings.push(format!(
                    "flow.allow.{label}: no source carries label {label}, so the rule decides nothing"
                ));
            }
        }
        Ok(policy)
    }
}

/// The sink a `[flow.allow]` entry names, or the error saying why it names
/// nothing the grant holds.
fn sink(named: &Named<'_>, text: &str, key: &str) -> Result<Sink, CapsError> {
    let s = Sink::parse(text);
    let ok = match &s {
        Sink::Stdout => true,
        Sink::Kv => named.kv,
        Sink::Mount(g) => {
            let m = named.mounts.iter().find(|m| m.guest == g);
            if m.is_some_and(|m| !m.writable) {
                return Err(CapsError::invalid(
                    key,
                    format!("{g} is a read-only mount: nothing is sent there"),
                    SINK_FORM,
                ));
            }
            m.is_some()
        }
        Sink::Tool(t) => named.tools.contains(t.as_str()),
        Sink::Egress(rule) => is_rule(named, rule),
    };
    if ok {
        Ok(s)
    } else {
        Err(CapsError::invalid(
            key,
            format!("{text:?} names nothing the grant holds"),
            SINK_FORM,
        ))
    }
}

fn is_rule(named: &Named<'_>, rule: &str) -> bool {
    named.rules.contains(&rule)
}

fn source(named: &Named<'_>, text: &str, key: &str) -> Result<Source, CapsError> {
    let src = if text.starts_with('/') {
        named
            .mounts
            .iter()
            .any(|m| m.guest == text)
            .then(|| Source::Mount(text.to_string()))
    } else if let Some(t) = text.strip_prefix("tool:") {
        named.tools.contains(t).then(|| Source::Tool(t.to_string()))
    } else {
        is_rule(named, text).then(|| Source::Egress(text.to_string()))
    };
    src.ok_or_else(|| {
        CapsError::invalid(
            key,
            format!("{text:?} names nothing the grant holds"),
            SOURCE_FORM,
        )
    })
}
