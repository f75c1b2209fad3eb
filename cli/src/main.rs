//! The `sbx-wasm` command line: parse, call the library, print. The only
//! crate with clap and anyhow; the library (`sbx-wasm`) has neither.

#![forbid(unsafe_code)]
#![warn(unreachable_pub)]

mod commands;
mod common;
mod exit;
mod mcp;
mod output;
mod progress;
mod python;
mod serve;
mod tool_helper;

use clap::Parser;

fn main() {
    if std::env::args_os()
        .nth(1)
        .is_some_and(|a| a == tool_helper::HELPER_ARG)
    {
        std::process::exit(tool_helper::serve());
    }
    let mut args = std::env::args_os().skip(1);
    if args.next().is_some_and(|a| a == serve::worker::WORKER_ARG)
        && let Some(runner) = args.next()
    {
        std::process::exit(serve::worker::main(std::path::Path::new(&runner)));
    }
    std::process::exit(commands::Cli::parse().execute());
}
