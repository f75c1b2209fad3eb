//! The `sbx-wasm` command line: parse, call the library, print. The only
//! crate with clap and anyhow; the library (`sbx-wasm`) has neither.

#![forbid(unsafe_code)]
#![warn(unreachable_pub)]

mod commands;
mod common;
mod compile;
mod exit;
mod mcp;
mod output;
mod progress;
mod scripts;
mod serve;
mod tool_helper;

use clap::Parser;

fn main() {
    // The processes `run` and `python serve` start of this binary.
    let mut args = std::env::args_os().skip(1);
    match args.next() {
        Some(a) if a == tool_helper::HELPER_ARG => std::process::exit(tool_helper::serve()),
        Some(a) if a == compile::COMPILE_ARG => {
            let rest: Vec<_> = args.collect();
            std::process::exit(compile::child_main(&rest));
        }
        Some(a) if a == serve::WORKER_ARG => {
            if let Some(runner) = args.next() {
                std::process::exit(commands::run::worker::main(std::path::Path::new(&runner)));
            }
        }
        // The command agents run most, parsed without the rest of the tree.
        Some(a) if a == "run" => {
            if let Some(run) = commands::run_args(args) {
                raise_descriptor_limit();
                std::process::exit(run.execute());
            }
        }
        _ => {}
    }
    raise_descriptor_limit();
    std::process::exit(commands::Cli::parse().execute());
}

/// Raise this process's soft limit on open descriptors to its hard limit
/// (as Go's runtime does at start). Every run this process hosts may hold
/// up to `MAX_OPEN_FILES` files and `MAX_OPEN_SOCKETS` sockets at once; a
/// soft limit of 1,024, common on desktops, would let two hoarding runs
/// starve the host itself of descriptors long before any bound is met.
/// The hard limit stays what the operator set.
fn raise_descriptor_limit() {
    use rustix::process::{Resource, getrlimit, setrlimit};
    let mut limit = getrlimit(Resource::Nofile);
    if limit.maximum.is_some() && limit.current < limit.maximum {
        limit.current = limit.maximum;
        // Refused (a sandbox forbidding it): the soft limit stays as it was.
        let _ = setrlimit(Resource::Nofile, limit);
    }
}
