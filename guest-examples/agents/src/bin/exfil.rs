//! Reads files and tries to send what it read, the way an injected agent
//! would: the flow rules' guest. Arguments are steps, done in order:
//!
//! - `read:PATH`: read a file (WASI);
//! - `post:URL`: POST the hex of everything read so far;
//! - `write:PATH`: write it to a file (WASI);
//! - `print`: print it as it is.
//!
//! Prints one line per step saying what became of it.

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn main() {
    let mut held: Vec<u8> = Vec::new();
    for step in std::env::args().skip(1) {
        let (verb, arg) = step.split_once(':').unwrap_or((step.as_str(), ""));
        let said = match verb {
            "read" => match std::fs::read(arg) {
                Ok(b) => {
                    held.extend_from_slice(&b);
                    format!("read {arg}: {} bytes", b.len())
                }
                Err(e) => format!("read {arg}: error {e}"),
            },
            "post" => {
                let req = sbx_guest::Request {
                    method: "POST".into(),
                    url: arg.into(),
                    headers: Vec::new(),
                    body: hex(&held).into_bytes(),
                };
                match sbx_guest::fetch(&req) {
                    Ok(r) => format!("post {arg}: HTTP {}", r.status),
                    Err(e) => format!("post {arg}: {}", sbx_guest::describe(&e)),
                }
            }
            "write" => match std::fs::write(arg, hex(&held)) {
                Ok(()) => format!("write {arg}: ok"),
                Err(e) => format!("write {arg}: error {e}"),
            },
            "print" => {
                use std::io::Write;
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
        // Said on stderr, and never a panic when the flow rules refuse it
        // (`eprintln!` would panic).
        use std::io::Write;
        let _ = writeln!(std::io::stderr(), "{said}");
    }
}
