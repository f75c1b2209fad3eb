//! The benign agent's work, shared with its changed version (the replay
//! tests' "modified guest"): read a CSV, fetch a granted URL, call the
//! `word_count` tool, write a summary.

use std::fs;
use std::process::ExitCode;

/// Run the agent; `then_fetch` is a second URL the changed version also
/// fetches, right after the first.
pub fn run(then_fetch: Option<&str>) -> ExitCode {
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
    let get = |url: &str| match sbx_guest::get(url) {
        Ok(r) => String::from_utf8_lossy(&r.body).trim().to_string(),
        Err(e) => sbx_guest::describe(&e),
    };
    let status = match std::env::args().nth(1) {
        Some(url) => get(&url),
        None => "no url".into(),
    };
    if let Some(url) = then_fetch {
        println!("also fetched: {}", get(url));
    }
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
