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
mod tool_helper;

use clap::Parser;

fn main() {
    if std::env::args_os()
        .nth(1)
        .is_some_and(|a| a == tool_helper::HELPER_ARG)
    {
        std::process::exit(tool_helper::serve());
    }
    std::process::exit(commands::Cli::parse().execute());
}
