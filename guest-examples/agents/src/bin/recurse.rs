//! Hostile: unbounded recursion (ends as stack_overflow).
#[inline(never)]
fn down(n: u64) -> u64 {
    if n == u64::MAX {
        return 0;
    }
    std::hint::black_box(down(std::hint::black_box(n + 1))) + 1
}

fn main() {
    println!("{}", down(0));
}
