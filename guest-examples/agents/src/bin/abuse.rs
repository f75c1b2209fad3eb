//! Hostile: abuses the host's own resources rather than escaping. One mode
//! per run, chosen by the first argument:
//!
//! - `bigstrings MIB`: hands an MIB-sized string to every host call (tool
//!   name, tool input, URL, header, file path) in a loop, until halted;
//! - `stdin`: reads stdin to the end and prints how many bytes came;
//! - `links`: plants symlinks in the write mount, escaping and not;
//! - `fill BYTES`: writes BYTES-sized files into the write mount until halted;
//! - `grow BYTES`: extends one file to BYTES with `set_len` (sparse growth);
//! - `hole AT` / `hole-at AT`: writes one byte at offset AT of a new file,
//!   after a seek (a stream from AT) or positioned (`write_at`);
//! - `stream-at AT`: writes one byte at offset AT of a new file through
//!   WASI's `write-via-stream` itself (a `u64` offset, which libc's
//!   signed one cannot carry past `i64::MAX`);
//! - `times`: creates a file and prints the times it sees;
//! - `rename-root`: tries to rename and remove the write mount itself, then
//!   renames a file inside it there and back;
//! - `hoard PATH N`: opens `PATH` `N` times, keeping every file open; prints
//!   how many opened and the first error, then whether one more opens once
//!   one is closed;
//! - `handles N`: makes `N` host resources (clock pollables) and keeps them
//!   all; prints how many it made.

use sbx_guest::Request;
use std::io::{Read, Write};

// wasi-libc's symlink(3) and pwrite(2): std's WASI forms are not stable yet.
unsafe extern "C" {
    fn symlink(target: *const std::ffi::c_char, link: *const std::ffi::c_char) -> i32;
    fn pwrite(fd: i32, buf: *const std::ffi::c_void, len: usize, offset: i64) -> isize;
}

fn make_symlink(target: &str, link: &str) -> std::io::Result<()> {
    let (t, l) = (
        std::ffi::CString::new(target)?,
        std::ffi::CString::new(link)?,
    );
    // SAFETY: two NUL-terminated strings that outlive the call.
    if unsafe { symlink(t.as_ptr(), l.as_ptr()) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

fn links() {
    let mk = |target: &str, link: &str| match make_symlink(target, link) {
        Ok(()) => println!("{link} -> {target}: made"),
        Err(e) => println!("{link} -> {target}: refused ({})", e.kind()),
    };
    mk("../../secret.txt", "/work/out/up");
    mk("/etc/passwd", "/work/out/abs");
    mk("sub/../../x", "/work/out/sneaky");
    mk("notes.txt", "/work/out/fine");
}

fn bigstrings(mib: usize) {
    let big = "A".repeat(mib << 20);
    let url = format!("http://127.0.0.1:9/{big}");
    let path = format!("/work/{big}");
    for i in 0u64.. {
        let _ = sbx_guest::call_tool(&big, "x");
        let _ = sbx_guest::call_tool("summarize", &big);
        let _ = sbx_guest::get(&url);
        let _ = sbx_guest::fetch(&Request {
            method: "GET".into(),
            url: "http://127.0.0.1:9/".into(),
            headers: vec![("X-Big".into(), big.clone())],
            body: Vec::new(),
        });
        let _ = std::fs::metadata(&path);
        if i % 16 == 0 {
            println!("round {i}");
        }
    }
}

fn fill(bytes: usize) {
    let chunk = vec![b'x'; bytes];
    for i in 0u64.. {
        let name = format!("/work/out/fill-{i}.bin");
        match std::fs::File::create(&name).and_then(|mut f| f.write_all(&chunk)) {
            Ok(()) => println!("wrote {name}"),
            Err(e) => println!("{name}: {}", e.kind()),
        }
    }
}

fn times() {
    std::fs::write("/work/out/t.txt", "t").unwrap();
    for p in ["/work/out/t.txt", "/work/notes.txt"] {
        let md = std::fs::metadata(p).unwrap();
        let secs = |t: std::io::Result<std::time::SystemTime>| {
            t.ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map(|d| d.as_nanos())
        };
        println!(
            "{p}: modified {:?} accessed {:?}",
            secs(md.modified()),
            secs(md.accessed())
        );
    }
}

fn hoard(path: &str, n: usize) {
    let mut held = Vec::new();
    let mut first_error = None;
    for _ in 0..n {
        match std::fs::File::open(path) {
            Ok(f) => held.push(f),
            Err(e) => {
                first_error = Some(e.kind());
                break;
            }
        }
    }
    println!("held {}, then {first_error:?}", held.len());
    held.pop();
    let again = std::fs::File::open(path).map(|_| ()).map_err(|e| e.kind());
    println!("after closing one: {again:?}");
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let num = |i: usize| args.get(i).and_then(|a| a.parse().ok()).unwrap_or(1usize);
    match args.get(1).map(String::as_str) {
        Some("bigstrings") => bigstrings(num(2)),
        Some("stdin") => {
            let mut buf = Vec::new();
            let n = std::io::stdin().read_to_end(&mut buf);
            println!("stdin: {:?} bytes", n.map_err(|e| e.kind()));
        }
        Some("links") => links(),
        Some("fill") => fill(num(2)),
        Some("grow") => {
            let f = std::fs::File::create("/work/out/sparse.bin").unwrap();
            // u64: a wasm32 usize cannot say ten gigabytes.
            let size = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(1u64);
            let r = f.set_len(size);
            println!("grow: {:?}", r.map_err(|e| e.kind()));
        }
        Some(mode @ ("hole" | "hole-at")) => {
            let at = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(0u64);
            let f = std::fs::File::create("/work/out/hole.bin").unwrap();
            let r = if mode == "hole" {
                use std::io::Seek;
                (&f).seek(std::io::SeekFrom::Start(at))
                    .and_then(|_| (&f).write_all(b"x"))
            } else {
                use std::os::fd::AsRawFd;
                let n = unsafe { pwrite(f.as_raw_fd(), b"x".as_ptr().cast(), 1, at as i64) };
                if n == 1 {
                    Ok(())
                } else {
                    Err(std::io::Error::last_os_error())
                }
            };
            println!("{mode}: {:?}", r.map_err(|e| e.kind()));
        }
        Some("times") => times(),
        Some("rename-root") => {
            let say = |what: &str, r: std::io::Result<()>| match r {
                Ok(()) => println!("{what}: ok"),
                Err(e) => println!("{what}: refused ({})", e.kind()),
            };
            say(
                "rename /work/out",
                std::fs::rename("/work/out", "/work/out-gone"),
            );
            say("remove /work/out", std::fs::remove_dir("/work/out"));
            say(
                "rename /work/out/keep.txt",
                std::fs::rename("/work/out/keep.txt", "/work/out/kept.txt")
                    .and_then(|()| std::fs::rename("/work/out/kept.txt", "/work/out/keep.txt")),
            );
        }
        Some("handles") => {
            let n = num(2);
            let mut kept = Vec::new();
            for _ in 0..n {
                kept.push(wasip2::clocks::monotonic_clock::subscribe_duration(1 << 40));
            }
            println!("made {}", kept.len());
        }
        Some("stream-at") => {
            let at: u64 = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(0);
            println!("stream-at: {:?}", stream_at("/work/out", "hole.bin", at));
        }
        Some("hoard") => hoard(args.get(2).map_or("/", String::as_str), num(3)),
        other => eprintln!("abuse: unknown mode {other:?}"),
    }
}

/// One byte at `at` of a new file `name` in the preopen `dir`, through
/// `write-via-stream`; the stream's failure as the file system's code.
fn stream_at(dir: &str, name: &str, at: u64) -> Result<(), String> {
    use wasip2::filesystem::types::{DescriptorFlags, OpenFlags, PathFlags};
    let dirs = wasip2::filesystem::preopens::get_directories();
    let (d, _) = dirs
        .iter()
        .find(|(_, p)| p == dir)
        .ok_or("no such preopen")?;
    let f = d
        .open_at(
            PathFlags::empty(),
            name,
            OpenFlags::CREATE | OpenFlags::TRUNCATE,
            DescriptorFlags::WRITE,
        )
        .map_err(|e| format!("{e:?}"))?;
    let out = f.write_via_stream(at).map_err(|e| format!("{e:?}"))?;
    match out.blocking_write_and_flush(b"x") {
        Ok(()) => Ok(()),
        Err(wasip2::io::streams::StreamError::LastOperationFailed(e)) => {
            let code = wasip2::filesystem::types::filesystem_error_code(&e);
            Err(code.map_or("other".into(), |c| c.name().to_string()))
        }
        Err(e) => Err(format!("{e:?}")),
    }
}
