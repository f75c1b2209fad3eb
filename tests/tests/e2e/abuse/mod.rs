//! The host itself under abuse, written from the attacker's side: what a
//! hostile plan, guest or script passes in (size, type, timing) and what
//! that costs the host, beside the allowed neighbour of each case. Host
//! memory bounded by the grant, stdin streamed, large writes whole or
//! halted, response headers charged, every special-purpose address refused,
//! credentials dropped at a cross-origin hop, an audit that tells the truth,
//! links that stay inside, the write quota, deterministic file times.

mod before_run;
mod crash;
mod egress;
mod files;
mod memory;
mod stdio;

use sbx_wasm::Services;
use sbx_wasm::bound::{MAX_RECORD_TARGET_BYTES, MAX_URL_BYTES};
use sbx_wasm::net::StaticResolver;
use sbx_wasm::tools::{ToolError, ToolRegistry};
use sbx_wasm::{Capabilities, Op, Sandbox, SandboxResult, TickClock, Violation};
use sbx_wasm_tests::{
    BIG_HEADER_BYTES, LoopbackServer, World, guest, mount_caps, mount_tree, python_runner,
    repo_root, sbx_bin, snapshot,
};
use serde_json::Value;
use std::io::Write;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn denied(r: &SandboxResult, v: Violation) {
    assert!(!r.ok, "expected {v}, got {r:?}");
    assert_eq!(r.violation(), Some(v), "{r:?}");
}

fn with_tools(w: &World, caps: Capabilities) -> Sandbox {
    let _ = w;
    let mut tools = ToolRegistry::new();
    tools.register("summarize", |s: &str| {
        Ok::<_, ToolError>(format!("{} bytes", s.len()))
    });
    Sandbox::builder(caps)
        .services(Services::new().tools(tools))
        .build()
        .unwrap()
}

// --- wasm guests through the CLI ----------------------------------------

struct Ran {
    code: Option<i32>,
    stdout: String,
    report: Value,
    audit: Vec<Value>,
}

impl Ran {
    /// The audit events for `target`.
    fn events(&self, target: &str) -> Vec<&Value> {
        self.audit
            .iter()
            .filter(|e| e["target"] == target)
            .collect()
    }
}

/// `sbx-wasm run --caps caps.toml GUEST -- ARGS` in a mount tree whose caps
/// file gets `extra`.
fn cli(dir: &Path, extra: &str, flags: &[&str], guest_name: &str, args: &[&str]) -> Ran {
    std::fs::write(dir.join("caps.toml"), mount_caps(extra)).unwrap();
    let (report, audit) = (dir.join("r.json"), dir.join("a.jsonl"));
    let out = Command::new(sbx_bin())
        .current_dir(dir)
        .env("SBX_WASM_CACHE_DIR", dir.join("cache"))
        .args(["run", "--caps", "caps.toml", "--report"])
        .arg(&report)
        .arg("--audit")
        .arg(&audit)
        .args(flags)
        .arg(guest(guest_name))
        .arg("--")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let report = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    let audit = std::fs::read_to_string(&audit)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    Ran {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        report,
        audit,
    }
}
