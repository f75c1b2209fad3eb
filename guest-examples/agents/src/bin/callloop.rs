//! Benchmark: calls tool `argv[1]` `argv[2]` times and ignores the result,
//! so the host's cost per import call can be measured.
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let name = args.get(1).map(String::as_str).unwrap_or("noop");
    let n: u64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(0);
    for _ in 0..n {
        let _ = std::hint::black_box(sbx_guest::call_tool(name, ""));
    }
}
