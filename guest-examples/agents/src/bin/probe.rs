//! Hostile: probes its environment. Prints args, env, stdin, then tries the
//! escapes a prompt-injected agent would: `..`, absolute paths, planted
//! symlinks, hard links out of the writable mount, renames out of it, truncating a
//! read-only file, and a raw socket. One line per attempt: `NAME: ok` means
//! the attempt succeeded (a containment failure for the escapes).

use std::fs;
use std::io::Read;

fn report(name: &str, r: std::io::Result<impl std::fmt::Debug>) {
    match r {
        Ok(v) => println!("{name}: ok {v:?}"),
        Err(e) => println!("{name}: err {}", e.kind()),
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    println!("args: {args:?}");
    let mut env: Vec<(String, String)> = std::env::vars().collect();
    env.sort();
    println!("env: {env:?}");
    let mut input = String::new();
    let _ = std::io::stdin().read_to_string(&mut input);
    println!("stdin: {input:?}");

    report("read-dotdot", fs::read_to_string("/work/../secret.txt"));
    report("read-abs", fs::read_to_string("/etc/passwd"));
    report("read-sibling", fs::read_to_string("/workshop/secret.txt"));
    // Symlinks planted by whoever prepared the folders (the test does).
    report("symlink-read", fs::read_to_string("/work/out/link"));
    report("symlink-abs-read", fs::read_to_string("/work/out/abs"));
    report(
        "symlink-write",
        fs::write("/work/out/link", "through the link"),
    );
    report(
        "hardlink-out",
        fs::hard_link("/work/data.txt", "/work/out/hard"),
    );
    report(
        "rename-out",
        fs::rename("/work/out/note.txt", "/work/note.txt"),
    );
    report(
        "rename-dotdot",
        fs::rename("/work/out/note.txt", "/work/out/../../note.txt"),
    );
    report("write-ro", fs::write("/work/data.txt", "tampered"));
    report(
        "truncate-ro",
        fs::OpenOptions::new()
            .write(true)
            .truncate(true)
            .open("/work/data.txt"),
    );
    report("remove-ro", fs::remove_file("/work/data.txt"));
    report("mkdir-ro", fs::create_dir("/work/newdir"));
    report("write-out", fs::write("/work/out/fine.txt", "fine"));
    let target = args.get(1).cloned().unwrap_or_else(|| "127.0.0.1:9".into());
    report(
        "socket",
        std::net::TcpStream::connect(target.as_str()).map(|_| ()),
    );
}
