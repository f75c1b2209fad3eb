//! Subcommands. Each returns the process exit code; see [`EXIT_CODES`].

use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand};
use sbx_wasm::net::{Egress, Refusal, Resolve, StaticResolver, SystemResolver};
use sbx_wasm::op::Output;
use sbx_wasm::report::{AuditEvent, RunReport};
use sbx_wasm::tools::ToolRegistry;
use sbx_wasm::{
    AgentRun, Capabilities, MonotonicClock, Op, Sandbox, SandboxResult, SandboxedAgent,
    StoppedReason, TickClock,
};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Success: the plan completed, the caps file is valid, the op is allowed.
pub const EXIT_OK: i32 = 0;
/// `check --explain`: the op would be denied.
pub const EXIT_DENIED: i32 = 1;
/// Bad usage, caps file or plan file.
pub const EXIT_USAGE: i32 = 2;
/// `exec`: a budget halted the run.
pub const EXIT_HARD_LIMIT: i32 = 3;
/// A bug or an unexpected host failure (EX_SOFTWARE).
pub const EXIT_INTERNAL: i32 = 70;
/// `run`: the guest trapped (not a limit).
pub const EXIT_RUN_TRAP: i32 = 123;
/// `run`: a budget halted the guest.
pub const EXIT_RUN_HARD_LIMIT: i32 = 124;
/// `run`: sbx-wasm could not start the guest (caps file, component, setup).
pub const EXIT_RUN_SETUP: i32 = 125;

const EXIT_CODES: &str = "\
Exit codes:
  0   success: the plan completed (soft denials included), the caps file is valid,
      or the explained op would be allowed
  1   check --explain: the op would be denied
  2   usage error: bad arguments, caps file or plan file
  3   exec: a budget (max_ops, max_output_bytes, max_wall) halted the run
  70  internal error
run passes the guest's own exit code through, except:
  123 run: the guest trapped (not a limit; the report has the message)
  124 run: a budget (ops, output, wall, fuel, memory, stack) halted the guest
  125 run: the guest could not be started (caps file, component, setup)";

#[derive(Parser, Debug)]
#[command(
    name = "sbx-wasm",
    version,
    about = "Run untrusted, model-proposed actions under a capability grant",
    after_help = EXIT_CODES
)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// Where `run` and `exec` write their records.
#[derive(clap::Args, Debug)]
pub(crate) struct OutputFiles {
    /// Write the run report (JSON) to FILE, also after a halt or a trap.
    #[arg(long, value_name = "FILE")]
    pub(crate) report: Option<PathBuf>,
    /// Write the audit log (JSON lines, one per gated decision, allowed ones
    /// included) to FILE.
    #[arg(long, value_name = "FILE")]
    pub(crate) audit: Option<PathBuf>,
}

impl OutputFiles {
    /// Each file asked for, with its text.
    pub(crate) fn texts(
        &self,
        report: &RunReport,
        audit: &[AuditEvent],
    ) -> Result<Vec<(PathBuf, String)>> {
        let mut out = Vec::new();
        if let Some(path) = &self.report {
            let text = serde_json::to_string_pretty(report).map_err(|e| Internal(e.to_string()))?;
            out.push((path.clone(), text + "\n"));
        }
        if let Some(path) = &self.audit {
            let mut lines = String::new();
            for ev in audit {
                lines += &serde_json::to_string(ev).map_err(|e| Internal(e.to_string()))?;
                lines.push('\n');
            }
            out.push((path.clone(), lines));
        }
        Ok(out)
    }

    /// Write whichever files were asked for, each atomically.
    pub(crate) fn write(&self, report: &RunReport, audit: &[AuditEvent]) -> Result<()> {
        for (path, text) in self.texts(report, audit)? {
            write_json_file(&path, &text)?;
        }
        Ok(())
    }

    /// For a run that cannot rename files itself (confined): an empty temp
    /// file beside each file asked for, paired with its final name, in the
    /// order of [`OutputFiles::texts`]. Temp files of the same name left by
    /// dead processes are removed first.
    pub(crate) fn stage(&self) -> Result<Vec<(PathBuf, PathBuf)>> {
        let mut staged = Vec::new();
        for path in [&self.report, &self.audit].into_iter().flatten() {
            remove_stale_stages(path);
            let tmp = stage_path(path, std::process::id());
            std::fs::File::create(&tmp)
                .with_context(|| format!("cannot write {}", path.display()))?;
            staged.push((tmp, path.clone()));
        }
        Ok(staged)
    }
}

/// `.NAME.sbx-PID.tmp` beside `path`: where a run writes `path` before it
/// is renamed into place, so a reader sees a whole file or none.
fn stage_path(path: &Path, pid: u32) -> PathBuf {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    path.with_file_name(format!(".{name}.sbx-{pid}.tmp"))
}

/// Remove `.NAME.sbx-PID.tmp` files beside `path` whose writer is gone.
fn remove_stale_stages(path: &Path) {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let (prefix, dir) = (
        format!(".{name}.sbx-"),
        path.parent().unwrap_or(Path::new(".")),
    );
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let file = e.file_name().to_string_lossy().into_owned();
        let pid = file
            .strip_prefix(&prefix)
            .and_then(|rest| rest.strip_suffix(".tmp"))
            .and_then(|pid| pid.parse::<u32>().ok());
        if let Some(pid) = pid
            && !sbx_wasm::wasm::process_alive(pid)
        {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

#[derive(Subcommand, Debug)]
enum CacheAction {
    /// List cached artifacts.
    Ls,
    /// Remove every cached artifact.
    Clear,
    /// Print the cache folder.
    Dir,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run a wasm component (wasm32-wasip2 command) under the grant.
    #[command(after_help = EXIT_CODES)]
    Run(crate::run_cmd::RunArgs),
    /// Compile a component into the artifact cache, so `run` starts without
    /// compiling.
    #[command(after_help = EXIT_CODES)]
    Compile {
        /// The component.
        #[arg(value_name = "AGENT.wasm")]
        component: PathBuf,
    },
    /// Inspect or empty the artifact cache ($SBX_WASM_CACHE_DIR, else
    /// $XDG_CACHE_HOME/sbx-wasm, else ~/.cache/sbx-wasm).
    Cache {
        #[command(subcommand)]
        action: CacheAction,
    },
    /// Run a JSON plan (a list of model-proposed ops) through the gate.
    #[command(after_help = EXIT_CODES)]
    Exec {
        /// The caps file (TOML) that grants what the plan may touch.
        #[arg(long, value_name = "FILE")]
        caps: PathBuf,
        /// The plan: a JSON list of ops; `-` reads standard input.
        #[arg(value_name = "PLAN")]
        plan: PathBuf,
        /// Print the whole run (results and report) as JSON instead of a table.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        files: OutputFiles,
        /// Use a virtual clock (1 ms per reading) so runs are reproducible.
        #[arg(long)]
        deterministic: bool,
    },
    /// Apply the kernel confinement `run` applies for a caps file, then try
    /// raw reads, writes, connections and program starts, and print what
    /// the kernel allowed (no wasm, no gate: what an escape would find).
    KernelCheck(crate::kernel_cmd::KernelCheckArgs),
    /// Validate a caps file and print the effective grant, or explain one op.
    #[command(after_help = EXIT_CODES)]
    Check {
        /// The caps file (TOML).
        #[arg(long, value_name = "FILE")]
        caps: PathBuf,
        /// Say whether an op would be allowed, and by which rule:
        /// 'read PATH', 'write PATH', 'list PATH', 'stat PATH', 'remove PATH',
        /// 'mkdir PATH', 'fetch URL' or 'tool NAME'.
        #[arg(long, value_name = "OP")]
        explain: Option<String>,
        /// With `--explain 'fetch URL'`: resolve the host (once, as a run
        /// would) and give the verdict on each address.
        #[arg(long, requires = "explain")]
        resolve: bool,
    },
}

/// Run the parsed command; returns the exit code.
pub fn run(cli: Cli) -> i32 {
    let result = match cli.command {
        Command::Run(args) => return crate::run_cmd::run(args),
        Command::Exec {
            caps,
            plan,
            json,
            files,
            deterministic,
        } => exec(&caps, &plan, json, &files, deterministic),
        Command::Check {
            caps,
            explain,
            resolve,
        } => check(&caps, explain.as_deref(), resolve),
        Command::Compile { component } => crate::run_cmd::compile(&component),
        Command::KernelCheck(args) => crate::kernel_cmd::run(&args),
        Command::Cache { action } => crate::run_cmd::cache(match action {
            CacheAction::Ls => "ls",
            CacheAction::Clear => "clear",
            CacheAction::Dir => "dir",
        }),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("sbx-wasm: error: {}", describe(&e));
            if e.downcast_ref::<Internal>().is_some() {
                EXIT_INTERNAL
            } else {
                EXIT_USAGE
            }
        }
    }
}

/// An error and its causes on one line, `a: b: c`, leaving out a cause whose
/// text the line already ends with (the library's errors say their cause
/// in their own message, and also expose it as their source).
pub(crate) fn describe(e: &anyhow::Error) -> String {
    let mut line = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if line.ends_with(&text) {
            continue;
        }
        if !line.is_empty() {
            line.push_str(": ");
        }
        line.push_str(&text);
    }
    line
}

/// Marks an error that is the host's fault, not the user's input.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct Internal(String);

pub(crate) fn load_caps(path: &Path) -> Result<Capabilities> {
    let caps = Capabilities::from_file(path)?;
    for w in caps.warnings() {
        eprintln!("sbx-wasm: warning: {w}");
    }
    Ok(caps)
}

pub(crate) fn registry(caps: &Capabilities) -> ToolRegistry {
    let mut tools = ToolRegistry::new();
    for (name, cmd) in caps.tool_commands() {
        tools.register(name.clone(), cmd.clone());
    }
    tools
}

fn sandbox(caps: Capabilities, deterministic: bool) -> Result<Sandbox> {
    let tools = registry(&caps);
    let b = Sandbox::builder(caps).tools(tools);
    let b = if deterministic {
        b.clock(TickClock::new(Duration::from_millis(1)))
    } else {
        b.clock(MonotonicClock::new())
    };
    Ok(b.build()?)
}

/// Write `text` to a temp file beside `path`, then rename it over `path`: a
/// reader (or a run killed half-way) never sees a half-written file.
pub(crate) fn write_json_file(path: &Path, text: &str) -> Result<()> {
    let tmp = stage_path(path, std::process::id());
    let written = std::fs::write(&tmp, text).and_then(|()| std::fs::rename(&tmp, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written.with_context(|| format!("cannot write {}", path.display()))
}

fn exec(
    caps_path: &Path,
    plan_path: &Path,
    json: bool,
    files: &OutputFiles,
    deterministic: bool,
) -> Result<i32> {
    let caps = load_caps(caps_path)?;
    let text = if plan_path == Path::new("-") {
        std::io::read_to_string(std::io::stdin()).context("cannot read the plan from stdin")?
    } else {
        std::fs::read_to_string(plan_path)
            .with_context(|| format!("cannot read plan {}", plan_path.display()))?
    };
    let ops = sbx_wasm::plan::parse_plan(&text)
        .with_context(|| format!("plan {}", plan_path.display()))?;
    let mut agent = SandboxedAgent::new(sandbox(caps, deterministic)?);
    let run = agent.run_all(ops);

    files.write(&run.report, agent.sandbox().audit())?;
    let mut out = std::io::stdout().lock();
    if json {
        let text = serde_json::to_string_pretty(&run).map_err(|e| Internal(e.to_string()))?;
        writeln!(out, "{text}")?;
    } else {
        print_run(&mut out, &run)?;
    }
    Ok(match run.stopped_reason {
        StoppedReason::HardLimit => EXIT_HARD_LIMIT,
        _ => EXIT_OK,
    })
}

fn preview(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let escaped: String = text.escape_debug().collect();
    format!("\"{}\"", short(&escaped, 32))
}

fn describe_output(o: &Output) -> String {
    match o {
        Output::Data { content } => format!("{} bytes {}", content.0.len(), preview(&content.0)),
        Output::Written { bytes } => format!("wrote {bytes} bytes"),
        Output::Entries { entries } => format!("{} entries", entries.len()),
        Output::Stat { stat } => format!("{}, {} bytes", stat.kind, stat.size),
        Output::Removed => "removed".into(),
        Output::Created => "created".into(),
        Output::Response { status, body, .. } => {
            format!("HTTP {status}, {} bytes {}", body.0.len(), preview(&body.0))
        }
        Output::ToolOutput { output } => format!("output {}", preview(output.as_bytes())),
        _ => "done".into(),
    }
}

fn short(s: &str, max: usize) -> String {
    let s: String = s
        .chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .collect();
    if s.chars().count() <= max {
        s
    } else {
        let head: String = s.chars().take(max.saturating_sub(1)).collect();
        format!("{head}…")
    }
}

fn print_result(out: &mut impl Write, r: &SandboxResult) -> std::io::Result<()> {
    let head = format!("{:>3}  {:<9}  {:<40}", r.seq, r.op, short(&r.target, 40));
    if let Some(d) = &r.denial {
        let kind = if d.hard { "HARD" } else { "soft" };
        writeln!(
            out,
            "{head}  DENIED   {} ({kind}): {}",
            d.violation, d.message
        )
    } else if let Some(e) = &r.error {
        let rule = r.rule.as_deref().unwrap_or("");
        writeln!(out, "{head}  allowed  by {rule}; failed: {}", e.message)
    } else {
        let rule = r.rule.as_deref().unwrap_or("");
        let what = r.output.as_ref().map(describe_output).unwrap_or_default();
        writeln!(out, "{head}  allowed  by {rule}; {what}")
    }
}

fn print_run(out: &mut impl Write, run: &AgentRun) -> std::io::Result<()> {
    for r in &run.results {
        print_result(out, r)?;
    }
    let rep = &run.report;
    let soft = rep.denials.iter().filter(|d| !d.hard).count();
    let usage = format!(
        "ops {}/{}, output {}/{} bytes, wall {}/{} ms",
        rep.usage.ops,
        rep.limits.ops,
        rep.usage.output_bytes,
        rep.limits.output_bytes,
        rep.usage.wall_ms,
        rep.limits.wall_ms
    );
    match rep.violation {
        Some(v) => writeln!(
            out,
            "halted: hard_limit ({v}); {soft} soft denials; {usage}"
        ),
        None => writeln!(out, "completed; {soft} soft denials; {usage}"),
    }
}

/// Parse `check --explain` text into an op.
fn explain_op(text: &str) -> Result<Op> {
    let text = text.trim();
    let (verb, arg) = text.split_once(char::is_whitespace).unwrap_or((text, ""));
    let arg = arg.trim();
    if arg.is_empty() {
        bail!(
            "--explain needs an argument: 'read PATH', 'write PATH', 'list PATH', 'stat PATH', 'remove PATH', 'mkdir PATH', 'fetch URL' or 'tool NAME'"
        );
    }
    Ok(match verb {
        "read" | "fs_read" => Op::read(arg),
        "write" | "fs_write" => Op::write(arg, Vec::new()),
        "list" | "fs_list" => Op::list(arg),
        "stat" | "fs_stat" => Op::stat(arg),
        "remove" | "fs_remove" => Op::remove(arg),
        "mkdir" | "fs_mkdir" => Op::mkdir(arg),
        "fetch" | "net_fetch" => Op::fetch(arg),
        "tool" | "tool_call" => Op::tool(arg, ""),
        other => bail!(
            "--explain: unknown op {other:?}; use read, write, list, stat, remove, mkdir, fetch or tool"
        ),
    })
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
    let sandbox = sandbox(caps, false)?;
    let mut out = std::io::stdout().lock();
    if let Op::NetFetch { url, .. } = &op
        && let Ok(u) = url::Url::parse(url)
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
            return explain_resolved(&mut out, sandbox.caps().egress(), &op, url);
        }
    }
    match sandbox.check(&op) {
        Ok(rule) => {
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
