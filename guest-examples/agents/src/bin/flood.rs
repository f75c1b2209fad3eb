//! Hostile: writes to stdout forever (ends as max_output_bytes).
use std::io::Write;

fn main() {
    let line = [b'A'; 1023];
    let mut out = std::io::stdout().lock();
    loop {
        if out
            .write_all(&line)
            .and_then(|()| out.write_all(b"\n"))
            .is_err()
        {
            // Keep trying: a hostile guest ignores errors.
            continue;
        }
    }
}
