//! A WASI 0.3 command (async `wasi:cli/run@0.3.0`), built with the `wasip3`
//! bindings and no WASI 0.2 import of its own: what the host's 0.3 path
//! runs. Its first argument picks what it does:
//!
//! - `hello`: prints one line with its arguments, an environment variable,
//!   a random number and both clocks' readings.
//! - `dirs`: prints each preopened folder the host lends it (a line each).
//! - `files DIR`: through the preopen DIR (holding `in.txt`), a line per
//!   call: a read, a stat, a listing, then what the host should refuse (a
//!   `..`, a write, a mkdir, an unlink, a path outside every mount, an
//!   absolute path).
//! - `writes DIR`: through the writable preopen DIR: creates `new.txt`
//!   with a line written through a stream, stats it, makes a folder, renames
//!   the file into it, links it, tries to link, remove and rename the
//!   folder itself, unlinks a file that is not there and plants a symlink
//!   out.
//! - `fill N FILES`: writes N bytes into each of FILES new files in `/out`.
//! - `hole AT`: writes one byte at offset AT of a new file in `/out`.
//! - `resize TO`: sets a new file in `/out` to TO bytes (`set-size`).
//! - `sleep MS`: waits MS milliseconds on the monotonic clock, then prints.
//! - `spin`: loops forever (fuel or the wall ends it).
//! - `grow`: allocates memory until the host refuses (the memory budget).
//! - `flood N`: writes N lines of 100 bytes, ignoring refusals, then
//!   says how many were taken.
//! - `streams N`: holds N streams open (host handles).
//! - `waits N`: starts N hour-long waits at once and holds them.
//! - `fail`: exits with an error status.
//!
//! `p3_socket.rs` is its neighbour that imports 0.3's sockets.

#![no_main]

wasip3::cli::command::export!(P3Agent);

struct P3Agent;

impl wasip3::exports::cli::run::Guest for P3Agent {
    async fn run() -> Result<(), ()> {
        let args = wasip3::cli::environment::get_arguments();
        let mode = args.get(1).map(String::as_str).unwrap_or("hello");
        match mode {
            "hello" => {
                let env = wasip3::cli::environment::get_environment();
                let greeting = env
                    .iter()
                    .find(|(k, _)| k == "GREETING")
                    .map_or("-", |(_, v)| v.as_str());
                let random = wasip3::random::random::get_random_u64();
                let mono = wasip3::clocks::monotonic_clock::now();
                let wall = wasip3::clocks::system_clock::now();
                let line = format!(
                    "hello from wasi 0.3: args={} greeting={greeting} random={random} \
                     mono={mono} wall={}\n",
                    args.len(),
                    wall.seconds
                );
                out(line).await;
            }
            "dirs" => {
                let dirs = wasip3::filesystem::preopens::get_directories();
                let mut text = format!("{} folders\n", dirs.len());
                for (_, path) in &dirs {
                    text.push_str(path);
                    text.push('\n');
                }
                out(text).await;
            }
            "files" => {
                out(files(args.get(2).map_or("/data", String::as_str)).await).await;
            }
            "writes" => {
                out(writes(args.get(2).map_or("/out", String::as_str)).await).await;
            }
            "fill" => {
                let n: usize = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(1 << 20);
                let files: u32 = args.get(3).and_then(|a| a.parse().ok()).unwrap_or(1);
                out(fill(n, files).await).await;
            }
            "sleep" => {
                let ms: u64 = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(1000);
                wasip3::clocks::monotonic_clock::wait_for(ms * 1_000_000).await;
                out(format!("slept {ms} ms\n")).await;
            }
            "spin" => {
                let mut x = 0u64;
                loop {
                    x = std::hint::black_box(x.wrapping_add(1));
                }
            }
            "grow" => {
                let mut held: Vec<Vec<u8>> = Vec::new();
                loop {
                    held.push(vec![1u8; 1 << 20]);
                    std::hint::black_box(&held);
                }
            }
            "flood" => {
                // Ignores every refusal: only the host can stop it.
                let lines: u32 = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(1000);
                let mut taken = 0;
                for i in 0..lines {
                    taken += u32::from(out(format!("line {i:>5} {}\n", "x".repeat(80))).await);
                }
                out(format!("flooded: {taken} of {lines} lines taken\n")).await;
            }
            "streams" => {
                // Host handles, not guest memory: N streams held open.
                let n: u32 = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(1000);
                let mut held = Vec::new();
                for _ in 0..n {
                    held.push(wasip3::wit_stream::new::<u8>());
                }
                out(format!("holding {} streams\n", held.len())).await;
            }
            "waits" => {
                // Host calls left pending: N hour-long waits started at once.
                use std::future::Future;
                let n: u32 = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(1000);
                let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
                let mut held = Vec::new();
                for _ in 0..n {
                    let mut wait =
                        Box::pin(wasip3::clocks::monotonic_clock::wait_for(3_600_000_000_000));
                    let _ = wait.as_mut().poll(&mut cx);
                    held.push(wait);
                }
                out(format!("{} waits pending\n", held.len())).await;
            }
            "hole" => {
                let at: u64 = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(0);
                let r = match preopen("/out") {
                    Some(d) => put_at(&d, "hole.bin", b"x".to_vec(), at).await,
                    None => Err(wasip3::filesystem::types::ErrorCode::NoEntry),
                };
                out(format!("hole: {r:?}\n")).await;
            }
            "resize" => {
                let to: u64 = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(0);
                let r = match preopen("/out") {
                    Some(d) => resize(&d, "grown.bin", to).await,
                    None => Err(wasip3::filesystem::types::ErrorCode::NoEntry),
                };
                out(format!("resize: {r:?}\n")).await;
            }
            "fail" => {
                out("failing\n".into()).await;
                return Err(());
            }
            other => {
                out(format!("unknown mode {other}\n")).await;
                return Err(());
            }
        }
        Ok(())
    }
}

/// The `files` mode's lines.
async fn files(dir: &str) -> String {
    use wasip3::filesystem::types::{DescriptorFlags, OpenFlags, PathFlags};
    let dirs = wasip3::filesystem::preopens::get_directories();
    let names: Vec<&str> = dirs.iter().map(|(_, p)| p.as_str()).collect();
    let mut text = format!("preopens: {}\n", names.join(" "));
    let Some((d, _)) = dirs.iter().find(|(_, p)| p == dir) else {
        return text + "no such preopen\n";
    };
    let read = PathFlags::empty();
    let got = match d
        .open_at(
            read,
            "in.txt".into(),
            OpenFlags::empty(),
            DescriptorFlags::READ,
        )
        .await
    {
        Ok(f) => {
            let (data, done) = f.read_via_stream(0);
            let bytes = data.collect().await;
            let _ = done.await;
            String::from_utf8_lossy(&bytes).into_owned()
        }
        Err(e) => format!("{e:?}"),
    };
    text += &format!("read: {got}\n");
    match d.stat_at(read, "in.txt".into()).await {
        Ok(st) => text += &format!("stat: {} bytes\n", st.size),
        Err(e) => text += &format!("stat: {e:?}\n"),
    }
    let (entries, done) = d.read_directory();
    let mut listed: Vec<String> = entries
        .collect()
        .await
        .into_iter()
        .map(|e| e.name)
        .collect();
    let _ = done.await;
    listed.sort();
    text += &format!("list: {}\n", listed.join(" "));
    let code = |r: Result<(), wasip3::filesystem::types::ErrorCode>| match r {
        Ok(()) => "ok".to_string(),
        Err(e) => format!("{e:?}"),
    };
    let opened = |r: Result<wasip3::filesystem::types::Descriptor, _>| code(r.map(drop));
    let dotdot = d
        .open_at(
            read,
            "sub/../in.txt".into(),
            OpenFlags::empty(),
            DescriptorFlags::READ,
        )
        .await;
    text += &format!("dotdot: {}\n", opened(dotdot));
    let written = d
        .open_at(
            read,
            "in.txt".into(),
            OpenFlags::TRUNCATE,
            DescriptorFlags::WRITE,
        )
        .await;
    text += &format!("write: {}\n", opened(written));
    text += &format!(
        "mkdir: {}\n",
        code(d.create_directory_at("new".into()).await)
    );
    text += &format!(
        "unlink: {}\n",
        code(d.unlink_file_at("in.txt".into()).await)
    );
    let absolute = d
        .open_at(
            read,
            "/etc/passwd".into(),
            OpenFlags::empty(),
            DescriptorFlags::READ,
        )
        .await;
    text += &format!("absolute: {}\n", opened(absolute));
    if let Some((root, _)) = dirs.iter().find(|(_, p)| p == "/") {
        let outside = root
            .open_at(
                read,
                "etc/passwd".into(),
                OpenFlags::empty(),
                DescriptorFlags::READ,
            )
            .await;
        text += &format!("outside: {}\n", opened(outside));
    }
    text
}

/// The preopen at `path`.
fn preopen(path: &str) -> Option<wasip3::filesystem::types::Descriptor> {
    wasip3::filesystem::preopens::get_directories()
        .into_iter()
        .find(|(_, p)| p == path)
        .map(|(d, _)| d)
}

/// `bytes` written through a stream into `name` (created) under `dir`.
async fn put(
    dir: &wasip3::filesystem::types::Descriptor,
    name: &str,
    bytes: Vec<u8>,
) -> Result<(), wasip3::filesystem::types::ErrorCode> {
    put_at(dir, name, bytes, 0).await
}

/// Write `bytes` at `offset` into a new file `name` in `dir`.
/// The file `name` in `dir`, created (or emptied) for writing.
async fn create(
    dir: &wasip3::filesystem::types::Descriptor,
    name: &str,
) -> Result<wasip3::filesystem::types::Descriptor, wasip3::filesystem::types::ErrorCode> {
    use wasip3::filesystem::types::{DescriptorFlags, OpenFlags, PathFlags};
    dir.open_at(
        PathFlags::empty(),
        name.into(),
        OpenFlags::CREATE | OpenFlags::TRUNCATE,
        DescriptorFlags::WRITE,
    )
    .await
}

/// A new file `name` in `dir` grown to `size` bytes by `set-size`.
async fn resize(
    dir: &wasip3::filesystem::types::Descriptor,
    name: &str,
    size: u64,
) -> Result<(), wasip3::filesystem::types::ErrorCode> {
    create(dir, name).await?.set_size(size).await
}

async fn put_at(
    dir: &wasip3::filesystem::types::Descriptor,
    name: &str,
    bytes: Vec<u8>,
    offset: u64,
) -> Result<(), wasip3::filesystem::types::ErrorCode> {
    let f = create(dir, name).await?;
    let (mut tx, rx) = wasip3::wit_stream::new();
    let done = f.write_via_stream(rx, offset);
    let left = tx.write_all(bytes).await;
    drop(tx);
    done.await?;
    if !left.is_empty() {
        return Err(wasip3::filesystem::types::ErrorCode::Io);
    }
    Ok(())
}

/// The `writes` mode's lines.
async fn writes(path: &str) -> String {
    use wasip3::filesystem::types::PathFlags;
    let Some(d) = preopen(path) else {
        return "no such preopen\n".into();
    };
    let show = |r: Result<(), wasip3::filesystem::types::ErrorCode>| match r {
        Ok(()) => "ok".to_string(),
        Err(e) => format!("{e:?}"),
    };
    let mut text = format!(
        "put: {}\n",
        show(put(&d, "new.txt", b"written by 0.3\n".to_vec()).await)
    );
    match d.stat_at(PathFlags::empty(), "new.txt".into()).await {
        Ok(st) => text += &format!("stat: {} bytes\n", st.size),
        Err(e) => text += &format!("stat: {e:?}\n"),
    }
    text += &format!(
        "mkdir: {}\n",
        show(d.create_directory_at("dir".into()).await)
    );
    let moved = d
        .rename_at("new.txt".into(), &d, "dir/moved.txt".into())
        .await;
    text += &format!("rename: {}\n", show(moved));
    let alias = d
        .link_at(
            PathFlags::empty(),
            "dir/moved.txt".into(),
            &d,
            "alias.txt".into(),
        )
        .await;
    text += &format!("link: {}\n", show(alias));
    let itself = d
        .link_at(PathFlags::empty(), ".".into(), &d, "self".into())
        .await;
    text += &format!("link itself: {}\n", show(itself));
    // The mount's root itself: neither removed nor renamed.
    text += &format!(
        "rmdir itself: {}\n",
        show(d.remove_directory_at(".".into()).await)
    );
    let gone = d.rename_at(".".into(), &d, "gone".into()).await;
    text += &format!("rename itself: {}\n", show(gone));
    text += &format!(
        "unlink missing: {}\n",
        show(d.unlink_file_at("gone.txt".into()).await)
    );
    let escape = d.symlink_at("/etc/passwd".into(), "link".into()).await;
    text += &format!("symlink out: {}\n", show(escape));
    text
}

/// The `fill` mode's line.
async fn fill(n: usize, files: u32) -> String {
    let Some(d) = preopen("/out") else {
        return "no /out\n".into();
    };
    let mut done = 0;
    for i in 0..files {
        if put(&d, &format!("fill{i}.bin"), vec![7u8; n]).await.is_ok() {
            done += 1;
        }
    }
    format!("filled {done} of {files}\n")
}

/// Write `text` to stdout through a stream, as WASI 0.3 does; whether all
/// of it was taken.
async fn out(text: String) -> bool {
    let (mut tx, rx) = wasip3::wit_stream::new();
    let done = wasip3::cli::stdout::write_via_stream(rx);
    let left = tx.write_all(text.into_bytes()).await;
    drop(tx);
    done.await.is_ok() && left.is_empty()
}
