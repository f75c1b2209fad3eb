//! Hostile: allocates until something stops it (ends as max_memory).
fn main() {
    let mut hoard: Vec<Vec<u8>> = Vec::new();
    loop {
        hoard.push(vec![1u8; 16 * 1024 * 1024]);
        println!("holding {} MiB", hoard.len() * 16);
    }
}
