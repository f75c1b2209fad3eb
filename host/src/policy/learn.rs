//! Draft the smallest grant that allows every op a recorded run had
//! allowed.

use super::learn_flow::{Drafted, learn_flow};
use crate::capability::OpKind;
use crate::caps::{Capabilities, CapabilitiesBuilder};
use crate::error::CapsError;
use crate::report::{AuditEvent, Decision, RunReport};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How much room the drafted budgets leave over what the run used.
pub const HEADROOM: u64 = 2;

/// A drafted grant: the caps file text (comments included) and the grant.
#[derive(Debug)]
pub struct Learned {
    /// The caps file: a header, the grant, the run's denied ops as
    /// comments.
    pub toml: String,
    /// The grant it loads to.
    pub caps: Capabilities,
}

/// A mount an allowed op went through, from its record's rule
/// (`read mount /work (host /abs/data)`).
fn mount_of(rule: &str) -> Option<(bool, String, PathBuf)> {
    let (access, rest) = rule.split_once(" mount ")?;
    let (guest, host) = rest.split_once(" (host ")?;
    let host = host.strip_suffix(')')?;
    Some((access == "write", guest.to_string(), PathBuf::from(host)))
}

/// The deepest folder that holds every path in `paths` (guest paths).
fn common_folder<'a>(paths: impl Iterator<Item = &'a str>) -> Option<String> {
    let mut common: Option<Vec<&str>> = None;
    for p in paths {
        let parts: Vec<&str> = p.split('/').filter(|s| !s.is_empty()).collect();
        common = Some(match common {
            None => parts,
            Some(c) => c
                .iter()
                .zip(&parts)
                .take_while(|(a, b)| a == b)
                .map(|(a, _)| *a)
                .collect(),
        });
    }
    common.map(|c| format!("/{}", c.join("/")))
}

fn parent(path: &str) -> &str {
    match path.rfind('/') {
        Some(0) | None => "/",
        Some(i) => &path[..i],
    }
}

/// What one allowed op needs of a grant. Decided by one exhaustive
/// `match` on its kind, so an op kind added later cannot be skipped here
/// without a compile error.
enum Need<'a> {
    /// A folder read (or listed) or written through the mount its rule
    /// names: (write?, mount guest path, mount host path), the folder.
    Folder((bool, String, PathBuf), &'a str),
    /// A fetch of this URL.
    Origin(&'a str),
    /// A TCP connection (`tcp`) or a UDP peer (`udp`) at this
    /// `host:port`, and the address dialled.
    Connect(&'static str, &'a str, Option<&'a str>),
    /// A bind of this `tcp://ip:port` or `udp://ip:port`.
    Listen(&'a str),
    /// A lookup of this name (covered by a connection's rule, when the run
    /// made one to it).
    Lookup(&'a str),
    /// A call of this tool.
    Tool(&'a str),
    /// A key-value store.
    Kv,
}

fn need(e: &AuditEvent) -> Option<Need<'_>> {
    let kind = e.op.kind()?;
    let mount = || {
        let (_, guest, host) = mount_of(e.rule.as_deref()?)?;
        Some((guest, host))
    };
    Some(match kind {
        OpKind::FsList => {
            let (g, h) = mount()?;
            Need::Folder((false, g, h), e.target.as_str())
        }
        OpKind::FsRead | OpKind::FsStat => {
            let (g, h) = mount()?;
            Need::Folder((false, g, h), parent(&e.target))
        }
        OpKind::FsWrite | OpKind::FsRemove | OpKind::FsMkdir => {
            let (g, h) = mount()?;
            Need::Folder((true, g, h), parent(&e.target))
        }
        OpKind::NetFetch => Need::Origin(&e.target),
        OpKind::NetConnect => Need::Connect("tcp", &e.target, e.address.as_deref()),
        OpKind::NetDatagram => Need::Connect("udp", &e.target, e.address.as_deref()),
        OpKind::NetListen => Need::Listen(&e.target),
        OpKind::NetLookup => Need::Lookup(&e.target),
        OpKind::ToolCall => Need::Tool(&e.target),
        OpKind::KvGet | OpKind::KvPut | OpKind::KvDelete | OpKind::KvList => Need::Kv,
    })
}

/// The folders a grant must cover for `audit`'s allowed file ops: per
/// (write?, mount guest path, mount host path), the folders touched.
type Touched = BTreeMap<(bool, String, PathBuf), Vec<String>>;

fn touched(audit: &[AuditEvent]) -> Touched {
    let mut t: Touched = BTreeMap::new();
    for e in audit.iter().filter(|e| passed(e)) {
        let Some(Need::Folder((write, guest, host), folder)) = need(e) else {
            continue;
        };
        // The folder, never above the mount it went through.
        let folder = if folder.starts_with(&guest) {
            folder.to_string()
        } else {
            guest.clone()
        };
        t.entry((write, guest, host)).or_default().push(folder);
    }
    t
}

/// Draft the smallest grant that allows every op `audit` allowed: mounts
/// at the narrowest folder covering what was read and, apart, what was
/// written (a write mount is readable, so a read folder inside one is
/// left out); the exact origins fetched; the tools called; the labels the
/// run's ops brought in, on the drafted sources, each allowed to reach what
/// the run sent to while holding it (and stdout); budgets from
/// what was used ([`HEADROOM`] times; from `report` for fuel, memory and
/// wall when given). Denied ops are listed as comments.
pub fn learn(audit: &[AuditEvent], report: Option<&RunReport>) -> Result<Learned, CapsError> {
    let mut b = Capabilities::builder();
    let mut writes: Vec<(String, PathBuf)> = Vec::new();
    let mut reads: Vec<(String, PathBuf)> = Vec::new();
    for ((write, guest, host), folders) in touched(audit) {
        let Some(folder) = common_folder(folders.iter().map(String::as_str)) else {
            continue;
        };
        let rel = folder
            .strip_prefix(&guest)
            .unwrap_or("")
            .trim_start_matches('/');
        let host = if rel.is_empty() { host } else { host.join(rel) };
        if write {
            writes.push((folder, host));
        } else {
            reads.push((folder, host));
        }
    }
    let under = |p: &Path, base: &Path| p.starts_with(base);
    for (guest, host) in &reads {
        if !writes.iter().any(|(_, w)| under(host, w)) {
            b = b.read_mount(host, guest.clone());
        }
    }
    for (guest, host) in &writes {
        b = b.write_mount(host, guest.clone());
    }
    let allowed = || audit.iter().filter(|e| passed(e));
    let origins: BTreeSet<String> = allowed()
        .filter_map(|e| match need(e) {
            Some(Need::Origin(url)) => origin(url),
            _ => None,
        })
        .collect();
    let drafted = Drafted {
        mounts: reads
            .iter()
            .chain(&writes)
            .map(|(g, _)| g.as_str())
            .collect(),
        origin: &origin,
    };
    let (socket_rules, listen) = socket_rules(audit);
    for o in origins.into_iter().chain(socket_rules) {
        b = b.allow_egress(o);
    }
    for l in listen {
        b = b.allow_listen(l);
    }
    let tools: BTreeSet<&str> = allowed()
        .filter_map(|e| match need(e) {
            Some(Need::Tool(name)) => Some(name),
            _ => None,
        })
        .collect();
    for t in &tools {
        b = b.allow_tool(*t);
    }
    // A store of the default size: an audit says which keys were used,
    // not how large the store grew.
    if allowed().any(|e| matches!(need(e), Some(Need::Kv))) {
        b = b.kv(crate::capability::kv::KvGrant::default());
    }
    b = learn_flow(b, audit, passed, &drafted);
    b = budgets(b, audit, report);
    let caps = b.build()?;
    let mut toml = format!(
        "# Drafted by `sbx-wasm policy learn` from {} recorded ops ({} allowed): the\n\
         # smallest grant that allows every allowed op, budgets at {HEADROOM}x what was used.\n",
        audit.len(),
        allowed().count()
    );
    if !tools.is_empty() {
        toml += "# Tools are allowed by name: add [tools.command.NAME] for the CLI to run them.\n";
    }
    toml += &caps.to_toml();
    let denied: Vec<&AuditEvent> = audit.iter().filter(|e| !passed(e)).collect();
    if !denied.is_empty() {
        toml += "\n# Denied in the run (not granted here):\n";
        for e in denied {
            let v = e.violation.map(|v| v.to_string()).unwrap_or_default();
            toml += &format!(
                "# seq {}: {} {} ({v})\n",
                e.seq,
                e.op,
                crate::bound::printable(&e.target)
            );
        }
    }
    Ok(Learned { toml, caps })
}

/// The socket rules a drafted grant allows the run's sockets by: each
/// `host:port` connected to (tcp) or exchanged datagrams with (udp), the
/// address itself too when a name gave a special-purpose one (which only
/// an IP rule allows), and a name looked up but never dialled at any
/// port; and the listen rules of its binds, as bound (an ephemeral bind
/// as port 0).
fn socket_rules(audit: &[AuditEvent]) -> (BTreeSet<String>, BTreeSet<String>) {
    let mut rules = BTreeSet::new();
    let mut listen = BTreeSet::new();
    let mut connected = BTreeSet::new();
    let mut looked_up = BTreeSet::new();
    for e in audit.iter().filter(|e| passed(e)) {
        match need(e) {
            Some(Need::Connect(scheme, target, address)) => {
                rules.insert(format!("{scheme}://{target}"));
                connected.insert(target.rsplit_once(':').map_or(target, |(h, _)| h));
                let special = address
                    .and_then(|a| a.parse::<std::net::SocketAddr>().ok())
                    .filter(|a| crate::net::special_range(a.ip()).is_some());
                if let Some(a) = special {
                    rules.insert(format!("{scheme}://{a}"));
                }
            }
            Some(Need::Listen(target)) => {
                if let Some((_, addr)) = target.split_once("://") {
                    listen.insert(addr.to_string());
                }
            }
            Some(Need::Lookup(name)) => {
                looked_up.insert(name);
            }
            _ => {}
        }
    }
    for name in looked_up.difference(&connected) {
        rules.insert(format!("tcp://{name}:*"));
    }
    (rules, listen)
}

/// The egress rule a drafted grant allows `url` by: its exact origin.
fn origin(url: &str) -> Option<String> {
    let u = url::Url::parse(url).ok()?;
    let port = u.port_or_known_default()?;
    let host = match u.host()? {
        url::Host::Ipv6(ip) => format!("[{ip}]"),
        h => h.to_string(),
    };
    Some(format!("{}://{host}:{port}", u.scheme()))
}

fn budgets(
    b: CapabilitiesBuilder,
    audit: &[AuditEvent],
    report: Option<&RunReport>,
) -> CapabilitiesBuilder {
    let ops = audit.len() as u64;
    let output: u64 = audit.iter().map(|e| e.bytes).sum();
    let wall_ms = report
        .map(|r| r.usage.wall_ms)
        .unwrap_or_else(|| audit.iter().map(|e| e.elapsed_ms).max().unwrap_or(0));
    let mut b = b
        .max_ops((ops * HEADROOM).max(10))
        .max_output_bytes((output * HEADROOM).max(64 * 1024))
        .max_wall(Duration::from_millis((wall_ms * HEADROOM).max(1000)));
    if let Some(r) = report {
        if let Some(fuel) = r.usage.fuel {
            b = b.max_fuel((fuel * HEADROOM).max(1_000_000));
        }
        if let Some(mem) = r.usage.memory_peak_bytes {
            let mib = 1 << 20;
            b = b.max_memory_bytes(((mem * HEADROOM).div_ceil(mib) * mib).max(16 * mib));
        }
        if r.usage.write_bytes > 0 {
            b = b.max_write_bytes((r.usage.write_bytes * HEADROOM).max(1 << 20));
        }
        if r.usage.files > 0 {
            b = b.max_files((r.usage.files * HEADROOM).max(10));
        }
        if r.usage.sent_bytes > 0 {
            b = b.max_sent_bytes((r.usage.sent_bytes * HEADROOM).max(64 * 1024));
        }
    }
    b
}

/// Whether the grant let `e` through: allowed, or allowed and then cut
/// short by a budget or a cancel (`interrupted`), which needs the grant as
/// much.
fn passed(e: &AuditEvent) -> bool {
    matches!(e.decision, Decision::Allowed | Decision::Interrupted)
}
