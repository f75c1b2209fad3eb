//! Arbitrary op sequences through the gate over a real temp tree.
//!
//! Oracles: no panic; nothing outside the write mount changes (the tree is
//! compared byte for byte); the canary outside the mounts never appears in
//! any result; a fetch or tool call refused before its effect (capability,
//! max_ops, max_wall) never reaches the network or tool layer; once a hard
//! limit trips, every later op is refused as hard.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use sbx_wasm::Services;
use sbx_wasm::net::{FetchLimits, FetchRequest, FetchResponse, Net, NetError, StaticResolver};
use sbx_wasm::tools::{ToolError, ToolRegistry};
use sbx_wasm::{Capabilities, Op, Sandbox, TickClock, Violation};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

const CANARY: &str = "CANARY-outside-the-mounts";

#[derive(Arbitrary, Debug, Clone, Copy)]
enum Tok {
    Empty,
    Dot,
    DotDot,
    A,
    Work,
    Workshop,
    Out,
    Etc,
    Link,
    LinkDir,
    AbsLink,
    Nul,
    Backslash,
    Data,
}

impl Tok {
    fn text(self) -> &'static str {
        match self {
            Tok::Empty => "",
            Tok::Dot => ".",
            Tok::DotDot => "..",
            Tok::A => "a",
            Tok::Work => "work",
            Tok::Workshop => "workshop",
            Tok::Out => "out",
            Tok::Etc => "etc",
            Tok::Link => "link",
            Tok::LinkDir => "linkdir",
            Tok::AbsLink => "abslink",
            Tok::Nul => "a\0b",
            Tok::Backslash => "a\\..",
            Tok::Data => "data.txt",
        }
    }
}

const URLS: &[&str] = &[
    "http://allowed.test/x",
    "http://allowed.test@evil.test/",
    "http://evil.test/steal",
    "http://127.0.0.1:8080/",
    "http://0x7f.1:8080/",
    "http://private.test/",
    "https://allowed.test/",
    "file:///etc/passwd",
    "http://[::1]:8080/",
    "not a url",
];

const TOOLS: &[&str] = &["t", "u", "T", "t ", "", "tt"];

#[derive(Arbitrary, Debug)]
enum FuzzOp {
    Read(Vec<Tok>),
    Write(Vec<Tok>, Vec<u8>),
    List(Vec<Tok>),
    Stat(Vec<Tok>),
    Remove(Vec<Tok>),
    Mkdir(Vec<Tok>),
    Fetch(u8),
    Tool(u8, String),
}

#[derive(Arbitrary, Debug)]
struct Input {
    ops: Vec<FuzzOp>,
    max_ops: u8,
    max_output: u16,
}

fn path(toks: &[Tok]) -> String {
    let mut s = String::from("/");
    s += &toks.iter().map(|t| t.text()).collect::<Vec<_>>().join("/");
    s
}

/// Counts calls; answers every allowed fetch with a small body.
struct CountingNet(Arc<AtomicUsize>);

impl Net for CountingNet {
    fn fetch(
        &self,
        _: &FetchRequest,
        _: SocketAddr,
        _: FetchLimits,
    ) -> Result<FetchResponse, NetError> {
        self.0.fetch_add(1, Ordering::SeqCst);
        Ok(FetchResponse {
            status: 200,
            headers: vec![],
            body: b"ok".to_vec(),
        })
    }
}

fn snapshot(root: &Path, skip: &Path, out: &mut BTreeMap<PathBuf, Vec<u8>>) {
    for e in std::fs::read_dir(root).unwrap() {
        let p = e.unwrap().path();
        if p.starts_with(skip) {
            continue;
        }
        let md = std::fs::symlink_metadata(&p).unwrap();
        if md.file_type().is_symlink() {
            out.insert(
                p.clone(),
                std::fs::read_link(&p)
                    .unwrap()
                    .into_os_string()
                    .into_encoded_bytes(),
            );
        } else if md.is_dir() {
            out.insert(p.clone(), b"<dir>".to_vec());
            snapshot(&p, skip, out);
        } else {
            out.insert(p.clone(), std::fs::read(&p).unwrap());
        }
    }
}

fuzz_target!(|input: Input| {
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path();
    for d in ["work/out", "workshop", "etc"] {
        std::fs::create_dir_all(r.join(d)).unwrap();
    }
    std::fs::write(r.join("work/data.txt"), "data").unwrap();
    std::fs::write(r.join("workshop/secret"), CANARY).unwrap();
    std::fs::write(r.join("etc/passwd"), CANARY).unwrap();
    std::os::unix::fs::symlink("../etc/passwd", r.join("work/link")).unwrap();
    std::os::unix::fs::symlink("../../workshop", r.join("work/out/linkdir")).unwrap();
    std::os::unix::fs::symlink(r.join("etc/passwd"), r.join("work/out/abslink")).unwrap();

    let caps = Capabilities::builder()
        .read_mount(r.join("work"), "/work")
        .write_mount(r.join("work/out"), "/work/out")
        .allow_egress("http://allowed.test")
        .allow_egress("http://private.test")
        .allow_egress("http://127.0.0.1:8080")
        .allow_tool("t")
        .max_ops(u64::from(input.max_ops))
        .max_output_bytes(u64::from(input.max_output))
        .build()
        .unwrap();
    let fetches = Arc::new(AtomicUsize::new(0));
    let tool_calls = Arc::new(AtomicUsize::new(0));
    let mut tools = ToolRegistry::new();
    for name in ["t", "u"] {
        let c = tool_calls.clone();
        tools.register(name, move |i: &str| {
            c.fetch_add(1, Ordering::SeqCst);
            Ok::<_, ToolError>(i.to_string())
        });
    }
    let resolver = StaticResolver::new()
        .with("allowed.test", ["93.184.216.34".parse().unwrap()])
        .with("private.test", ["10.0.0.5".parse().unwrap()]);
    let mut sb = Sandbox::builder(caps)
        .services(
            Services::new()
                .net(Arc::new(CountingNet(fetches.clone())))
                .resolver(Arc::new(resolver))
                .tools(tools)
                .clock(Arc::new(TickClock::new(Duration::from_millis(1)))),
        )
        .build()
        .unwrap();

    let out_dir = r.join("work/out");
    let mut before = BTreeMap::new();
    snapshot(r, &out_dir, &mut before);
    let mut halted = false;
    for op in input.ops.into_iter().take(64) {
        let op = match op {
            FuzzOp::Read(t) => Op::read(path(&t)),
            FuzzOp::Write(t, c) => Op::write(path(&t), c),
            FuzzOp::List(t) => Op::list(path(&t)),
            FuzzOp::Stat(t) => Op::stat(path(&t)),
            FuzzOp::Remove(t) => Op::remove(path(&t)),
            FuzzOp::Mkdir(t) => Op::mkdir(path(&t)),
            FuzzOp::Fetch(i) => Op::fetch(URLS[i as usize % URLS.len()]),
            FuzzOp::Tool(i, input) => Op::tool(TOOLS[i as usize % TOOLS.len()], input),
        };
        let (f0, t0) = (
            fetches.load(Ordering::SeqCst),
            tool_calls.load(Ordering::SeqCst),
        );
        let res = sb.run(op.clone());
        let (f1, t1) = (
            fetches.load(Ordering::SeqCst),
            tool_calls.load(Ordering::SeqCst),
        );
        // Capability denials and the budgets charged before anything
        // (max_ops, max_wall) come before the effect; max_output_bytes is
        // charged on the result, after it.
        if res
            .denial
            .as_ref()
            .is_some_and(|d| d.violation != Violation::MaxOutputBytes)
        {
            assert_eq!(
                (f0, t0),
                (f1, t1),
                "a denied op reached the network or a tool: {op:?} {res:?}"
            );
        }
        if halted {
            assert!(
                res.hard() && !res.ok,
                "an op after a hard halt was not refused: {op:?} {res:?}"
            );
        }
        halted |= res.hard();
        let shown = serde_json::to_string(&res).unwrap();
        assert!(!shown.contains(CANARY), "canary leaked by {op:?}: {shown}");
    }
    let mut after = BTreeMap::new();
    snapshot(r, &out_dir, &mut after);
    assert_eq!(before, after, "something outside the write mount changed");
});
