//! The subcommands: one file each, none importing another; what they share
//! lives beside them (`common`, `output`, `exit`).

mod audit;
mod cache;
mod check;
mod doctor;
mod exec;
mod fuzz_init;
mod http_serve;
mod kernel_check;
mod networkpolicy;
mod policy;
mod python_build;
mod replay;
pub(crate) mod run;
mod shell;

use crate::exit::EXIT_CODES;
use clap::{Parser, Subcommand};

/// What `--version` prints after the name: the crate's version, the git
/// commit it was built from and the wasmtime release it runs guests with.
pub(crate) const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (git ",
    env!("SBX_WASM_GIT_COMMIT"),
    ", wasmtime ",
    env!("SBX_WASM_WASMTIME"),
    ")"
);

#[derive(Parser, Debug)]
#[command(
    name = "sbx-wasm",
    version = VERSION,
    about = "Run untrusted, model-proposed actions under a capability grant",
    after_help = EXIT_CODES
)]
pub(crate) struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run a wasm component (wasm32-wasip2 command) under the grant.
    #[command(after_help = EXIT_CODES)]
    Run(run::RunArgs),
    /// Compile a component into the artifact cache, so `run` starts without
    /// compiling.
    #[command(after_help = EXIT_CODES)]
    Compile(cache::CompileArgs),
    /// Inspect or empty the artifact cache ($SBX_WASM_CACHE_DIR, else
    /// $XDG_CACHE_HOME/sbx-wasm, else ~/.cache/sbx-wasm).
    Cache(cache::CacheArgs),
    /// Run a JSON plan (a list of model-proposed ops) through the gate.
    #[command(after_help = EXIT_CODES)]
    Exec(exec::ExecArgs),
    /// Apply the kernel confinement `run` applies for a caps file, then try
    /// raw reads, writes, connections and program starts, and print what
    /// the kernel allowed (no wasm, no gate: what an escape would find).
    KernelCheck(kernel_check::KernelCheckArgs),
    /// Validate a caps file and print the effective grant, or explain one op.
    #[command(after_help = EXIT_CODES)]
    Check(check::CheckArgs),
    /// Serve the grant to MCP clients (stdio, or streamable HTTP with
    /// --http): run_python, run_wasm, file ops, fetch and granted tools.
    Mcp(crate::mcp::McpArgs),
    /// Serve an HTTP app (a component exporting wasi:http's handler, 0.2 or
    /// 0.3) on a loopback address: each request a fresh instance under the grant.
    Serve(http_serve::ServeArgs),
    /// Policy tools over grants and audit logs: what-if, learn, diff, lint.
    Policy(policy::PolicyArgs),
    /// Audit logs: verify that one is whole (chain, seals, signatures);
    /// make the key that signs them.
    Audit(audit::AuditArgs),
    /// Run a component again against a recording (`run --record`) alone:
    /// no file, network or tool touched; says where it departs from it.
    #[command(after_help = EXIT_CODES)]
    Replay(replay::ReplayArgs),
    /// Write a libFuzzer project that fuzzes an agent with the host's
    /// answers (pages, tool outputs, files, stdin), seeded from a recording.
    FuzzInit(fuzz_init::FuzzInitArgs),
    /// Python runners: `python build --requirements FILE` bundles
    /// pure-Python packages (pinned by hash) into one; `python serve`
    /// keeps warm workers that `run SCRIPT.py` hands its runs to.
    Python(python_build::PythonArgs),
    /// Check what this machine has of what the commands need (artifact
    /// cache, script runners and their build tools, the wasm target, the
    /// kernel wall), with the fix for what is missing; exit 1 if anything is.
    Doctor(doctor::DoctorArgs),
    /// Write shell completions (bash, zsh, fish, elvish, powershell) to stdout.
    Completions(shell::CompletionsArgs),
    /// Write the man page (roff) to stdout.
    Man(shell::ManArgs),
}

/// `run`'s arguments from a whole command line (`sbx-wasm run ...`), as
/// `run` itself would parse them; `None` if it would refuse them.
pub(crate) fn run_args(argv: impl IntoIterator<Item = String>) -> Option<run::RunArgs> {
    match Cli::try_parse_from(argv).ok()?.command {
        Command::Run(args) => Some(args),
        _ => None,
    }
}

impl Cli {
    /// Run the parsed command; returns the exit code.
    pub(crate) fn execute(self) -> i32 {
        match self.command {
            Command::Run(c) => c.execute(),
            Command::Compile(c) => crate::exit::finish(c.execute()),
            Command::Cache(c) => crate::exit::finish(c.execute()),
            Command::Exec(c) => crate::exit::finish(c.execute()),
            Command::KernelCheck(c) => crate::exit::finish(c.execute()),
            Command::Check(c) => crate::exit::finish(c.execute()),
            Command::Mcp(c) => crate::exit::finish(c.execute()),
            Command::Serve(c) => crate::exit::finish(c.execute()),
            Command::Policy(c) => crate::exit::finish(c.execute()),
            Command::Audit(c) => crate::exit::finish(c.execute()),
            Command::Replay(c) => c.execute(),
            Command::FuzzInit(c) => crate::exit::finish(c.execute()),
            Command::Python(c) => crate::exit::finish(c.execute()),
            Command::Doctor(c) => c.execute(),
            Command::Completions(c) => crate::exit::finish(c.execute()),
            Command::Man(c) => crate::exit::finish(c.execute()),
        }
    }
}
