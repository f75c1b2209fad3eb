//! `sbx-wasm check`: validate a caps file and print the effective grant, or
//! explain whether one op would be allowed and by which rule.

use crate::common::{load_caps, sandbox};
use crate::exit::{EXIT_DENIED, EXIT_OK};
use anyhow::{Result, bail};
use sbx_wasm::Op;
use sbx_wasm::net::{Egress, Refusal, Resolve, StaticResolver, SystemResolver};
use sbx_wasm::plan::op_aimed_at;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(clap::Args, Debug)]
pub(crate) struct CheckArgs {
    /// The caps file (TOML).
    #[arg(long, value_name = "FILE")]
    caps: PathBuf,
    /// Say whether an op would be allowed, and by which rule:
    /// 'read PATH', 'write PATH', 'list PATH', 'stat PATH', 'remove PATH',
    /// 'mkdir PATH', 'fetch URL', 'tool NAME', 'connect HOST:PORT' or
    /// 'lookup NAME' (a component's sockets).
    #[arg(long, value_name = "OP")]
    explain: Option<String>,
    /// With `--explain 'fetch URL'`: resolve the host (once, as a run
    /// would) and give the verdict on each address.
    #[arg(long, requires = "explain")]
    resolve: bool,
}

impl CheckArgs {
    pub(crate) fn execute(&self) -> Result<i32> {
        check(&self.caps, self.explain.as_deref(), self.resolve)
    }
}

/// Parse `check --explain` text into an op: each capability names its
/// ops (`sbx_wasm::plan::op_aimed_at`).
fn explain_op(text: &str) -> Result<Op> {
    let text = text.trim();
    let (verb, arg) = text.split_once(char::is_whitespace).unwrap_or((text, ""));
    let arg = arg.trim();
    if arg.is_empty() {
        bail!(
            "--explain needs an argument: 'read PATH', 'write PATH', 'list PATH', 'stat PATH', 'remove PATH', 'mkdir PATH', 'fetch URL', 'tool NAME', 'connect HOST:PORT' or 'lookup NAME'"
        );
    }
    op_aimed_at(verb, arg).map_err(|e| anyhow::anyhow!("--explain: {e}"))
}

fn check(caps_path: &Path, explain: Option<&str>, resolve: bool) -> Result<i32> {
    let caps = load_caps(caps_path)?;
    let Some(text) = explain else {
        let mut out = std::io::stdout().lock();
        writeln!(out, "# {} is valid. Effective grant:", caps_path.display())?;
        write!(out, "{}", caps.to_toml())?;
        return Ok(EXIT_OK);
    };
    let op = explain_op(text)?;
    let sandbox = sandbox(
        caps,
        sbx_wasm::Services::new(),
        false,
        None,
        Default::default(),
    )?;
    let mut out = std::io::stdout().lock();
    if let Op::Net(req) = &op
        && let Ok(u) = url::Url::parse(&req.url)
    {
        writeln!(
            out,
            "parsed: {} (scheme {} host {} port {})",
            u,
            u.scheme(),
            u.host_str().unwrap_or("(none)"),
            u.port_or_known_default()
                .map_or("(none)".into(), |p| p.to_string())
        )?;
        if resolve {
            return explain_resolved(&mut out, sandbox.caps().egress(), &op, &req.url);
        }
    }
    match sandbox.check(&op) {
        Ok(permit) => {
            let rule = permit.rule();
            writeln!(out, "{} {}: allowed by {rule}", op.kind(), op.target())?;
            Ok(EXIT_OK)
        }
        Err(d) => {
            writeln!(out, "{} {}: denied: {d}", op.kind(), op.target())?;
            Ok(EXIT_DENIED)
        }
    }
}

/// The whole egress decision as a run makes it, with each address shown.
fn explain_resolved(out: &mut impl Write, egress: &Egress, op: &Op, url: &str) -> Result<i32> {
    let timeout = Duration::from_secs(5);
    match egress.check(url) {
        Ok((_, rule)) => writeln!(out, "rule: {rule}")?,
        Err(d) => {
            writeln!(out, "{} {}: denied: {d}", op.kind(), op.target())?;
            return Ok(EXIT_DENIED);
        }
    }
    let parsed = url::Url::parse(url)?;
    let ips = match parsed.host() {
        Some(url::Host::Domain(d)) => match SystemResolver.lookup(d, timeout) {
            Ok(ips) => ips,
            Err(e) => {
                writeln!(out, "{} {}: cannot resolve: {e}", op.kind(), op.target())?;
                return Ok(EXIT_DENIED);
            }
        },
        Some(url::Host::Ipv4(ip)) => vec![ip.into()],
        Some(url::Host::Ipv6(ip)) => vec![ip.into()],
        None => vec![],
    };
    for ip in &ips {
        match egress.address_verdict(&parsed, *ip) {
            Ok(why) => writeln!(out, "address {ip}: ok ({why})")?,
            Err(why) => writeln!(out, "address {ip}: refused ({why})")?,
        }
    }
    // Decide on the answers shown above: one lookup, as a run makes.
    let fixed = StaticResolver::new().with(parsed.host_str().unwrap_or(""), ips.iter().copied());
    match egress.decide(url, &fixed, timeout) {
        Ok(d) => {
            writeln!(
                out,
                "{} {}: allowed by {}; would dial {}",
                op.kind(),
                op.target(),
                d.rule,
                d.addrs[0]
            )?;
            Ok(EXIT_OK)
        }
        Err(Refusal::Denied(d)) => {
            writeln!(out, "{} {}: denied: {d}", op.kind(), op.target())?;
            Ok(EXIT_DENIED)
        }
        Err(other) => {
            writeln!(
                out,
                "{} {}: cannot decide: {other:?}",
                op.kind(),
                op.target()
            )?;
            Ok(EXIT_DENIED)
        }
    }
}
