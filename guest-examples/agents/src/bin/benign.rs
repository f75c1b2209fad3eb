//! A useful agent: reads a CSV from /work, fetches a granted URL (first
//! argument), calls the granted `word_count` tool, and writes a summary to
//! /work/out/summary.txt.

#[path = "../summary.rs"]
mod summary;

fn main() -> std::process::ExitCode {
    summary::run(None)
}
