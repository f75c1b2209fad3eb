//! A WASI 0.3 command (async `wasi:cli/run@0.3.0`), built with the `wasip3`
//! bindings and no WASI 0.2 import of its own: what the host's 0.3 path
//! runs. Its first argument picks what it does:
//!
//! - `hello`: prints one line with its arguments, an environment variable,
//!   a random number and both clocks' readings.
//! - `dirs`: prints each preopened folder the host lends it (a line each).
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

/// Write `text` to stdout through a stream, as WASI 0.3 does; whether all
/// of it was taken.
async fn out(text: String) -> bool {
    let (mut tx, rx) = wasip3::wit_stream::new();
    let done = wasip3::cli::stdout::write_via_stream(rx);
    let left = tx.write_all(text.into_bytes()).await;
    drop(tx);
    done.await.is_ok() && left.is_empty()
}
