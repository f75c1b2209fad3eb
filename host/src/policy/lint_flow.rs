//! Risky flow rules (`[flow]`): where labelled data leaves the tracking, or
//! reaches more than one named place.

use super::lint::{Finding, finding};
use crate::caps::Capabilities;
use crate::flow::Sink;
use crate::fs::Access;
use crate::net::{HostPattern, PortPattern};

/// What in `caps`'s flow rules is risky.
pub(super) fn lint_flow(caps: &Capabilities) -> Vec<Finding> {
    let mut out = Vec::new();
    let flow = caps.flow();
    if flow.is_empty() {
        return out;
    }
    let labelled = |guest: &str| {
        flow.sources()
            .keys()
            .any(|s| matches!(s, crate::flow::Source::Mount(g) if g == guest))
    };
    let sends = !caps.egress().rules().is_empty() || !caps.tools().is_empty();
    for m in caps.mounts() {
        let guest = m.guest.as_str();
        if m.access == Access::ReadOnly && sends && !labelled(guest) {
            out.push(finding(
                format!("read mount {guest} has no label"),
                "the grant labels other sources, but what is read from this one carries no label: it may go to every egress rule and tool",
                format!("label it ({{ ..., guest = \"{guest}\", label = \"...\" }}) with a [flow.allow] rule, if its data is not public"),
            ));
        }
    }
    for (label, sinks) in flow.allowed() {
        for sink in sinks {
            match sink {
                Sink::Mount(g) if !labelled(g) => out.push(finding(
                    format!("flow.allow.{label} reaches write mount {g}"),
                    "data carrying the label written there leaves the tracking: a later run (or anything else) reads it back unlabelled",
                    format!("label the mount too (label = \"{label}\"), or keep {g} out of the rule"),
                )),
                Sink::Kv => out.push(finding(
                    format!("flow.allow.{label} reaches kv"),
                    "data carrying the label put in the key-value store is read back unlabelled by whatever shares the store",
                    "keep kv out of the rule, unless every reader of the store may see the data".into(),
                )),
                Sink::Egress(rule) => {
                    let wide = caps.egress().rules().iter().find(|r| r.as_str() == rule).is_some_and(|r| {
                        r.port() == PortPattern::Any
                            || !matches!(r.host(), HostPattern::Name(_) | HostPattern::Ip(_))
                    });
                    if wide {
                        out.push(finding(
                            format!("flow.allow.{label} reaches egress rule {rule}"),
                            "the rule covers many hosts or ports: the label may go to any of them",
                            "an egress rule for the one origin the label's data is for".into(),
                        ));
                    }
                }
                _ => {}
            }
        }
    }
    out
}
