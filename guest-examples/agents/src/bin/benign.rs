//! A useful agent: reads a CSV from /work, fetches a granted URL (first
//! argument), calls the granted `word_count` tool, and writes a summary to
//! /work/out/summary.txt.

use std::fs;
use std::process::ExitCode;

fn main() -> ExitCode {
    let Ok(csv) = fs::read_to_string("/work/data.csv") else {
        eprintln!("cannot read /work/data.csv");
        return ExitCode::from(1);
    };
    let mut total = 0i64;
    let mut rows = 0;
    for line in csv.lines().skip(1) {
        if let Some(v) = line
            .split(',')
            .nth(1)
            .and_then(|v| v.trim().parse::<i64>().ok())
        {
            total += v;
            rows += 1;
        }
    }
    let status = match std::env::args().nth(1) {
        Some(url) => match sbx_guest::get(&url) {
            Ok(r) => String::from_utf8_lossy(&r.body).trim().to_string(),
            Err(e) => sbx_guest::describe(&e),
        },
        None => "no url".into(),
    };
    let words = sbx_guest::call_tool("word_count", &csv)
        .map(|w| w.trim().to_string())
        .unwrap_or_else(|e| sbx_guest::describe(&e));
    let summary = format!("rows={rows} total={total} api={status} words={words}\n");
    if let Err(e) = fs::write("/work/out/summary.txt", &summary) {
        eprintln!("cannot write summary: {e}");
        return ExitCode::from(2);
    }
    print!("{summary}");
    ExitCode::SUCCESS
}
