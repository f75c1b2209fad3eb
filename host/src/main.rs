//! The `sbx-wasm` command line: parse, call the library, print.

#![forbid(unsafe_code)]

mod cli;
mod kernel_cmd;
mod progress;
mod python_cmd;
mod run_cmd;
mod tool_helper;

use clap::Parser;

fn main() {
    if std::env::args_os()
        .nth(1)
        .is_some_and(|a| a == tool_helper::HELPER_ARG)
    {
        std::process::exit(tool_helper::serve());
    }
    let args = cli::Cli::parse();
    std::process::exit(cli::run(args));
}
