//! `sbx-wasm serve` driven over real TCP connections, for the tests of
//! services (0.2's and 0.3's).

use crate::sbx_bin;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A running `sbx-wasm serve`, killed when dropped.
pub struct Served {
    child: Child,
    /// The address it listens on (`127.0.0.1:PORT`).
    pub addr: String,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `sbx-wasm serve --caps caps.toml --audit audit.jsonl EXTRA COMPONENT`
/// in `dir`, on a free loopback port, once it says where it listens.
pub fn serve(dir: &std::path::Path, component: &std::path::Path, extra: &[&str]) -> Served {
    let mut child = Command::new(sbx_bin())
        .current_dir(dir)
        .args(["serve", "--caps", "caps.toml", "--addr", "127.0.0.1:0"])
        .args(["--audit", "audit.jsonl"])
        .args(extra)
        .arg(component)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    let addr = first
        .strip_prefix("Serving HTTP on http://")
        .and_then(|a| a.strip_suffix('/'))
        .unwrap_or_else(|| panic!("unexpected first line: {first}"))
        .to_string();
    // The rest of stderr (one line per request) is drained so the server
    // never blocks on it.
    std::thread::spawn(move || for _ in lines {});
    Served { child, addr }
}

/// One request over a fresh connection: the status and the body.
pub fn request(addr: &str, method: &str, path: &str, body: &[u8]) -> (u16, Vec<u8>) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nhost: {addr}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    )
    .unwrap();
    s.write_all(body).unwrap();
    let mut got = Vec::new();
    s.read_to_end(&mut got).unwrap();
    let text = String::from_utf8_lossy(&got);
    let status = text[9..12].parse().unwrap();
    let start = text.find("\r\n\r\n").unwrap() + 4;
    (status, got[start..].to_vec())
}

/// A status and body as one line: `STATUS BODY`.
pub fn text(r: &(u16, Vec<u8>)) -> String {
    format!("{} {}", r.0, String::from_utf8_lossy(&r.1))
}
