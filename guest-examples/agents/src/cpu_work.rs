//! CPU-bound work shared by the `cpu` guest and the native side of the
//! benchmark: the same source, compiled both ways.

/// How many primes are below `n` (sieve of Eratosthenes, then a checksum
/// pass so the work cannot be skipped).
pub fn primes_below(n: u32) -> u64 {
    let n = n as usize;
    let mut composite = vec![false; n];
    let mut count = 0u64;
    let mut i = 2;
    while i < n {
        if !composite[i] {
            count += 1;
            let mut j = i * i;
            while j < n {
                composite[j] = true;
                j += i;
            }
        }
        i += 1;
    }
    count
}
