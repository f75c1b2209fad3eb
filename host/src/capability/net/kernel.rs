//! The network capability's kernel rules: TCP `connect` only to the ports
//! the egress rules name (any port when a rule or allow-all says so), and
//! the resolver's configuration readable when a rule names a host by name.

use super::{Egress, HostPattern, PortPattern};
use crate::confine::Policy;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The resolver's configuration, read by `getaddrinfo` when a rule names a
/// host by name.
const RESOLVER_FILES: [&str; 5] = [
    "/etc/resolv.conf",
    "/etc/hosts",
    "/etc/nsswitch.conf",
    "/etc/host.conf",
    "/etc/gai.conf",
];

/// Set `policy`'s TCP ports and resolver files for `egress`.
pub(crate) fn kernel_rules(egress: &Egress, policy: &mut Policy) {
    let mut ports = BTreeSet::new();
    let mut any_port = None;
    let mut names = false;
    if egress.allows_all() {
        any_port = Some("net.dangerous_allow_all allows any port".to_string());
    }
    for rule in egress.rules() {
        match rule.port() {
            PortPattern::Port(p) => {
                ports.insert(p);
            }
            PortPattern::Any => {
                any_port = Some(format!("rule {} allows any port", rule.as_str()));
            }
        }
        names |= matches!(
            rule.host(),
            HostPattern::Name(_) | HostPattern::Subdomains(_)
        );
    }
    if names || egress.allows_all() {
        for f in RESOLVER_FILES {
            if Path::new(f).exists() {
                policy.runtime_read.push((
                    PathBuf::from(f),
                    "name lookups for egress rules that name hosts".to_string(),
                ));
            }
        }
    }
    policy.tcp_connect = if any_port.is_some() {
        None
    } else {
        Some(ports)
    };
    policy.tcp_note = any_port;
}
