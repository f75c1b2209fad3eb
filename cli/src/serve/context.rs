//! What makes a process's effects its own beyond its arguments and its
//! environment: who it is (user, groups), the mode its new files get
//! (umask), how large they may be and what else it may spend (resource
//! limits), where it lives (its namespaces and cgroup) and what already
//! confines it (no_new_privs, seccomp). A warm worker takes a run only when
//! all of these are the client's: a client that `unshare -n` cut off from
//! the network, or that set `ulimit -f`, must not get a run that has
//! neither.

use serde::{Deserialize, Serialize};

/// The namespaces compared (`/proc/self/ns/NAME`).
const NAMESPACES: [&str; 7] = ["net", "mnt", "user", "pid", "cgroup", "ipc", "uts"];

/// The lines of `/proc/self/status` compared.
const STATUS: [&str; 6] = ["Uid", "Gid", "Groups", "Umask", "NoNewPrivs", "Seccomp"];

/// One process's context, as text read from `/proc/self` (compared, never
/// interpreted).
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
pub(crate) struct Context {
    /// `(what, value)`, in a fixed order.
    parts: Vec<(String, String)>,
}

impl Context {
    /// This process's.
    pub(crate) fn here() -> Context {
        let mut parts = Vec::new();
        let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
        for key in STATUS {
            let value = status
                .lines()
                .find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))
                .map(|v| v.split_whitespace().collect::<Vec<_>>().join(" "))
                .unwrap_or_default();
            parts.push((key.to_ascii_lowercase(), value));
        }
        parts.push((
            "resource limits".into(),
            std::fs::read_to_string("/proc/self/limits").unwrap_or_default(),
        ));
        for ns in NAMESPACES {
            let id = std::fs::read_link(format!("/proc/self/ns/{ns}"))
                .map(|p| p.to_string_lossy().into_owned())
                .unwrap_or_default();
            parts.push((format!("{ns} namespace"), id));
        }
        parts.push((
            "cgroup".into(),
            std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default(),
        ));
        Context { parts }
    }

    /// What differs between `self` and `other`, named (the first one), or
    /// `None` when they are the same.
    pub(crate) fn differs(&self, other: &Context) -> Option<String> {
        if self.parts.len() != other.parts.len() {
            return Some("the process context".into());
        }
        self.parts
            .iter()
            .zip(&other.parts)
            .find(|(a, b)| a != b)
            .map(|((what, _), _)| format!("not the same {what} as the server's"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_context_is_its_own_and_a_changed_part_is_named() {
        let here = Context::here();
        assert_eq!(here.differs(&Context::here()), None);
        assert!(
            here.parts
                .iter()
                .any(|(k, v)| k == "umask" && !v.is_empty())
        );
        let mut other = here.clone();
        other.parts[3].1 = "0077".into();
        assert_eq!(
            here.differs(&other).as_deref(),
            Some("not the same umask as the server's")
        );
    }
}
