//! Risky grants, each with why and a safer form.

use crate::caps::Capabilities;
use crate::fs::Access;
use crate::net::{HostPattern, PortPattern, special_range};
use serde::Serialize;
use std::path::Path;
use std::time::Duration;

/// One risky part of a grant.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// The part of the grant.
    pub what: String,
    /// Why it is risky.
    pub why: String,
    /// A safer form.
    pub safer: String,
    /// A grant no run may be given, not merely a risky one (the command
    /// line refuses it): a mount over what the host runs or keeps apart.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub error: bool,
}

pub(super) fn finding(what: String, why: &str, safer: String) -> Finding {
    Finding {
        what,
        why: why.to_string(),
        safer,
        error: false,
    }
}

/// The mounts of `caps` over a path of `protected` (the artifact cache and
/// its key, a runner, the host's binary): errors, since a run under such a
/// grant is refused (a guest could rewrite what the host runs natively).
pub fn lint_protected(caps: &Capabilities, protected: &crate::ProtectedPaths) -> Vec<Finding> {
    protected
        .conflicts(caps)
        .into_iter()
        .map(|message| Finding {
            what: message,
            why: "a run under this grant is refused: the guest could alter the host's \
                  cached machine code or runner, or read the key that authenticates it"
                .into(),
            safer: "mount a folder that holds none of these, and that none of them holds".into(),
            error: true,
        })
        .collect()
}

const SHELLS: &[&str] = &[
    "sh",
    "bash",
    "zsh",
    "dash",
    "ksh",
    "fish",
    "csh",
    "tcsh",
    "busybox",
    "cmd",
    "cmd.exe",
    "powershell",
    "pwsh",
];

/// What in `caps` is risky. `caps_file`: the caps file it was loaded from,
/// so a write mount over its own folder is found.
pub fn lint(caps: &Capabilities, caps_file: Option<&Path>) -> Vec<Finding> {
    let mut out = Vec::new();
    let e = caps.egress();
    if e.allows_all() {
        out.push(finding(
            "net.dangerous_allow_all".into(),
            "any http(s) URL may be fetched: an injected agent can send what it reads anywhere",
            "allow = [\"https://api.example.com\"]: name each origin the task needs".into(),
        ));
    }
    for r in e.rules() {
        if r.port() == PortPattern::Any {
            out.push(finding(
                format!("egress rule {}", r.as_str()),
                "port * reaches every service on the host (admin panels, databases), not only its web server",
                format!("the port the service listens on, e.g. {}", r.as_str().replace(":*", "")),
            ));
        }
        let special = match r.host() {
            HostPattern::Cidr(net) => special_range(net.network())
                .or_else(|| special_range(net.broadcast()))
                .or_else(|| (net.prefix_len() < 8).then_some("a very large range")),
            HostPattern::Ip(ip) => special_range(*ip),
            _ => None,
        };
        if let Some(range) = special {
            out.push(finding(
                format!("egress rule {}", r.as_str()),
                &format!("it reaches {range} addresses: internal services, cloud metadata endpoints, the host itself"),
                "a single address and port of the one service the task needs".into(),
            ));
        }
    }
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
    let caps_dir = caps_file
        .and_then(|f| std::path::absolute(f).ok())
        .and_then(|f| f.parent().map(Path::to_path_buf));
    for m in caps
        .mounts()
        .iter()
        .filter(|m| m.access == Access::ReadWrite)
    {
        let host = &m.host;
        let what = m.rule();
        let is_home = home.as_deref().is_some_and(|h| host == h)
            || host == Path::new("/root")
            || host == Path::new("/home")
            || host.parent() == Some(Path::new("/home"));
        if host == Path::new("/") || is_home {
            out.push(finding(
                what.clone(),
                "the guest may rewrite a home or the whole file system: shell start-up files, SSH keys, other projects",
                "a folder made for the task's output, e.g. ./out".into(),
            ));
        }
        if let Some(dir) = &caps_dir
            && dir.starts_with(host)
        {
            out.push(finding(
                what,
                "the caps file's own folder is writable: the guest can rewrite its grant (and its tools) for the next run",
                "a write mount outside the folder that holds the caps file".into(),
            ));
        }
    }
    for (name, c) in caps.tool_commands() {
        let program = c
            .argv
            .first()
            .map(|p| p.rsplit('/').next().unwrap_or(p))
            .unwrap_or("");
        let shell = SHELLS.contains(&program)
            || c.argv.iter().any(|a| a == "-c") && program.starts_with("python");
        if shell {
            out.push(finding(
                format!("tools.command.{name} runs {:?}", c.argv),
                "a shell or an interpreter given code runs whatever its input leads it to: the tool is as wide as the shell",
                "the program itself with fixed arguments, reading its input on stdin".into(),
            ));
        }
    }
    let b = caps.budget();
    let huge = [
        (
            b.max_wall > Duration::from_secs(600),
            "max_wall_ms",
            "over 10 minutes",
            "a few minutes at most",
        ),
        (
            b.max_memory_bytes > 2 << 30,
            "max_memory_bytes",
            "over 2 GiB",
            "what the task needs, e.g. 256 MiB",
        ),
        (
            b.max_output_bytes > 1 << 30,
            "max_output_bytes",
            "over 1 GiB",
            "e.g. 16 MiB",
        ),
        (
            b.max_write_bytes > 10 << 30,
            "max_write_bytes",
            "over 10 GiB",
            "e.g. 1 GiB",
        ),
        (
            b.max_ops > 10_000_000,
            "max_ops",
            "over 10 million",
            "e.g. 10,000",
        ),
    ];
    out.extend(super::lint_flow::lint_flow(caps));
    for (hit, key, size, safer) in huge {
        if hit {
            out.push(finding(
                format!("budget.{key}"),
                &format!("{size}: one run can hold the host's resources for long"),
                safer.to_string(),
            ));
        }
    }
    out
}
