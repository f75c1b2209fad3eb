//! Benchmark: the trivial guest (starts, prints one line, exits).
fn main() {
    println!("ok");
}
