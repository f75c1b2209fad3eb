//! Benchmark: CPU-bound work (the same source the bench runs natively).
#[path = "../cpu_work.rs"]
mod cpu_work;

fn main() {
    let n: u32 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(2_000_000);
    println!("{}", cpu_work::primes_below(n));
}
