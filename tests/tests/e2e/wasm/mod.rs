//! Real guests, built from `guest-examples/` by this crate's build script,
//! run through the library and the CLI: every hostile guest contained (host
//! tree unchanged, the loopback server saw no connection, the report names
//! the violation), every benign path works, determinism holds.

mod admission;
mod cli;
mod embed;
mod guests;
mod prepared;

use sbx_wasm::Services;
use sbx_wasm::Status;
use sbx_wasm::wasm::{RunOptions, Sink, WasmHost, WasmRun};
use sbx_wasm::{Capabilities, CapabilitiesBuilder, Violation};
use sbx_wasm_tests::{LoopbackServer, Node, guest, mount_tree, sbx_bin, snapshot};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// One engine for the whole file, as an embedder would keep it.
fn host() -> &'static WasmHost {
    static HOST: OnceLock<WasmHost> = OnceLock::new();
    HOST.get_or_init(|| WasmHost::new().unwrap())
}

/// The seed's tree for guests:
///
/// ```text
/// root/data/{data.txt,data.csv}   read mount  -> /work
/// root/out/                       write mount -> /work/out
/// root/secret.txt                 outside every mount
/// ```
struct Tree {
    dir: tempfile::TempDir,
}

const SECRET: &str = "CANARY-secret-never-leaves";

impl Tree {
    fn new() -> Self {
        let dir = mount_tree(&[
            ("data/data.txt", "revenue,42\ncost,17\n"),
            ("data/data.csv", "quarter,revenue\nQ1,10\nQ2,32\n"),
            ("secret.txt", SECRET),
        ]);
        Tree { dir }
    }
    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }
    /// The JSON file at `rel` (a report), parsed.
    fn json(&self, rel: &str) -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(self.path(rel)).unwrap()).unwrap()
    }
    fn caps(&self) -> CapabilitiesBuilder {
        Capabilities::builder()
            .read_mount(self.path("data"), "/work")
            .write_mount(self.path("out"), "/work/out")
            .allow_tool("word_count")
            .tool_command("word_count", vec!["wc".into(), "-w".into()])
            .max_wall(Duration::from_secs(20))
    }
    /// Everything outside the write mount.
    fn outside_out(&self) -> BTreeMap<PathBuf, Node> {
        snapshot(self.dir.path())
            .into_iter()
            .filter(|(p, _)| !p.starts_with("out"))
            .collect()
    }
}

struct Captured {
    run: WasmRun,
    stdout: String,
    stderr: String,
}

fn sink() -> (Sink, Arc<Mutex<Vec<u8>>>) {
    let buf = Arc::new(Mutex::new(Vec::new()));
    (buf.clone(), buf)
}

/// The caps' command tools, registered.
fn command_tools(caps: &Capabilities) -> sbx_wasm::tools::ToolRegistry {
    let mut tools = sbx_wasm::tools::ToolRegistry::new();
    for (name, cmd) in caps.tool_commands() {
        tools.register(name.clone(), cmd.clone());
    }
    tools
}

fn run_guest(
    name: &str,
    caps: Capabilities,
    args: &[&str],
    stdin: &[u8],
    deterministic: bool,
) -> Captured {
    let component = host().load(&guest(name)).unwrap();
    let mut opts = RunOptions::new(caps.clone())
        .program_name(name)
        .args(args.iter().copied())
        .stdin(stdin)
        .services(Services::new().tools(command_tools(&caps)));
    if deterministic {
        opts = opts.deterministic(0);
    }
    // Captured by default: what the guest wrote comes back with the run.
    let run = host().run(&component, opts).unwrap();
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    Captured {
        stdout: text(&run.stdout),
        stderr: text(&run.stderr),
        run,
    }
}

fn assert_completed(c: &Captured) {
    assert_eq!(
        c.run.report.status,
        Status::Completed,
        "{:?} {}",
        c.run,
        c.stderr
    );
}

fn assert_halted(c: &Captured, v: Violation) {
    assert_eq!(
        c.run.report.status,
        Status::HardLimit,
        "{:?}\n{}",
        c.run,
        c.stderr
    );
    assert_eq!(c.run.report.violation, Some(v), "{:?}", c.run);
}

fn write_caps(dir: &Path, extra: &str) -> PathBuf {
    let p = dir.join("caps.toml");
    std::fs::write(
        &p,
        format!(
            "[fs]\nread = [{{ host = \"data\", guest = \"/work\" }}]\nwrite = [{{ host = \"out\", guest = \"/work/out\" }}]\n{extra}"
        ),
    )
    .unwrap();
    p
}

fn sbx(dir: &Path, args: &[&str]) -> std::process::Output {
    sbx_wasm_tests::sbx_cached(dir, args)
}
