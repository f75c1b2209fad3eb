//! Plain WASI, no sbx imports: what a program sees of its preopens and the
//! error codes of refusals, to compare a bare wasmtime with the sandbox.
//! Given read-only `/work` and read-write `/work/out`, it prints:
//!
//! - its preopens, in order (a program counting them, or taking the first
//!   as "the directory it was given", depends on that);
//! - a write through the first preopen, and an empty path on it;
//! - the error code of an absolute path on a descriptor, of a write through
//!   the read-only mount's descriptor, of a path outside every mount;
//! - `closed-stdout` mode: writes lines until stdout is closed, then says so
//!   on stderr and exits 0.

use std::io::Write;
use wasip2::filesystem::preopens::get_directories;
use wasip2::filesystem::types::{Descriptor, DescriptorFlags, OpenFlags, PathFlags};

fn open(dir: &Descriptor, path: &str, write: bool) -> String {
    let (of, df) = if write {
        (
            OpenFlags::CREATE,
            DescriptorFlags::READ | DescriptorFlags::WRITE,
        )
    } else {
        (OpenFlags::empty(), DescriptorFlags::READ)
    };
    match dir.open_at(PathFlags::empty(), path, of, df) {
        Ok(_) => "ok".into(),
        Err(code) => code.name().to_string(),
    }
}

fn main() {
    if std::env::args().nth(1).as_deref() == Some("closed-stdout") {
        let mut out = std::io::stdout();
        for n in 0u64.. {
            if let Err(e) = writeln!(out, "line {n}").and_then(|()| out.flush()) {
                eprintln!("stdout closed after {n} lines: {:?}", e.kind());
                return;
            }
        }
    }
    let dirs = get_directories();
    for (i, (_, path)) in dirs.iter().enumerate() {
        println!("preopen {i}: {path}");
    }
    let (first, first_path) = &dirs[0];
    println!(
        "write through the first ({first_path}): {}",
        open(first, "first.txt", true)
    );
    println!("empty path on {first_path}: {}", open(first, "", false));
    for (dir, path) in &dirs {
        if path == "/work" || path == "/" {
            println!("absolute on {path}: {}", open(dir, "/data.txt", false));
            println!(
                "write through read-only {path}: {}",
                open(dir, "new.txt", true)
            );
            println!("read through {path}: {}", open(dir, "data.txt", false));
        }
    }
    let relative = std::fs::read_to_string("data.txt");
    println!("relative data.txt: {:?}", relative.map_err(|e| e.kind()));
    let outside = std::fs::read("/nowhere/secret.txt").map(|_| ());
    println!("outside every mount: {:?}", outside.map_err(|e| e.kind()));
}
