//! The `sbx-wasm` command line: parse, call the library, print.

#![forbid(unsafe_code)]

mod cli;
mod progress;
mod python_cmd;
mod run_cmd;

use clap::Parser;

fn main() {
    let args = cli::Cli::parse();
    std::process::exit(cli::run(args));
}
