//! Probes what a pooled slot keeps between runs. `residue write MS`: fills
//! 8 MiB past the start of memory's growth with a marker, prints where,
//! then waits MS milliseconds (the test pages the memory out meanwhile)
//! and exits without clearing it. `residue read ADDR`: grows memory to
//! cover the same 8 MiB and counts the marker's copies in it, without
//! writing a byte there first (what the run before left, if anything).

use core::arch::wasm32::{memory_grow, memory_size};

const MARK: &[u8; 16] = b"RESIDUE-OF-RUN-1";
const LEN: usize = 8 << 20;
const PAGE: usize = 65536;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some("write") => {
            let wait = args.get(2).and_then(|m| m.parse().ok()).unwrap_or(0);
            // Fresh pages past the current end of memory: grown here, so
            // no allocator holds them.
            let start = memory_size(0) * PAGE;
            assert!(memory_grow(0, LEN / PAGE) != usize::MAX, "no room to grow");
            for offset in (0..LEN).step_by(MARK.len()) {
                // SAFETY: [start, start + LEN) was just grown and is ours.
                unsafe {
                    std::ptr::copy_nonoverlapping(MARK.as_ptr(), (start + offset) as *mut u8, 16)
                };
            }
            println!("{start}");
            std::thread::sleep(std::time::Duration::from_millis(wait));
        }
        Some("read") => {
            let start: usize = args[2].parse().expect("an address");
            let have = memory_size(0) * PAGE;
            if have < start + LEN {
                let grow = (start + LEN - have).div_ceil(PAGE);
                assert!(memory_grow(0, grow) != usize::MAX, "no room to grow");
            }
            let mut found = 0usize;
            for offset in (0..LEN).step_by(MARK.len()) {
                let mut seen = [0u8; 16];
                for (i, b) in seen.iter_mut().enumerate() {
                    // SAFETY: in bounds: memory covers [start, start + LEN).
                    *b = unsafe { std::ptr::read_volatile((start + offset + i) as *const u8) };
                }
                found += usize::from(&seen == MARK);
            }
            println!("{found}");
        }
        _ => eprintln!("usage: residue write MS | residue read ADDR"),
    }
}
