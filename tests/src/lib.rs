//! Test support: real temp folders with a snapshot to prove "nothing changed",
//! and a real HTTP server on 127.0.0.1 that counts the connections it accepts
//! (a denied fetch must leave the count unchanged).

mod api;
mod built;
mod results;
pub mod served;
mod server;

pub use results::{assert_denied, result_text, said, utf8};
pub use server::{BIG_HEADER_BYTES, LoopbackServer};

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// What a path holds, as seen from the host.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Node {
    /// A folder.
    Dir,
    /// A file and its bytes.
    File(Vec<u8>),
    /// A symlink and its target.
    Link(PathBuf),
}

/// Every path below `root` (symlinks not followed), with contents: two equal
/// snapshots mean the tree is byte-for-byte the same.
pub fn snapshot(root: &Path) -> BTreeMap<PathBuf, Node> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<PathBuf, Node>) {
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        entries.sort();
        for p in entries {
            let rel = p.strip_prefix(root).unwrap().to_path_buf();
            let md = std::fs::symlink_metadata(&p).unwrap();
            if md.file_type().is_symlink() {
                out.insert(rel, Node::Link(std::fs::read_link(&p).unwrap()));
            } else if md.is_dir() {
                out.insert(rel, Node::Dir);
                walk(root, &p, out);
            } else {
                out.insert(rel, Node::File(std::fs::read(&p).unwrap()));
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}

/// The seed's world on real folders:
///
/// ```text
/// root/
///   work/data.txt          read mount  -> /work
///   work/out/              write mount -> /work/out
///   workshop/secret.txt    sibling-prefix folder, never mounted
///   etc/passwd             canary outside every mount
/// ```
pub struct World {
    /// Keeps the temp folder alive.
    pub dir: tempfile::TempDir,
}

/// Content of `/work/data.txt`.
pub const DATA: &str = "revenue,42\ncost,17\n";
/// Content of every canary outside the mounts.
pub const CANARY: &str = "CANARY-secret-never-leaves";

impl World {
    /// Build the tree.
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        std::fs::create_dir_all(r.join("work/out")).unwrap();
        std::fs::create_dir_all(r.join("workshop")).unwrap();
        std::fs::create_dir_all(r.join("etc")).unwrap();
        std::fs::write(r.join("work/data.txt"), DATA).unwrap();
        std::fs::write(r.join("workshop/secret.txt"), CANARY).unwrap();
        std::fs::write(r.join("etc/passwd"), CANARY).unwrap();
        World { dir }
    }

    /// The root folder.
    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    /// A path below the root.
    pub fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    /// Snapshot of the whole tree.
    pub fn snapshot(&self) -> BTreeMap<PathBuf, Node> {
        snapshot(self.root())
    }

    /// The seed's grant to build on: read `/work`, write `/work/out`, tool
    /// `summarize`.
    pub fn caps_builder(&self) -> sbx_wasm::CapabilitiesBuilder {
        sbx_wasm::Capabilities::builder()
            .read_mount(self.path("work"), "/work")
            .write_mount(self.path("work/out"), "/work/out")
            .allow_tool("summarize")
    }
}

impl Default for World {
    fn default() -> Self {
        Self::new()
    }
}

/// The `sbx-wasm` binary built by this `cargo test` run. Cargo builds it
/// because the `sbx-wasm-cli` package (`cli/`) has integration tests of its
/// own.
pub fn sbx_bin() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    // target/<profile>/deps/<test> -> target/<profile>/sbx-wasm
    let bin = exe
        .parent()
        .and_then(Path::parent)
        .unwrap()
        .join("sbx-wasm");
    assert!(
        bin.exists(),
        "{} is missing: run the tests with `cargo test --workspace`",
        bin.display()
    );
    bin
}

/// The artifact cache the tests share, kept across `cargo test` runs
/// (entries are keyed by component and engine, so reuse is safe).
pub fn test_cache() -> PathBuf {
    repo_root().join("target/sbx-test-cache")
}

/// Compile `runner` into the artifact cache at `cache` with the CLI's
/// `compile` (nothing to do when it is there already).
pub fn compile_into(cache: &Path, runner: &Path) {
    let out = std::process::Command::new(sbx_bin())
        .env("SBX_WASM_CACHE_DIR", cache)
        .arg("compile")
        .arg(runner)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", utf8(&out.stderr));
}

/// Run the `sbx-wasm` binary in `dir` with `args`.
pub fn sbx_in(dir: &Path, args: &[&str]) -> std::process::Output {
    std::process::Command::new(sbx_bin())
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap()
}

/// Run the `sbx-wasm` binary in `dir` with `args`, its artifact cache in
/// `dir/cache` (a test's runs share no cache with another test's).
pub fn sbx_cached(dir: &Path, args: &[&str]) -> std::process::Output {
    std::process::Command::new(sbx_bin())
        .env("SBX_WASM_CACHE_DIR", dir.join("cache"))
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap()
}

/// Copy a folder tree (files and folders only).
pub fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// The repository's top folder.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// The user's cache folder for the tests' installed tools (outside the
/// checkout, so a fresh clone reuses them): `$XDG_CACHE_HOME/sbx-wasm` or
/// `~/.cache/sbx-wasm`.
pub fn user_cache() -> PathBuf {
    std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").unwrap()).join(".cache"))
        .join("sbx-wasm")
}

/// A name beside `path` no other caller uses, this process's or another's:
/// where a cache entry is made before it is moved in place. (The process
/// id alone is not enough: two tests of one binary may make the same entry
/// at once, and would clobber one folder.)
pub fn private_sibling(path: &Path) -> PathBuf {
    static MADE: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = MADE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    path.with_extension(format!("tmp-{}-{n}", std::process::id()))
}

/// The python of a virtual environment holding `requirements` (installed
/// with `pip install [pip_args] -r requirements`), made once per
/// requirements file in the user's cache folder under `name/HASH`. A venv's
/// scripts name the folder they were made in, and this one is made beside
/// and moved in place (so a half-made one is never used): call its tools
/// through this python (it finds its site-packages from pyvenv.cfg).
pub fn cached_venv(name: &str, requirements: &Path, pip_args: &[&str]) -> PathBuf {
    let key = sbx_wasm::replay::sha256_hex(&std::fs::read(requirements).unwrap());
    // Made before venvs carried the completion mark (a python there was
    // always moved in whole).
    let made = user_cache().join(name).join(&key[..16]).join("bin/python3");
    if made.exists() {
        return made;
    }
    let venv = cached_folder(name, requirements, |tmp| {
        let made = std::process::Command::new("python3")
            .args(["-m", "venv"])
            .arg(tmp)
            .output()
            .unwrap();
        assert!(
            made.status.success(),
            "python3 -m venv: {}",
            utf8(&made.stderr)
        );
        let pip = std::process::Command::new(tmp.join("bin/pip"))
            .args(["install", "--quiet", "--disable-pip-version-check"])
            .args(pip_args)
            .arg("-r")
            .arg(requirements)
            .output()
            .unwrap();
        assert!(
            pip.status.success(),
            "pip install -r {}: {}",
            requirements.display(),
            utf8(&pip.stderr)
        );
    });
    venv.join("bin/python3")
}

/// [`cached_folder`] keyed by the contents of the repo's files `inputs`
/// (paths from the repo's root): what a component built from them needs
/// to be built again for.
pub fn cached_build(name: &str, inputs: &[&str], make: impl FnOnce(&Path)) -> PathBuf {
    let root = repo_root();
    let key_dir = tempfile::tempdir().unwrap();
    let key = key_dir.path().join("key");
    let text: Vec<u8> = inputs
        .iter()
        .flat_map(|f| std::fs::read(root.join(f)).unwrap())
        .collect();
    std::fs::write(&key, text).unwrap();
    cached_folder(name, &key, make)
}

/// A folder made once per version of `key_file` (by its SHA-256) in the
/// user's cache folder under `name/HASH`: `make` fills a private folder
/// beside it, which is then moved in place, so a half-made one is never
/// used and two runs making it at once both end with a whole one.
pub fn cached_folder(name: &str, key_file: &Path, make: impl FnOnce(&Path)) -> PathBuf {
    let text = std::fs::read(key_file).unwrap();
    let key = sbx_wasm::replay::sha256_hex(&text);
    let dir = user_cache().join(name).join(&key[..16]);
    let done = dir.join(".complete");
    if done.exists() {
        return dir;
    }
    let tmp = private_sibling(&dir);
    let _ = std::fs::remove_dir_all(&tmp);
    make(&tmp);
    std::fs::write(tmp.join(".complete"), "").unwrap();
    std::fs::create_dir_all(dir.parent().unwrap()).unwrap();
    if std::fs::rename(&tmp, &dir).is_err() {
        // Made meanwhile by another run: use that one.
        let _ = std::fs::remove_dir_all(&tmp);
    }
    dir
}

/// The component built from `guest-examples/agents/src/bin/NAME.rs` (the
/// guests are built on the first call in a test process).
pub fn guest(name: &str) -> PathBuf {
    let p = built::guest_dir().join(format!("{name}.wasm"));
    assert!(p.exists(), "{} was not built", p.display());
    p
}

/// The Python runner component built by `host/runners/python/build.sh`
/// (run on the first call in a test process; a no-op when up to date).
pub fn python_runner() -> PathBuf {
    let p = built::python_runner();
    assert!(p.exists(), "{} was not built", p.display());
    p
}

/// The data runner component built by `host/runners/data/build.sh`, its
/// files beside it (run on the first call in a test process; a no-op
/// when up to date).
pub fn data_runner() -> PathBuf {
    let p = built::data_runner();
    assert!(p.exists(), "{} was not built", p.display());
    p
}

/// The JavaScript runner component built by `host/runners/js/build.sh`
/// (run on the first call in a test process; a no-op when up to date).
pub fn js_runner() -> PathBuf {
    let p = built::js_runner();
    assert!(p.exists(), "{} was not built", p.display());
    p
}

/// A temp folder with `data/` (for a read mount), `out/` (for a write mount)
/// and the given files (paths relative to the folder).
pub fn mount_tree(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("data")).unwrap();
    std::fs::create_dir_all(dir.path().join("out")).unwrap();
    for (rel, content) in files {
        std::fs::write(dir.path().join(rel), content).unwrap();
    }
    dir
}

/// The caps file for a [`mount_tree`]: `data/` read at `/work`, `out/`
/// written at `/work/out`, then `extra` TOML.
pub fn mount_caps(extra: &str) -> String {
    format!(
        "[fs]\nread = [{{ host = \"data\", guest = \"/work\" }}]\n\
         write = [{{ host = \"out\", guest = \"/work/out\" }}]\n{extra}\n"
    )
}

/// A recording (1 MiB at most) of the summariser guest `name` summarising
/// `server`'s `/status` under a grant of its origin alone: the seed of the
/// fuzz-your-agent tests.
pub fn record_summary(name: &str, server: &LoopbackServer) -> sbx_wasm::replay::Recording {
    use sbx_wasm::wasm::{RunOptions, WasmHost};
    let caps = sbx_wasm::Capabilities::builder()
        .allow_egress(server.origin())
        .build()
        .unwrap();
    let host = WasmHost::new().unwrap();
    let agent = host.load(&guest(name)).unwrap();
    let opts = RunOptions::new(caps)
        .args([format!("{}/status", server.origin())])
        .record(1 << 20);
    let run = host.run(&agent, opts).unwrap();
    assert_eq!(run.report.exit_code, Some(0), "{:?}", run.trap);
    assert_eq!(String::from_utf8_lossy(&run.stdout), "summary: ok\n");
    *run.recording.unwrap()
}

/// The records of an audit log's text (`--audit`): its lines as JSON,
/// seals left out (`sbx-wasm audit verify` checks those).
pub fn audit_records(text: &str) -> Vec<serde_json::Value> {
    text.lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|v| v.get("seal").is_none())
        .collect()
}

/// Run the test `name` of this test binary alone, in a process of its own
/// with `env` added, and check that it ran and passed (a filter matching
/// nothing passes too); what it printed. For a test that changes its
/// process for good (a kernel wall, pages mapped, an exit to observe).
pub fn run_test_alone(name: &str, env: &[(&str, &std::ffi::OsStr)]) -> String {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([name, "--exact", "--nocapture", "--test-threads=1"])
        .envs(env.iter().copied())
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout) + String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    assert!(said.contains("1 passed"), "{said}");
    said.into_owned()
}
