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

/// `run`'s arguments (those after `sbx-wasm run`), parsed by a parser of
/// `run` alone; `None` for whatever it does not take (`--help`, an error),
/// which the whole command line's parser then says as it always has. The
/// same derive parses both, so what this one takes it takes as `run` does;
/// building every subcommand's arguments to parse one was most of a served
/// Python run's start (0.45 ms of the client's, 0.2 of the worker's).
pub(crate) fn run_args<I>(args: I) -> Option<run::RunArgs>
where
    I: IntoIterator,
    I::Item: Into<std::ffi::OsString> + Clone,
{
    use clap::{Args, FromArgMatches};
    let parser = run::RunArgs::augment_args(clap::Command::new("run").no_binary_name(true));
    let matches = parser.try_get_matches_from(args).ok()?;
    run::RunArgs::from_arg_matches(&matches).ok()
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

#[cfg(test)]
mod tests {
    use super::*;

    /// `run`'s arguments through the whole command line's parser.
    fn whole(args: &[&str]) -> Option<run::RunArgs> {
        let argv = ["sbx-wasm", "run"].iter().chain(args);
        match Cli::try_parse_from(argv).ok()?.command {
            Command::Run(a) => Some(a),
            _ => None,
        }
    }

    #[test]
    fn the_run_parser_takes_what_the_whole_one_takes_as_it_does_and_nothing_more() {
        let taken: &[&[&str]] = &[
            &["--caps", "c.toml", "agent.wasm"],
            &[
                "--no-stdin",
                "--caps",
                "c.toml",
                "--python-runner",
                "r.wasm",
                "s.py",
            ],
            &[
                "--caps=c.toml",
                "s.py",
                "--report",
                "r.json",
                "--",
                "-x",
                "--caps",
            ],
            &[
                "--caps",
                "c.toml",
                "--python",
                "-",
                "--summary",
                "--no-server",
            ],
            &[
                "--caps",
                "c.toml",
                "--record",
                "rec.json",
                "--record-max-bytes",
                "9",
                "a.wasm",
            ],
            &[
                "--caps",
                "c.toml",
                "--deterministic",
                "--seed",
                "7",
                "--audit",
                "a",
                "a.wasm",
            ],
            &["--caps", "c.toml", "--data", "--verbose", "d.py"],
            &["--caps", "c.toml", "--js", "--js-runner", "j.wasm", "x.txt"],
        ];
        for args in taken {
            let ours = run_args(*args).unwrap_or_else(|| panic!("refused {args:?}"));
            let theirs = whole(args).unwrap_or_else(|| panic!("whole refused {args:?}"));
            assert_eq!(format!("{ours:?}"), format!("{theirs:?}"), "{args:?}");
        }
        // Refused by both (the whole parser then says why), and help,
        // which only the whole parser prints (as `sbx-wasm run`'s).
        let refused: &[&[&str]] = &[
            &["agent.wasm"],
            &["--caps"],
            &["--caps", "c.toml", "a.wasm", "--bogus"],
            &["--caps", "c.toml", "--python", "--js", "a"],
            &["--caps", "c.toml", "--record-max-bytes", "9", "a.wasm"],
            &["--caps", "c.toml", "--seed", "x", "a.wasm"],
            &[
                "--caps",
                "c.toml",
                "--no-kernel-confinement",
                "--require-kernel-confinement",
                "a",
            ],
        ];
        for args in refused {
            assert!(run_args(*args).is_none(), "{args:?}");
            assert!(whole(args).is_none(), "{args:?}");
        }
        for args in [
            &["--help"][..],
            &["-h"],
            &["--caps", "c.toml", "--help", "a"],
        ] {
            assert!(run_args(args).is_none(), "{args:?}");
        }
    }
}
