//! A real HTTP/1.1 server on 127.0.0.1 for the tests: fixed routes (a
//! status page, big bodies, stalls, redirects, reflections) and the JSON
//! API of `api.rs`; it counts connections and records what it received.

use crate::api;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// How the test server answers a path.
#[derive(Clone, Copy, Debug)]
enum Route {
    Ok(&'static str),
    Big(usize),
    Stall,
    Drip,
    Redirect(&'static str),
    /// `/redirect-to/HOST:PORT/PATH` answers 302 to `http://HOST:PORT/PATH`.
    RedirectTo,
    /// `/echo-auth-to/HOST:PORT/PATH` answers 302 to
    /// `http://HOST:PORT/PATH?t=AUTH`, the request's `Authorization` value
    /// percent-encoded into the query (a server that leaks a credential into
    /// the hop it sends the client to).
    EchoAuthTo,
    /// 200 with 16 headers of 1 KiB each and a 2-byte body.
    BigHeaders,
    /// 200 reflecting the request's header values: plain, base64 and
    /// percent-encoded in the body, and the `authorization` value in an
    /// `x-reflect` response header (an echoing server).
    Reflect,
    NotFound,
    /// `/api/...`: the JSON API of `api.rs`.
    Api,
}

fn route(path: &str) -> Route {
    match path {
        "/status" => Route::Ok("ok"),
        "/big" => Route::Big(64 * 1024),
        "/stall" => Route::Stall,
        "/redirect" => Route::Redirect("http://evil.example/steal"),
        "/redirect-same" => Route::Redirect("/status"),
        "/redirect-loop" => Route::Redirect("/redirect-loop"),
        "/drip" => Route::Drip,
        "/headers" => Route::BigHeaders,
        "/reflect" => Route::Reflect,
        p if p.starts_with("/redirect-to/") => Route::RedirectTo,
        p if p.starts_with("/echo-auth-to/") => Route::EchoAuthTo,
        p if p.starts_with("/echo") => Route::Ok("echo"),
        p if p.starts_with("/api/") => Route::Api,
        _ => Route::NotFound,
    }
}

/// A real HTTP/1.1 server on 127.0.0.1 with an ephemeral port. It counts
/// every accepted connection and records request lines.
pub struct LoopbackServer {
    /// The port it listens on.
    pub port: u16,
    connections: Arc<AtomicUsize>,
    requests: Arc<Mutex<Vec<String>>>,
    headers: Arc<Mutex<Vec<String>>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl LoopbackServer {
    /// Start serving.
    pub fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let connections = Arc::new(AtomicUsize::new(0));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let headers = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (c, r, s) = (connections.clone(), requests.clone(), stop.clone());
        let h = headers.clone();
        let thread = std::thread::spawn(move || {
            for stream in listener.incoming() {
                if s.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                c.fetch_add(1, Ordering::SeqCst);
                let (r, h, s) = (r.clone(), h.clone(), s.clone());
                std::thread::spawn(move || serve(stream, &r, &h, &s));
            }
        });
        LoopbackServer {
            port,
            connections,
            requests,
            headers,
            stop,
            thread: Some(thread),
        }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn origin(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Connections accepted so far.
    pub fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }

    /// Request lines received so far.
    pub fn requests(&self) -> Vec<String> {
        self.requests.lock().unwrap().clone()
    }

    /// Every request header line received so far (`name: value`, as sent).
    pub fn headers(&self) -> Vec<String> {
        self.headers.lock().unwrap().clone()
    }
}

/// Bytes of header names and values `/headers` answers with (what the gate
/// charges for them).
pub const BIG_HEADER_BYTES: usize = 16 * (8 + 1024) + 14 + 1 + 10 + 5;

fn serve(
    stream: TcpStream,
    log: &Mutex<Vec<String>>,
    header_log: &Mutex<Vec<String>>,
    stop: &AtomicBool,
) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut line = String::new();
    if reader.read_line(&mut line).is_err() || line.is_empty() {
        return;
    }
    let mut content_length = 0usize;
    let mut these = Vec::new();
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).is_err() || h == "\r\n" || h.is_empty() {
            break;
        }
        if let Some(v) = h.to_ascii_lowercase().strip_prefix("content-length:") {
            content_length = v.trim().parse().unwrap_or(0);
        }
        header_log.lock().unwrap().push(h.trim_end().to_string());
        these.push(h.trim_end().to_string());
    }
    let mut body = vec![0; content_length.min(1 << 20)];
    let _ = reader.read_exact(&mut body);
    if !body.is_empty() {
        header_log
            .lock()
            .unwrap()
            .push(format!("body: {}", String::from_utf8_lossy(&body)));
    }
    log.lock().unwrap().push(line.trim_end().to_string());
    let path = line.split_whitespace().nth(1).unwrap_or("/").to_string();
    let mut stream = stream;
    let reply = |stream: &mut TcpStream, status: &str, extra: &str, body: &[u8]| {
        let head = format!(
            "HTTP/1.1 {status}\r\ncontent-length: {}\r\nconnection: close\r\n{extra}\r\n",
            body.len()
        );
        let _ = stream.write_all(head.as_bytes());
        let _ = stream.write_all(body);
    };
    match route(&path) {
        Route::Ok(text) => reply(&mut stream, "200 OK", "", text.as_bytes()),
        Route::Big(n) => reply(&mut stream, "200 OK", "", &vec![b'x'; n]),
        Route::Redirect(to) => reply(
            &mut stream,
            "302 Found",
            &format!("location: {to}\r\n"),
            b"",
        ),
        Route::RedirectTo => {
            let to = path.trim_start_matches("/redirect-to/");
            reply(
                &mut stream,
                "302 Found",
                &format!("location: http://{to}\r\n"),
                b"",
            )
        }
        Route::EchoAuthTo => {
            let to = path.trim_start_matches("/echo-auth-to/");
            let auth = these
                .iter()
                .find_map(|h| {
                    let (k, v) = h.split_once(':')?;
                    k.eq_ignore_ascii_case("authorization")
                        .then(|| v.trim().to_string())
                })
                .unwrap_or_default();
            let pct: String = auth
                .bytes()
                .map(|c| match c {
                    b' ' => "+".to_string(),
                    c if c.is_ascii_alphanumeric() || c == b'/' => (c as char).to_string(),
                    c => format!("%{c:02x}"),
                })
                .collect();
            reply(
                &mut stream,
                "302 Found",
                &format!("location: http://{to}?t={pct}\r\n"),
                b"",
            )
        }
        Route::BigHeaders => {
            let extra: String = (0..16)
                .map(|i| format!("x-big-{i:02}: {}\r\n", "h".repeat(1024)))
                .collect();
            reply(&mut stream, "200 OK", &extra, b"ok")
        }
        Route::NotFound => reply(&mut stream, "404 Not Found", "", b"not found"),
        Route::Api => {
            let method = line.split_whitespace().next().unwrap_or("GET");
            let a = api::answer(method, &path, &these, &body);
            reply(&mut stream, a.status, &a.headers, &a.body)
        }
        Route::Reflect => {
            use base64::Engine as _;
            let mut text = String::new();
            let mut auth = String::new();
            for h in &these {
                let (k, v) = h.split_once(':').unwrap_or((h, ""));
                let v = v.trim();
                if k.eq_ignore_ascii_case("authorization") {
                    auth = v.to_string();
                }
                let b64 = base64::engine::general_purpose::STANDARD.encode(v);
                let pct: String = v
                    .bytes()
                    .map(|c| {
                        if c.is_ascii_alphanumeric() {
                            (c as char).to_string()
                        } else {
                            format!("%{c:02X}")
                        }
                    })
                    .collect();
                text += &format!("{k}: {v} | {b64} | {pct}\n");
            }
            reply(
                &mut stream,
                "200 OK",
                &format!("x-reflect: {auth}\r\n"),
                text.as_bytes(),
            )
        }
        Route::Drip => {
            let _ = stream.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\n");
            for _ in 0..100 {
                if stop.load(Ordering::SeqCst) || stream.write_all(b"x").is_err() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        }
        Route::Stall => {
            for _ in 0..100 {
                if stop.load(Ordering::SeqCst) {
                    break;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }
}

impl Drop for LoopbackServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(("127.0.0.1", self.port));
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
