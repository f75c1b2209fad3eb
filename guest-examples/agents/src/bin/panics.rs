//! Misbehaving but not hostile: panics (a trap that is not a limit, so the
//! run ends as `trapped` with the trap message).
fn main() {
    let items: Vec<u32> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    println!("first item: {}", items[0]);
}
