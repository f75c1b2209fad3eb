//! What the network capability needs from the kernel wall: TCP `connect` only to the ports
//! the egress rules name and `bind` only to the ports the listen rules name
//! (any port when a rule or allow-all says so), and the resolver's
//! configuration readable when a rule names a host by name.

use super::{Egress, HostPattern, PortPattern};
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

/// What a confined run of `egress` needs from the kernel.
pub(crate) struct KernelNeeds {
    /// TCP ports `connect` may reach; `None` leaves TCP unrestricted.
    pub(crate) tcp_connect: Option<BTreeSet<u16>>,
    /// TCP ports `bind` may take (0: an ephemeral one), when TCP is
    /// restricted.
    pub(crate) tcp_bind: BTreeSet<u16>,
    /// Why TCP is unrestricted, when it is.
    pub(crate) tcp_note: Option<String>,
    /// Files the resolver reads, each with why.
    pub(crate) runtime_read: Vec<(PathBuf, String)>,
}

/// The TCP ports and resolver files a confined run of `egress` needs.
pub(crate) fn kernel_needs(egress: &Egress) -> KernelNeeds {
    let mut runtime_read = Vec::new();
    let mut ports = BTreeSet::new();
    let mut binds = BTreeSet::new();
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
    for rule in egress.listen() {
        match rule.port() {
            Some(p) => {
                binds.insert(p);
            }
            None => any_port = Some(format!("listen rule {} allows any port", rule.as_str())),
        }
    }
    if names || egress.allows_all() {
        for f in RESOLVER_FILES {
            if Path::new(f).exists() {
                runtime_read.push((
                    PathBuf::from(f),
                    "name lookups for egress rules that name hosts".to_string(),
                ));
            }
        }
    }
    KernelNeeds {
        tcp_connect: if any_port.is_some() {
            None
        } else {
            Some(ports)
        },
        tcp_bind: binds,
        tcp_note: any_port,
        runtime_read,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::{EgressRule, ListenRule};

    fn needs(rules: &[&str], listen: &[&str]) -> KernelNeeds {
        kernel_needs(&Egress {
            rules: rules
                .iter()
                .map(|r| EgressRule::parse(r).unwrap())
                .collect(),
            listen: listen
                .iter()
                .map(|l| ListenRule::parse(l).unwrap())
                .collect(),
            ..Egress::default()
        })
    }

    #[test]
    fn binds_take_the_listen_rules_ports_and_a_star_leaves_tcp_open() {
        let n = needs(&["tcp://10.0.0.1:5432"], &["127.0.0.1:8080", "[::1]:0"]);
        assert_eq!(n.tcp_connect, Some(BTreeSet::from([5432])));
        assert_eq!(n.tcp_bind, BTreeSet::from([0, 8080]));
        let n = needs(&[], &["127.0.0.1:*"]);
        assert_eq!(n.tcp_connect, None);
        assert!(n.tcp_note.unwrap().contains("listen rule 127.0.0.1:*"));
        let n = needs(&["https://x.test"], &[]);
        assert_eq!(n.tcp_connect, Some(BTreeSet::from([443])));
        assert!(n.tcp_bind.is_empty());
    }
}
