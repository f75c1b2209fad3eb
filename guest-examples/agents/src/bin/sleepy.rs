//! Hostile: blocks in the host for an hour (ends as max_wall).
fn main() {
    println!("going to sleep");
    std::thread::sleep(std::time::Duration::from_secs(3600));
    println!("woke up");
}
