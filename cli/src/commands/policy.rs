//! `sbx-wasm policy`: what-if, learn, diff and lint over grants and audit
//! logs (the library's `policy` module), printed as a table or JSON; and
//! the NetworkPolicy a grant asks for (`networkpolicy.rs`).

use crate::common::load_grant;
use crate::exit::{EXIT_DENIED, EXIT_OK, Internal};
use anyhow::{Context, Result};
use sbx_wasm::policy::{self, Verdict};
use std::io::Write;
use std::path::{Path, PathBuf};

#[derive(clap::Args, Debug)]
pub(crate) struct PolicyArgs {
    #[command(subcommand)]
    command: PolicyCommand,
}

#[derive(clap::Subcommand, Debug)]
enum PolicyCommand {
    /// Decide every op of a recorded run again under another grant and
    /// print each decision that flips (exit 1 when any does).
    WhatIf {
        /// The run's audit log (JSON lines).
        #[arg(long, value_name = "FILE")]
        audit: PathBuf,
        /// The grant to decide under.
        #[arg(long, value_name = "FILE")]
        caps: PathBuf,
        #[arg(long)]
        json: bool,
    },
    /// Draft the smallest caps file that allows every op the run allowed.
    Learn {
        /// The run's audit log (JSON lines).
        #[arg(long, value_name = "FILE")]
        audit: PathBuf,
        /// The run's report, for fuel, memory and wall budgets.
        #[arg(long, value_name = "FILE")]
        report: Option<PathBuf>,
        /// Write the caps file here instead of standard output.
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
    },
    /// What one grant allows that the other does not (exit 1 when they
    /// differ).
    Diff {
        #[arg(value_name = "A.toml")]
        a: PathBuf,
        #[arg(value_name = "B.toml")]
        b: PathBuf,
        #[arg(long)]
        json: bool,
    },
    /// The Kubernetes NetworkPolicy the grant's [net] rules ask for
    /// (YAML): egress only to what they allow, DNS for names, ingress only
    /// on the MCP port.
    Networkpolicy {
        #[arg(value_name = "CAPS.toml")]
        caps: PathBuf,
        /// The policy's name.
        #[arg(long, default_value = "sbx-wasm")]
        name: String,
        /// The pods' `app.kubernetes.io/name` label.
        #[arg(long, default_value = "sbx-wasm")]
        app: String,
        /// The port MCP clients connect to.
        #[arg(long, default_value_t = 8765)]
        port: u16,
        /// NAME=CIDR: the ranges a granted name may reach (repeatable;
        /// default: the public internet on the rule's port).
        #[arg(long, value_name = "NAME=CIDR")]
        cidr: Vec<String>,
    },
    /// Risky parts of a grant, each with why and a safer form (exit 1 when
    /// anything is found).
    Lint {
        #[arg(value_name = "CAPS.toml")]
        caps: PathBuf,
        #[arg(long)]
        json: bool,
    },
}

fn read_audit(path: &Path) -> Result<Vec<sbx_wasm::AuditEvent>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read the audit log {}", path.display()))?;
    policy::read_audit(&text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
}

fn json(out: &mut impl Write, v: &impl serde::Serialize) -> Result<()> {
    let text = serde_json::to_string_pretty(v).map_err(|e| Internal(e.to_string()))?;
    writeln!(out, "{text}")?;
    Ok(())
}

fn verdict(v: &Verdict) -> String {
    match v {
        Verdict::Allowed { rule } => format!("allowed ({rule})"),
        Verdict::Denied { violation } => format!("denied ({violation})"),
    }
}

impl PolicyArgs {
    pub(crate) fn execute(&self) -> Result<i32> {
        let mut out = std::io::stdout().lock();
        match &self.command {
            PolicyCommand::Networkpolicy {
                caps,
                name,
                app,
                port,
                cidr,
            } => {
                let shape = super::networkpolicy::Shape {
                    name,
                    app,
                    port: *port,
                    cidrs: cidr,
                };
                write!(
                    out,
                    "{}",
                    super::networkpolicy::render(&load_grant(caps)?, &shape)?
                )?;
                Ok(EXIT_OK)
            }
            PolicyCommand::WhatIf {
                audit,
                caps,
                json: as_json,
            } => {
                let events = read_audit(audit)?;
                let w = policy::what_if(&events, load_grant(caps)?)?;
                if *as_json {
                    json(&mut out, &w)?;
                } else {
                    for f in &w.flips {
                        writeln!(
                            out,
                            "{:>4}  {:<9}  {:<40}  {} -> {}",
                            f.seq,
                            f.op,
                            sbx_wasm::bound::printable(&f.target),
                            verdict(&f.was),
                            verdict(&f.now)
                        )?;
                    }
                    for s in &w.skipped {
                        writeln!(
                            out,
                            "{:>4}  {:<9}  not decided again: {}",
                            s.seq,
                            s.op,
                            sbx_wasm::bound::printable(&s.reason)
                        )?;
                    }
                    writeln!(
                        out,
                        "{} decisions flip, {} unchanged, {} not decided again",
                        w.flips.len(),
                        w.unchanged,
                        w.skipped.len()
                    )?;
                }
                Ok(if w.flips.is_empty() {
                    EXIT_OK
                } else {
                    EXIT_DENIED
                })
            }
            PolicyCommand::Learn {
                audit,
                report,
                out: to,
            } => {
                let events = read_audit(audit)?;
                let report = match report {
                    Some(p) => {
                        let text = std::fs::read_to_string(p)
                            .with_context(|| format!("cannot read the report {}", p.display()))?;
                        Some(
                            serde_json::from_str(&text)
                                .with_context(|| format!("{}: not a run report", p.display()))?,
                        )
                    }
                    None => None,
                };
                let learned = policy::learn(&events, report.as_ref())?;
                match to {
                    Some(path) => crate::output::write_json_file(path, &learned.toml)?,
                    None => write!(out, "{}", learned.toml)?,
                }
                Ok(EXIT_OK)
            }
            PolicyCommand::Diff {
                a,
                b,
                json: as_json,
            } => {
                let d = policy::diff(&load_grant(a)?, &load_grant(b)?);
                if *as_json {
                    json(&mut out, &d)?;
                } else {
                    let side = |out: &mut dyn Write, who: &Path, other: &Path, items: &[String]| {
                        if !items.is_empty() {
                            writeln!(
                                out,
                                "{} allows what {} does not:",
                                who.display(),
                                other.display()
                            )?;
                            for i in items {
                                writeln!(out, "  {i}")?;
                            }
                        }
                        Ok::<_, std::io::Error>(())
                    };
                    side(&mut out, a, b, &d.only_a)?;
                    side(&mut out, b, a, &d.only_b)?;
                    for c in &d.budgets {
                        writeln!(
                            out,
                            "budget {}: {} in {}, {} in {}",
                            c.key,
                            c.a,
                            a.display(),
                            c.b,
                            b.display()
                        )?;
                    }
                    if d.is_empty() {
                        writeln!(out, "the grants are the same")?;
                    }
                }
                Ok(if d.is_empty() { EXIT_OK } else { EXIT_DENIED })
            }
            PolicyCommand::Lint {
                caps,
                json: as_json,
            } => {
                let grant = load_grant(caps)?;
                let mut found = policy::lint(&grant, Some(caps));
                found.splice(
                    0..0,
                    policy::lint_protected(&grant, &crate::common::protected(None)),
                );
                if *as_json {
                    json(&mut out, &found)?;
                } else {
                    for f in &found {
                        let kind = if f.error { "error: " } else { "" };
                        writeln!(
                            out,
                            "{kind}{}\n  why: {}\n  safer: {}",
                            f.what, f.why, f.safer
                        )?;
                    }
                    writeln!(out, "{} findings", found.len())?;
                }
                Ok(if found.is_empty() {
                    EXIT_OK
                } else {
                    EXIT_DENIED
                })
            }
        }
    }
}
